package server_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/hooks"
	"github.com/agiraph/agiraph/models"
	"github.com/agiraph/agiraph/nodes"
	"github.com/agiraph/agiraph/nodes/demo"
	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/providers/scripted"
	"github.com/agiraph/agiraph/server/host"
	"github.com/agiraph/agiraph/tools"
)

// An agent whose squad holds the coordinator's send_mail for approval shows the pending call
// in its summary; the API refuses verdicts the tool's schema does not accept, and the MCP
// server's answer_question takes an edit, with which the call runs.
func TestApprovalOverAPIAndMCP(t *testing.T) {
	team := func(id string) []nodes.Option {
		opts := mailTeam(id)
		if id == "mailer" { // this agent's policy
			opts = append(opts, nodes.WithHooks(hooks.Approvals(hooks.Policy{Tools: []string{"send_*"}})))
		}
		return opts
	}
	c := start(t, t.TempDir(), team)
	require.Equal(t, http.StatusCreated, c.do("POST", "/agents", map[string]string{"id": "mailer", "goal": "Mail the report."}, nil))
	s := c.await("mailer", host.StatusWaiting)
	assert.Equal(t, "coordinator", s.WaitingFor)
	require.NotNil(t, s.Approval)
	assert.Equal(t, "send_mail", s.Approval.Tool)
	assert.Equal(t, "coordinator", s.Approval.Worker)
	assert.JSONEq(t, `{"to":"all@example.com"}`, string(s.Approval.Args))
	assert.Equal(t, s.Approval.Question(), s.Question)

	msg := c.errorOf("POST", "/agents/mailer/respond", map[string]any{"verdict": map[string]any{"approve": true, "args": map[string]any{"to": 7}}}, http.StatusBadRequest)
	assert.Contains(t, msg, "the edited arguments of send_mail")
	msg = c.errorOf("POST", "/agents/mailer/respond", map[string]any{"response": "yes", "verdict": map[string]any{"approve": true}}, http.StatusBadRequest)
	assert.Contains(t, msg, "either a response or a verdict")
	msg = c.errorOf("POST", "/agents/mailer/respond", map[string]any{"response": "sure"}, http.StatusBadRequest)
	assert.Contains(t, msg, "answer the call of send_mail with approve")

	cs, err := mcpSession(t, c, c.ts.Client())
	require.NoError(t, err)
	defer cs.Close()
	text, isErr := mcpCall(t, cs, "answer_question", map[string]any{"agent": "mailer",
		"verdict": map[string]any{"approve": true, "args": map[string]any{"to": "ops@example.com"}}})
	require.False(t, isErr, text)
	done := c.await("mailer", host.StatusComplete)
	assert.Equal(t, "sent to ops@example.com", done.Output)
}

// mailTeam is the team of agent id: a coordinator that sends the report by mail (the tool
// send_mail), then finishes with what the mail tool said.
func mailTeam(string) []nodes.Option {
	coord := scripted.NewFunc("mail-coordinator", func(_ context.Context, req providers.Request) (scripted.Turn, error) {
		if _, results := scripted.Last(req); len(results) == 1 && results[0].Name == "send_mail" {
			return turn(req, scripted.Call("finish", map[string]string{"output": results[0].Content})), nil
		}
		return turn(req, scripted.Call("send_mail", map[string]string{"to": "all@example.com"})), nil
	})
	send := tools.Func("send_mail", "Send the report.", func(_ context.Context, a struct {
		To string `json:"to"`
	}) (string, error) {
		return "sent to " + a.To, nil
	})
	return []nodes.Option{
		nodes.WithCoordinatorModel(coord.Name()), nodes.WithModel(demo.WorkerModel), nodes.WithCoordinatorTools(send),
		nodes.WithModelOptions(models.WithModels(append(demo.Models(), coord)...), models.WithoutRetry()),
		nodes.WithTick(20 * time.Millisecond),
	}
}

// An agent's approval policy is given when it is created, and kept: a server started again on
// the root holds the agent's calls as well.
func TestApprovalPolicyOfAnAgent(t *testing.T) {
	root := t.TempDir()
	c := start(t, root, mailTeam)
	msg := c.errorOf("POST", "/agents", map[string]any{"goal": "Mail.", "approvals": map[string]any{"tools": []string{"send_["}}}, http.StatusBadRequest)
	assert.Contains(t, msg, `pattern "send_["`)

	require.Equal(t, http.StatusCreated, c.do("POST", "/agents", map[string]any{"id": "careful", "goal": "Mail the report.",
		"approvals": map[string]any{"tools": []string{"send_*"}}}, nil))
	s := c.await("careful", host.StatusWaiting)
	require.NotNil(t, s.Approval)
	assert.Equal(t, "send_mail", s.Approval.Tool)
	require.Equal(t, http.StatusCreated, c.do("POST", "/agents", map[string]any{"id": "trusted", "goal": "Mail the report."}, nil))
	assert.Equal(t, "sent to all@example.com", c.await("trusted", host.StatusComplete).Output, "an agent without a policy")
	require.NoError(t, c.srv.Close())

	c = start(t, root, mailTeam)
	s = c.await("careful", host.StatusWaiting)
	require.NotNil(t, s.Approval, "the policy is the agent's after a restart")
	require.Equal(t, http.StatusOK, c.do("POST", "/agents/careful/respond", map[string]any{"verdict": map[string]any{"approve": false, "reason": "not today"}}, nil))
	done := c.await("careful", host.StatusComplete)
	assert.Contains(t, done.Output, "not today")
}
