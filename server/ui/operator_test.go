package ui_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/models"
	"github.com/agiraph/agiraph/nodes"
	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/providers/scripted"
	"github.com/agiraph/agiraph/server/host"
)

// failingTeam plans n1 and n2 after it, whose worker fails n1 for good; the coordinator
// finishes once the stage is complete.
func failingTeam(string) []nodes.Option {
	coord := scripted.NewFunc("ui-two-step", func(_ context.Context, req providers.Request) (scripted.Turn, error) {
		text, _ := scripted.Last(req)
		switch {
		case len(req.Messages) == 1:
			return turn(req, "",
				scripted.Call("create_work_node", map[string]any{"task": "First."}),
				scripted.Call("create_work_node", map[string]any{"task": "Second.", "deps": []string{"n1"}})), nil
		case strings.Contains(text, "Stage 1 is complete"):
			return turn(req, "", scripted.Call("finish", map[string]string{"output": "finished"})), nil
		}
		return turn(req, "", scripted.Call("wait", map[string]string{})), nil
	})
	worker := scripted.NewFunc("ui-two-step-worker", func(_ context.Context, req providers.Request) (scripted.Turn, error) {
		if strings.Contains(req.Messages[0].Text(), "First.") {
			return scripted.Turn{}, errors.New("the model is down")
		}
		return turn(req, "", scripted.Call("publish", map[string]string{"summary": "done"})), nil
	})
	return []nodes.Option{
		nodes.WithCoordinatorModel(coord.Name()), nodes.WithModel(worker.Name()),
		nodes.WithModelOptions(models.WithModels(coord, worker), models.WithoutRetry()),
		nodes.WithTick(20 * time.Millisecond), nodes.WithMaxAttempts(1),
	}
}

// A person opens a failed node on the board and skips it with a note: the node after it runs,
// and the run completes.
func TestSkipANodeFromTheBoard(t *testing.T) {
	s := &site{t: t, root: t.TempDir(), team: failingTeam}
	s.start()
	t.Cleanup(s.stop)
	ctx := browser(t)
	require.Equal(t, http.StatusCreated, s.api("POST", "/agents", map[string]string{"id": "ops", "goal": "Two steps."}, nil))

	step(t, ctx, "open the failed node",
		chromedp.Navigate(s.srv.LoginURL(s.url(""))), chromedp.WaitVisible("#sidebar", chromedp.ByQuery),
		chromedp.Navigate(s.url("/#/a/ops/board/n1")),
		waitText(".node-panel h3", "n1 · failed"),
		chromedp.WaitVisible(`.node-panel button[data-op=retry]`, chromedp.ByQuery))
	step(t, ctx, "skip it",
		chromedp.SendKeys(`.node-panel form.skip input`, "not needed", chromedp.ByQuery),
		chromedp.Click(`.node-panel button[data-op=skip]`, chromedp.ByQuery),
		waitText(".node-panel h3", "n1 · skipped"))
	end := time.Now().Add(wait)
	var sum host.Summary
	for sum.Status != host.StatusComplete && time.Now().Before(end) {
		time.Sleep(20 * time.Millisecond)
		s.api("GET", "/agents/ops", nil, &sum)
	}
	require.Equal(t, host.StatusComplete, sum.Status)
	var n struct{ Node nodes.Node }
	s.api("GET", "/agents/ops/board/n1", nil, &n)
	assert.Equal(t, "skipped by the human: not needed", n.Node.Summary)
}
