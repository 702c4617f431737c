package graph_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/agiraph/agiraph/checkpoint"
	"github.com/agiraph/agiraph/graph"
	"github.com/agiraph/agiraph/internal/spantest"
)

// outline draws the spans as a tree, one span a line: its name, the attributes named in show
// and "!error" for an error status, children indented under their parent and sorted, so that
// tasks of one step that ran concurrently draw the same way every time.
func outline(spans spantest.Spans, show ...attribute.Key) string {
	children := map[trace.SpanID]spantest.Spans{}
	ids := map[trace.SpanID]bool{}
	for _, s := range spans {
		ids[s.SpanContext.SpanID()] = true
	}
	for _, s := range spans {
		p := s.Parent.SpanID()
		if !ids[p] {
			p = trace.SpanID{} // a root of what was recorded
		}
		children[p] = append(children[p], s)
	}
	var draw func(parent trace.SpanID, depth int) []string
	draw = func(parent trace.SpanID, depth int) []string {
		var blocks []string
		for _, s := range children[parent] {
			line := strings.Repeat("  ", depth) + s.Name
			for _, kv := range s.Attributes {
				if slices.Contains(show, kv.Key) {
					line += fmt.Sprintf(" %s=%s", strings.TrimPrefix(string(kv.Key), "agiraph.graph."), kv.Value.String())
				}
			}
			if s.Status.Code == codes.Error {
				line += " !error"
			}
			blocks = append(blocks, strings.Join(append([]string{line}, draw(s.SpanContext.SpanID(), depth+1)...), "\n"))
		}
		slices.Sort(blocks)
		return blocks
	}
	return strings.Join(draw(trace.SpanID{}, 0), "\n")
}

// shown are the attributes the outlines of these tests draw: those that do not change from run to
// run (checkpoint IDs do; they are checked on their own).
var shown = []attribute.Key{
	"agiraph.graph.thread_id", "agiraph.graph.namespace", "agiraph.graph.outcome", "agiraph.graph.steps",
	"agiraph.graph.interrupts", "agiraph.graph.step", "agiraph.graph.tasks", "agiraph.graph.task_id",
	"agiraph.graph.push", "agiraph.graph.task.retries", "agiraph.graph.task.cached",
	"agiraph.graph.task.interrupted",
}

type trState struct {
	Items  []int `graph:"append"`
	I      int
	Answer string
}

// TestTrace_FanOutRetryInterruptResume draws the spans of a run that fans out to three tasks,
// one of which fails once and is retried, then pauses for a human, and of the run that resumes it.
func TestTrace_FanOutRetryInterruptResume(t *testing.T) {
	rec := spantest.New()
	var failed atomic.Bool
	g := graph.New[trState]()
	g.AddRouter(graph.START, func(context.Context, trState) graph.Next[trState] {
		var n graph.Next[trState]
		for i := range 3 {
			n.Sends = append(n.Sends, graph.Send[trState]{Node: "work", Arg: trState{I: i}})
		}
		return n
	}, "work")
	g.AddNode("work", func(_ context.Context, s trState) (trState, error) {
		if s.I == 1 && failed.CompareAndSwap(false, true) {
			return trState{}, errors.New("flaky")
		}
		return trState{Items: []int{s.I}}, nil
	}, graph.WithRetry(graph.RetryPolicy{MaxAttempts: 2, InitialInterval: time.Millisecond}))
	g.AddNode("ask", func(ctx context.Context, s trState) (trState, error) {
		answer, err := graph.Interrupt[string](ctx, "go on?")
		return trState{Answer: answer}, err
	})
	g.AddEdge("work", "ask")
	g.AddEdge("ask", graph.END)
	c := rsCompile(t, g, graph.WithCheckpointer(checkpoint.NewMemory()), graph.WithThread("t1"), graph.WithTracerProvider(rec))

	_, err := c.Invoke(rsCtx(t), trState{})
	rsInterrupted(t, err)
	paused := rec.Ended()
	assert.Equal(t, strings.TrimSpace(`
graph.invoke thread_id=t1 steps=1 outcome=interrupted interrupts=1
  graph.step step=1 tasks=3
    work task_id=0 push=true
    work task_id=1 push=true task.retries=1
    work task_id=2 push=true
  graph.step step=2 tasks=1
    ask task_id=0 task.interrupted=true`), outline(paused, shown...))
	retried := slices.IndexFunc(paused, func(s spantest.Span) bool { return s.Attr("agiraph.graph.task.retries").AsInt64() == 1 })
	require.NotEqual(t, -1, retried)
	require.Len(t, paused[retried].Events, 1, "the failed attempt is an exception event")
	assert.Equal(t, "exception", paused[retried].Events[0].Name)
	assert.Equal(t, codes.Unset, paused[retried].Status.Code, "the retry succeeded")

	final, err := c.Resume(rsCtx(t), "yes")
	require.NoError(t, err)
	assert.Equal(t, "yes", final.Answer)
	resumed := rec.Ended()[len(paused):]
	assert.Equal(t, strings.TrimSpace(`
graph.resume thread_id=t1 steps=1 outcome=done
  graph.step step=2 tasks=1
    ask task_id=0`), outline(resumed, shown...))

	// The resumed run starts from the checkpoint the paused one saved last, and names its own.
	invoke, resume := paused.Named("graph.invoke")[0], resumed.Named("graph.resume")[0]
	assert.NotEmpty(t, invoke.Attr("agiraph.graph.checkpoint.last").AsString())
	assert.Equal(t, invoke.Attr("agiraph.graph.checkpoint.last"), resume.Attr("agiraph.graph.checkpoint.from"))
	step := resumed.Named("graph.step")[0]
	assert.Equal(t, resume.Attr("agiraph.graph.checkpoint.last"), step.Attr("agiraph.graph.checkpoint.id"))
	assert.NotEqual(t, invoke.SpanContext.TraceID(), resume.SpanContext.TraceID(), "each call is its own trace")
}

// TestTrace_ErrorAndSubgraph: a subgraph's run nests under the task that runs it, and a node's
// error marks its task, the step, the subgraph's run and the run as failed.
func TestTrace_ErrorAndSubgraph(t *testing.T) {
	rec := spantest.New()
	child := graph.New[rsState]()
	child.AddNode("ok", rsLog("ok", nil))
	child.AddNode("boom", func(context.Context, rsState) (rsState, error) { return rsState{}, errors.New("boom") })
	child.AddEdge(graph.START, "ok")
	child.AddEdge("ok", "boom")
	child.AddEdge("boom", graph.END)
	parent := graph.New[rsState]()
	parent.AddSubgraph("inner", rsCompile(t, child))
	parent.AddEdge(graph.START, "inner")
	parent.AddEdge("inner", graph.END)
	c := rsCompile(t, parent)

	_, err := c.Invoke(rsCtx(t), rsState{}, graph.WithTracerProvider(rec))
	require.ErrorContains(t, err, "boom")
	assert.Equal(t, strings.TrimSpace(`
graph.invoke steps=0 outcome=failed !error
  graph.step step=1 tasks=1 !error
    inner task_id=0 !error
      graph.subgraph namespace=inner:.0 steps=1 outcome=failed !error
        graph.step step=1 tasks=1
          ok task_id=0
        graph.step step=2 tasks=1 !error
          boom task_id=0 !error`), outline(rec.Ended(), shown...))
	boom := rec.Ended().Named("boom")[0]
	assert.Equal(t, "boom", boom.Status.Description)
	require.Len(t, boom.Events, 1)
	assert.Equal(t, "exception", boom.Events[0].Name)
}

// TestTrace_Stream: a stream's run is a span too; a reader that stops early ends it as stopped,
// which is not an error. Spans of the caller's trace are the run's parent.
func TestTrace_Stream(t *testing.T) {
	rec := spantest.New()
	c := rsCompile(t, sgChain(newSgCounters("a", "b"), "a", "b"))
	ctx, caller := rec.Tracer("test").Start(rsCtx(t), "caller")
	for _, err := range c.Stream(ctx, rsState{}, graph.WithTracerProvider(rec), graph.WithStreamMode(graph.ModeUpdates)) {
		require.NoError(t, err)
		break
	}
	caller.End()
	assert.Equal(t, strings.TrimSpace(`
caller
  graph.stream steps=0 outcome=stopped
    graph.step step=1 tasks=1
      a task_id=0`), outline(rec.Ended(), shown...))
}

// TestTrace_Untraced: with a provider whose spans do not record, a run makes no spans below its
// own, and a WithTracerProvider(nil) run falls back to the global provider.
func TestTrace_Untraced(t *testing.T) {
	sampledOut := spantest.NewUnsampled()
	c := rsCompile(t, sgChain(newSgCounters("a"), "a"))
	for _, opt := range []graph.Option{graph.WithTracerProvider(sampledOut), graph.WithTracerProvider(nil)} {
		_, err := c.Invoke(rsCtx(t), rsState{}, opt)
		require.NoError(t, err)
	}
	assert.Empty(t, sampledOut.Ended())
	assert.Equal(t, 1, sampledOut.Started(), "the run's span only")
}

// TestTrace_Cached: a task whose output comes from the node cache says so.
func TestTrace_Cached(t *testing.T) {
	rec := spantest.New()
	g := graph.New[rsState]()
	g.AddNode("slow", rsLog("slow", nil), graph.WithCachePolicy(graph.CachePolicy{}))
	g.AddEdge(graph.START, "slow")
	g.AddEdge("slow", graph.END)
	c := rsCompile(t, g, graph.WithNodeCache(graph.NewMemoryNodeCache(10)), graph.WithTracerProvider(rec))
	for range 2 {
		_, err := c.Invoke(rsCtx(t), rsState{N: 1})
		require.NoError(t, err)
	}
	assert.Equal(t, strings.TrimSpace(`
graph.invoke steps=1 outcome=done
  graph.step step=1 tasks=1
    slow task_id=0
graph.invoke steps=1 outcome=done
  graph.step step=1 tasks=1
    slow task_id=0 task.cached=true`), outline(rec.Ended(), shown...))
}
