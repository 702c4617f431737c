package graph_test

// Behaviours of LangGraph's engine that users coming from it rely on, each test named after the
// behaviour (and, where there is one, the LangGraph test that shows it).

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/checkpoint"
	"github.com/agiraph/agiraph/checkpoint/sqlite"
	"github.com/agiraph/agiraph/graph"
	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/providers/scripted"
)

// lgState is the state of these tests.
type lgState struct {
	Log    []string `graph:"append"`
	Answer string
	Topic  string
	Last   string `graph:"last"`
}

// lgOrderSaver opens gates as interrupts are saved, so that tasks pause in the order a test wants.
type lgOrderSaver struct {
	checkpoint.Saver
	mu    sync.Mutex
	gates map[string]chan struct{} // closed once the task of the key (its Send's argument) paused
	byID  map[string]string
}

func (s *lgOrderSaver) PutWrites(ctx context.Context, cfg checkpoint.Config, ws []checkpoint.Write) error {
	err := s.Saver.PutWrites(ctx, cfg, ws)
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, w := range ws {
		if w.Kind == checkpoint.WriteInterrupt {
			if g, ok := s.gates[s.byID[w.TaskID]]; ok {
				close(g)
				delete(s.gates, s.byID[w.TaskID])
			}
		}
	}
	return err
}

// LangGraph (test_parallel_interrupts, test_multiple_interrupt_state_persistence) reports the
// interrupts of one step in the order of its tasks, whatever the order in which they paused.
func TestLangGraph_InterruptsOfAStepComeInTaskOrder(t *testing.T) {
	ctx := rsCtx(t)
	saver := &lgOrderSaver{Saver: checkpoint.NewMemory(), byID: map[string]string{"0": "a", "1": "b", "2": "c"}}
	// c pauses first, then b, then a: each waits for the one after it.
	var wait map[string]chan struct{}
	g := graph.New[lgState]()
	g.AddRouter(graph.START, func(context.Context, lgState) graph.Next[lgState] {
		return graph.Next[lgState]{Sends: []graph.Send[lgState]{
			{Node: "ask", Arg: lgState{Topic: "a"}}, {Node: "ask", Arg: lgState{Topic: "b"}}, {Node: "ask", Arg: lgState{Topic: "c"}},
		}}
	}, "ask")
	g.AddNode("ask", func(ctx context.Context, s lgState) (lgState, error) {
		if w := wait[s.Topic]; w != nil {
			select {
			case <-w:
			case <-ctx.Done():
				return lgState{}, ctx.Err()
			}
		}
		v, err := graph.Interrupt[string](ctx, s.Topic+"?")
		if err != nil {
			return lgState{}, err
		}
		return lgState{Log: []string{s.Topic + "=" + v}}, nil
	})
	g.AddEdge("ask", graph.END)
	c := rsCompile(t, g, graph.WithCheckpointer(saver))

	for run := range 20 {
		b, cc := make(chan struct{}), make(chan struct{})
		saver.mu.Lock()
		saver.gates = map[string]chan struct{}{"b": b, "c": cc}
		saver.mu.Unlock()
		wait = map[string]chan struct{}{"a": b, "b": cc}
		th := graph.WithThread("order" + string(rune('a'+run)))
		_, err := c.Invoke(ctx, lgState{}, th)
		var ir *graph.Interrupted
		require.ErrorAs(t, err, &ir)
		var got []any
		for _, it := range ir.Interrupts {
			got = append(got, it.Value)
		}
		require.Equal(t, []any{"a?", "b?", "c?"}, got, "run %d", run)
		snap, err := c.State(ctx, th)
		require.NoError(t, err)
		for i, it := range snap.Interrupts {
			assert.Equal(t, ir.Interrupts[i].ID, it.ID)
		}
	}
}

// LangGraph raises InvalidUpdateError when two tasks of a step write a channel that keeps one
// value (a LastValue key with no reducer); it does not keep one of them silently.
func TestLangGraph_InvalidUpdateErrorWhenTwoTasksSetAPlainField(t *testing.T) {
	ctx := rsCtx(t)
	var runs atomic.Int32
	build := func() *graph.StateGraph[lgState] {
		g := graph.New[lgState]()
		for _, n := range []string{"x", "y", "z"} {
			g.AddNode(n, func(context.Context, lgState) (lgState, error) {
				runs.Add(1)
				u := lgState{Log: []string{n}, Last: n}
				if n != "y" {
					u.Answer = n
				}
				return u, nil
			})
			g.AddEdge(graph.START, n)
			g.AddEdge(n, graph.END)
		}
		return g
	}
	saver := checkpoint.NewMemory()
	th := graph.WithThread("conflict")
	_, err := rsCompile(t, build(), graph.WithCheckpointer(saver)).Invoke(ctx, lgState{}, th)
	var bad *graph.InvalidUpdateError
	require.ErrorAs(t, err, &bad)
	assert.Equal(t, graph.InvalidUpdateError{Step: 1, Field: "Answer", Nodes: []string{"x", "z"}}, *bad)
	assert.Contains(t, err.Error(), `tasks of nodes "x", "z" each set field Answer`)
	require.Equal(t, int32(3), runs.Load())

	// Nothing is lost: the same graph with a reducer that decides resumes from the saved updates.
	fixed := build()
	fixed.SetReducer(func(cur, u lgState) lgState {
		cur.Log = append(cur.Log, u.Log...)
		if u.Answer != "" {
			cur.Answer += u.Answer
		}
		return cur
	})
	out, err := rsCompile(t, fixed, graph.WithCheckpointer(saver)).Resume(ctx, nil, th)
	require.NoError(t, err)
	assert.Equal(t, int32(3), runs.Load(), "the tasks ran again")
	assert.Equal(t, []string{"x", "y", "z"}, out.Log)
	assert.Equal(t, "xz", out.Answer)

	// A field tagged graph:"last" takes several values in one step: the last task's wins.
	g := graph.New[lgState]()
	for _, n := range []string{"x", "y", "z"} {
		g.AddNode(n, func(context.Context, lgState) (lgState, error) { return lgState{Last: n}, nil })
		g.AddEdge(graph.START, n)
		g.AddEdge(n, graph.END)
	}
	for range 5 {
		out, err := rsCompile(t, g).Invoke(ctx, lgState{})
		require.NoError(t, err)
		assert.Equal(t, "z", out.Last)
	}
}

// lgSiblings is a step of two tasks: "done" finishes, "ask" pauses for a value.
func lgSiblings(doneRuns, askRuns *atomic.Int32) *graph.StateGraph[lgState] {
	g := graph.New[lgState]()
	g.AddNode("done", func(context.Context, lgState) (lgState, error) {
		doneRuns.Add(1)
		return lgState{Log: []string{"done"}}, nil
	})
	g.AddNode("ask", func(ctx context.Context, s lgState) (lgState, error) {
		askRuns.Add(1)
		v, err := graph.Interrupt[string](ctx, "topic?")
		if err != nil {
			return lgState{}, err
		}
		return lgState{Log: []string{"ask=" + v + " seeing " + s.Topic}}, nil
	})
	g.AddNode("extra", func(context.Context, lgState) (lgState, error) {
		return lgState{Log: []string{"extra"}}, nil
	})
	g.AddEdge(graph.START, "done")
	g.AddEdge(graph.START, "ask")
	g.AddEdge("done", graph.END)
	g.AddEdge("ask", graph.END)
	g.AddEdge("extra", graph.END)
	// extra runs only when a ResumeCommand goes there; the router declares it reachable.
	g.AddRouter("done", func(context.Context, lgState) graph.Next[lgState] { return graph.Goto[lgState]() }, "extra")
	return g
}

// lgPaused is a graph of lgSiblings paused in its first step, and what it counts.
type lgPaused struct {
	c                 *graph.Compiled[lgState]
	saver             checkpoint.Saver
	th                graph.Option
	doneRuns, askRuns atomic.Int32
}

// lgPause runs lgSiblings on thread from input until ask pauses.
func lgPause(t *testing.T, ctx context.Context, thread string, input lgState) *lgPaused {
	t.Helper()
	p := &lgPaused{saver: checkpoint.NewMemory(), th: graph.WithThread(thread)}
	p.c = rsCompile(t, lgSiblings(&p.doneRuns, &p.askRuns), graph.WithCheckpointer(p.saver))
	_, err := p.c.Invoke(ctx, input, p.th)
	rsInterrupted(t, err)
	return p
}

// LangGraph's get_state applies the writes of a paused step's finished tasks (pending writes) to
// the latest state and lists only the tasks still to run in next; invoke returns that state too.
// Neither runs the finished task again.
func TestLangGraph_PausedStepShowsItsFinishedTasks(t *testing.T) {
	ctx := rsCtx(t)
	var doneRuns, askRuns atomic.Int32
	c := rsCompile(t, lgSiblings(&doneRuns, &askRuns), graph.WithCheckpointer(checkpoint.NewMemory()))
	th := graph.WithThread("paused")

	out, err := c.Invoke(ctx, lgState{Log: []string{"in"}}, th)
	rsInterrupted(t, err)
	assert.Equal(t, []string{"in", "done"}, out.Log, "the state returned")

	snap, err := c.State(ctx, th)
	require.NoError(t, err)
	assert.Equal(t, []string{"in", "done"}, snap.Values.Log)
	assert.Equal(t, []string{"ask"}, snap.Next)
	require.Len(t, snap.Tasks, 2)
	assert.True(t, snap.Tasks[0].Done)
	assert.False(t, snap.Tasks[1].Done)
	assert.Len(t, snap.Tasks[1].Interrupts, 1)

	// History shows the checkpoint as saved, as LangGraph's get_state_history does.
	hist, err := c.History(ctx, checkpoint.ListOptions{Limit: 1}, th)
	require.NoError(t, err)
	assert.Equal(t, []string{"in"}, hist[0].Values.Log)
	assert.Equal(t, []string{"done", "ask"}, hist[0].Next)

	out, err = c.Resume(ctx, "go", th)
	require.NoError(t, err)
	assert.Equal(t, []string{"in", "done", "ask=go seeing "}, out.Log)
	assert.Equal(t, int32(1), doneRuns.Load())
}

// LangGraph: update_state while a node waits in an interrupt, then Command(resume=v): the node runs
// again on the edited state and its interrupt returns v (a "null resume").
func TestLangGraph_UpdateStateThenResumeAnswersTheInterrupt(t *testing.T) {
	ctx := rsCtx(t)
	p := lgPause(t, ctx, "edit", lgState{})
	c, th := p.c, p.th
	_, err := c.UpdateState(ctx, lgState{Topic: "cats"}, "", th)
	require.NoError(t, err)
	out, err := c.Resume(ctx, "yes", th)
	require.NoError(t, err)
	assert.Contains(t, out.Log, "ask=yes seeing cats")
	assert.Equal(t, int32(2), p.askRuns.Load())

	// The held value is saved: a run that stops before a task takes it leaves it for the next.
	var doneRuns, askRuns atomic.Int32
	failing := &lgFailingResume{Saver: checkpoint.NewMemory(), tasksOnly: true}
	c2 := rsCompile(t, lgSiblings(&doneRuns, &askRuns), graph.WithCheckpointer(failing))
	th2 := graph.WithThread("held")
	_, err = c2.Invoke(ctx, lgState{}, th2)
	rsInterrupted(t, err)
	_, err = c2.UpdateState(ctx, lgState{Topic: "moths"}, "", th2)
	require.NoError(t, err)
	failing.fail.Store(true)
	_, err = c2.Resume(ctx, "kept", th2)
	require.ErrorContains(t, err, "disk full")
	failing.fail.Store(false)
	out, err = c2.Resume(ctx, nil, th2)
	require.NoError(t, err)
	assert.Contains(t, out.Log, "ask=kept seeing moths")

	// Without an edit or a fork, a value that nothing asks for is still refused.
	_, err = c.Invoke(ctx, lgState{}, graph.WithThread("plain"))
	rsInterrupted(t, err)
	_, err = c.Resume(ctx, "yes", graph.WithThread("plain"))
	require.NoError(t, err)
	_, err = c.Resume(ctx, "again", graph.WithThread("plain"))
	require.ErrorIs(t, err, graph.ErrNothingToResume)
}

// LangGraph: Command(resume=v) with the config of an earlier, interrupted checkpoint forks it and
// answers its interrupt in one call.
func TestLangGraph_ForkAnInterruptedCheckpointAndAnswerInOneCall(t *testing.T) {
	ctx := rsCtx(t)
	p := lgPause(t, ctx, "fork", lgState{})
	c, th := p.c, p.th
	paused, err := c.State(ctx, th)
	require.NoError(t, err)
	first, err := c.Resume(ctx, "first", th)
	require.NoError(t, err)
	assert.Contains(t, first.Log, "ask=first seeing ")

	second, err := c.Resume(ctx, "second", th, graph.WithCheckpointID(paused.Config.CheckpointID))
	require.NoError(t, err)
	assert.Equal(t, []string{"done", "ask=second seeing "}, second.Log)
	latest, err := c.State(ctx, th)
	require.NoError(t, err)
	assert.Equal(t, second.Log, latest.Values.Log)
}

// LangGraph's Command(resume=…, update=…, goto=…): one call answers the interrupt, edits the state
// the paused task sees when it runs again, and adds a node to that step. The paused step's
// finished task keeps its result, also after a crash that follows the edit.
func TestLangGraph_ResumeWithUpdateAndGotoInOneCall(t *testing.T) {
	ctx := rsCtx(t)
	p := lgPause(t, ctx, "command", lgState{})
	c, th := p.c, p.th
	out, err := c.Resume(ctx, graph.ResumeCommand[lgState]{Value: "ok", Update: lgState{Topic: "dogs"}, Goto: []string{"extra"}}, th)
	require.NoError(t, err)
	assert.Equal(t, []string{"done", "ask=ok seeing dogs", "extra"}, out.Log)
	assert.Equal(t, int32(1), p.doneRuns.Load(), "the finished task ran again")
	assert.Equal(t, "dogs", out.Topic)

	// The history holds the edit as a checkpoint of its own; the state rebuilt from the saver
	// (another process) is the same.
	hist, err := c.History(ctx, checkpoint.ListOptions{}, th)
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(hist), 2)
	assert.Equal(t, checkpoint.SourceUpdate, hist[1].Source)
	assert.Equal(t, []string{"done", "ask", "extra"}, hist[1].Next)
	var doneRuns, askRuns atomic.Int32
	again, err := rsCompile(t, lgSiblings(&doneRuns, &askRuns), graph.WithCheckpointer(p.saver)).State(ctx, th)
	require.NoError(t, err)
	assert.Equal(t, out, again.Values)

	// A process that dies after the edit is saved but before the answer is: the edit's checkpoint
	// keeps the finished task's output and the question, so a plain Resume answers it.
	var doneRuns2, askRuns2 atomic.Int32
	failing := &lgFailingResume{Saver: checkpoint.NewMemory()}
	c2 := rsCompile(t, lgSiblings(&doneRuns2, &askRuns2), graph.WithCheckpointer(failing))
	th2 := graph.WithThread("crash")
	_, err = c2.Invoke(ctx, lgState{}, th2)
	rsInterrupted(t, err)
	failing.fail.Store(true)
	_, err = c2.Resume(ctx, graph.ResumeCommand[lgState]{Value: "lost", Update: lgState{Topic: "edited"}}, th2)
	require.Error(t, err)
	failing.fail.Store(false)
	snap, err := c2.State(ctx, th2)
	require.NoError(t, err)
	assert.Equal(t, "edited", snap.Values.Topic)
	assert.Equal(t, []string{"ask"}, snap.Next)
	require.Len(t, snap.Interrupts, 1)
	out, err = c2.Resume(ctx, "again", th2)
	require.NoError(t, err)
	assert.Equal(t, []string{"done", "ask=again seeing edited"}, out.Log)
	assert.Equal(t, int32(1), doneRuns2.Load())

	// A goto to an unknown node is refused before anything is saved.
	_, err = c.Invoke(ctx, lgState{}, graph.WithThread("bad"))
	rsInterrupted(t, err)
	_, err = c.Resume(ctx, graph.ResumeCommand[lgState]{Value: "ok", Goto: []string{"nowhere"}}, graph.WithThread("bad"))
	require.ErrorContains(t, err, `unknown node "nowhere"`)
	snap, err = c.State(ctx, graph.WithThread("bad"))
	require.NoError(t, err)
	assert.Len(t, snap.Interrupts, 1)
}

// lgFailingResume is a saver that, while fail is set, fails to save answers to interrupts (with
// tasksOnly, only the answers saved for a task).
type lgFailingResume struct {
	checkpoint.Saver
	fail      atomic.Bool
	tasksOnly bool
}

func (s *lgFailingResume) PutWrites(ctx context.Context, cfg checkpoint.Config, ws []checkpoint.Write) error {
	for _, w := range ws {
		if w.Kind == checkpoint.WriteResume && s.fail.Load() && (w.TaskID != "" || !s.tasksOnly) {
			return errors.New("disk full")
		}
	}
	return s.Saver.PutWrites(ctx, cfg, ws)
}

// lgRAG is LangGraph's test_in_one_fan_out_state_graph_defer_node, with branches of different
// lengths: retriever_one → analyzer_one → qa and retriever_two → qa.
func lgRAG(qaRuns *atomic.Int32, deferQA bool) *graph.StateGraph[lgState] {
	g := graph.New[lgState]()
	step := func(name string, u lgState) {
		g.AddNode(name, func(context.Context, lgState) (lgState, error) {
			u.Log = append([]string{name}, u.Log...)
			return u, nil
		})
	}
	step("rewrite_query", lgState{})
	step("retriever_one", lgState{Log: []string{"doc1", "doc2"}})
	step("retriever_two", lgState{Log: []string{"doc3", "doc4"}})
	step("analyzer_one", lgState{})
	var opts []graph.NodeOption
	if deferQA {
		opts = append(opts, graph.Defer())
	}
	g.AddNode("qa", func(_ context.Context, s lgState) (lgState, error) {
		qaRuns.Add(1)
		var docs []string
		for _, l := range s.Log {
			if strings.HasPrefix(l, "doc") {
				docs = append(docs, l)
			}
		}
		return lgState{Answer: strings.Join(docs, ",")}, nil
	}, opts...)
	g.AddEdge(graph.START, "rewrite_query")
	g.AddEdge("rewrite_query", "retriever_one")
	g.AddEdge("retriever_one", "analyzer_one")
	g.AddEdge("rewrite_query", "retriever_two")
	g.AddEdge("analyzer_one", "qa")
	g.AddEdge("retriever_two", "qa")
	g.AddEdge("qa", graph.END)
	return g
}

// LangGraph's defer=True runs a node only once nothing else is left: qa runs once, after the
// longer branch, with every document.
func TestLangGraph_DeferredNodeRunsWhenNothingElseIsLeft(t *testing.T) {
	ctx := rsCtx(t)
	var qaRuns atomic.Int32
	_, err := rsCompile(t, lgRAG(&qaRuns, false)).Invoke(ctx, lgState{})
	require.NoError(t, err)
	assert.Equal(t, int32(2), qaRuns.Load(), "without Defer, qa runs after each branch")

	qaRuns.Store(0)
	saver := checkpoint.NewMemory()
	c := rsCompile(t, lgRAG(&qaRuns, true), graph.WithCheckpointer(saver), graph.WithStreamMode(graph.ModeUpdates))
	th := graph.WithThread("rag")
	var order []string
	for ev, err := range c.Stream(ctx, lgState{}, th) {
		require.NoError(t, err)
		order = append(order, ev.Node)
	}
	require.Len(t, order, 5)
	assert.Equal(t, "rewrite_query", order[0])
	assert.ElementsMatch(t, []string{"retriever_one", "retriever_two"}, order[1:3]) // one step
	assert.Equal(t, []string{"analyzer_one", "qa"}, order[3:])
	assert.Equal(t, int32(1), qaRuns.Load())

	// The state rebuilt from the checkpoints (a step in which qa waited ran only analyzer_one)
	// is the run's.
	snap, err := rsCompile(t, lgRAG(&qaRuns, true), graph.WithCheckpointer(saver)).State(ctx, th)
	require.NoError(t, err)
	assert.Equal(t, "doc1,doc2,doc3,doc4", snap.Values.Answer)
	assert.Empty(t, snap.Tasks)

	// A run paused while qa waits resumes with qa still waiting.
	c = rsCompile(t, lgRAG(&qaRuns, true), graph.WithCheckpointer(saver), graph.WithInterruptBefore("analyzer_one"))
	th = graph.WithThread("rag-paused")
	_, err = c.Invoke(ctx, lgState{}, th)
	rsInterrupted(t, err)
	paused, err := c.State(ctx, th)
	require.NoError(t, err)
	assert.Equal(t, []string{"analyzer_one", "qa"}, paused.Next)
	qaRuns.Store(0)
	out, err := c.Resume(ctx, nil, th)
	require.NoError(t, err)
	assert.Equal(t, "doc1,doc2,doc3,doc4", out.Answer)
	assert.Equal(t, int32(1), qaRuns.Load())
}

// LangGraph's values stream starts a resumed run with the state it resumes from, as it starts a
// new run with the input merged.
func TestLangGraph_StreamValuesOnResumeStartWithTheState(t *testing.T) {
	ctx := rsCtx(t)
	p := lgPause(t, ctx, "stream", lgState{Log: []string{"in"}})
	c, th := p.c, p.th

	var values [][]string
	for ev, err := range c.StreamResume(ctx, "go", th) {
		require.NoError(t, err)
		values = append(values, ev.Data.(lgState).Log)
	}
	assert.Equal(t, [][]string{{"in"}, {"in", "done", "ask=go seeing "}}, values)
}

// lgFailingCache is a NodeCache whose store is down.
type lgFailingCache struct{}

func (lgFailingCache) Get(context.Context, string) ([]byte, bool, error) {
	return nil, false, errors.New("cache is down")
}
func (lgFailingCache) Set(context.Context, string, []byte, time.Duration) error { return nil }

// LangGraph's CachePolicy: a node whose input was seen before is not run again; its output comes
// from the cache (marked cached in the stream) until the TTL passes; failures and interrupts are
// not cached; the key can be chosen.
func TestLangGraph_CachePolicySkipsANodeWhoseInputWasSeen(t *testing.T) {
	ctx := rsCtx(t)
	var runs atomic.Int32
	build := func(p graph.CachePolicy) *graph.StateGraph[lgState] {
		g := graph.New[lgState]()
		g.AddNode("expensive", func(_ context.Context, s lgState) (lgState, error) {
			runs.Add(1)
			if s.Topic == "fail" {
				return lgState{}, errors.New("boom")
			}
			return lgState{Answer: "about " + s.Topic}, nil
		}, graph.WithCachePolicy(p))
		g.AddEdge(graph.START, "expensive")
		g.AddEdge("expensive", graph.END)
		return g
	}
	cache := graph.NewMemoryNodeCache(100)
	c := rsCompile(t, build(graph.CachePolicy{}), graph.WithNodeCache(cache), graph.WithStreamMode(graph.ModeTasks|graph.ModeValues))
	invoke := func(topic string) (lgState, bool) {
		var (
			last   lgState
			cached bool
		)
		for ev, err := range c.Stream(ctx, lgState{Topic: topic}) {
			require.NoError(t, err)
			if te, ok := ev.Data.(graph.TaskEvent); ok && te.Finished {
				cached = te.Cached
			}
			if s, ok := ev.Data.(lgState); ok {
				last = s
			}
		}
		return last, cached
	}
	out, cached := invoke("cats")
	assert.Equal(t, "about cats", out.Answer)
	assert.False(t, cached)
	out, cached = invoke("cats")
	assert.Equal(t, "about cats", out.Answer)
	assert.True(t, cached)
	assert.Equal(t, int32(1), runs.Load())
	invoke("dogs")
	assert.Equal(t, int32(2), runs.Load())

	// Failures are not cached.
	for range 2 {
		_, err := c.Invoke(ctx, lgState{Topic: "fail"})
		require.Error(t, err)
	}
	assert.Equal(t, int32(4), runs.Load())

	// A TTL that passed runs the node again.
	runs.Store(0)
	c = rsCompile(t, build(graph.CachePolicy{TTL: time.Millisecond}), graph.WithNodeCache(graph.NewMemoryNodeCache(0)))
	for range 2 {
		_, err := c.Invoke(ctx, lgState{Topic: "owls"})
		require.NoError(t, err)
		time.Sleep(5 * time.Millisecond)
	}
	assert.Equal(t, int32(2), runs.Load())

	// A key of one's own: inputs with the same topic share an output whatever else they hold.
	runs.Store(0)
	byTopic := graph.CachePolicy{Key: func(in any) (string, error) { return in.(lgState).Topic, nil }}
	c = rsCompile(t, build(byTopic), graph.WithNodeCache(graph.NewMemoryNodeCache(0)))
	for _, log := range []string{"x", "y"} {
		out, err := c.Invoke(ctx, lgState{Topic: "bats", Log: []string{log}})
		require.NoError(t, err)
		assert.Equal(t, "about bats", out.Answer)
	}
	assert.Equal(t, int32(1), runs.Load())

	// A cache that fails fails the task, naming the node.
	c = rsCompile(t, build(graph.CachePolicy{}), graph.WithNodeCache(lgFailingCache{}))
	_, err := c.Invoke(ctx, lgState{Topic: "cats"})
	var ne *graph.NodeError
	require.ErrorAs(t, err, &ne)
	assert.Equal(t, "expensive", ne.Node)
	assert.ErrorContains(t, err, "node cache: cache is down")
}

// The memory cache keeps its most recently used entries.
func TestMemoryNodeCacheEvictsTheLeastRecentlyUsed(t *testing.T) {
	ctx := context.Background()
	c := graph.NewMemoryNodeCache(2)
	require.NoError(t, c.Set(ctx, "a", []byte("1"), 0))
	require.NoError(t, c.Set(ctx, "b", []byte("2"), 0))
	_, ok, _ := c.Get(ctx, "a")
	require.True(t, ok)
	require.NoError(t, c.Set(ctx, "c", []byte("3"), 0))
	_, ok, _ = c.Get(ctx, "b")
	assert.False(t, ok, "b was the least recently used")
	v, ok, _ := c.Get(ctx, "a")
	assert.True(t, ok)
	assert.Equal(t, "1", string(v))
	assert.Equal(t, 2, c.Len())
	c.Clear()
	assert.Equal(t, 0, c.Len())
}

// lgLog is a node that logs its name.
func lgLog(name string) graph.NodeFunc[lgState] {
	return func(context.Context, lgState) (lgState, error) { return lgState{Log: []string{name}}, nil }
}

// LangGraph's join (add_edge([a, b], j)) is a barrier checked once per step, after every task of
// the step finished: a source that finishes again in the step that completes the barrier is not
// carried over to the next round, whatever the order in which the edges were declared.
func TestLangGraph_JoinFiresOnceWhenASourceFinishesAgainInTheCompletingStep(t *testing.T) {
	ctx := rsCtx(t)
	g := graph.New[lgState]()
	for _, n := range []string{"a", "x", "b", "j"} {
		g.AddNode(n, lgLog(n))
	}
	g.AddEdge(graph.START, "a")
	g.AddEdge(graph.START, "x")
	g.AddEdge("x", "b") // b before a: b completes the join before a finishes again
	g.AddEdge("x", "a")
	g.AddJoin([]string{"a", "b"}, "j")
	g.AddConditionalEdges("j", func(_ context.Context, s lgState) string {
		if slices.Contains(s.Log, "j") && len(s.Log) < 6 {
			return "b"
		}
		return graph.END
	}, "b", graph.END)
	out, err := rsCompile(t, g, graph.WithRecursionLimit(10)).Invoke(ctx, lgState{})
	require.NoError(t, err)
	// LangGraph.js 1.7.3 logs a, x, a, b, j, b: b alone does not complete the join again.
	assert.ElementsMatch(t, []string{"a", "x", "a", "b", "j", "b"}, out.Log)
	assert.Equal(t, []string{"j", "b"}, out.Log[4:])
}

// LangGraph answers static breakpoints (interrupt_before) with a null resume, also when they wait
// in several tasks of a subgraph: invoke(null) runs them all.
func TestLangGraph_NullResumePassesBreakpointsOfSubgraphsInSeveralTasks(t *testing.T) {
	ctx := rsCtx(t)
	sub := graph.New[lgState]()
	sub.AddNode("inner", func(_ context.Context, s lgState) (lgState, error) {
		return lgState{Log: []string{"inner " + s.Topic}}, nil
	})
	sub.AddEdge(graph.START, "inner")
	sub.AddEdge("inner", graph.END)
	g := graph.New[lgState]()
	g.AddSubgraph("sub", rsCompile(t, sub, graph.WithInterruptBefore("inner")))
	g.AddRouter(graph.START, func(context.Context, lgState) graph.Next[lgState] {
		return graph.Next[lgState]{Sends: []graph.Send[lgState]{{Node: "sub", Arg: lgState{Topic: "a"}}, {Node: "sub", Arg: lgState{Topic: "b"}}}}
	}, "sub")
	g.AddEdge("sub", graph.END)
	c := rsCompile(t, g, graph.WithCheckpointer(checkpoint.NewMemory()))
	th := graph.WithThread("breakpoints")
	_, err := c.Invoke(ctx, lgState{}, th)
	ir := rsInterrupted(t, err)
	require.Len(t, ir.Interrupts, 2)
	for _, it := range ir.Interrupts {
		assert.Equal(t, "before", it.When)
	}
	out, err := c.Resume(ctx, nil, th)
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"inner a", "inner b"}, out.Log)
}

// LangGraph compiles a node with no outgoing edge and ends its branch there; the run goes on
// while other branches have work.
func TestLangGraph_NodeWithNoOutgoingEdgeEndsItsBranch(t *testing.T) {
	ctx := rsCtx(t)
	g := graph.New[lgState]()
	for _, n := range []string{"a", "b", "c"} {
		g.AddNode(n, lgLog(n))
	}
	g.AddEdge(graph.START, "a")
	g.AddEdge(graph.START, "b")
	g.AddEdge("b", "c") // a and c have no way out
	out, err := rsCompile(t, g).Invoke(ctx, lgState{})
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b", "c"}, out.Log)
}

// lgStatusError is an error that carries an HTTP status, as a provider's error does.
type lgStatusError int

func (e lgStatusError) Error() string   { return "HTTP " + strconv.Itoa(int(e)) }
func (e lgStatusError) HTTPStatus() int { return int(e) }

// LangGraph's default retry_on does not retry an error whose HTTP status says the request itself
// is wrong (400–407, 409): a second attempt fails the same way. Rate limits, timeouts, server
// errors and errors of no status are retried.
func TestLangGraph_DefaultRetryDoesNotRetryClientErrors(t *testing.T) {
	ctx := rsCtx(t)
	for _, tc := range []struct {
		err      error
		attempts int32
	}{
		{lgStatusError(400), 1}, {lgStatusError(401), 1}, {lgStatusError(404), 1}, {lgStatusError(409), 1},
		{fmt.Errorf("calling the model: %w", lgStatusError(403)), 1},
		{lgStatusError(408), 3}, {lgStatusError(429), 3}, {lgStatusError(500), 3}, {errors.New("no status"), 3},
	} {
		var attempts atomic.Int32
		g := graph.New[lgState]()
		g.AddNode("call", func(context.Context, lgState) (lgState, error) {
			attempts.Add(1)
			return lgState{}, tc.err
		}, graph.WithRetry(graph.RetryPolicy{InitialInterval: time.Microsecond}))
		g.AddEdge(graph.START, "call")
		_, err := rsCompile(t, g).Invoke(ctx, lgState{})
		require.ErrorIs(t, err, tc.err)
		assert.Equal(t, tc.attempts, attempts.Load(), "%v", tc.err)
		assert.Equal(t, tc.attempts == 3, graph.DefaultRetryOn(tc.err), "%v", tc.err)
	}
}

// lgLine is START → a → b → END, each node logging its name.
func lgLine(t *testing.T, opts ...graph.Option) *graph.Compiled[lgState] {
	g := graph.New[lgState]()
	g.AddNode("a", lgLog("a"))
	g.AddNode("b", lgLog("b"))
	g.AddEdge(graph.START, "a")
	g.AddEdge("a", "b")
	g.AddEdge("b", graph.END)
	return rsCompile(t, g, append([]graph.Option{graph.WithCheckpointer(checkpoint.NewMemory())}, opts...)...)
}

// LangGraph runs Command(goto, update) on a thread that has finished, or has no checkpoint yet: the
// update is merged and the nodes named run. An update alone is merged and nothing runs.
func TestLangGraph_CommandWithGotoAndUpdateRunsOnAFinishedThread(t *testing.T) {
	ctx := rsCtx(t)
	c := lgLine(t)
	th := graph.WithThread("finished")
	_, err := c.Invoke(ctx, lgState{Log: []string{"in"}}, th)
	require.NoError(t, err)
	out, err := c.Resume(ctx, graph.ResumeCommand[lgState]{Goto: []string{"b"}, Update: lgState{Log: []string{"u"}}}, th)
	require.NoError(t, err)
	assert.Equal(t, []string{"in", "a", "b", "u", "b"}, out.Log)
	out, err = c.Resume(ctx, graph.ResumeCommand[lgState]{Update: lgState{Log: []string{"u2"}}}, th)
	require.NoError(t, err)
	assert.Equal(t, []string{"in", "a", "b", "u", "b", "u2"}, out.Log)
	snap, err := c.State(ctx, th)
	require.NoError(t, err)
	assert.Equal(t, checkpoint.SourceUpdate, snap.Source)
	assert.Empty(t, snap.Next)

	out, err = c.Resume(ctx, graph.ResumeCommand[lgState]{Goto: []string{"b"}, Update: lgState{Log: []string{"u"}}}, graph.WithThread("fresh"))
	require.NoError(t, err)
	assert.Equal(t, []string{"u", "b"}, out.Log)

	// Nothing to do is still refused.
	_, err = c.Resume(ctx, nil, th)
	require.ErrorIs(t, err, graph.ErrNothingToResume)
	_, err = c.Resume(ctx, graph.ResumeCommand[lgState]{Value: "yes"}, th)
	require.Error(t, err)
}

// LangGraph's update_state without as_node on a thread with no checkpoint is the thread's input:
// its next tasks are the graph's first nodes.
func TestLangGraph_UpdateStateOnAFreshThreadIsTheInput(t *testing.T) {
	ctx := rsCtx(t)
	c := lgLine(t)
	th := graph.WithThread("fresh")
	_, err := c.UpdateState(ctx, lgState{Log: []string{"x"}}, "", th)
	require.NoError(t, err)
	snap, err := c.State(ctx, th)
	require.NoError(t, err)
	assert.Equal(t, []string{"a"}, snap.Next)
	out, err := c.Resume(ctx, nil, th)
	require.NoError(t, err)
	assert.Equal(t, []string{"x", "a", "b"}, out.Log)
}

// LangGraph refuses update_state as END (InvalidUpdateError: Node "__end__" does not exist).
func TestLangGraph_UpdateStateAsEndIsRefused(t *testing.T) {
	ctx := rsCtx(t)
	c := lgLine(t)
	th := graph.WithThread("end")
	_, err := c.Invoke(ctx, lgState{}, th)
	require.NoError(t, err)
	_, err = c.UpdateState(ctx, lgState{Log: []string{"x"}}, graph.END, th)
	require.ErrorContains(t, err, `"__end__"`)
	snap, err := c.State(ctx, th)
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b"}, snap.Values.Log, "nothing was saved")
}

// LangGraph pauses after a node of interrupt_after also when it was the last to run; the thread
// has then finished.
func TestLangGraph_InterruptAfterTheLastNodePauses(t *testing.T) {
	ctx := rsCtx(t)
	c := lgLine(t, graph.WithInterruptAfter("b"))
	th := graph.WithThread("after")
	out, err := c.Invoke(ctx, lgState{}, th)
	ir := rsInterrupted(t, err)
	require.Len(t, ir.Interrupts, 1)
	assert.Equal(t, "after", ir.Interrupts[0].When)
	assert.Equal(t, "b", ir.Interrupts[0].Node)
	assert.Equal(t, []string{"a", "b"}, out.Log)
	snap, err := c.State(ctx, th)
	require.NoError(t, err)
	assert.Empty(t, snap.Next)

	// In a subgraph the pause holds its parent's task, which a null resume lets go on.
	sub := graph.New[lgState]()
	sub.AddNode("inner", lgLog("inner"))
	sub.AddEdge(graph.START, "inner")
	g := graph.New[lgState]()
	g.AddSubgraph("sub", rsCompile(t, sub, graph.WithInterruptAfter("inner")))
	g.AddNode("next", lgLog("next"))
	g.AddEdge(graph.START, "sub")
	g.AddEdge("sub", "next")
	c = rsCompile(t, g, graph.WithCheckpointer(checkpoint.NewMemory()))
	_, err = c.Invoke(ctx, lgState{}, th)
	ir = rsInterrupted(t, err)
	assert.Equal(t, "inner", ir.Interrupts[0].Node)
	out, err = c.Resume(ctx, nil, th)
	require.NoError(t, err)
	assert.Equal(t, []string{"inner", "next"}, out.Log)
}

// LangGraph pauses at a breakpoint only when the state changed since the last pause: a null
// resume from a pause after a node passes the breakpoint before the next step's nodes too, so
// interrupt_after=["a"] and interrupt_before=["b"] on a → b pause once; an update made while
// paused (update_state, or Command(update)) counts as the answer, as at any pause.
func TestLangGraph_BreakpointsAfterAndBeforeTheSameStepPauseOnce(t *testing.T) {
	ctx := rsCtx(t)
	c := lgLine(t, graph.WithInterruptAfter("a"), graph.WithInterruptBefore("b"))
	for _, how := range []string{"resume", "update", "command"} {
		th := graph.WithThread(how)
		_, err := c.Invoke(ctx, lgState{}, th)
		ir := rsInterrupted(t, err)
		require.Len(t, ir.Interrupts, 1)
		assert.Equal(t, "after", ir.Interrupts[0].When)
		var resume any
		want := []string{"a", "b"}
		switch how {
		case "update":
			_, err = c.UpdateState(ctx, lgState{Log: []string{"edit"}}, "", th)
			require.NoError(t, err)
			want = []string{"a", "edit", "b"}
		case "command":
			resume = graph.ResumeCommand[lgState]{Update: lgState{Log: []string{"edit"}}}
			want = []string{"a", "edit", "b"}
		}
		out, err := c.Resume(ctx, resume, th)
		require.NoError(t, err, how)
		assert.Equal(t, want, out.Log, how)
	}
}

// LangGraph drops a paused thread's next tasks when it is given new input, but a deferred node
// that waits is not a task yet: it stays, and runs once nothing else is left, though the new run
// does not lead to it.
func TestLangGraph_NewInputKeepsADeferredNodeThatWaits(t *testing.T) {
	ctx := rsCtx(t)
	g := graph.New[lgState]()
	g.AddNode("a", func(ctx context.Context, s lgState) (lgState, error) {
		v, err := graph.Interrupt[string](ctx, "a?")
		return lgState{Log: []string{"a=" + v}}, err
	})
	g.AddNode("d", lgLog("d"), graph.Defer())
	g.AddRouter(graph.START, func(_ context.Context, s lgState) graph.Next[lgState] {
		if len(s.Log) == 1 {
			return graph.Goto[lgState]("a", "d")
		}
		return graph.Goto[lgState]("a")
	}, "a", "d")
	saver := checkpoint.NewMemory()
	c := rsCompile(t, g, graph.WithCheckpointer(saver))
	th := graph.WithThread("again")
	_, err := c.Invoke(ctx, lgState{Log: []string{"in1"}}, th)
	rsInterrupted(t, err)
	_, err = c.Invoke(ctx, lgState{Log: []string{"in2"}}, th)
	rsInterrupted(t, err)
	snap, err := c.State(ctx, th)
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"a", "d"}, snap.Next)
	out, err := c.Resume(ctx, "ok", th)
	require.NoError(t, err)
	assert.Equal(t, []string{"in1", "in2", "a=ok", "d"}, out.Log)

	// Another graph given the paused thread drops the waiting nodes it does not have.
	th = graph.WithThread("other graph")
	_, err = c.Invoke(ctx, lgState{Log: []string{"in1"}}, th)
	rsInterrupted(t, err)
	other := graph.New[lgState]()
	other.AddNode("b", lgLog("b"))
	other.AddEdge(graph.START, "b")
	out, err = rsCompile(t, other, graph.WithCheckpointer(saver)).Invoke(ctx, lgState{Log: []string{"in2"}}, th)
	require.NoError(t, err)
	assert.Equal(t, []string{"in1", "in2", "b"}, out.Log)
}

// lgNested returns a graph that runs first, then inner as the subgraph "deeper" of the subgraph
// "sub".
func lgNested(t *testing.T, first string, fn graph.NodeFunc[lgState], inner *graph.StateGraph[lgState]) *graph.StateGraph[lgState] {
	sub := graph.New[lgState]()
	sub.AddSubgraph("deeper", rsCompile(t, inner))
	sub.AddEdge(graph.START, "deeper")
	g := graph.New[lgState]()
	g.AddNode(first, fn)
	g.AddSubgraph("sub", rsCompile(t, sub))
	g.AddEdge(graph.START, first)
	g.AddEdge(first, "sub")
	return g
}

// LangGraph streams the custom events of a subgraph's nodes in custom mode without
// subgraphs=true; only the subgraph's other events (its updates, values) need it.
func TestLangGraph_CustomEventsOfSubgraphsStreamWithoutSubgraphs(t *testing.T) {
	ctx := rsCtx(t)
	emitting := func(name string) graph.NodeFunc[lgState] {
		return func(ctx context.Context, _ lgState) (lgState, error) {
			graph.Emit(ctx, "from "+name)
			return lgState{Log: []string{name}}, nil
		}
	}
	inner := graph.New[lgState]()
	inner.AddNode("inner", emitting("inner"))
	inner.AddEdge(graph.START, "inner")
	c := rsCompile(t, lgNested(t, "outer", emitting("outer"), inner))

	var custom, updates []string
	for ev, err := range c.Stream(ctx, lgState{}, graph.WithStreamMode(graph.ModeCustom|graph.ModeUpdates)) {
		require.NoError(t, err)
		switch ev.Mode {
		case graph.ModeCustom:
			custom = append(custom, ev.Data.(string))
			if ev.Data == "from inner" {
				assert.Equal(t, "inner", ev.Node)
				assert.True(t, strings.HasPrefix(ev.Namespace, "sub:"), "namespace %q", ev.Namespace)
			}
		case graph.ModeUpdates:
			assert.Empty(t, ev.Namespace, "a subgraph's update without WithSubgraphs")
			updates = append(updates, ev.Node)
		}
	}
	assert.Equal(t, []string{"from outer", "from inner"}, custom)
	assert.Equal(t, []string{"outer", "sub"}, updates)
}

// LangGraph's router (conditional edges) reads the state as it was before the superstep with only
// its own node's update merged, not the updates of the other tasks of the step.
func TestLangGraph_RouterSeesTheStateBeforeTheStepWithItsNodesUpdate(t *testing.T) {
	ctx := rsCtx(t)
	g := graph.New[lgState]()
	for _, n := range []string{"a", "b", "c"} {
		g.AddNode(n, lgLog(n))
	}
	seen := map[string][]string{}
	var mu sync.Mutex
	routerOf := func(node string) graph.Router[lgState] {
		return func(_ context.Context, s lgState) graph.Next[lgState] {
			mu.Lock()
			seen[node] = slices.Clone(s.Log)
			mu.Unlock()
			if node == "a" && slices.Contains(s.Log, "b") {
				return graph.Goto[lgState]("c")
			}
			return graph.Goto[lgState](graph.END)
		}
	}
	g.AddEdge(graph.START, "a")
	g.AddEdge(graph.START, "b")
	g.AddRouter("a", routerOf("a"), "c", graph.END)
	g.AddRouter("b", routerOf("b"), graph.END)
	g.AddEdge("c", graph.END)
	out, err := rsCompile(t, g).Invoke(ctx, lgState{Log: []string{"in"}})
	require.NoError(t, err)
	assert.Equal(t, map[string][]string{"a": {"in", "a"}, "b": {"in", "b"}}, seen)
	assert.Equal(t, []string{"in", "a", "b"}, out.Log, "a's router did not see b's update")
}

// lgSteps runs c and returns the nodes of each superstep, sorted within a step.
func lgSteps(t *testing.T, c *graph.Compiled[lgState]) [][]string {
	var steps [][]string
	for ev, err := range c.Stream(rsCtx(t), lgState{}, graph.WithStreamMode(graph.ModeUpdates)) {
		require.NoError(t, err)
		for len(steps) < ev.Step {
			steps = append(steps, nil)
		}
		steps[ev.Step-1] = append(steps[ev.Step-1], ev.Node)
	}
	for _, s := range steps {
		slices.Sort(s)
	}
	return steps
}

// LangGraph's defer=True holds back a node's edge-triggered task while tasks of other nodes made by
// edges are left; Sends to a deferred node run at once, and pending Sends to other nodes do not
// hold it back (taken from LangGraph.js 1.7.3 runs of the same graphs).
func TestLangGraph_DeferredNodeWaitsForEdgesNotSends(t *testing.T) {
	sends := func(node string, n int) graph.Router[lgState] {
		return func(context.Context, lgState) graph.Next[lgState] {
			var next graph.Next[lgState]
			for range n {
				next.Sends = append(next.Sends, graph.Send[lgState]{Node: node})
			}
			return next
		}
	}
	// a leads to gather (deferred) and sends two w: gather runs with them.
	g := graph.New[lgState]()
	g.AddNode("a", lgLog("a"))
	g.AddNode("w", lgLog("w"))
	g.AddNode("gather", lgLog("gather"), graph.Defer())
	g.AddEdge(graph.START, "a")
	g.AddEdge("a", "gather")
	g.AddRouter("a", sends("w", 2), "w")
	assert.Equal(t, [][]string{{"a"}, {"gather", "w", "w"}}, lgSteps(t, rsCompile(t, g)))

	// A Send to the deferred d runs at once, beside b.
	g = graph.New[lgState]()
	for _, n := range []string{"a", "b", "c"} {
		g.AddNode(n, lgLog(n))
	}
	g.AddNode("d", lgLog("d"), graph.Defer())
	g.AddEdge(graph.START, "a")
	g.AddEdge("a", "b")
	g.AddEdge("b", "c")
	g.AddRouter("a", sends("d", 1), "d")
	assert.Equal(t, [][]string{{"a"}, {"b", "d"}, {"c"}}, lgSteps(t, rsCompile(t, g)))

	// gather waits while c, made by an edge, is left, not for the Send beside it.
	g = graph.New[lgState]()
	for _, n := range []string{"a", "b", "c", "w"} {
		g.AddNode(n, lgLog(n))
	}
	g.AddNode("gather", lgLog("gather"), graph.Defer())
	g.AddEdge(graph.START, "a")
	g.AddEdge("a", "gather")
	g.AddEdge("a", "b")
	g.AddEdge("b", "c")
	g.AddRouter("b", sends("w", 1), "w")
	g.AddEdge("c", "gather")
	assert.Equal(t, [][]string{{"a"}, {"b"}, {"c", "w"}, {"gather"}}, lgSteps(t, rsCompile(t, g)))
}

// The functional API: an entrypoint whose tasks save their results as they finish.

// TestLangGraph_FunctionalTasksRunOnceAcrossAFailure: a task that finished is not run again when the
// entrypoint's run is started again after another task failed, in another process (a saver opened
// anew on the same SQLite file), in every durability mode; the failed task alone runs again.
func TestLangGraph_FunctionalTasksRunOnceAcrossAFailure(t *testing.T) {
	for name, d := range map[string]graph.Durability{"sync": graph.DurabilitySync, "async": graph.DurabilityAsync, "exit": graph.DurabilityExit} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			path := filepath.Join(t.TempDir(), "flow.db")
			var aRuns, bRuns atomic.Int32
			fail := atomic.Bool{}
			fail.Store(true)
			a, err := graph.NewTask("a", func(ctx context.Context, n int) (int, error) {
				aRuns.Add(1)
				return n + 1, nil
			})
			require.NoError(t, err)
			b, err := graph.NewTask("b", func(ctx context.Context, n int) (int, error) {
				bRuns.Add(1)
				if fail.Load() {
					return 0, errors.New("b is down")
				}
				return n * 10, nil
			})
			require.NoError(t, err)
			flow := func(saver checkpoint.Saver) *graph.Entrypoint[int, int] {
				e, err := graph.NewEntrypoint("flow", func(ctx context.Context, n int) (int, error) {
					x, err := a.Call(ctx, n).Get()
					if err != nil {
						return 0, err
					}
					return b.Call(ctx, x).Get()
				}, graph.WithCheckpointer(saver), graph.WithThread("t"), graph.WithDurability(d))
				require.NoError(t, err)
				return e
			}

			saver, err := sqlite.Open(path)
			require.NoError(t, err)
			_, err = flow(saver).Invoke(ctx, 4)
			require.ErrorContains(t, err, "b is down")
			require.NoError(t, saver.Close())

			fail.Store(false)
			saver, err = sqlite.Open(path)
			require.NoError(t, err)
			defer saver.Close()
			got, err := flow(saver).Resume(ctx, nil)
			require.NoError(t, err)
			assert.Equal(t, 50, got)
			assert.Equal(t, int32(1), aRuns.Load(), "a finished before the failure")
			assert.Equal(t, int32(2), bRuns.Load())
		})
	}
}

// TestLangGraph_FunctionalTasksCalledWithoutWaitingRunInParallel: futures not waited for run at
// the same time; each of these tasks waits for the other to start.
func TestLangGraph_FunctionalTasksCalledWithoutWaitingRunInParallel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	started := map[string]chan struct{}{"x": make(chan struct{}), "y": make(chan struct{})}
	other := map[string]string{"x": "y", "y": "x"}
	meet, err := graph.NewTask("meet", func(ctx context.Context, name string) (string, error) {
		close(started[name])
		select {
		case <-started[other[name]]:
			return name + " met " + other[name], nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	})
	require.NoError(t, err)
	e, err := graph.NewEntrypoint("flow", func(ctx context.Context, _ string) ([]string, error) {
		fx, fy := meet.Call(ctx, "x"), meet.Call(ctx, "y")
		x, err := fx.Get()
		if err != nil {
			return nil, err
		}
		y, err := fy.Get()
		return []string{x, y}, err
	})
	require.NoError(t, err)
	got, err := e.Invoke(ctx, "")
	require.NoError(t, err)
	assert.Equal(t, []string{"x met y", "y met x"}, got)
}

// TestLangGraph_FunctionalInterruptAndResumeReplayFinishedTasks: an Interrupt in the entrypoint and
// one in a task each pause the run; every resume runs the entrypoint again, tasks that finished
// give their saved results, and each answer reaches the Interrupt call that asked for it.
func TestLangGraph_FunctionalInterruptAndResumeReplayFinishedTasks(t *testing.T) {
	ctx := context.Background()
	runs := map[string]*atomic.Int32{"draft": {}, "review": {}}
	draft, err := graph.NewTask("draft", func(ctx context.Context, topic string) (string, error) {
		runs["draft"].Add(1)
		return "essay on " + topic, nil
	})
	require.NoError(t, err)
	review, err := graph.NewTask("review", func(ctx context.Context, essay string) (string, error) {
		runs["review"].Add(1)
		note, err := graph.Interrupt[string](ctx, "review "+essay)
		return essay + " (" + note + ")", err
	})
	require.NoError(t, err)
	e, err := graph.NewEntrypoint("write", func(ctx context.Context, topic string) (string, error) {
		essay, err := draft.Call(ctx, topic).Get()
		if err != nil {
			return "", err
		}
		style, err := graph.Interrupt[string](ctx, "which style?")
		if err != nil {
			return "", err
		}
		return review.Call(ctx, essay+" in "+style).Get()
	}, graph.WithCheckpointer(checkpoint.NewMemory()), graph.WithThread("t"))
	require.NoError(t, err)

	_, err = e.Invoke(ctx, "cats")
	var paused *graph.Interrupted
	require.ErrorAs(t, err, &paused)
	assert.Equal(t, "which style?", paused.Interrupts[0].Value)

	_, err = e.Resume(ctx, "verse")
	require.ErrorAs(t, err, &paused)
	assert.Equal(t, "review essay on cats in verse", paused.Interrupts[0].Value)
	assert.Equal(t, "review", paused.Interrupts[0].Node)

	got, err := e.Resume(ctx, "fine")
	require.NoError(t, err)
	assert.Equal(t, "essay on cats in verse (fine)", got)
	assert.Equal(t, int32(1), runs["draft"].Load(), "draft finished before the first pause")
	assert.Equal(t, int32(2), runs["review"].Load(), "review paused once, then finished")

	s, err := e.State(ctx)
	require.NoError(t, err)
	assert.Equal(t, "essay on cats in verse (fine)", s.Values)
	assert.Empty(t, s.Next)
}

// TestLangGraph_FunctionalPreviousAndFinal: a run on a thread reads what the thread's last run
// saved, which entrypoint.final (SaveFinal) sets apart from the value returned; LangGraph's
// documented example: invoke(3) returns 0 and saves 6, invoke(1) returns 6.
func TestLangGraph_FunctionalPreviousAndFinal(t *testing.T) {
	ctx := context.Background()
	saver := checkpoint.NewMemory()
	e, err := graph.NewEntrypoint("double", func(ctx context.Context, n int) (int, error) {
		prev, _, err := graph.Previous[int](ctx)
		if err != nil {
			return 0, err
		}
		return prev, graph.SaveFinal(ctx, 2*n)
	}, graph.WithCheckpointer(saver))
	require.NoError(t, err)
	got, err := e.Invoke(ctx, 3, graph.WithThread("t"))
	require.NoError(t, err)
	assert.Equal(t, 0, got)
	got, err = e.Invoke(ctx, 1, graph.WithThread("t"))
	require.NoError(t, err)
	assert.Equal(t, 6, got)

	echo, err := graph.NewEntrypoint("echo", func(ctx context.Context, s string) (string, error) {
		prev, ok, err := graph.Previous[string](ctx)
		if !ok {
			prev = "none"
		}
		return prev + ">" + s, err
	}, graph.WithCheckpointer(saver), graph.WithThread("u"))
	require.NoError(t, err)
	got2, err := echo.Invoke(ctx, "a")
	require.NoError(t, err)
	assert.Equal(t, "none>a", got2)
	got2, err = echo.Invoke(ctx, "b")
	require.NoError(t, err)
	assert.Equal(t, "none>a>b", got2, "without SaveFinal the value returned is saved")
}

// TestLangGraph_FunctionalStreamsTaskUpdatesCustomEventsAndTheValue: in updates mode each task's
// result comes under its name as it finishes and the entrypoint's return under the entrypoint's
// name; custom events of tasks stream; values mode gives the value returned, once.
func TestLangGraph_FunctionalStreamsTaskUpdatesCustomEventsAndTheValue(t *testing.T) {
	ctx := context.Background()
	up, err := graph.NewTask("up", func(ctx context.Context, s string) (string, error) {
		graph.Emit(ctx, "working on "+s)
		return strings.ToUpper(s), nil
	})
	require.NoError(t, err)
	e, err := graph.NewEntrypoint("shout", func(ctx context.Context, s string) (string, error) {
		v, err := up.Call(ctx, s).Get()
		return v + "!", err
	}, graph.WithCheckpointer(checkpoint.NewMemory()), graph.WithThread("t"))
	require.NoError(t, err)
	var got []string
	for ev, err := range e.Stream(ctx, "hi", graph.WithStreamMode(graph.ModeValues|graph.ModeUpdates|graph.ModeCustom)) {
		require.NoError(t, err)
		got = append(got, fmt.Sprintf("%v %s %v", ev.Mode, ev.Node, ev.Data))
	}
	assert.Equal(t, []string{
		fmt.Sprintf("%v up working on hi", graph.ModeCustom),
		fmt.Sprintf("%v up HI", graph.ModeUpdates),
		fmt.Sprintf("%v shout HI!", graph.ModeUpdates),
		fmt.Sprintf("%v  HI!", graph.ModeValues),
	}, got)
}

// TestLangGraph_FunctionalTaskRetryPolicy: a task with a retry policy is called again when it
// fails, and the entrypoint gets the result of the attempt that succeeded.
func TestLangGraph_FunctionalTaskRetryPolicy(t *testing.T) {
	var attempts atomic.Int32
	flaky, err := graph.NewTask("flaky", func(ctx context.Context, _ struct{}) (int32, error) {
		if n := attempts.Add(1); n < 3 {
			return 0, fmt.Errorf("attempt %d failed", n)
		}
		return attempts.Load(), nil
	}, graph.WithTaskRetry(graph.RetryPolicy{MaxAttempts: 3, InitialInterval: time.Nanosecond}))
	require.NoError(t, err)
	e, err := graph.NewEntrypoint("flow", func(ctx context.Context, _ struct{}) (int32, error) {
		return flaky.Call(ctx, struct{}{}).Get()
	})
	require.NoError(t, err)
	got, err := e.Invoke(context.Background(), struct{}{})
	require.NoError(t, err)
	assert.Equal(t, int32(3), got)
}

// TestLangGraph_FunctionalMisuseIsRefused: names and calls outside an entrypoint get clear errors.
func TestLangGraph_FunctionalMisuseIsRefused(t *testing.T) {
	_, err := graph.NewEntrypoint("", func(ctx context.Context, _ int) (int, error) { return 0, nil })
	assert.ErrorContains(t, err, "entrypoint name")
	task, err := graph.NewTask("t", func(ctx context.Context, n int) (int, error) { return n, nil })
	require.NoError(t, err)
	_, err = task.Call(context.Background(), 1).Get()
	assert.ErrorIs(t, err, graph.ErrNoTask)
	assert.ErrorContains(t, err, `task "t" called outside an entrypoint`)
	assert.ErrorContains(t, graph.SaveFinal(context.Background(), 1), "outside an entrypoint")
}

// TestLangGraph_FunctionalTasksCallTasks: a task may call tasks; the inner calls' results are saved
// too, so a run started again after the outer task failed runs neither the inner calls that
// finished nor what finished before.
func TestLangGraph_FunctionalTasksCallTasks(t *testing.T) {
	ctx := context.Background()
	var leafRuns atomic.Int32
	fail := atomic.Bool{}
	fail.Store(true)
	leaf, err := graph.NewTask("leaf", func(ctx context.Context, s string) (string, error) {
		leafRuns.Add(1)
		return "<" + s + ">", nil
	})
	require.NoError(t, err)
	branch, err := graph.NewTask("branch", func(ctx context.Context, s string) (string, error) {
		a, err := leaf.Call(ctx, s+"1").Get()
		if err != nil {
			return "", err
		}
		b, err := leaf.Call(ctx, s+"2").Get()
		if err == nil && fail.Load() {
			err = errors.New("branch broke")
		}
		return a + b, err
	})
	require.NoError(t, err)
	e, err := graph.NewEntrypoint("tree", func(ctx context.Context, s string) (string, error) {
		return branch.Call(ctx, s).Get()
	}, graph.WithCheckpointer(checkpoint.NewMemory()), graph.WithThread("t"))
	require.NoError(t, err)
	_, err = e.Invoke(ctx, "x")
	require.ErrorContains(t, err, "branch broke")
	fail.Store(false)
	got, err := e.Resume(ctx, nil)
	require.NoError(t, err)
	assert.Equal(t, "<x1><x2>", got)
	assert.Equal(t, int32(2), leafRuns.Load())
}

// lgChat is a node that asks model once per prompt, streaming each answer with OnText, and logs
// the answers.
func lgChat(model providers.Model, prompts ...string) graph.NodeFunc[lgState] {
	return func(ctx context.Context, _ lgState) (lgState, error) {
		var out lgState
		for _, p := range prompts {
			resp, err := model.Generate(ctx, providers.Request{Messages: []providers.Message{providers.UserText(p)}, OnText: graph.OnText(ctx, model.Name())})
			if err != nil {
				return out, err
			}
			out.Log = append(out.Log, resp.Message.Text())
		}
		return out, nil
	}
}

// lgMessages collects the text of a stream's ModeMessages events by node, checking what each
// event says of its task.
func lgMessages(t *testing.T, events iter.Seq2[graph.Event, error]) map[string][]string {
	t.Helper()
	got := map[string][]string{}
	ids := map[string]int{} // a message's index in got[node], by chunk ID
	for ev, err := range events {
		require.NoError(t, err)
		if ev.Mode != graph.ModeMessages {
			continue
		}
		chunk := ev.Data.(graph.MessageChunk)
		assert.Equal(t, "scripted/chat", chunk.Model)
		assert.NotEmpty(t, ev.TaskID)
		assert.Equal(t, 1, ev.Step)
		key := ev.Namespace + ev.Node
		i, ok := ids[chunk.ID]
		if !ok {
			i = len(got[key])
			ids[chunk.ID] = i
			got[key] = append(got[key], "")
		}
		got[key][i] += chunk.Text
	}
	return got
}

// LangGraph's stream_mode="messages" yields a model's tokens as they come, each with the node,
// step and task that called the model; the chunks of one call share an ID. A subgraph's tokens
// come only with subgraphs=true, tagged with its namespace.
func TestLangGraph_MessagesModeStreamsTokensOfTheNodesModelCalls(t *testing.T) {
	ctx := rsCtx(t)
	model := scripted.NewFunc("chat", func(_ context.Context, req providers.Request) (scripted.Turn, error) {
		text, _ := scripted.Last(req)
		return scripted.Turn{Text: "you said " + text}, nil
	})
	inner := graph.New[lgState]()
	inner.AddNode("inner", lgChat(model, "deep"))
	inner.AddEdge(graph.START, "inner")
	g := graph.New[lgState]()
	g.AddNode("chat", lgChat(model, "hello there", "bye"))
	g.AddSubgraph("sub", rsCompile(t, inner))
	g.AddEdge(graph.START, "chat")
	g.AddEdge(graph.START, "sub")
	c := rsCompile(t, g)

	got := lgMessages(t, c.Stream(ctx, lgState{}, graph.WithStreamMode(graph.ModeMessages|graph.ModeUpdates)))
	assert.Equal(t, map[string][]string{"chat": {"you said hello there", "you said bye"}}, got)

	got = lgMessages(t, c.Stream(ctx, lgState{}, graph.WithStreamMode(graph.ModeMessages), graph.WithSubgraphs()))
	require.Len(t, got, 2)
	assert.Equal(t, []string{"you said hello there", "you said bye"}, got["chat"])
	for key, msgs := range got {
		if key != "chat" {
			assert.Regexp(t, `^sub:[^/]+inner$`, key)
			assert.Equal(t, []string{"you said deep"}, msgs)
		}
	}
}

// Without messages streamed, OnText gives a request no OnText, so that the model does not stream.
func TestOnTextIsNilWhenNobodyStreamsMessages(t *testing.T) {
	ctx := rsCtx(t)
	var streamed atomic.Int32
	model := scripted.NewFunc("chat", func(_ context.Context, req providers.Request) (scripted.Turn, error) {
		if req.OnText != nil {
			streamed.Add(1)
		}
		return scripted.Turn{Text: "hi"}, nil
	})
	g := graph.New[lgState]()
	g.AddNode("chat", lgChat(model, "a"))
	g.AddEdge(graph.START, "chat")
	c := rsCompile(t, g)
	_, err := c.Invoke(ctx, lgState{})
	require.NoError(t, err)
	for _, err := range c.Stream(ctx, lgState{}, graph.WithStreamMode(graph.ModeCustom|graph.ModeValues)) {
		require.NoError(t, err)
	}
	assert.Zero(t, streamed.Load())
	assert.Nil(t, graph.OnText(ctx, "scripted/chat"), "outside a node")
}

// A graph invoked inside a node, not added as a subgraph, streams its models' text as that node's.
func TestMessagesOfAGraphInvokedInsideANode(t *testing.T) {
	ctx := rsCtx(t)
	model := scripted.New("chat", scripted.Turn{Text: "from the inside"})
	inner := graph.New[lgState]()
	inner.AddNode("inner", lgChat(model, "x"))
	inner.AddEdge(graph.START, "inner")
	ic := rsCompile(t, inner)
	g := graph.New[lgState]()
	g.AddNode("outer", func(ctx context.Context, s lgState) (lgState, error) { return ic.Invoke(ctx, lgState{}) })
	g.AddEdge(graph.START, "outer")
	c := rsCompile(t, g)
	got := lgMessages(t, c.Stream(ctx, lgState{}, graph.WithStreamMode(graph.ModeMessages)))
	assert.Equal(t, map[string][]string{"outer": {"from the inside"}}, got)
}

// lgResearch is the whole state of a graph whose input is an lgQuestion and whose output is an
// lgAnswer (LangGraph's StateGraph(OverallState, input_schema=..., output_schema=...)).
type lgResearch struct {
	Question string
	Notes    []string `graph:"append"`
	Answer   string
}

type lgQuestion struct{ Question string }

type lgAnswer struct{ Answer string }

// lgNotes is the private input of the node that answers: it sees the notes only.
type lgNotes struct{ Notes []string }

// LangGraph's input and output schemas: invoke takes the input's keys and returns the output's
// only, while the state, its snapshots and the values streamed hold every key; a node with an input
// schema of its own reads only its keys (test_input_output_schemas, private state in the docs).
func TestLangGraph_InputAndOutputSchemasAndANodesPrivateInput(t *testing.T) {
	ctx := rsCtx(t)
	g := graph.New[lgResearch]()
	g.AddNode("think", func(_ context.Context, s lgResearch) (lgResearch, error) {
		return lgResearch{Notes: []string{"notes on " + s.Question}}, nil
	})
	graph.AddNodeWithInput(g, "reply", func(_ context.Context, in lgNotes) (lgResearch, error) {
		return lgResearch{Answer: "from " + strings.Join(in.Notes, ", ")}, nil
	})
	g.AddEdge(graph.START, "think")
	g.AddEdge("think", "reply")
	c := rsCompile(t, g, graph.WithCheckpointer(checkpoint.NewMemory()))
	io, err := graph.NewIO[lgQuestion, lgAnswer](c)
	require.NoError(t, err)

	out, err := io.Invoke(ctx, lgQuestion{Question: "why"}, graph.WithThread("t1"))
	require.NoError(t, err)
	assert.Equal(t, lgAnswer{Answer: "from notes on why"}, out)
	snap, err := io.State(ctx, graph.WithThread("t1"))
	require.NoError(t, err)
	assert.Equal(t, lgResearch{Question: "why", Notes: []string{"notes on why"}, Answer: "from notes on why"}, snap.Values)

	var values []lgResearch
	for ev, err := range io.Stream(ctx, lgQuestion{Question: "how"}, graph.WithThread("t2")) {
		require.NoError(t, err)
		values = append(values, ev.Data.(lgResearch))
	}
	require.Len(t, values, 3)
	assert.Equal(t, lgResearch{Question: "how", Notes: []string{"notes on how"}, Answer: "from notes on how"}, values[2])

	// A resumed run returns the output too.
	paused := graph.WithInterruptBefore("reply")
	out, err = io.Invoke(ctx, lgQuestion{Question: "when"}, graph.WithThread("t3"), paused)
	rsInterrupted(t, err)
	assert.Equal(t, lgAnswer{}, out)
	out, err = io.Resume(ctx, nil, graph.WithThread("t3"), paused)
	require.NoError(t, err)
	assert.Equal(t, lgAnswer{Answer: "from notes on when"}, out)
}

// A field that the state lacks, or has with another type, is named when the graph is put
// together, not found missing in a run.
func TestInputAndOutputTypesMustBeFieldsOfTheState(t *testing.T) {
	g := graph.New[lgResearch]()
	graph.AddNodeWithInput(g, "reply", func(_ context.Context, in struct{ Draft string }) (lgResearch, error) {
		return lgResearch{}, nil
	})
	g.AddEdge(graph.START, "reply")
	_, err := g.Compile()
	require.Error(t, err)
	assert.Contains(t, err.Error(), `node "reply": input type struct { Draft string }: the state graph_test.lgResearch has no field Draft`)

	ok := graph.New[lgResearch]()
	ok.AddNode("a", func(context.Context, lgResearch) (lgResearch, error) { return lgResearch{}, nil })
	ok.AddEdge(graph.START, "a")
	c := rsCompile(t, ok)
	_, err = graph.NewIO[struct{ Question []string }, struct {
		Answer string
		Score  int
	}](c)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "field Question is a []string, the state's is a string")
	assert.Contains(t, err.Error(), "has no field Score")
}

// LangGraph's get_state(config, subgraphs=True) gives each task of a subgraph the subgraph's own
// snapshot (task.state), nested for subgraphs within it; without subgraphs it gives none.
func TestLangGraph_StateWithSubgraphsHoldsEachSubgraphsSnapshot(t *testing.T) {
	ctx := rsCtx(t)
	inner := graph.New[lgState]()
	inner.AddNode("i1", lgLog("i1"))
	inner.AddNode("ask", func(ctx context.Context, _ lgState) (lgState, error) {
		v, err := graph.Interrupt[string](ctx, "q?")
		return lgState{Log: []string{"ask:" + v}}, err
	})
	inner.AddEdge(graph.START, "i1")
	inner.AddEdge("i1", "ask")
	c := rsCompile(t, lgNested(t, "pre", lgLog("pre"), inner), graph.WithCheckpointer(checkpoint.NewMemory()))
	th := graph.WithThread("t")
	_, err := c.Invoke(ctx, lgState{}, th)
	rsInterrupted(t, err)

	plain, err := c.State(ctx, th)
	require.NoError(t, err)
	require.Len(t, plain.Tasks, 1)
	assert.Nil(t, plain.Tasks[0].Subgraph)

	snap, err := c.State(ctx, th, graph.WithSubgraphs())
	require.NoError(t, err)
	require.Len(t, snap.Tasks, 1)
	sub, ok := snap.Tasks[0].Subgraph.(graph.Snapshot[lgState])
	require.True(t, ok, "a Snapshot[lgState]: %T", snap.Tasks[0].Subgraph)
	assert.Equal(t, []string{"deeper"}, sub.Next)
	assert.True(t, strings.HasPrefix(sub.Config.NS, "sub:"), sub.Config.NS)
	require.Len(t, sub.Tasks, 1)
	deeper, ok := sub.Tasks[0].Subgraph.(graph.Snapshot[lgState])
	require.True(t, ok, "a Snapshot[lgState]: %T", sub.Tasks[0].Subgraph)
	assert.Equal(t, []string{"pre", "i1"}, deeper.Values.Log)
	assert.Equal(t, []string{"ask"}, deeper.Next)
	require.Len(t, deeper.Interrupts, 1)
	assert.Equal(t, "q?", deeper.Interrupts[0].Value)
	assert.Equal(t, snap.Interrupts[0].ID, deeper.Interrupts[0].ID)

	// History shows, for each step's subgraph task, where its subgraph ended.
	_, err = c.Resume(ctx, "yes", th)
	require.NoError(t, err)
	hist, err := c.History(ctx, checkpoint.ListOptions{}, th, graph.WithSubgraphs())
	require.NoError(t, err)
	var ended []graph.Snapshot[lgState]
	for _, h := range hist {
		for _, task := range h.Tasks {
			if task.Node == "sub" {
				ended = append(ended, task.Subgraph.(graph.Snapshot[lgState]))
			}
		}
	}
	require.Len(t, ended, 1)
	assert.Empty(t, ended[0].Next)
	assert.Empty(t, ended[0].Tasks)
	assert.Equal(t, []string{"pre", "i1", "ask:yes"}, ended[0].Values.Log)
}
