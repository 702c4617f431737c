package graph_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/checkpoint"
	"github.com/agiraph/agiraph/graph"
)

// heldSaver is a memory saver whose first Put waits until release is closed (or the run's
// context ends), or fails with fail when that is set.
type heldSaver struct {
	*checkpoint.Memory
	release chan struct{}
	fail    error
	puts    int
}

func (s *heldSaver) Put(ctx context.Context, cfg checkpoint.Config, cp checkpoint.Checkpoint) (checkpoint.Config, error) {
	if s.puts++; s.puts == 1 {
		if s.fail != nil {
			return checkpoint.Config{}, s.fail
		}
		select {
		case <-s.release:
		case <-ctx.Done(): // the run's guard: a save that waits for a step that cannot run first
			return checkpoint.Config{}, ctx.Err()
		}
	}
	return s.Memory.Put(ctx, cfg, cp)
}

// twoSteps is a graph of two steps, a then b; a calls ran when it runs.
func twoSteps(ran func()) *graph.StateGraph[rsState] {
	g := graph.New[rsState]()
	g.AddNode("a", func(context.Context, rsState) (rsState, error) {
		ran()
		return rsState{Log: []string{"a"}}, nil
	})
	g.AddNode("b", func(context.Context, rsState) (rsState, error) { return rsState{Log: []string{"b"}}, nil })
	g.AddEdge(graph.START, "a")
	g.AddEdge("a", "b")
	g.AddEdge("b", graph.END)
	return g
}

// history returns the sources and steps of thread t's checkpoints, oldest first.
func history(t *testing.T, saver checkpoint.Saver) []string {
	t.Helper()
	tuples, err := saver.List(context.Background(), checkpoint.Config{ThreadID: "t"}, checkpoint.ListOptions{})
	require.NoError(t, err)
	var h []string
	for i := len(tuples) - 1; i >= 0; i-- {
		h = append(h, string(tuples[i].Checkpoint.Source))
	}
	return h
}

// With WithInputSavedAside the first step runs while the input's checkpoint is being saved; the
// step's own save waits for it, and the thread's history is the one a run without it leaves.
func TestInputSavedAsideWhileTheFirstStepRuns(t *testing.T) {
	saver := &heldSaver{Memory: checkpoint.NewMemory(), release: make(chan struct{})}
	st, err := rsCompile(t, twoSteps(func() { close(saver.release) }), graph.WithCheckpointer(saver), graph.WithThread("t"), graph.WithInputSavedAside()).Invoke(rsCtx(t), rsState{})
	require.NoError(t, err, "a ran while the input's save waited for it")
	assert.Equal(t, []string{"a", "b"}, st.Log)

	plain := checkpoint.NewMemory()
	_, err = rsCompile(t, twoSteps(func() {}), graph.WithCheckpointer(plain), graph.WithThread("t")).Invoke(rsCtx(t), rsState{})
	require.NoError(t, err)
	assert.Equal(t, history(t, plain), history(t, saver))
	assert.Equal(t, []string{"input", "loop", "loop"}, history(t, saver))
}

// A failed save of the input is reported by the run, at the first step's save.
func TestInputSavedAsideFailureIsReported(t *testing.T) {
	broken := errors.New("disk full")
	saver := &heldSaver{Memory: checkpoint.NewMemory(), fail: broken}
	_, err := rsCompile(t, twoSteps(func() {}), graph.WithCheckpointer(saver), graph.WithThread("t"), graph.WithInputSavedAside()).Invoke(rsCtx(t), rsState{})
	require.ErrorIs(t, err, broken)
	tuples, err := saver.List(context.Background(), checkpoint.Config{ThreadID: "t"}, checkpoint.ListOptions{})
	require.NoError(t, err)
	assert.Empty(t, tuples, "no step is saved after an input that was not")
}
