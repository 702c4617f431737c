package graph_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/checkpoint"
	"github.com/agiraph/agiraph/graph"
)

// stepSaver is a memory saver that saves a step in one call (checkpoint.StepSaver), counting
// the calls of each kind.
type stepSaver struct {
	*checkpoint.Memory
	mu    sync.Mutex
	calls map[string]int
}

func newStepSaver() *stepSaver {
	return &stepSaver{Memory: checkpoint.NewMemory(), calls: map[string]int{}}
}

func (s *stepSaver) count(call string) {
	s.mu.Lock()
	s.calls[call]++
	s.mu.Unlock()
}

func (s *stepSaver) counts() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return map[string]int{"Put": s.calls["Put"], "PutWrites": s.calls["PutWrites"], "PutStep": s.calls["PutStep"]}
}

func (s *stepSaver) Put(ctx context.Context, cfg checkpoint.Config, cp checkpoint.Checkpoint) (checkpoint.Config, error) {
	s.count("Put")
	return s.Memory.Put(ctx, cfg, cp)
}

func (s *stepSaver) PutWrites(ctx context.Context, cfg checkpoint.Config, writes []checkpoint.Write) error {
	s.count("PutWrites")
	return s.Memory.PutWrites(ctx, cfg, writes)
}

func (s *stepSaver) PutStep(ctx context.Context, parent checkpoint.Config, writes []checkpoint.Write, cfg checkpoint.Config, cp checkpoint.Checkpoint) (checkpoint.Config, error) {
	s.count("PutStep")
	if err := s.Memory.PutWrites(ctx, parent, writes); err != nil {
		return checkpoint.Config{}, err
	}
	return s.Memory.Put(ctx, cfg, cp)
}

// countTo is a loop of one node that counts N up to n, then a step of two tasks.
func countTo(n int) *graph.StateGraph[rsState] {
	g := graph.New[rsState]()
	add := func(name string, n int) {
		g.AddNode(name, func(_ context.Context, s rsState) (rsState, error) {
			u := rsState{Log: []string{name}}
			if n > 0 {
				u.N = s.N + n
			}
			return u, nil
		})
	}
	add("inc", 1)
	add("split", 0)
	add("a", 0)
	add("b", 0)
	g.AddEdge(graph.START, "inc")
	g.AddConditionalEdges("inc", func(_ context.Context, s rsState) string {
		if s.N < n {
			return "inc"
		}
		return "split"
	}, "inc", "split")
	g.AddEdge("split", "a")
	g.AddEdge("split", "b")
	g.AddEdge("a", graph.END)
	g.AddEdge("b", graph.END)
	return g
}

// A saver that saves a step in one call gets one call per step of one task, and the thread's
// history is what it is with a saver that does not.
func TestStepSaverSavesAStepOfOneTaskInOneCall(t *testing.T) {
	c, err := countTo(5).Compile()
	require.NoError(t, err)
	ctx := rsCtx(t)
	steps := newStepSaver()
	plain := checkpoint.NewMemory()
	for _, saver := range []checkpoint.Saver{steps, plain} {
		out, err := c.Invoke(ctx, rsState{}, graph.WithCheckpointer(saver), graph.WithThread("t"))
		require.NoError(t, err)
		require.Equal(t, 5, out.N)
		_, err = c.UpdateState(ctx, rsState{Log: []string{"edited"}}, "b", graph.WithCheckpointer(saver), graph.WithThread("t"))
		require.NoError(t, err)
	}
	// One call for each step of one task (five of "inc", "split"); the input's checkpoint (a
	// snapshot) is put alone, the step of two tasks saves each one's output as it finishes, and
	// the edit is one call, or a Put when it makes a snapshot.
	calls := steps.counts()
	assert.Equal(t, 2, calls["PutWrites"])
	assert.Equal(t, 9, calls["Put"]+calls["PutStep"], "a call per checkpoint")
	assert.GreaterOrEqual(t, calls["PutStep"], 6)

	history := func(saver checkpoint.Saver) []checkpoint.Tuple {
		list, err := saver.List(ctx, checkpoint.Config{ThreadID: "t"}, checkpoint.ListOptions{})
		require.NoError(t, err)
		return list
	}
	got, want := history(steps), history(plain)
	require.Len(t, got, len(want))
	for i := range want {
		assert.Equal(t, want[i].Checkpoint.Step, got[i].Checkpoint.Step)
		assert.Equal(t, len(want[i].Checkpoint.State) > 0, len(got[i].Checkpoint.State) > 0, "a snapshot at step %d", want[i].Checkpoint.Step)
		// The writes of a step of several tasks come in the order the tasks finished.
		assert.ElementsMatch(t, writesOf(want[i]), writesOf(got[i]), "writes of step %d", want[i].Checkpoint.Step)
	}
	a, err := c.State(ctx, graph.WithCheckpointer(steps), graph.WithThread("t"))
	require.NoError(t, err)
	b, err := c.State(ctx, graph.WithCheckpointer(plain), graph.WithThread("t"))
	require.NoError(t, err)
	assert.Equal(t, b.Values, a.Values)
}

// A step of one task whose run stops before the step's checkpoint still saves the task's output:
// a resume does not run the task again.
func TestStepSaverKeepsTheOutputOfAStepThatStops(t *testing.T) {
	for _, how := range []string{"cancelled", "stream stopped"} {
		t.Run(how, func(t *testing.T) {
			var calls atomic.Int32
			ctx, cancel := context.WithCancel(rsCtx(t))
			defer cancel()
			g := graph.New[rsState]()
			g.AddNode("work", func(context.Context, rsState) (rsState, error) {
				if calls.Add(1) == 1 && how == "cancelled" {
					cancel() // the run is cancelled as the task returns its output
				}
				return rsState{N: 1, Log: []string{"work"}}, nil
			})
			g.AddEdge(graph.START, "work")
			g.AddEdge("work", graph.END)
			c, err := g.Compile()
			require.NoError(t, err)
			saver := newStepSaver()
			opts := []graph.Option{graph.WithCheckpointer(saver), graph.WithThread("t")}
			if how == "cancelled" {
				_, err = c.Invoke(ctx, rsState{}, opts...)
				require.ErrorIs(t, err, context.Canceled)
			} else {
				for ev, err := range c.Stream(ctx, rsState{}, append(opts, graph.WithStreamMode(graph.ModeUpdates))...) {
					require.NoError(t, err)
					if ev.Node == "work" {
						break // the reader stops at the task's update
					}
				}
			}
			require.Equal(t, map[string]int{"Put": 1, "PutStep": 0, "PutWrites": 1}, saver.counts(), "the output is saved on its own")

			out, err := c.Resume(rsCtx(t), nil, opts...)
			require.NoError(t, err)
			assert.Equal(t, rsState{N: 1, Log: []string{"work"}}, out)
			assert.Equal(t, int32(1), calls.Load(), "the task ran again")
		})
	}
}

// writesOf is what a checkpoint's writes hold: node, kind and value of each.
func writesOf(t checkpoint.Tuple) [][3]string {
	var out [][3]string
	for _, w := range t.Writes {
		out = append(out, [3]string{w.Node, string(w.Kind), string(w.Value)})
	}
	return out
}

// A step of one task that runs on a goroutine of its own (its node has a timeout) is saved in
// one call too.
func TestStepSaverSavesAStepWithATimeoutInOneCall(t *testing.T) {
	g := graph.New[rsState]()
	g.AddNode("work", func(context.Context, rsState) (rsState, error) {
		return rsState{N: 1, Log: []string{"work"}}, nil
	}, graph.WithTimeout(time.Minute))
	g.AddEdge(graph.START, "work")
	g.AddEdge("work", graph.END)
	c, err := g.Compile()
	require.NoError(t, err)
	saver := newStepSaver()
	_, err = c.Invoke(rsCtx(t), rsState{}, graph.WithCheckpointer(saver), graph.WithThread("t"))
	require.NoError(t, err)
	assert.Equal(t, map[string]int{"Put": 1, "PutStep": 1, "PutWrites": 0}, saver.counts())
}
