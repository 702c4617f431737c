package graph_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/checkpoint"
	"github.com/agiraph/agiraph/graph"
)

type fanState struct {
	Draft  string
	Review string
	Log    []string `graph:"append"`
}

// fanOut runs draft and second in one superstep, each writing fields of its own; second asks
// first with an interrupt when ask is set.
func fanOut(t *testing.T, saver checkpoint.Saver, ask bool) *graph.Compiled[fanState] {
	t.Helper()
	g := graph.New[fanState]()
	g.AddNode("draft", func(context.Context, fanState) (fanState, error) {
		return fanState{Draft: "a draft", Log: []string{"drafted"}}, nil
	})
	g.AddNode("second", func(ctx context.Context, _ fanState) (fanState, error) {
		answer := "looks good"
		if ask {
			var err error
			if answer, err = graph.Interrupt[string](ctx, "review?"); err != nil {
				return fanState{}, err
			}
		}
		return fanState{Review: answer}, nil
	})
	g.AddEdge(graph.START, "draft")
	g.AddEdge(graph.START, "second")
	g.AddEdge("draft", graph.END)
	g.AddEdge("second", graph.END)
	c, err := g.Compile(graph.WithCheckpointer(saver))
	require.NoError(t, err)
	return c
}

// updates maps the tasks of snap to what each wrote.
func updates(snap graph.Snapshot[fanState]) map[string]any {
	out := map[string]any{}
	for _, task := range snap.Tasks {
		out[task.Node] = task.Update
	}
	return out
}

func TestHistoryShowsWhatEachTaskWrote(t *testing.T) {
	ctx := context.Background()
	c := fanOut(t, checkpoint.NewMemory(), false)
	thread := graph.WithThread("fan")
	_, err := c.Invoke(ctx, fanState{Log: []string{"start"}}, thread)
	require.NoError(t, err)

	hist, err := c.History(ctx, checkpoint.ListOptions{}, thread)
	require.NoError(t, err)
	require.Len(t, hist, 2)
	first, last := hist[1], hist[0]
	assert.Equal(t, map[string]any{
		"draft":  fanState{Draft: "a draft", Log: []string{"drafted"}},
		"second": fanState{Review: "looks good"},
	}, updates(first), "the tasks of the input's checkpoint, with what each wrote")
	for _, task := range first.Tasks {
		assert.True(t, task.Done, task.Node)
	}
	assert.Empty(t, last.Tasks, "the run ended: no task follows the last checkpoint")
}

func TestStateShowsWhatFinishedTasksWrote(t *testing.T) {
	ctx := context.Background()
	c := fanOut(t, checkpoint.NewMemory(), true)
	thread := graph.WithThread("ask")
	_, err := c.Invoke(ctx, fanState{}, thread)
	var paused *graph.Interrupted
	require.ErrorAs(t, err, &paused)

	snap, err := c.State(ctx, thread)
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"draft": fanState{Draft: "a draft", Log: []string{"drafted"}}, "second": nil}, updates(snap),
		"the task that finished shows its update; the one waiting for input has written nothing")

	_, err = c.Resume(ctx, "ship it", thread)
	require.NoError(t, err)
	hist, err := c.History(ctx, checkpoint.ListOptions{}, thread)
	require.NoError(t, err)
	require.Len(t, hist, 2)
	assert.Equal(t, map[string]any{
		"draft":  fanState{Draft: "a draft", Log: []string{"drafted"}},
		"second": fanState{Review: "ship it"},
	}, updates(hist[1]), "the answered task's update joins its step's")
}
