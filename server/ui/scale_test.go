package ui_test

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	cdpruntime "github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/models"
	"github.com/agiraph/agiraph/nodes"
	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/providers/scripted"
	"github.com/agiraph/agiraph/server/host"
	"github.com/agiraph/agiraph/tools"
)

// The scale of TestBrowserAtScale: nodes, workers, and reads each worker makes per node (each
// read is two events), so that a run logs about 10,000 events.
const (
	scaleNodes   = 200
	scaleWorkers = 50
	scaleReads   = 23
)

// bigTeam is a coordinator that spawns scaleWorkers workers and puts scaleNodes nodes on the
// board in its first turn, and workers that read their spec scaleReads times in one turn, then
// publish.
func bigTeam(string) []nodes.Option {
	coord := scripted.NewFunc("big-coordinator", func(_ context.Context, req providers.Request) (scripted.Turn, error) {
		text, _ := scripted.Last(req)
		switch {
		case len(req.Messages) == 1:
			var calls []tools.Call
			for w := range scaleWorkers {
				calls = append(calls, scripted.Call("spawn_worker", map[string]any{"name": fmt.Sprintf("W%02d", w)}))
			}
			for n := range scaleNodes {
				calls = append(calls, scripted.Call("create_work_node", map[string]any{
					"task":   fmt.Sprintf("Task %d: read your spec, then publish.", n+1),
					"worker": fmt.Sprintf("W%02d", n%scaleWorkers),
				}))
			}
			return turn(req, "Splitting the goal into 200 nodes.", calls...), nil
		case strings.Contains(text, "Stage 1 is complete"):
			return turn(req, "All done.", scripted.Call("finish", map[string]string{"output": "# Done\n\nAll 200 nodes published."})), nil
		}
		return turn(req, "", scripted.Call("wait", map[string]string{})), nil
	})
	task := regexp.MustCompile(`Task (\d+):`)
	worker := scripted.NewFunc("big-worker", func(_ context.Context, req providers.Request) (scripted.Turn, error) {
		var id string
		for _, m := range req.Messages {
			for _, p := range m.Parts {
				if sub := task.FindStringSubmatch(p.Text); sub != nil {
					id = "n" + sub[1]
				}
			}
		}
		last := req.Messages[len(req.Messages)-1]
		for _, p := range last.Parts {
			if p.Type == providers.ToolResultPart && p.ToolResult.Name == "read_file" {
				return turn(req, "", scripted.Call("publish", map[string]string{"summary": "read " + id})), nil
			}
		}
		var calls []tools.Call
		for range scaleReads {
			calls = append(calls, scripted.Call("read_file", map[string]string{"path": "nodes/" + id + "/_spec.md"}))
		}
		return turn(req, "Reading "+id+".", calls...), nil
	})
	return []nodes.Option{
		nodes.WithCoordinatorModel(coord.Name()), nodes.WithModel(worker.Name()),
		nodes.WithModelOptions(models.WithModels(coord, worker), models.WithoutRetry()),
		nodes.WithTick(20 * time.Millisecond),
	}
}

// The page stays usable with 200 nodes, 50 workers and about 10,000 events: every event reaches
// it once, and the figures (first render, catching up, switching views, scrolling) are logged.
func TestBrowserAtScale(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes the run of 10,000 events too slow to say anything; .ci/run runs this test without -race")
	}
	chromium(t)
	s := &site{t: t, root: t.TempDir(), team: bigTeam}
	s.start()
	t.Cleanup(s.stop)
	require.Equal(t, 201, s.api("POST", "/agents", map[string]string{"id": "big", "goal": "A big run."}, nil))
	s.awaitAgent("big", 5*time.Minute, reached(host.StatusComplete))
	var all struct{ Events []struct{ Seq int64 } }
	s.api("GET", "/agents/big/events?limit=100000", nil, &all)
	last := all.Events[len(all.Events)-1].Seq
	t.Logf("the run logged %d events", len(all.Events))
	require.GreaterOrEqual(t, len(all.Events), 10_000)

	ctx := browser(t)
	login := s.url("/?token=" + s.srv.Token())
	var firstRender, caughtUp float64
	step(t, ctx, "open the agent",
		chromedp.Navigate(login),
		chromedp.Navigate(s.url("/#/a/big")),
		chromedp.WaitVisible(".timeline .bubble", chromedp.ByQuery),
		chromedp.Evaluate(`window.agiraphFirstRender`, &firstRender),
		waitAttr("body", "lastSeq", fmt.Sprint(last)),
		chromedp.Evaluate(`performance.now()`, &caughtUp))
	var count, workers int
	step(t, ctx, "count", chromedp.Evaluate(`Number(document.body.dataset.events)`, &count),
		chromedp.Evaluate(`document.querySelectorAll('#sidebar a[href*="/w/"]').length`, &workers))
	assert.Equal(t, len(all.Events), count, "events the page took, against the server's log")
	assert.Equal(t, scaleWorkers, workers)

	// Switching views, each timed from the change of address to two frames later.
	timed := func(hash, ready string) float64 {
		var ms float64
		step(t, ctx, "open "+hash, chromedp.Evaluate(fmt.Sprintf(`(async () => {
			const t0 = performance.now();
			location.hash = %q;
			for (;;) {
				await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
				if (document.querySelector(%q)) return performance.now() - t0;
			}
		})()`, hash, ready), &ms, func(p *cdpruntime.EvaluateParams) *cdpruntime.EvaluateParams { return p.WithAwaitPromise(true) }))
		return ms
	}
	board := timed("#/a/big/board", `g.node[data-node="n200"]`)
	var nodesDrawn int
	step(t, ctx, "count nodes", chromedp.Evaluate(`document.querySelectorAll('g.node').length`, &nodesDrawn))
	assert.Equal(t, scaleNodes, nodesDrawn)
	worker := timed("#/a/big/w/w07", `.timeline .vlist-row`)
	coordinator := timed("#/a/big", `.timeline .bubble`)

	// Scrolling the coordinator's timeline from the end to the start and back.
	var scroll float64
	step(t, ctx, "scroll", chromedp.Evaluate(`(async () => {
		const list = document.querySelector('.timeline');
		const frame = () => new Promise((r) => requestAnimationFrame(r));
		const t0 = performance.now();
		for (const top of [0, list.scrollHeight / 2, list.scrollHeight]) { list.scrollTop = top; await frame(); await frame(); }
		return (performance.now() - t0) / 3;
	})()`, &scroll, func(p *cdpruntime.EvaluateParams) *cdpruntime.EvaluateParams { return p.WithAwaitPromise(true) }))
	var rows int
	step(t, ctx, "rows in the page", chromedp.Evaluate(`document.querySelectorAll('.timeline .vlist-row').length`, &rows))
	assert.Less(t, rows, 200, "the timeline keeps only the rows in view in the page")
	shot(t, ctx, "scale-board")

	t.Logf("figures at %d nodes, %d workers, %d events: first render %.0f ms after navigation; all events in %.0f ms; "+
		"board %.0f ms, a worker's view %.0f ms, the coordinator's view %.0f ms; a scroll jump %.0f ms; %d timeline rows in the page",
		scaleNodes, scaleWorkers, len(all.Events), firstRender, caughtUp, board, worker, coordinator, scroll, rows)
}
