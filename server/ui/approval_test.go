package ui_test

import (
	"context"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/hooks"
	"github.com/agiraph/agiraph/models"
	"github.com/agiraph/agiraph/nodes"
	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/providers/scripted"
	"github.com/agiraph/agiraph/server/host"
	"github.com/agiraph/agiraph/tools"
)

// approvalTeam's coordinator sends a mail, a call held for the human's approval, and finishes
// with the tool's result.
func approvalTeam(string) []nodes.Option {
	coord := scripted.NewFunc("ui-mailer", func(_ context.Context, req providers.Request) (scripted.Turn, error) {
		if _, results := scripted.Last(req); len(results) == 1 && results[0].Name == "send_mail" {
			return turn(req, "", scripted.Call("finish", map[string]string{"output": results[0].Content})), nil
		}
		return turn(req, "", scripted.Call("send_mail", map[string]string{"to": "all@example.com"})), nil
	})
	send := tools.Func("send_mail", "Send the report.", func(_ context.Context, a struct {
		To string `json:"to"`
	}) (string, error) {
		return "sent to " + a.To, nil
	})
	return []nodes.Option{
		nodes.WithCoordinatorModel(coord.Name()), nodes.WithModel(coord.Name()), nodes.WithCoordinatorTools(send),
		nodes.WithModelOptions(models.WithModels(coord), models.WithoutRetry()),
		nodes.WithTick(20 * time.Millisecond),
		nodes.WithHooks(hooks.Approvals(hooks.Policy{Tools: []string{"send_mail"}})),
	}
}

// A person sees the coordinator's call waiting for approval, with its arguments; an edit the
// tool's schema refuses is refused with a toast, and an edit that fits runs the call.
func TestBrowserApproval(t *testing.T) {
	s := &site{t: t, root: t.TempDir(), team: approvalTeam}
	s.start()
	t.Cleanup(s.stop)
	ctx := browser(t)
	require.Equal(t, 201, s.api("POST", "/agents", map[string]string{"id": "mailer", "goal": "Mail the report."}, nil))

	step(t, ctx, "open the agent",
		chromedp.Navigate(s.url("/#/a/mailer")),
		chromedp.WaitVisible("#token-dialog", chromedp.ByQuery),
		chromedp.SendKeys("#token-input", s.srv.Token(), chromedp.ByQuery),
		chromedp.Click("#token-form button[type=submit]", chromedp.ByQuery),
		chromedp.WaitVisible(`.bubble.approval textarea`, chromedp.ByQuery),
		waitText(".bubble.approval", "send_mail"))
	var args string
	step(t, ctx, "read the arguments", chromedp.Value(`.bubble.approval textarea`, &args, chromedp.ByQuery))
	assert.JSONEq(t, `{"to":"all@example.com"}`, args)
	shot(t, ctx, "approval")

	step(t, ctx, "run it edited, wrongly",
		chromedp.SetValue(`.bubble.approval textarea`, `{"to": 7}`, chromedp.ByQuery),
		chromedp.Click(`.bubble.approval button:nth-of-type(2)`, chromedp.ByQuery),
		waitText(".toast", "the edited arguments of send_mail"))
	step(t, ctx, "run it edited",
		chromedp.SetValue(`.bubble.approval textarea`, `{"to": "ops@example.com"}`, chromedp.ByQuery),
		chromedp.Click(`.bubble.approval button:nth-of-type(2)`, chromedp.ByQuery),
		waitText(".timeline", "Answered: edit"))
	assert.Equal(t, "sent to ops@example.com", s.awaitAgent("mailer", wait, reached(host.StatusComplete)).Output)
}
