package graph_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/checkpoint"
	"github.com/agiraph/agiraph/graph"
)

type efState struct {
	Log []string `graph:"append"`
}

// saverCall is what one PutWrites or PutStep call of a recSaver received.
type saverCall struct {
	method string // "PutWrites" or "PutStep"
	ns     string // the namespace of the checkpoint the writes belong to
	writes []checkpoint.Write
}

// recSaver is a memory saver with an effect handler that does nothing, which records the writes
// each call receives.
type recSaver struct {
	*checkpoint.Memory
	mu    sync.Mutex
	calls []saverCall
}

// stored records a call and returns its writes.
func (s *recSaver) stored(method string, cfg checkpoint.Config, writes []checkpoint.Write) []checkpoint.Write {
	s.mu.Lock()
	s.calls = append(s.calls, saverCall{method, cfg.NS, slices.Clone(writes)})
	s.mu.Unlock()
	return writes
}

// newRecSaver returns an empty recSaver.
func newRecSaver() *recSaver {
	return &recSaver{Memory: checkpoint.NewMemory(checkpoint.WithEffects(func(string, checkpoint.Write) error { return nil }))}
}

func (s *recSaver) PutWrites(ctx context.Context, cfg checkpoint.Config, writes []checkpoint.Write) error {
	return s.Memory.PutWrites(ctx, cfg, s.stored("PutWrites", cfg, writes))
}

// recStepSaver is a recSaver that saves a step in one call.
type recStepSaver struct{ *recSaver }

func (s recStepSaver) PutStep(ctx context.Context, parent checkpoint.Config, writes []checkpoint.Write, cfg checkpoint.Config, cp checkpoint.Checkpoint) (checkpoint.Config, error) {
	if err := s.Memory.PutWrites(ctx, parent, s.stored("PutStep", parent, writes)); err != nil {
		return checkpoint.Config{}, err
	}
	return s.Memory.Put(ctx, cfg, cp)
}

// effectSavers are the two ways a step is saved: PutWrites then Put, or PutStep.
var effectSavers = []struct {
	name string
	new  func() (*recSaver, checkpoint.Saver)
}{
	{"PutWrites", func() (*recSaver, checkpoint.Saver) {
		s := newRecSaver()
		return s, s
	}},
	{"PutStep", func() (*recSaver, checkpoint.Saver) {
		s := newRecSaver()
		return s, recStepSaver{s}
	}},
}

// savedOutput is an update write of a node and the values of the effects saved with it.
type savedOutput struct {
	method, ns string
	effects    []string
}

// outputsOf returns each update write of node that s received, with the effects of its task that
// followed it in the same call. It fails the test when an effect of node came in a call without
// its task's update, or out of order.
func outputsOf(t *testing.T, s *recSaver, node string) []savedOutput {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	var outs []savedOutput
	matched, all := 0, 0
	for _, c := range s.calls {
		for i, w := range c.writes {
			if w.Node == node && w.Kind == checkpoint.WriteEffect {
				all++
			}
			if w.Node != node || w.Kind != checkpoint.WriteUpdate {
				continue
			}
			out := savedOutput{method: c.method, ns: c.ns, effects: []string{}}
			for _, e := range c.writes[i+1:] {
				if e.Kind != checkpoint.WriteEffect || e.TaskID != w.TaskID {
					continue
				}
				assert.Equal(t, node, e.Node)
				assert.Equal(t, len(out.effects), e.Idx, "effect %q of node %q", e.Value, node)
				out.effects = append(out.effects, string(e.Value))
			}
			matched += len(out.effects)
			outs = append(outs, out)
		}
	}
	assert.Equal(t, all, matched, "effects of node %q saved apart from its output", node)
	return outs
}

// effectLog collects the values whose done functions were called, in order.
type effectLog struct {
	mu   sync.Mutex
	done []string
}

// add adds an effect of value to the running task, whose done logs it.
func (l *effectLog) add(ctx context.Context, value string) error {
	return graph.Effect(ctx, []byte(value), func() {
		l.mu.Lock()
		l.done = append(l.done, value)
		l.mu.Unlock()
	})
}

func (l *effectLog) list() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.done)
}

func efCompile(t *testing.T, g *graph.StateGraph[efState]) *graph.Compiled[efState] {
	t.Helper()
	c, err := g.Compile()
	require.NoError(t, err)
	return c
}

// oneNode compiles a graph of one node, "a", that runs fn.
func oneNode(t *testing.T, fn graph.NodeFunc[efState], opts ...graph.NodeOption) *graph.Compiled[efState] {
	t.Helper()
	g := graph.New[efState]()
	g.AddNode("a", fn, opts...)
	g.AddEdge(graph.START, "a")
	g.AddEdge("a", graph.END)
	return efCompile(t, g)
}

// TestEffectSavedWithOutput: a task's effects are saved in the call that saves its update, after
// it, numbered in the order added; their done functions are called in that order before the next
// step's node runs. A Command node saves them as well.
func TestEffectSavedWithOutput(t *testing.T) {
	for _, sv := range effectSavers {
		for _, mode := range []graph.Durability{graph.DurabilitySync, graph.DurabilityAsync} {
			t.Run(fmt.Sprintf("%s/durability%d", sv.name, mode), func(t *testing.T) {
				rec, saver := sv.new()
				var log effectLog
				var seen []string
				g := graph.New[efState]()
				g.AddNode("a", func(ctx context.Context, _ efState) (efState, error) {
					assert.NoError(t, log.add(ctx, "a0"))
					assert.NoError(t, log.add(ctx, "a1"))
					return efState{Log: []string{"a"}}, nil
				})
				g.AddCommandNode("b", func(ctx context.Context, _ efState) (graph.Command[efState], error) {
					seen = log.list()
					assert.NoError(t, log.add(ctx, "b0"))
					return graph.Command[efState]{Update: efState{Log: []string{"b"}}, Goto: []string{"c"}}, nil
				}, graph.Destinations("c"))
				g.AddNode("c", func(ctx context.Context, _ efState) (efState, error) {
					return efState{Log: []string{"c"}}, nil
				})
				g.AddEdge(graph.START, "a")
				g.AddEdge("a", "b")
				g.AddEdge("c", graph.END)
				c := efCompile(t, g)
				opts := []graph.Option{graph.WithCheckpointer(saver), graph.WithThread("t"), graph.WithDurability(mode)}

				s, err := c.Invoke(rsCtx(t), efState{}, opts...)
				require.NoError(t, err)
				assert.Equal(t, []string{"a", "b", "c"}, s.Log)
				assert.Equal(t, []string{"a0", "a1"}, seen, "done functions called before the next step")
				assert.Equal(t, []string{"a0", "a1", "b0"}, log.list())
				assert.Equal(t, []savedOutput{{sv.name, "", []string{"a0", "a1"}}}, outputsOf(t, rec, "a"))
				assert.Equal(t, []savedOutput{{sv.name, "", []string{"b0"}}}, outputsOf(t, rec, "b"))

				// The thread reads back, its effects ignored.
				st, err := c.State(rsCtx(t), opts...)
				require.NoError(t, err)
				assert.Equal(t, []string{"a", "b", "c"}, st.Values.Log)
				h, err := c.History(rsCtx(t), checkpoint.ListOptions{}, opts...)
				require.NoError(t, err)
				assert.NotEmpty(t, h)
			})
		}
	}
}

// TestEffectSavedWhenStepFails: the output of a step's only task, which a StepSaver saves with
// the step's checkpoint, is saved alone with its effects when the step fails after the task
// finished, and their done functions are called.
func TestEffectSavedWhenStepFails(t *testing.T) {
	rec, saver := effectSavers[1].new()
	var log effectLog
	g := graph.New[efState]()
	g.AddCommandNode("a", func(ctx context.Context, _ efState) (graph.Command[efState], error) {
		assert.NoError(t, log.add(ctx, "a0"))
		return graph.Command[efState]{Update: efState{Log: []string{"a"}}, Goto: []string{"nowhere"}}, nil
	})
	g.AddEdge(graph.START, "a")
	g.AddEdge("a", graph.END)
	c := efCompile(t, g)

	_, err := c.Invoke(rsCtx(t), efState{}, graph.WithCheckpointer(saver), graph.WithThread("t"))
	require.ErrorContains(t, err, `unknown node "nowhere"`)
	assert.Equal(t, []savedOutput{{"PutWrites", "", []string{"a0"}}}, outputsOf(t, rec, "a"))
	assert.Equal(t, []string{"a0"}, log.list())
}

// TestEffectOfFailedAttemptDropped: an attempt that fails or panics saves no effects and calls no
// done; the resumed run runs the task again and saves the effects of that attempt once.
func TestEffectOfFailedAttemptDropped(t *testing.T) {
	for _, sv := range effectSavers {
		for _, how := range []string{"error", "panic"} {
			t.Run(sv.name+"/"+how, func(t *testing.T) {
				rec, saver := sv.new()
				var log effectLog
				attempts := 0
				c := oneNode(t, func(ctx context.Context, _ efState) (efState, error) {
					attempts++
					assert.NoError(t, log.add(ctx, fmt.Sprintf("try%d", attempts)))
					if attempts == 1 {
						if how == "panic" {
							panic("boom")
						}
						return efState{}, errors.New("boom")
					}
					return efState{Log: []string{"a"}}, nil
				})
				opts := []graph.Option{graph.WithCheckpointer(saver), graph.WithThread("t")}

				_, err := c.Invoke(rsCtx(t), efState{}, opts...)
				require.ErrorContains(t, err, "boom")
				assert.Empty(t, outputsOf(t, rec, "a"))
				assert.Empty(t, log.list())

				s, err := c.Resume(rsCtx(t), nil, opts...)
				require.NoError(t, err)
				assert.Equal(t, []string{"a"}, s.Log)
				assert.Equal(t, []savedOutput{{sv.name, "", []string{"try2"}}}, outputsOf(t, rec, "a"))
				assert.Equal(t, []string{"try2"}, log.list())
			})
		}
	}
}

// TestEffectOfRetriedAttemptDropped: only the attempt that succeeds saves its effects.
func TestEffectOfRetriedAttemptDropped(t *testing.T) {
	rec, saver := effectSavers[0].new()
	var log effectLog
	attempts := 0
	c := oneNode(t, func(ctx context.Context, _ efState) (efState, error) {
		attempts++
		assert.NoError(t, log.add(ctx, fmt.Sprintf("try%d", attempts)))
		if attempts < 3 {
			return efState{}, errors.New("flaky")
		}
		return efState{Log: []string{"a"}}, nil
	}, graph.WithRetry(graph.RetryPolicy{MaxAttempts: 3, InitialInterval: time.Nanosecond}))

	_, err := c.Invoke(rsCtx(t), efState{}, graph.WithCheckpointer(saver), graph.WithThread("t"))
	require.NoError(t, err)
	assert.Equal(t, 3, attempts)
	assert.Equal(t, []savedOutput{{"PutWrites", "", []string{"try3"}}}, outputsOf(t, rec, "a"))
	assert.Equal(t, []string{"try3"}, log.list())
}

// TestEffectOfInterruptedAttemptDropped: a task that pauses saves no effects; when resumed it runs
// again from the start and saves those of that attempt.
func TestEffectOfInterruptedAttemptDropped(t *testing.T) {
	rec, saver := effectSavers[0].new()
	var log effectLog
	attempts := 0
	c := oneNode(t, func(ctx context.Context, _ efState) (efState, error) {
		attempts++
		assert.NoError(t, log.add(ctx, fmt.Sprintf("ask%d", attempts)))
		v, err := graph.Interrupt[string](ctx, "go on?")
		if err != nil {
			return efState{}, err
		}
		assert.NoError(t, log.add(ctx, "answer "+v))
		return efState{Log: []string{"a"}}, nil
	})
	opts := []graph.Option{graph.WithCheckpointer(saver), graph.WithThread("t")}

	_, err := c.Invoke(rsCtx(t), efState{}, opts...)
	var ir *graph.Interrupted
	require.ErrorAs(t, err, &ir)
	assert.Empty(t, outputsOf(t, rec, "a"))
	assert.Empty(t, log.list())

	_, err = c.Resume(rsCtx(t), "yes", opts...)
	require.NoError(t, err)
	assert.Equal(t, []savedOutput{{"PutWrites", "", []string{"ask2", "answer yes"}}}, outputsOf(t, rec, "a"))
	assert.Equal(t, []string{"ask2", "answer yes"}, log.list())
}

// TestEffectNotCarriedByResumeCommand: a ResumeCommand's checkpoint keeps what the paused step's
// finished tasks wrote, but not their effects, which were saved once already.
func TestEffectNotCarriedByResumeCommand(t *testing.T) {
	rec, saver := effectSavers[0].new()
	var log effectLog
	g := graph.New[efState]()
	g.AddNode("done", func(ctx context.Context, _ efState) (efState, error) {
		assert.NoError(t, log.add(ctx, "done0"))
		return efState{Log: []string{"done"}}, nil
	})
	g.AddNode("ask", func(ctx context.Context, _ efState) (efState, error) {
		v, err := graph.Interrupt[string](ctx, "go on?")
		return efState{Log: []string{v}}, err
	})
	g.AddEdge(graph.START, "done")
	g.AddEdge(graph.START, "ask")
	g.AddEdge("done", graph.END)
	g.AddEdge("ask", graph.END)
	c := efCompile(t, g)
	opts := []graph.Option{graph.WithCheckpointer(saver), graph.WithThread("t")}

	_, err := c.Invoke(rsCtx(t), efState{}, opts...)
	var ir *graph.Interrupted
	require.ErrorAs(t, err, &ir)
	s, err := c.Resume(rsCtx(t), graph.ResumeCommand[efState]{Value: "yes", Update: efState{Log: []string{"edit"}}}, opts...)
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"edit", "done", "yes"}, s.Log)

	outs := outputsOf(t, rec, "done")
	require.Len(t, outs, 2, "the update is saved, then carried to the edit's checkpoint")
	assert.Equal(t, []string{"done0"}, outs[0].effects)
	assert.Empty(t, outs[1].effects)
	assert.Equal(t, []string{"done0"}, log.list())
}

// TestEffectOfSends: each task of a fan-out saves its own effects with its own update.
func TestEffectOfSends(t *testing.T) {
	for _, sv := range effectSavers {
		t.Run(sv.name, func(t *testing.T) {
			rec, saver := sv.new()
			var log effectLog
			g := graph.New[efState]()
			g.AddNode("w", func(ctx context.Context, arg efState) (efState, error) {
				assert.NoError(t, log.add(ctx, arg.Log[0]))
				assert.NoError(t, log.add(ctx, arg.Log[0]+"!"))
				return efState{Log: arg.Log}, nil
			})
			g.AddRouter(graph.START, func(context.Context, efState) graph.Next[efState] {
				var n graph.Next[efState]
				for _, v := range []string{"x", "y", "z"} {
					n.Sends = append(n.Sends, graph.Send[efState]{Node: "w", Arg: efState{Log: []string{v}}})
				}
				return n
			}, "w")
			g.AddEdge("w", graph.END)
			c := efCompile(t, g)

			_, err := c.Invoke(rsCtx(t), efState{}, graph.WithCheckpointer(saver), graph.WithThread("t"))
			require.NoError(t, err)
			assert.ElementsMatch(t, []savedOutput{
				{"PutWrites", "", []string{"x", "x!"}},
				{"PutWrites", "", []string{"y", "y!"}},
				{"PutWrites", "", []string{"z", "z!"}},
			}, outputsOf(t, rec, "w"))
			assert.ElementsMatch(t, []string{"x", "x!", "y", "y!", "z", "z!"}, log.list())
		})
	}
}

// TestEffectInSubgraph: a task of a subgraph saves its effects with its own update, under the
// subgraph's namespace; the parent's task, with its own.
func TestEffectInSubgraph(t *testing.T) {
	rec, saver := effectSavers[0].new()
	var log effectLog
	child := graph.New[efState]()
	child.AddNode("inner", func(ctx context.Context, _ efState) (efState, error) {
		assert.NoError(t, log.add(ctx, "in"))
		return efState{Log: []string{"inner"}}, nil
	})
	child.AddEdge(graph.START, "inner")
	child.AddEdge("inner", graph.END)
	g := graph.New[efState]()
	g.AddNode("outer", func(ctx context.Context, _ efState) (efState, error) {
		assert.NoError(t, log.add(ctx, "out"))
		return efState{Log: []string{"outer"}}, nil
	})
	g.AddSubgraph("sub", efCompile(t, child))
	g.AddEdge(graph.START, "outer")
	g.AddEdge("outer", "sub")
	g.AddEdge("sub", graph.END)
	c := efCompile(t, g)

	s, err := c.Invoke(rsCtx(t), efState{}, graph.WithCheckpointer(saver), graph.WithThread("t"))
	require.NoError(t, err)
	assert.Equal(t, []string{"outer", "inner"}, s.Log)
	assert.Equal(t, []savedOutput{{"PutWrites", "", []string{"out"}}}, outputsOf(t, rec, "outer"))
	inner := outputsOf(t, rec, "inner")
	require.Len(t, inner, 1)
	assert.NotEmpty(t, inner[0].ns)
	assert.Equal(t, []string{"in"}, inner[0].effects)
	assert.Equal(t, []savedOutput{{"PutWrites", "", []string{}}}, outputsOf(t, rec, "sub"))
	assert.Equal(t, []string{"out", "in"}, log.list())
}

// TestEffectConcurrent: goroutines a node starts and waits for add effects to its task; a call
// after the task's attempt returned fails.
func TestEffectConcurrent(t *testing.T) {
	rec, saver := effectSavers[0].new()
	var log effectLog
	const workers, each = 8, 20
	late := make(chan error, 1)
	release := make(chan struct{})
	c := oneNode(t, func(ctx context.Context, _ efState) (efState, error) {
		var wg sync.WaitGroup
		for w := range workers {
			wg.Go(func() {
				for i := range each {
					assert.NoError(t, log.add(ctx, fmt.Sprintf("%d.%d", w, i)))
				}
			})
		}
		wg.Wait()
		go func() {
			<-release
			late <- graph.Effect(ctx, []byte("late"), nil)
		}()
		return efState{Log: []string{"a"}}, nil
	})

	_, err := c.Invoke(rsCtx(t), efState{}, graph.WithCheckpointer(saver), graph.WithThread("t"))
	require.NoError(t, err)
	close(release)
	assert.ErrorContains(t, <-late, `node "a": Effect called after the task's attempt returned`)

	outs := outputsOf(t, rec, "a")
	require.Len(t, outs, 1)
	assert.Len(t, outs[0].effects, workers*each)
	assert.Equal(t, outs[0].effects, log.list(), "done functions called in the order the effects were added")
}

// TestEffectRefused: Effect fails outside a task, in a run that does not save, and with
// DurabilityExit, naming the problem.
func TestEffectRefused(t *testing.T) {
	err := graph.Effect(context.Background(), []byte("x"), nil)
	require.ErrorContains(t, err, "graph: Effect needs a running task of a graph with a checkpointer")

	build := func() *graph.Compiled[efState] {
		return oneNode(t, func(ctx context.Context, _ efState) (efState, error) {
			return efState{}, graph.Effect(ctx, []byte("x"), func() { t.Error("done called for a refused effect") })
		})
	}
	_, err = build().Invoke(rsCtx(t), efState{})
	require.ErrorIs(t, err, graph.ErrNoCheckpointer)
	assert.ErrorContains(t, err, `node "a": Effect`)

	rec, saver := effectSavers[0].new()
	_, err = build().Invoke(rsCtx(t), efState{}, graph.WithCheckpointer(saver), graph.WithThread("t"), graph.WithDurability(graph.DurabilityExit))
	require.ErrorContains(t, err, `node "a": Effect needs DurabilitySync or DurabilityAsync`)
	assert.Empty(t, outputsOf(t, rec, "a"))
}
