package hooks_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/hooks"
	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/tools"
)

func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"write to jane.doe+x@mail.example.org today": "write to [email] today",
		"card 4111 1111 1111 1111, exp 12/29":        "card [card], exp 12/29",
		"card 4111-1111-1111-1112 fails the check":   "card 4111-1111-1111-1112 fails the check",
		"call +44 20 7946 0958 or (415) 555-0100":    "call [phone] or [phone]",
		"or 415-555-0100":                            "or [phone]",
		"order 20261127 shipped":                     "order 20261127 shipped",
	} {
		assert.Equal(t, want, hooks.Redact(in), in)
	}
}

// The redactor changes the parts of a request it is given, not the results they point at.
func TestRedactPIIInRequestKeepsSharedResults(t *testing.T) {
	shared := &tools.Result{CallID: "c1", Name: "lookup", Content: "bob@example.com"}
	req := providers.Request{Messages: []providers.Message{
		providers.UserText("mail bob@example.com"),
		{Role: providers.User, Parts: []providers.Part{{Type: providers.ToolResultPart, ToolResult: shared}}},
	}}
	require.NoError(t, hooks.RedactPII().BeforeModel(context.Background(), &req))
	assert.Equal(t, "mail [email]", req.Messages[0].Text())
	assert.Equal(t, "[email]", req.Messages[1].Parts[0].ToolResult.Content)
	assert.Equal(t, "bob@example.com", shared.Content)
}

func TestChainAsksIfAnyAsksAndStopsAtARefusal(t *testing.T) {
	ctx := hooks.WithCaller(context.Background(), hooks.Caller{Worker: "alice"})
	chain := hooks.Chain{hooks.Approvals(hooks.Policy{Tools: []string{"send_*"}}), hooks.Denylist("delete_*")}
	d, err := chain.BeforeTool(ctx, &tools.Call{Name: "send_mail"})
	require.NoError(t, err)
	assert.Equal(t, hooks.Ask, d)
	d, err = chain.BeforeTool(ctx, &tools.Call{Name: "read_mail"})
	require.NoError(t, err)
	assert.Equal(t, hooks.Run, d)
	_, err = chain.BeforeTool(ctx, &tools.Call{Name: "delete_mail"})
	var refused *hooks.Refused
	require.ErrorAs(t, err, &refused)
	assert.Equal(t, `the tool delete_mail is not allowed here (denied by "delete_*")`, refused.Reason)

	d, err = hooks.Approvals(hooks.Policy{Workers: []string{"bob"}}).BeforeTool(ctx, &tools.Call{Name: "send_mail"})
	require.NoError(t, err)
	assert.Equal(t, hooks.Run, d, "alice's calls are not bob's")
}

func TestMalformedPatternPanicsNamingIt(t *testing.T) {
	assert.PanicsWithValue(t, `hooks.Denylist: pattern "[a": syntax error in pattern`, func() { hooks.Denylist("[a") })
	assert.PanicsWithValue(t, `hooks.Approvals: pattern "[b": syntax error in pattern`, func() {
		hooks.Approvals(hooks.Policy{Workers: []string{"[b"}})
	})
}

func TestParseVerdict(t *testing.T) {
	a := hooks.Approval{Tool: "send", Args: json.RawMessage(`{"to":"x"}`),
		Schema: json.RawMessage(`{"type":"object","properties":{"to":{"type":"string"}},"required":["to"],"additionalProperties":false}`)}
	for answer, want := range map[string]hooks.Verdict{
		hooks.Approve(): {Approve: true},
		" Approved ":    {Approve: true},
		hooks.Edit(json.RawMessage(`{"to":"y"}`)): {Approve: true, Args: json.RawMessage(`{"to":"y"}`)},
		`edit: {"to":"z"}`:                        {Approve: true, Args: json.RawMessage(`{"to":"z"}`)},
		hooks.Reject("not that address"):          {Reason: "not that address"},
		"reject: no":                              {Reason: "no"},
		"reject":                                  {Reason: "the human rejected it"},
	} {
		v, err := hooks.ParseVerdict(a, answer)
		require.NoError(t, err, answer)
		assert.Equal(t, want, v, answer)
	}
	for answer, msg := range map[string]string{
		"maybe":              `answer the call of send with approve, edit <arguments as JSON> or reject <reason>, not "maybe"`,
		"edit {to:":          "the edited arguments of send are not JSON: {to:",
		`edit {"to":1}`:      "the edited arguments of send:",
		`edit {"from":"me"}`: "the edited arguments of send:",
	} {
		_, err := hooks.ParseVerdict(a, answer)
		require.ErrorIs(t, err, hooks.ErrBadVerdict, answer)
		assert.Contains(t, err.Error(), msg, answer)
	}
	// A tool without a schema still takes an object of arguments, never another JSON value.
	a.Schema = nil
	for _, args := range []string{`"rm -rf /"`, "null", "[1]", "7"} {
		_, err := hooks.ParseVerdict(a, "edit "+args)
		require.ErrorIs(t, err, hooks.ErrBadVerdict, args)
		assert.Contains(t, err.Error(), "the edited arguments of send are not a JSON object: "+args, args)
	}
}
