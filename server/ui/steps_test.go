package ui_test

import (
	"context"
	"net/http"
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

// askingTeam's coordinator spawns Dana, asks the human for a colour and finishes with the answer.
func askingTeam(string) []nodes.Option {
	coord := scripted.NewFunc("asking-coordinator", func(_ context.Context, req providers.Request) (scripted.Turn, error) {
		if said, ok := scripted.Results(req)["ask_human"]; ok {
			return turn(req, "", scripted.Call("finish", map[string]string{"output": "Painted: " + said})), nil
		}
		return turn(req, "", scripted.Call("spawn_worker", map[string]string{"name": "Dana"}),
			scripted.Call("ask_human", map[string]string{"question": "Which colour?"})), nil
	})
	return []nodes.Option{
		nodes.WithCoordinatorModel(coord.Name()), nodes.WithModel(coord.Name()),
		nodes.WithModelOptions(models.WithModels(coord), models.WithoutRetry()),
		nodes.WithTick(20 * time.Millisecond),
	}
}

// A person opens a finished run's steps, sees each tick and the question pending at one, and
// forks the run from there with another answer: the fork finishes with it, and the run forked
// keeps its own output.
func TestBrowserStepsAndFork(t *testing.T) {
	s := &site{t: t, root: t.TempDir(), team: askingTeam}
	s.start()
	t.Cleanup(s.stop)
	require.Equal(t, http.StatusCreated, s.api("POST", "/agents", map[string]string{"id": "painter", "goal": "Paint."}, nil))
	s.awaitAgent("painter", wait, reached(host.StatusWaiting))
	require.Equal(t, http.StatusOK, s.api("POST", "/agents/painter/respond", map[string]string{"response": "blue"}, nil))
	run := s.awaitAgent("painter", wait, reached(host.StatusComplete)).Run

	ctx := browser(t)
	step(t, ctx, "open the steps", chromedp.Navigate(s.srv.LoginURL(s.url(""))), chromedp.WaitVisible("#sidebar", chromedp.ByQuery),
		chromedp.Navigate(s.url("/#/a/painter")), follow(`#sidebar a[href$="/steps"]`),
		chromedp.WaitVisible(`.steps a[data-tick]`, chromedp.ByQuery),
		waitText(".step-panel", "Painted: The human answered: blue"))
	shot(t, ctx, "steps")
	var ticks int
	step(t, ctx, "count the ticks", chromedp.Evaluate(`document.querySelectorAll('.steps a[data-tick]').length`, &ticks))
	assert.Greater(t, ticks, 1)

	step(t, ctx, "open the tick with the question",
		chromedp.Poll(`(() => { const q = [...document.querySelectorAll('.steps a[data-tick]')].find((a) => a.textContent.includes('question')); if (q) q.click(); return !!q; })()`, nil,
			chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(wait)),
		waitText(".step-panel .question", "Which colour?"),
		waitText(".step-panel .diff", "Dana"))
	shot(t, ctx, "step")

	step(t, ctx, "fork from there with another answer",
		chromedp.SendKeys(`form.fork input[name=answer]`, "green", chromedp.ByQuery),
		chromedp.Click(`form.fork button[type=submit]`, chromedp.ByQuery),
		chromedp.Poll(`location.hash === '#/a/painter'`, nil, chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(wait)))
	sum := s.awaitAgent("painter", wait, func(sum host.Summary) bool { return sum.Status == host.StatusComplete && sum.Run != run })
	assert.Equal(t, "Painted: The human answered: green", sum.Output)

	var steps struct{ Steps []struct{ Output string } }
	require.Equal(t, http.StatusOK, s.api("GET", "/agents/painter/runs/"+run+"/steps", nil, &steps))
	require.NotEmpty(t, steps.Steps)
	assert.Equal(t, "Painted: The human answered: blue", steps.Steps[len(steps.Steps)-1].Output)

	// Forked as a new agent from the same tick, with a third answer: the new agent is listed and
	// shown, and its run finishes with that answer.
	step(t, ctx, "open the tick with the question again", chromedp.Navigate(s.url("/#/a/painter/steps/"+run)),
		chromedp.WaitVisible(`.steps a[data-tick]`, chromedp.ByQuery),
		chromedp.Poll(`(() => { const q = [...document.querySelectorAll('.steps a[data-tick]')].find((a) => a.textContent.includes('question')); if (q) q.click(); return !!q; })()`, nil,
			chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(wait)),
		waitText(".step-panel .question", "Which colour?"))
	step(t, ctx, "fork as a new agent",
		chromedp.SendKeys(`form.fork input[name=answer]`, "red", chromedp.ByQuery),
		chromedp.SendKeys(`form.fork input[name=agent]`, "painter-2", chromedp.ByQuery),
		chromedp.Click(`form.fork button[value=agent]`, chromedp.ByQuery),
		chromedp.Poll(`location.hash === '#/a/painter-2'`, nil, chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(wait)),
		chromedp.WaitVisible(`#sidebar a[href="#/a/painter-2"]`, chromedp.ByQuery))
	shot(t, ctx, "forked-agent")
	sum = s.awaitAgent("painter-2", wait, reached(host.StatusComplete))
	assert.Equal(t, "Painted: The human answered: red", sum.Output)
}
