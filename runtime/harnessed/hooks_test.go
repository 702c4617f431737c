package harnessed_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/checkpoint/sqlite"
	"github.com/agiraph/agiraph/hooks"
	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/providers/scripted"
	"github.com/agiraph/agiraph/runtime"
	"github.com/agiraph/agiraph/runtime/adapter"
	"github.com/agiraph/agiraph/runtime/harnessed"
	"github.com/agiraph/agiraph/tools"
)

// hook is a hooks.Hook made of the functions a test sets.
type hook struct {
	hooks.Base
	beforeModel func(*providers.Request) error
	afterModel  func(*providers.Response) error
	beforeTool  func(*tools.Call) (hooks.Decision, error)
	afterTool   func(*tools.Result) error
}

func (h hook) BeforeModel(_ context.Context, req *providers.Request) error {
	if h.beforeModel == nil {
		return nil
	}
	return h.beforeModel(req)
}

func (h hook) AfterModel(_ context.Context, _ *providers.Request, resp *providers.Response) error {
	if h.afterModel == nil {
		return nil
	}
	return h.afterModel(resp)
}

func (h hook) BeforeTool(_ context.Context, c *tools.Call) (hooks.Decision, error) {
	if h.beforeTool == nil {
		return hooks.Run, nil
	}
	return h.beforeTool(c)
}

func (h hook) AfterTool(_ context.Context, _ tools.Call, r *tools.Result) error {
	if h.afterTool == nil {
		return nil
	}
	return h.afterTool(r)
}

// echo is a tool that answers with its text and counts its calls.
func echo(n *atomic.Int32) tools.Tool {
	return tools.Func("echo", "Echo the text.", func(_ context.Context, a struct {
		Text string `json:"text"`
	}) (string, error) {
		n.Add(1)
		return a.Text, nil
	})
}

// hookTexts returns the texts of the Hooked events.
func (r *recorder) hookTexts() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var ts []string
	for _, e := range r.events {
		if e.Kind == runtime.Hooked {
			ts = append(ts, e.Text)
		}
	}
	return ts
}

// A hook before the model call rewrites what the model is sent, not the conversation the
// worker keeps; one after it rewrites the answer the worker keeps.
func TestHookRewritesModelRequestAndAnswer(t *testing.T) {
	a := assignment(t, "h1", "Mail bob@example.com.")
	var echoed atomic.Int32
	a.Tools = append(a.Tools, echo(&echoed))
	model := scripted.New("w", scripted.Turn{Calls: []tools.Call{call("c1", "echo", map[string]string{"text": "x"})}},
		scripted.Turn{Text: "done, bob@example.com"}).KeepRequests()
	rewrite := hook{
		beforeModel: func(req *providers.Request) error {
			req.System += "\nBe brief."
			req.Messages[0].Parts[0] = providers.Text(req.Messages[0].Text() + "!")
			return nil
		},
		afterModel: func(resp *providers.Response) error {
			if t := resp.Message.Text(); t != "" {
				resp.Message.Parts[0] = providers.Text(strings.ToUpper(t))
			}
			return nil
		},
	}
	rt := harnessed.New(model, harnessed.WithTextEndsTurn(), harnessed.WithHooks(hooks.RedactPII(), rewrite))
	o, err := rt.Run(context.Background(), a, nil)
	require.NoError(t, err)
	assert.Equal(t, "DONE, BOB@EXAMPLE.COM", o.Summary)
	for _, req := range model.Requests() {
		assert.True(t, strings.HasSuffix(req.System, "\nBe brief."))
		assert.Equal(t, "Mail [email].!", req.Messages[0].Text(), "each request is rewritten from the worker's own conversation")
	}
}

// A hook that refuses a model call ends the turn with an error naming its reason; the model
// is not called.
func TestHookRefusesModelCall(t *testing.T) {
	a := assignment(t, "h2", "Say hi.")
	model := scripted.New("w", scripted.Turn{Text: "hi"})
	var rec recorder
	rt := harnessed.New(model, harnessed.WithHooks(hook{beforeModel: func(*providers.Request) error {
		return hooks.Refuse("no model calls after hours")
	}}))
	o, err := rt.Run(context.Background(), a, rec.sink)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "a hook refused the model call: refused: no model calls after hours")
	assert.Equal(t, runtime.Failed, o.Status)
	assert.Equal(t, 1, model.Remaining(), "the model was called")
	assert.Contains(t, rec.hookTexts(), "refused the model call: refused: no model calls after hours")

	// After the call, a refusal of the answer ends the turn too.
	b := assignment(t, "h2b", "Say hi.")
	rt = harnessed.New(scripted.New("w", scripted.Turn{Text: "hi"}), harnessed.WithHooks(hook{afterModel: func(*providers.Response) error {
		return hooks.Refuse("off-topic")
	}}))
	_, err = rt.Run(context.Background(), b, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "a hook refused the model's answer: refused: off-topic")
}

// Hooks before a tool call rewrite its arguments or refuse it (the model reads the reason);
// hooks after it rewrite its result or refuse it.
func TestHookRewritesAndRefusesToolCalls(t *testing.T) {
	a := assignment(t, "h3", "Echo.")
	var echoed atomic.Int32
	a.Tools = append(a.Tools, echo(&echoed))
	model := scripted.New("w",
		scripted.Turn{Calls: []tools.Call{
			call("c1", "echo", map[string]string{"text": "call me at +1 415 555 0100"}),
			call("c2", "bash", map[string]string{"command": "rm -rf /"}),
			call("c3", "echo", map[string]string{"text": "secret"}),
			call("c4", "echo", map[string]string{"text": "shout"}),
		}},
		scripted.Turn{Calls: []tools.Call{call("c5", "checkpoint", adapter.CheckpointArgs{Summary: "ok"})}},
	).KeepRequests()
	rewrite := hook{
		beforeTool: func(c *tools.Call) (hooks.Decision, error) {
			if c.ID == "c4" {
				c.Args = json.RawMessage(`{"text":"whisper"}`)
			}
			return hooks.Run, nil
		},
		afterTool: func(r *tools.Result) error {
			if r.Content == "secret" {
				return hooks.Refuse("the result holds a secret")
			}
			return nil
		},
	}
	var rec recorder
	rt := harnessed.New(model, harnessed.WithHooks(hooks.Denylist("bash", "rm*"), hooks.RedactPII(), rewrite))
	o, err := rt.Run(context.Background(), a, rec.sink)
	require.NoError(t, err)
	require.Equal(t, runtime.Checkpointed, o.Status)
	rs := lastResults(model.Requests()[1])
	require.Len(t, rs, 4)
	assert.Equal(t, tools.Result{CallID: "c1", Name: "echo", Content: "call me at [phone]"}, rs[0])
	assert.Equal(t, tools.Result{CallID: "c2", Name: "bash", IsError: true,
		Content: `The call of bash was refused: the tool bash is not allowed here (denied by "bash")`}, rs[1])
	assert.Equal(t, tools.Result{CallID: "c3", Name: "echo", IsError: true,
		Content: "The call of echo was refused: the result holds a secret"}, rs[2])
	assert.Equal(t, tools.Result{CallID: "c4", Name: "echo", Content: "whisper"}, rs[3])
	assert.EqualValues(t, 3, echoed.Load(), "echo runs; bash does not")
	assert.Equal(t, []string{
		"changed the result of echo",
		`refused the call of bash: the tool bash is not allowed here (denied by "bash")`,
		"refused the result of echo: the result holds a secret",
		`changed the arguments of echo to {"text":"whisper"}`,
	}, rec.hookTexts())
}

// A hook that fails (an error that is no refusal) ends the turn, naming the tool.
func TestHookErrorEndsTurn(t *testing.T) {
	a := assignment(t, "h4", "Echo.")
	var echoed atomic.Int32
	a.Tools = append(a.Tools, echo(&echoed))
	model := scripted.New("w", scripted.Turn{Calls: []tools.Call{call("c1", "echo", map[string]string{"text": "x"})}})
	rt := harnessed.New(model, harnessed.WithHooks(hook{beforeTool: func(*tools.Call) (hooks.Decision, error) {
		return hooks.Run, errors.New("policy store unreachable")
	}}))
	_, err := rt.Run(context.Background(), a, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "a hook before the call of echo: policy store unreachable")
	assert.Zero(t, echoed.Load())
}

// A call the approval policy covers waits for the human, across runtimes on the same saver (a
// restart): then it runs once, as edited; a rejected call does not run and the model reads why.
func TestApprovalWaitsAcrossRestartsThenRuns(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cp.db")
	a := assignment(t, "h5", "Echo twice.")
	var echoed atomic.Int32
	var texts []string
	a.Tools = append(a.Tools, tools.Func("echo", "Echo the text.", func(_ context.Context, args struct {
		Text string `json:"text"`
	}) (string, error) {
		echoed.Add(1)
		texts = append(texts, args.Text)
		return args.Text, nil
	}))
	model := scripted.New("w",
		scripted.Turn{Calls: []tools.Call{call("c0", "list_files", map[string]string{}), call("c1", "echo", map[string]string{"text": "one"})}},
		scripted.Turn{Calls: []tools.Call{call("c2", "echo", map[string]string{"text": "two"})}},
		scripted.Turn{Calls: []tools.Call{call("c3", "checkpoint", adapter.CheckpointArgs{Summary: "ok"})}},
	).KeepRequests()
	start := func() *harnessed.Runtime {
		saver, err := sqlite.Open(path)
		require.NoError(t, err)
		t.Cleanup(func() { saver.Close() })
		return harnessed.New(model, harnessed.WithSaver(saver), harnessed.WithHooks(hooks.Approvals(hooks.Policy{Tools: []string{"ec*"}, Workers: []string{"alice"}})))
	}
	var rec recorder
	o, err := start().Run(context.Background(), a, rec.sink)
	require.NoError(t, err)
	require.Equal(t, runtime.Waiting, o.Status)
	require.NotNil(t, o.Approval)
	assert.Equal(t, "echo", o.Approval.Tool)
	assert.Equal(t, "c1", o.Approval.CallID)
	assert.Equal(t, "alice", o.Approval.Worker)
	assert.JSONEq(t, `{"text":"one"}`, string(o.Approval.Args))
	assert.NotEmpty(t, o.Approval.Schema)
	assert.Equal(t, o.Approval.Question(), o.Question)
	assert.Contains(t, rec.kinds(), runtime.AskedHuman)

	o, err = start().Run(context.Background(), a, nil) // restarted, no answer yet
	require.NoError(t, err)
	require.Equal(t, runtime.Waiting, o.Status)
	require.NotNil(t, o.Approval, "the approval is read back from the checkpoint")
	assert.Equal(t, "c1", o.Approval.CallID)
	assert.Zero(t, echoed.Load())

	a.Answer = hooks.Edit(json.RawMessage(`{"text":"uno"}`))
	o, err = start().Run(context.Background(), a, nil)
	require.NoError(t, err)
	require.Equal(t, runtime.Waiting, o.Status, "the next call waits too")
	assert.Equal(t, "c2", o.Approval.CallID)
	assert.Equal(t, []string{"uno"}, texts)

	a.Answer = hooks.Reject("two is too many")
	o, err = start().Run(context.Background(), a, nil)
	require.NoError(t, err)
	require.Equal(t, runtime.Checkpointed, o.Status)
	assert.Equal(t, []string{"uno"}, texts, "a rejected call does not run")
	rs := lastResults(model.Requests()[2])
	require.Len(t, rs, 1)
	assert.Equal(t, "The call of echo was refused: the human rejected it: two is too many", rs[0].Content)
	assert.True(t, rs[0].IsError)
	first := lastResults(model.Requests()[1])
	require.Len(t, first, 2)
	assert.Equal(t, "uno", first[1].Content)
}

// Calls the policy does not cover run without asking: another worker's, or another tool.
func TestApprovalPolicyScope(t *testing.T) {
	a := assignment(t, "h6", "Echo.")
	var echoed atomic.Int32
	a.Tools = append(a.Tools, echo(&echoed))
	model := scripted.New("w",
		scripted.Turn{Calls: []tools.Call{call("c1", "echo", map[string]string{"text": "one"})}},
		scripted.Turn{Calls: []tools.Call{call("c2", "checkpoint", adapter.CheckpointArgs{Summary: "ok"})}})
	rt := harnessed.New(model, harnessed.WithHooks(hooks.Approvals(
		hooks.Policy{Tools: []string{"echo"}, Workers: []string{"bob"}},
		hooks.Policy{Tools: []string{"bash"}})))
	o, err := rt.Run(context.Background(), a, nil)
	require.NoError(t, err)
	assert.Equal(t, runtime.Checkpointed, o.Status)
	assert.EqualValues(t, 1, echoed.Load())
}
