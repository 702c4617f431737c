package langgraphapi

import (
	"context"
	"iter"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/graph"
	"github.com/agiraph/agiraph/nodes/store"
)

// A closing handler cancels its runs' contexts one after the other, so the lane of a run that
// has just stopped may come to the next run before that run's cancellation has. The next run
// must not start then: it waits for its cancellation and stays pending in the records, for the
// next handler to run.
func TestClosingHandlerStartsNoQueuedRun(t *testing.T) {
	st := store.NewMemory()
	h := New(st)
	type state struct {
		Topic string `json:"topic,omitempty"`
	}
	b := graph.New[state]()
	b.AddNode("n", func(context.Context, state) (state, error) { return state{}, nil })
	b.AddEdge(graph.START, "n")
	b.AddEdge("n", graph.END)
	g, err := b.Compile(graph.WithCheckpointer(st.Saver()))
	require.NoError(t, err)
	require.NoError(t, Register(h, "g", g, st.Saver()))

	rec := run{RunID: "r1", ThreadID: "t1", AssistantID: assistantID("g"), Status: runPending}
	require.NoError(t, h.rec.put(context.Background(), runKey(rec.ThreadID, rec.RunID), rec))
	started := make(chan struct{}, 1)
	fn := func(context.Context, string, []graph.Option) iter.Seq2[graph.Event, error] {
		started <- struct{}{}
		return func(func(graph.Event, error) bool) {}
	}
	// The run's context as the handler's cancellation has not reached it yet.
	ctx, cancel := context.WithCancelCause(context.Background())
	a := &activeRun{rec: rec, e: h.graphs["g"], fn: fn, ctx: ctx, cancel: cancel, log: newRunLog()}
	h.stop(errShutdown)

	done := make(chan struct{})
	go func() {
		defer close(done)
		h.execute(a)
	}()
	select {
	case <-started:
		t.Fatal("a run started after its handler was closed")
	case <-done:
		t.Fatal("a run of a closing handler ended before its cancellation")
	case <-time.After(100 * time.Millisecond):
	}
	cancel(errShutdown) // the handler's cancellation arrives
	<-done
	assert.Empty(t, started, "the run did not start")
	var got run
	found, err := h.rec.get(context.Background(), runKey(rec.ThreadID, rec.RunID), &got)
	require.NoError(t, err)
	require.True(t, found)
	assert.Equal(t, runPending, got.Status, "the run stays pending, for the next handler")
	require.NoError(t, h.Close())
}
