package ui_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/checkpoint"
	"github.com/agiraph/agiraph/graph"
	"github.com/agiraph/agiraph/server"
	"github.com/agiraph/agiraph/server/a2a"
)

// note is the state of the notes graph: a draft on a topic, the answer to "publish?", the output.
type note struct {
	Topic  string `json:"topic"`
	Draft  string `json:"draft,omitempty"`
	Answer string `json:"answer,omitempty"`
	Output string `json:"output,omitempty"`
}

// notesGraph drafts a note, asks whether to publish it (an interrupt) and publishes it or not.
func notesGraph(t *testing.T) server.Option {
	g := graph.New[note]()
	g.AddNode("draft", func(_ context.Context, n note) (note, error) {
		return note{Draft: "A short note on " + n.Topic + "."}, nil
	})
	g.AddNode("ask", func(ctx context.Context, n note) (note, error) {
		answer, err := graph.Interrupt[string](ctx, "Publish this? "+n.Draft)
		return note{Answer: answer}, err
	})
	g.AddNode("publish", func(_ context.Context, n note) (note, error) {
		if n.Answer != "yes" {
			return note{Output: fmt.Sprintf("Not published (%s).", n.Answer)}, nil
		}
		return note{Output: "Published: " + n.Draft}, nil
	})
	g.AddEdge(graph.START, "draft")
	g.AddEdge("draft", "ask")
	g.AddEdge("ask", "publish")
	g.AddEdge("publish", graph.END)
	return serve(t, "notes", g, func(text string) note { return note{Topic: text} }, func(n note) string { return n.Output })
}

// serve serves the graph g as name, its checkpoints in memory; in makes its input of a message's
// text and out an answer of its final state.
func serve[S any](t *testing.T, name string, g *graph.StateGraph[S], in func(string) S, out func(S) string) server.Option {
	t.Helper()
	saver := checkpoint.NewMemory()
	compiled, err := g.Compile(graph.WithCheckpointer(saver))
	require.NoError(t, err)
	return server.WithGraph(a2a.Graph[S]{Name: name, Graph: compiled, Saver: saver, In: in, Out: out})
}

// graphSite starts a site with the option that serves a graph, and returns it with a new thread's ID.
func graphSite(t *testing.T, withGraph server.Option) (*site, string) {
	t.Helper()
	s := &site{t: t, root: t.TempDir(), team: team, opts: []server.Option{withGraph}}
	s.start()
	t.Cleanup(s.stop)
	var th struct {
		ThreadID string `json:"thread_id"`
	}
	require.Equal(t, http.StatusOK, s.api("POST", "/langgraph/threads", map[string]any{}, &th))
	return s, th.ThreadID
}

// A person opens the Graphs view, finds a thread of a graph waiting for input and sees the
// question; once answered and finished, sees its steps and what the step that answered changed,
// forks the thread there with another answer written into the state, and sees the new branch's
// result; the old branch stays.
func TestBrowserGraphSteps(t *testing.T) {
	s, thread := graphSite(t, notesGraph(t))
	var out map[string]any
	require.Equal(t, http.StatusOK, s.api("POST", "/langgraph/threads/"+thread+"/runs/wait",
		map[string]any{"assistant_id": "notes", "input": map[string]any{"topic": "kites"}}, &out))
	require.Contains(t, out, "__interrupt__")

	ctx := browser(t)
	step(t, ctx, "open the graphs", chromedp.Navigate(s.srv.LoginURL(s.url(""))), chromedp.WaitVisible("#graphs", chromedp.ByQuery),
		follow("#graphs"), follow(`a[data-graph="notes"]`), follow(fmt.Sprintf(`a[data-thread=%q]`, thread)),
		waitText(".step-panel .question", "Publish this? A short note on kites."),
		waitText(".graph-tasks", "ask · waits for input"))

	require.Equal(t, http.StatusOK, s.api("POST", "/langgraph/threads/"+thread+"/runs/wait",
		map[string]any{"assistant_id": "notes", "command": map[string]any{"resume": "yes"}}, &out))
	require.Equal(t, "Published: A short note on kites.", out["output"])
	step(t, ctx, "see the thread finished", chromedp.Reload(),
		chromedp.WaitVisible(`.graph-steps a[data-checkpoint]`, chromedp.ByQuery),
		waitText(".step-panel .graph-values", "Published: A short note on kites."),
		waitText(".step-panel .diff", "task publish"))
	shot(t, ctx, "graph-steps")

	step(t, ctx, "open the step that answered", clickStep("ask"),
		waitText(".step-panel .diff", "task ask"), waitText(".step-panel .diff", "answer: — → yes"))
	shot(t, ctx, "graph-step")

	step(t, ctx, "fork from there with another answer",
		chromedp.SetValue(`form.graph-fork textarea[name=edit]`, `{"answer": "no"}`, chromedp.ByQuery),
		chromedp.Click(`form.graph-fork button[type=submit]`, chromedp.ByQuery),
		waitText(".step-panel .graph-values", "Not published (no)."),
		waitText(".branches", "Branches"))
	shot(t, ctx, "graph-fork")

	var state struct{ Values note }
	require.Equal(t, http.StatusOK, s.api("GET", "/langgraph/threads/"+thread+"/state", nil, &state))
	assert.Equal(t, "Not published (no).", state.Values.Output)
	var history []struct{ Values note }
	require.Equal(t, http.StatusOK, s.api("POST", "/langgraph/threads/"+thread+"/history", map[string]any{"limit": 100}, &history))
	var outputs []string
	for _, st := range history {
		if st.Values.Output != "" {
			outputs = append(outputs, st.Values.Output)
		}
	}
	assert.ElementsMatch(t, []string{"Not published (no).", "Published: A short note on kites."}, outputs)
}

// clickStep clicks the first step of the timeline whose link says what.
func clickStep(what string) chromedp.Action {
	return chromedp.Poll(fmt.Sprintf(`(() => { const q = [...document.querySelectorAll('.graph-steps a[data-checkpoint]')].find((a) => a.textContent.includes(%q)); if (q) q.click(); return !!q; })()`, what), nil,
		chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(wait))
}

// split is the state of the split graph: a topic, and a draft and a review of it written by two
// tasks of one superstep.
type split struct {
	Topic  string `json:"topic"`
	Draft  string `json:"draft,omitempty"`
	Review string `json:"review,omitempty"`
}

// longReview is the review the split graph writes: longer than the Graphs view shows unfolded.
const longReview = "A careful review of the draft on kites, which reads well, names its sources and could say more about the wind."

// splitGraph runs drafter and reviewer in one superstep, each writing a field of its own.
func splitGraph(t *testing.T) server.Option {
	g := graph.New[split]()
	g.AddNode("drafter", func(_ context.Context, s split) (split, error) {
		return split{Draft: "A draft on " + s.Topic + "."}, nil
	})
	g.AddNode("reviewer", func(context.Context, split) (split, error) { return split{Review: longReview}, nil })
	g.AddEdge(graph.START, "drafter")
	g.AddEdge(graph.START, "reviewer")
	g.AddEdge("drafter", graph.END)
	g.AddEdge("reviewer", graph.END)
	return serve(t, "split", g, func(text string) split { return split{Topic: text} }, func(s split) string { return s.Draft })
}

// A person opens the step a superstep of two tasks made and sees, beside what it changed, what
// each task wrote: the drafter its draft, the reviewer its review, folded for its length until
// opened.
func TestBrowserGraphTaskWrites(t *testing.T) {
	s, thread := graphSite(t, splitGraph(t))
	require.Equal(t, http.StatusOK, s.api("POST", "/langgraph/threads/"+thread+"/runs/wait",
		map[string]any{"assistant_id": "split", "input": map[string]any{"topic": "kites"}}, nil))

	ctx := browser(t)
	wrote := `.step-changes .task-writes li[data-task=%q]`
	step(t, ctx, "open the thread's last step", chromedp.Navigate(s.srv.LoginURL(s.url(""))), chromedp.WaitVisible("#graphs", chromedp.ByQuery),
		follow("#graphs"), follow(`a[data-graph="split"]`), follow(fmt.Sprintf(`a[data-thread=%q]`, thread)),
		waitText(".step-panel .diff", "task drafter, reviewer"),
		waitText(fmt.Sprintf(wrote, "drafter"), "draft: A draft on kites."),
		waitText(fmt.Sprintf(wrote+" details.fold summary", "reviewer"), longReview[:80]+"…"))
	var keys map[string][]string
	step(t, ctx, "read the keys each task wrote", chromedp.Evaluate(`Object.fromEntries([...document.querySelectorAll('.step-changes .task-writes > li')].map((li) =>
		[li.dataset.task, [...li.querySelectorAll('li[data-key]')].map((k) => k.dataset.key)]))`, &keys))
	assert.Equal(t, map[string][]string{"drafter": {"draft"}, "reviewer": {"review"}}, keys)
	shot(t, ctx, "graph-task-writes")

	var open bool
	step(t, ctx, "unfold the review", chromedp.Click(fmt.Sprintf(wrote+" details.fold summary", "reviewer"), chromedp.ByQuery),
		waitText(fmt.Sprintf(wrote+" details.fold pre", "reviewer"), longReview),
		chromedp.Evaluate(fmt.Sprintf(`document.querySelector(%q).open`, fmt.Sprintf(wrote+" details.fold", "reviewer")), &open))
	assert.True(t, open)
}
