package ui_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
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
	s.awaitAgent("ops", wait, reached(host.StatusComplete))
	var n struct{ Node nodes.Node }
	s.api("GET", "/agents/ops/board/n1", nil, &n)
	assert.Equal(t, "skipped by the human: not needed", n.Node.Summary)
}

// loadGate stands between the browser and the server and holds one of the browser's loads of a
// path (GET requests, numbered from 1) until it is released.
type loadGate struct {
	path    string
	hold    int32
	armed   atomic.Bool
	loads   atomic.Int32
	release chan struct{}
	served  chan int32 // the number of each load answered
}

func newLoadGate(path string, hold int32) *loadGate {
	return &loadGate{path: path, hold: hold, release: make(chan struct{}), served: make(chan int32, 100)}
}

func (g *loadGate) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !g.armed.Load() || r.Method != http.MethodGet || r.URL.Path != g.path {
			next.ServeHTTP(w, r)
			return
		}
		n := g.loads.Add(1)
		if n == g.hold {
			<-g.release
		}
		next.ServeHTTP(w, r)
		g.served <- n
	})
}

// await waits until load n has been answered.
func (g *loadGate) await(t *testing.T, n int32, within time.Duration) {
	t.Helper()
	end := time.After(within)
	for {
		select {
		case got := <-g.served:
			if got == n {
				return
			}
		case <-end:
			t.Fatalf("the page's load %d of %s was not answered", n, g.path)
		}
	}
}

// failedNode starts an agent whose n1 fails, behind a loadGate on n1's loads, and waits for it.
func failedNode(t *testing.T, g *loadGate) *site {
	s := &site{t: t, root: t.TempDir(), team: failingTeam, wrap: g.wrap}
	s.start()
	t.Cleanup(func() {
		select {
		case <-g.release:
		default:
			close(g.release)
		}
		s.stop()
	})
	require.Equal(t, http.StatusCreated, s.api("POST", "/agents", map[string]string{"id": "ops", "goal": "Two steps."}, nil))
	require.Eventually(t, func() bool {
		var n struct{ Node nodes.Node }
		s.api("GET", "/agents/ops/board/n1", nil, &n)
		return n.Node.Status == nodes.NodeFailed
	}, wait, 20*time.Millisecond)
	g.armed.Store(true)
	return s
}

// openFresh opens a path of the page in a new page load, so that the page loads the board before
// the agent's events come.
func openFresh(s *site, path string) chromedp.Action {
	return chromedp.Tasks{
		chromedp.Navigate(s.srv.LoginURL(s.url(""))), chromedp.WaitVisible("#sidebar", chromedp.ByQuery),
		chromedp.Navigate("about:blank"),
		chromedp.Navigate(s.url(path)),
	}
}

// The node panel shows one node, from the latest answer, when the answers to its loads come out
// of order: here the page's first load of n1 is held until a later one has been answered (which
// the browser sends only if the page's requests bypass its HTTP cache).
func TestNodePanelKeepsTheLatestAnswer(t *testing.T) {
	g := newLoadGate("/agents/ops/board/n1", 1)
	s := failedNode(t, g)
	ctx := browser(t)
	step(t, ctx, "open the failed node", openFresh(s, "/#/a/ops/board/n1"))
	g.await(t, 2, 10*time.Second) // under Chromium's 20 s lock on a cached address
	step(t, ctx, "see it", waitText(".node-panel h3", "n1 · failed"))
	close(g.release)
	g.await(t, 1, wait)
	// The stale answer has been sent; give the page what it takes to show it, if it would.
	err := chromedp.Run(ctx, chromedp.Poll(`document.querySelectorAll('.node-panel .node-detail').length > 1`, nil,
		chromedp.WithPollingInterval(20*time.Millisecond), chromedp.WithPollingTimeout(time.Second)))
	require.ErrorIs(t, err, chromedp.ErrPollingTimeout, "the panel shows n1 more than once")
	var details int
	require.NoError(t, chromedp.Run(ctx, chromedp.Evaluate(`document.querySelectorAll('.node-panel .node-detail').length`, &details)))
	assert.Equal(t, 1, details)
}

// A note being typed to skip a node stays when the panel is reloaded for the node's events: here
// the page's second load of n1 (for the events it replays) is held until the note is typed.
func TestNodePanelKeepsATypedNote(t *testing.T) {
	g := newLoadGate("/agents/ops/board/n1", 2)
	s := failedNode(t, g)
	ctx := browser(t)
	step(t, ctx, "type a note",
		openFresh(s, "/#/a/ops/board/n1"),
		waitText(".node-panel h3", "n1 · failed"),
		chromedp.SetValue(`.node-panel form.skip input`, "not needed", chromedp.ByQuery)) // as typed, without the keys' timing
	close(g.release)
	g.await(t, 2, wait)
	var note string
	step(t, ctx, "see it kept",
		waitAttr(".node-panel", "loaded", "2"),
		chromedp.Value(`.node-panel form.skip input`, &note, chromedp.ByQuery))
	assert.Equal(t, "not needed", note)
}
