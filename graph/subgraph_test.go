package graph_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agiraph/agiraph/checkpoint"
	"github.com/agiraph/agiraph/graph"
)

// sgCounters counts node calls by name.
type sgCounters map[string]*atomic.Int32

func newSgCounters(names ...string) sgCounters {
	c := sgCounters{}
	for _, n := range names {
		c[n] = new(atomic.Int32)
	}
	return c
}

func (c sgCounters) want(t *testing.T, want map[string]int32) {
	t.Helper()
	for n, w := range want {
		if got := c[n].Load(); got != w {
			t.Errorf("%s ran %d times, want %d", n, got, w)
		}
	}
}

// sgChain builds START → names[0] → ... → END where every node logs its name.
func sgChain(calls sgCounters, names ...string) *graph.StateGraph[rsState] {
	g := graph.New[rsState]()
	prev := graph.START
	for _, n := range names {
		g.AddNode(n, rsLog(n, calls[n]))
		g.AddEdge(prev, n)
		prev = n
	}
	g.AddEdge(prev, graph.END)
	return g
}

func TestSubgraph_SameTypeAppendsOnce(t *testing.T) {
	for _, saving := range []bool{false, true} {
		t.Run(fmt.Sprintf("checkpointer=%v", saving), func(t *testing.T) {
			ctx := rsCtx(t)
			calls := newSgCounters("p1", "s1", "s2", "p2")
			child := rsCompile(t, sgChain(calls, "s1", "s2"))
			g := graph.New[rsState]()
			g.AddNode("p1", rsLog("p1", calls["p1"]))
			g.AddSubgraph("sub", child)
			g.AddNode("p2", func(_ context.Context, s rsState) (rsState, error) {
				calls["p2"].Add(1)
				return rsState{Log: []string{fmt.Sprintf("p2 saw %d", len(s.Log))}}, nil
			})
			g.AddEdge(graph.START, "p1")
			g.AddEdge("p1", "sub")
			g.AddEdge("sub", "p2")
			g.AddEdge("p2", graph.END)
			var opts, runOpts []graph.Option
			if saving {
				opts = append(opts, graph.WithCheckpointer(checkpoint.NewMemory()))
				runOpts = append(runOpts, graph.WithThread("same"))
			}
			out, err := rsCompile(t, g, opts...).Invoke(ctx, rsState{Log: []string{"in"}}, runOpts...)
			if err != nil {
				t.Fatal(err)
			}
			rsWantLog(t, out, "in", "p1", "s1", "s2", "p2 saw 4")
			calls.want(t, map[string]int32{"p1": 1, "s1": 1, "s2": 1, "p2": 1})
		})
	}
}

// sgWords is the state of mapped subgraphs: another type than the parent's.
type sgWords struct {
	Topic string
	Words []string `graph:"append"`
	Count int
}

func TestSubgraph_Mapped(t *testing.T) {
	ctx := rsCtx(t)
	child := graph.New[sgWords]()
	child.AddNode("w1", func(_ context.Context, s sgWords) (sgWords, error) {
		return sgWords{Words: []string{"w1-" + s.Topic}, Count: 1}, nil
	})
	child.AddNode("w2", func(_ context.Context, s sgWords) (sgWords, error) {
		return sgWords{Words: []string{"w2-" + s.Topic}, Count: s.Count + 1}, nil
	})
	child.AddEdge(graph.START, "w1")
	child.AddEdge("w1", "w2")
	child.AddEdge("w2", graph.END)
	cc := rsCompile(t, child)

	g := graph.New[rsState]()
	graph.AddMappedSubgraph(g, "words", cc,
		func(p rsState) sgWords { return sgWords{Topic: p.Log[len(p.Log)-1]} },
		func(p rsState, final sgWords) rsState {
			return rsState{Log: final.Words, N: p.N + final.Count}
		})
	g.AddNode("after", func(_ context.Context, s rsState) (rsState, error) {
		return rsState{Log: []string{fmt.Sprintf("after N=%d", s.N)}}, nil
	})
	g.AddEdge(graph.START, "words")
	g.AddEdge("words", "after")
	g.AddEdge("after", graph.END)
	c := rsCompile(t, g)
	out, err := c.Invoke(ctx, rsState{Log: []string{"go"}, N: 40})
	if err != nil {
		t.Fatal(err)
	}
	rsWantLog(t, out, "go", "w1-go", "w2-go", "after N=42")

	// A nil mapping is a declaration error.
	bad := graph.New[rsState]()
	graph.AddMappedSubgraph[rsState, sgWords](bad, "words", cc, nil, nil)
	bad.AddEdge(graph.START, "words")
	bad.AddEdge("words", graph.END)
	if _, err := bad.Compile(); err == nil {
		t.Fatal("a mapped subgraph without mappings compiled")
	}
}

// sgResults is the state of the fan-out test.
type sgResults struct {
	I       int
	Results []int `graph:"append"`
	Seen    int
}

func TestSubgraph_SendFanOutFeedsTheParent(t *testing.T) {
	const n = 50
	for _, saving := range []bool{false, true} {
		t.Run(fmt.Sprintf("checkpointer=%v", saving), func(t *testing.T) {
			ctx := rsCtx(t)
			child := graph.New[sgResults]()
			child.AddRouter(graph.START, func(context.Context, sgResults) graph.Next[sgResults] {
				var nx graph.Next[sgResults]
				for i := range n {
					nx.Sends = append(nx.Sends, graph.Send[sgResults]{Node: "square", Arg: sgResults{I: i}})
				}
				return nx
			}, "square")
			child.AddNode("square", func(_ context.Context, s sgResults) (sgResults, error) {
				return sgResults{Results: []int{s.I * s.I}}, nil
			})
			child.AddEdge("square", graph.END)

			var seen atomic.Value
			g := graph.New[sgResults]()
			g.AddSubgraph("fan", rsCompile(t, child))
			g.AddNode("sum", func(_ context.Context, s sgResults) (sgResults, error) {
				seen.Store(slices.Clone(s.Results))
				return sgResults{Seen: len(s.Results)}, nil
			})
			g.AddEdge(graph.START, "fan")
			g.AddEdge("fan", "sum")
			g.AddEdge("sum", graph.END)
			var opts, runOpts []graph.Option
			if saving {
				opts = append(opts, graph.WithCheckpointer(checkpoint.NewMemory()))
				runOpts = append(runOpts, graph.WithThread("fan"))
			}
			out, err := rsCompile(t, g, opts...).Invoke(ctx, sgResults{}, runOpts...)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := seen.Load().([]int)
			if len(got) != n {
				t.Fatalf("the parent's next node saw %d results, want %d", len(got), n)
			}
			for i, v := range got {
				if v != i*i {
					t.Fatalf("result %d = %d, want %d (Send order)", i, v, i*i)
				}
			}
			if out.Seen != n || len(out.Results) != n {
				t.Fatalf("final state has %d results and Seen %d, want %d", len(out.Results), out.Seen, n)
			}
		})
	}
}

// sgAskingParent is START → p1 → sub → p2 → END where sub is START → s1 → ask → s3 → END and ask
// interrupts.
func sgAskingParent(t *testing.T, calls sgCounters, saver checkpoint.Saver) *graph.Compiled[rsState] {
	t.Helper()
	child := graph.New[rsState]()
	child.AddNode("s1", rsLog("s1", calls["s1"]))
	child.AddNode("ask", func(ctx context.Context, _ rsState) (rsState, error) {
		calls["ask"].Add(1)
		v, err := graph.Interrupt[string](ctx, "inner question")
		if err != nil {
			return rsState{}, err
		}
		return rsState{Log: []string{"ask=" + v}}, nil
	})
	child.AddNode("s3", rsLog("s3", calls["s3"]))
	child.AddEdge(graph.START, "s1")
	child.AddEdge("s1", "ask")
	child.AddEdge("ask", "s3")
	child.AddEdge("s3", graph.END)

	g := graph.New[rsState]()
	g.AddNode("p1", rsLog("p1", calls["p1"]))
	g.AddSubgraph("sub", rsCompile(t, child))
	g.AddNode("p2", rsLog("p2", calls["p2"]))
	g.AddEdge(graph.START, "p1")
	g.AddEdge("p1", "sub")
	g.AddEdge("sub", "p2")
	g.AddEdge("p2", graph.END)
	return rsCompile(t, g, graph.WithCheckpointer(saver))
}

func TestSubgraph_InterruptInsideResumesInside(t *testing.T) {
	ctx := rsCtx(t)
	calls := newSgCounters("p1", "s1", "ask", "s3", "p2")
	saver := checkpoint.NewMemory()
	c := sgAskingParent(t, calls, saver)
	th := graph.WithThread("nested")

	out, err := c.Invoke(ctx, rsState{}, th)
	ir := rsInterrupted(t, err)
	if len(ir.Interrupts) != 1 {
		t.Fatalf("interrupts = %+v", ir.Interrupts)
	}
	it := ir.Interrupts[0]
	if it.Node != "ask" || it.NS == "" || !strings.HasPrefix(it.NS, "sub:") || it.When != "during" || it.Value != "inner question" {
		t.Fatalf("interrupt = %+v, want ask's, in the namespace of sub", it)
	}
	rsWantLog(t, out, "p1")
	// The subgraph keeps its own checkpoints under that namespace.
	inner, err := saver.List(ctx, checkpoint.Config{ThreadID: "nested", NS: it.NS}, checkpoint.ListOptions{})
	if err != nil || len(inner) == 0 {
		t.Fatalf("subgraph checkpoints in %q: %d, %v", it.NS, len(inner), err)
	}

	out, err = c.Resume(ctx, "inner answer", th)
	if err != nil {
		t.Fatalf("resume: %v", err)
	}
	rsWantLog(t, out, "p1", "s1", "ask=inner answer", "s3", "p2")
	calls.want(t, map[string]int32{"p1": 1, "s1": 1, "ask": 2, "s3": 1, "p2": 1})

	// The same, answered by ID from a freshly compiled graph.
	calls2 := newSgCounters("p1", "s1", "ask", "s3", "p2")
	saver2 := checkpoint.NewMemory()
	th2 := graph.WithThread("nested-by-id")
	_, err = sgAskingParent(t, calls2, saver2).Invoke(ctx, rsState{}, th2)
	id := rsInterrupted(t, err).Interrupts[0].ID
	out, err = sgAskingParent(t, calls2, saver2).Resume(ctx, graph.ResumeByID{id: "by id"}, th2)
	if err != nil {
		t.Fatalf("resume by ID: %v", err)
	}
	rsWantLog(t, out, "p1", "s1", "ask=by id", "s3", "p2")
	calls2.want(t, map[string]int32{"p1": 1, "s1": 1, "ask": 2, "s3": 1, "p2": 1})
}

func TestSubgraph_InterruptsInTwoStepsOfTheSubgraph(t *testing.T) {
	ctx := rsCtx(t)
	calls := newSgCounters("s1", "q1", "q2", "after")
	ask := func(name string) graph.NodeFunc[rsState] {
		return func(ctx context.Context, _ rsState) (rsState, error) {
			calls[name].Add(1)
			v, err := graph.Interrupt[string](ctx, name+"?")
			if err != nil {
				return rsState{}, err
			}
			return rsState{Log: []string{name + "=" + v}}, nil
		}
	}
	child := graph.New[rsState]()
	child.AddNode("s1", rsLog("s1", calls["s1"]))
	child.AddNode("q1", ask("q1"))
	child.AddNode("q2", ask("q2"))
	child.AddEdge(graph.START, "s1")
	child.AddEdge("s1", "q1")
	child.AddEdge("q1", "q2")
	child.AddEdge("q2", graph.END)
	g := graph.New[rsState]()
	g.AddSubgraph("sub", rsCompile(t, child))
	g.AddNode("after", rsLog("after", calls["after"]))
	g.AddEdge(graph.START, "sub")
	g.AddEdge("sub", "after")
	g.AddEdge("after", graph.END)
	c := rsCompile(t, g, graph.WithCheckpointer(checkpoint.NewMemory()))
	th := graph.WithThread("two-steps")

	_, err := c.Invoke(ctx, rsState{}, th)
	if it := rsInterrupted(t, err).Interrupts[0]; it.Value != "q1?" {
		t.Fatalf("first pause %+v", it)
	}
	_, err = c.Resume(ctx, "one", th)
	if it := rsInterrupted(t, err).Interrupts[0]; it.Value != "q2?" || it.Node != "q2" {
		t.Fatalf("second pause %+v", it)
	}
	out, err := c.Resume(ctx, "two", th)
	if err != nil {
		t.Fatalf("resume: %v", err)
	}
	rsWantLog(t, out, "s1", "q1=one", "q2=two", "after")
	calls.want(t, map[string]int32{"s1": 1, "q1": 2, "q2": 2, "after": 1})
}

func TestSubgraph_FailureInsideResumesInside(t *testing.T) {
	ctx := rsCtx(t)
	calls := newSgCounters("s1", "flaky", "after")
	var failing atomic.Bool
	failing.Store(true)
	child := graph.New[rsState]()
	child.AddNode("s1", rsLog("s1", calls["s1"]))
	child.AddNode("flaky", func(context.Context, rsState) (rsState, error) {
		calls["flaky"].Add(1)
		if failing.Load() {
			return rsState{}, errRsBoom
		}
		return rsState{Log: []string{"flaky"}}, nil
	})
	child.AddEdge(graph.START, "s1")
	child.AddEdge("s1", "flaky")
	child.AddEdge("flaky", graph.END)
	g := graph.New[rsState]()
	g.AddSubgraph("sub", rsCompile(t, child))
	g.AddNode("after", rsLog("after", calls["after"]))
	g.AddEdge(graph.START, "sub")
	g.AddEdge("sub", "after")
	g.AddEdge("after", graph.END)
	c := rsCompile(t, g, graph.WithCheckpointer(checkpoint.NewMemory()))
	th := graph.WithThread("inner-crash")

	_, err := c.Invoke(ctx, rsState{}, th)
	if !errors.Is(err, errRsBoom) {
		t.Fatalf("first run: %v", err)
	}
	failing.Store(false)
	out, err := c.Resume(ctx, nil, th)
	if err != nil {
		t.Fatalf("resume: %v", err)
	}
	rsWantLog(t, out, "s1", "flaky", "after")
	calls.want(t, map[string]int32{"s1": 1, "flaky": 2, "after": 1})
}

func TestSubgraph_ParallelInterruptsInsideNeedResumeByID(t *testing.T) {
	ctx := rsCtx(t)
	calls := newSgCounters("a", "b", "after")
	var rec rsRecorder
	ask := func(name string) graph.NodeFunc[rsState] {
		return func(ctx context.Context, _ rsState) (rsState, error) {
			calls[name].Add(1)
			v, err := graph.Interrupt[string](ctx, name+"?")
			if err != nil {
				return rsState{}, err
			}
			rec.add(name + "=" + v)
			return rsState{Log: []string{name + "=" + v}}, nil
		}
	}
	child := graph.New[rsState]()
	child.AddNode("a", ask("a"))
	child.AddNode("b", ask("b"))
	child.AddEdge(graph.START, "a")
	child.AddEdge(graph.START, "b")
	child.AddEdge("a", graph.END)
	child.AddEdge("b", graph.END)
	g := graph.New[rsState]()
	g.AddSubgraph("sub", rsCompile(t, child))
	g.AddNode("after", rsLog("after", calls["after"]))
	g.AddEdge(graph.START, "sub")
	g.AddEdge("sub", "after")
	g.AddEdge("after", graph.END)
	c := rsCompile(t, g, graph.WithCheckpointer(checkpoint.NewMemory()))
	th := graph.WithThread("inner-two")

	_, err := c.Invoke(ctx, rsState{}, th)
	ir := rsInterrupted(t, err)
	ids := rsIDs(t, ir)
	if len(ir.Interrupts) != 2 || ids["a"] == ids["b"] {
		t.Fatalf("interrupts = %+v, want a's and b's", ir.Interrupts)
	}
	for _, it := range ir.Interrupts {
		if !strings.HasPrefix(it.NS, "sub:") {
			t.Fatalf("interrupt %+v is not in sub's namespace", it)
		}
	}

	// Two interrupts wait, as at the root: one plain value cannot answer both.
	_, err = c.Resume(ctx, "same", th)

	if err == nil || errors.As(err, &ir) || !strings.Contains(err.Error(), "ResumeByID") {
		t.Fatalf("plain resume of two interrupts inside a subgraph: %v, want an error pointing to ResumeByID", err)
	}
	if got := rec.get(); len(got) != 0 {
		t.Fatalf("a refused resume answered %q", got)
	}

	// Answer a only: b stays pending, with the same ID.
	_, err = c.Resume(ctx, graph.ResumeByID{ids["a"]: "A"}, th)
	ir = rsInterrupted(t, err)
	if len(ir.Interrupts) != 1 || ir.Interrupts[0].ID != ids["b"] {
		t.Fatalf("after answering a: %+v, want only b's interrupt %q", ir.Interrupts, ids["b"])
	}
	out, err := c.Resume(ctx, graph.ResumeByID{ids["b"]: "B"}, th)
	if err != nil {
		t.Fatalf("resume: %v", err)
	}
	rsWantLog(t, out, "a=A", "b=B", "after")
	calls.want(t, map[string]int32{"a": 2, "b": 3, "after": 1})
}

func TestSubgraph_CommandToParent(t *testing.T) {
	ctx := rsCtx(t)
	calls := newSgCounters("c2", "target", "skipped")
	child := graph.New[rsState]()
	child.AddCommandNode("c1", func(context.Context, rsState) (graph.Command[rsState], error) {
		return graph.Command[rsState]{
			ToParent: true,
			Goto:     []string{"target"},
			Update:   rsState{Log: []string{"from child"}, N: 5},
		}, nil
	})
	child.AddNode("c2", rsLog("c2", calls["c2"]))
	child.AddEdge(graph.START, "c1")
	child.AddEdge("c1", "c2")
	child.AddEdge("c2", graph.END)

	for _, saving := range []bool{false, true} {
		t.Run(fmt.Sprintf("checkpointer=%v", saving), func(t *testing.T) {
			for _, c := range calls {
				c.Store(0)
			}
			var targetSaw atomic.Int32
			g := graph.New[rsState]()
			g.AddSubgraph("sub", rsCompile(t, child), graph.Destinations("target", "skipped"))
			g.AddNode("target", func(_ context.Context, s rsState) (rsState, error) {
				calls["target"].Add(1)
				targetSaw.Store(int32(s.N))
				return rsState{Log: []string{"target"}}, nil
			})
			g.AddNode("skipped", rsLog("skipped", calls["skipped"]))
			g.AddEdge("target", graph.END)
			g.AddEdge("skipped", graph.END)
			g.AddEdge(graph.START, "sub")
			var opts, runOpts []graph.Option
			if saving {
				opts = append(opts, graph.WithCheckpointer(checkpoint.NewMemory()))
				runOpts = append(runOpts, graph.WithThread("to-parent"))
			}
			out, err := rsCompile(t, g, opts...).Invoke(ctx, rsState{Log: []string{"in"}}, runOpts...)
			if err != nil {
				t.Fatal(err)
			}
			rsWantLog(t, out, "in", "from child", "target")
			if out.N != 5 || targetSaw.Load() != 5 {
				t.Fatalf("N = %d, target saw %d; want the child's update 5 in the parent", out.N, targetSaw.Load())
			}
			calls.want(t, map[string]int32{"c2": 0, "target": 1, "skipped": 0})
		})
	}
}

func TestSubgraph_MappedCommandToParent(t *testing.T) {
	ctx := rsCtx(t)
	child := graph.New[sgWords]()
	child.AddCommandNode("c1", func(_ context.Context, s sgWords) (graph.Command[sgWords], error) {
		return graph.Command[sgWords]{ToParent: true, Goto: []string{"target"}, Update: sgWords{Words: []string{"w-" + s.Topic}}}, nil
	})
	child.AddEdge(graph.START, "c1")
	g := graph.New[rsState]()
	graph.AddMappedSubgraph(g, "sub", rsCompile(t, child),
		func(rsState) sgWords { return sgWords{Topic: "t"} },
		func(_ rsState, final sgWords) rsState { return rsState{Log: final.Words} },
		graph.Destinations("target"))
	g.AddNode("target", rsLog("target", nil))
	g.AddEdge(graph.START, "sub")
	g.AddEdge("target", graph.END)
	out, err := rsCompile(t, g).Invoke(ctx, rsState{})
	if err != nil {
		t.Fatal(err)
	}
	rsWantLog(t, out, "w-t", "target")
}

func TestSubgraph_ErrorIsANodeErrorOfTheParentNode(t *testing.T) {
	ctx := rsCtx(t)
	child := graph.New[rsState]()
	child.AddNode("bad", func(context.Context, rsState) (rsState, error) { return rsState{}, errRsBoom })
	child.AddEdge(graph.START, "bad")
	child.AddEdge("bad", graph.END)
	var afterRuns atomic.Int32
	g := graph.New[rsState]()
	g.AddNode("first", rsLog("first", nil))
	g.AddSubgraph("research", rsCompile(t, child))
	g.AddNode("after", rsLog("after", &afterRuns))
	g.AddEdge(graph.START, "first")
	g.AddEdge("first", "research")
	g.AddEdge("research", "after")
	g.AddEdge("after", graph.END)

	_, err := rsCompile(t, g).Invoke(ctx, rsState{})
	var ne *graph.NodeError
	if !errors.As(err, &ne) || ne.Node != "research" || ne.Step != 2 {
		t.Fatalf("error %v, want a *NodeError of the parent's node research in step 2", err)
	}
	if !errors.Is(err, errRsBoom) {
		t.Fatalf("error %v does not wrap the subgraph node's error", err)
	}
	var innerErr *graph.NodeError
	if !errors.As(ne.Err, &innerErr) || innerErr.Node != "bad" {
		t.Fatalf("inner error %v, want the subgraph's NodeError of bad", ne.Err)
	}
	if afterRuns.Load() != 0 {
		t.Fatal("the parent went on after its subgraph failed")
	}
}

func TestSubgraph_InterruptNeedsTheParentsCheckpointer(t *testing.T) {
	ctx := rsCtx(t)
	calls := newSgCounters("p1", "s1", "ask", "s3", "p2")
	// The child has its own checkpointer, but a subgraph uses its parent's.
	child := graph.New[rsState]()
	child.AddNode("ask", func(ctx context.Context, _ rsState) (rsState, error) {
		calls["ask"].Add(1)
		_, err := graph.Interrupt[string](ctx, "?")
		return rsState{}, err
	})
	child.AddEdge(graph.START, "ask")
	child.AddEdge("ask", graph.END)
	g := graph.New[rsState]()
	g.AddSubgraph("sub", rsCompile(t, child, graph.WithCheckpointer(checkpoint.NewMemory())))
	g.AddEdge(graph.START, "sub")
	g.AddEdge("sub", graph.END)
	_, err := rsCompile(t, g).Invoke(ctx, rsState{})
	if !errors.Is(err, graph.ErrNoCheckpointer) {
		t.Fatalf("interrupt in a subgraph of a parent without checkpointer: %v, want ErrNoCheckpointer", err)
	}
}

func TestSubgraph_MappedInterruptResumesInside(t *testing.T) {
	ctx := rsCtx(t)
	calls := newSgCounters("w1", "ask", "after")
	child := graph.New[sgWords]()
	child.AddNode("w1", func(_ context.Context, s sgWords) (sgWords, error) {
		calls["w1"].Add(1)
		return sgWords{Words: []string{"w1-" + s.Topic}, Count: 1}, nil
	})
	child.AddNode("ask", func(ctx context.Context, s sgWords) (sgWords, error) {
		calls["ask"].Add(1)
		v, err := graph.Interrupt[string](ctx, "word after "+s.Words[0]+"?")
		if err != nil {
			return sgWords{}, err
		}
		return sgWords{Words: []string{v}, Count: s.Count + 1}, nil
	})
	child.AddEdge(graph.START, "w1")
	child.AddEdge("w1", "ask")
	child.AddEdge("ask", graph.END)
	g := graph.New[rsState]()
	graph.AddMappedSubgraph(g, "words", rsCompile(t, child),
		func(p rsState) sgWords { return sgWords{Topic: p.Log[0]} },
		func(p rsState, final sgWords) rsState { return rsState{Log: final.Words, N: final.Count} })
	g.AddNode("after", rsLog("after", calls["after"]))
	g.AddEdge(graph.START, "words")
	g.AddEdge("words", "after")
	g.AddEdge("after", graph.END)
	c := rsCompile(t, g, graph.WithCheckpointer(checkpoint.NewMemory()))
	th := graph.WithThread("mapped-ask")

	_, err := c.Invoke(ctx, rsState{Log: []string{"go"}}, th)
	it := rsInterrupted(t, err).Interrupts[0]
	if it.Value != "word after w1-go?" || !strings.HasPrefix(it.NS, "words:") {
		t.Fatalf("interrupt %+v", it)
	}
	out, err := c.Resume(ctx, "gopher", th)
	if err != nil {
		t.Fatalf("resume: %v", err)
	}
	rsWantLog(t, out, "go", "w1-go", "gopher", "after")
	if out.N != 2 {
		t.Fatalf("N = %d, want the child's count 2 (rebuilt from its checkpoint)", out.N)
	}
	calls.want(t, map[string]int32{"w1": 1, "ask": 2, "after": 1})
}

func TestSubgraph_InterruptBeforeANodeOfTheSubgraph(t *testing.T) {
	ctx := rsCtx(t)
	calls := newSgCounters("s1", "s2", "after")
	child := rsCompile(t, sgChain(calls, "s1", "s2"), graph.WithInterruptBefore("s2"))
	g := graph.New[rsState]()
	g.AddSubgraph("sub", child)
	g.AddNode("after", rsLog("after", calls["after"]))
	g.AddEdge(graph.START, "sub")
	g.AddEdge("sub", "after")
	g.AddEdge("after", graph.END)
	c := rsCompile(t, g, graph.WithCheckpointer(checkpoint.NewMemory()))
	th := graph.WithThread("sub-before")

	_, err := c.Invoke(ctx, rsState{}, th)
	ir := rsInterrupted(t, err)
	if it := ir.Interrupts[0]; len(ir.Interrupts) != 1 || it.Node != "s2" || it.When != "before" || !strings.HasPrefix(it.NS, "sub:") {
		t.Fatalf("interrupts %+v, want one before the subgraph's s2", ir.Interrupts)
	}
	calls.want(t, map[string]int32{"s1": 1, "s2": 0})
	out, err := c.Resume(ctx, nil, th)
	if err != nil {
		t.Fatalf("resume: %v", err)
	}
	rsWantLog(t, out, "s1", "s2", "after")
	calls.want(t, map[string]int32{"s1": 1, "s2": 1, "after": 1})
}

func TestSubgraph_SameChildTwiceKeepsSeparateCheckpoints(t *testing.T) {
	ctx := rsCtx(t)
	var rec rsRecorder
	child := graph.New[rsState]()
	child.AddNode("ask", func(ctx context.Context, s rsState) (rsState, error) {
		v, err := graph.Interrupt[string](ctx, "?")
		if err != nil {
			return rsState{}, err
		}
		rec.add(v)
		return rsState{Log: []string{"ask=" + v}}, nil
	})
	child.AddEdge(graph.START, "ask")
	child.AddEdge("ask", graph.END)
	cc := rsCompile(t, child)
	g := graph.New[rsState]()
	g.AddSubgraph("left", cc)
	g.AddSubgraph("right", cc)
	g.AddEdge(graph.START, "left")
	g.AddEdge(graph.START, "right")
	g.AddEdge("left", graph.END)
	g.AddEdge("right", graph.END)
	c := rsCompile(t, g, graph.WithCheckpointer(checkpoint.NewMemory()))
	th := graph.WithThread("twice")

	_, err := c.Invoke(ctx, rsState{}, th)
	ir := rsInterrupted(t, err)
	byNS := graph.ResumeByID{}
	for _, it := range ir.Interrupts {
		switch {
		case strings.HasPrefix(it.NS, "left:"):
			byNS[it.ID] = "L"
		case strings.HasPrefix(it.NS, "right:"):
			byNS[it.ID] = "R"
		}
	}
	if len(ir.Interrupts) != 2 || len(byNS) != 2 {
		t.Fatalf("interrupts %+v, want one in each subgraph", ir.Interrupts)
	}
	out, err := c.Resume(ctx, byNS, th)
	if err != nil {
		t.Fatalf("resume: %v", err)
	}
	rsWantLog(t, out, "ask=L", "ask=R")
}
