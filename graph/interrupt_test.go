package graph_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agiraph/agiraph/checkpoint"
	"github.com/agiraph/agiraph/graph"
)

// Helpers shared by interrupt_test.go, resume_test.go, subgraph_test.go and stream_test.go. Their
// names start with "rs" so they do not collide with helpers of the package's other test files.

// rsState is the state most of these tests use: an append-only log and a counter.
type rsState struct {
	Log []string `graph:"append"`
	N   int
}

// rsCtx is a context that ends the test's runs if they hang: a guard, never a timing assertion.
func rsCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func rsCompile[S any](t *testing.T, g *graph.StateGraph[S], opts ...graph.Option) *graph.Compiled[S] {
	t.Helper()
	c, err := g.Compile(opts...)
	if err != nil {
		t.Fatalf("compile: %v", err)
	}
	return c
}

func rsInterrupted(t *testing.T, err error) *graph.Interrupted {
	t.Helper()
	var ir *graph.Interrupted
	if !errors.As(err, &ir) {
		t.Fatalf("want a *graph.Interrupted error, got %v", err)
	}
	return ir
}

// rsLog is a node that appends entry to the log and counts its runs in n (when n is not nil).
func rsLog(entry string, n *atomic.Int32) graph.NodeFunc[rsState] {
	return func(context.Context, rsState) (rsState, error) {
		if n != nil {
			n.Add(1)
		}
		return rsState{Log: []string{entry}}, nil
	}
}

func rsWantLog(t *testing.T, got rsState, want ...string) {
	t.Helper()
	if !slices.Equal(got.Log, want) {
		t.Fatalf("log = %q, want %q", got.Log, want)
	}
}

// rsRecorder collects strings from concurrently running nodes.
type rsRecorder struct {
	mu   sync.Mutex
	seen []string
}

func (r *rsRecorder) add(s ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seen = append(r.seen, s...)
}

func (r *rsRecorder) get() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.seen)
}

// rsAskGraph is START → a → ask → b → END where ask asks for a name with Interrupt.
func rsAskGraph(rec *rsRecorder, askRuns, bRuns *atomic.Int32) *graph.StateGraph[rsState] {
	g := graph.New[rsState]()
	g.AddNode("a", rsLog("a", nil))
	g.AddNode("ask", func(ctx context.Context, _ rsState) (rsState, error) {
		askRuns.Add(1)
		name, err := graph.Interrupt[string](ctx, "what is your name?")
		if err != nil {
			return rsState{}, err
		}
		rec.add(name)
		return rsState{Log: []string{"hello " + name}}, nil
	})
	g.AddNode("b", rsLog("b", bRuns))
	g.AddEdge(graph.START, "a")
	g.AddEdge("a", "ask")
	g.AddEdge("ask", "b")
	g.AddEdge("b", graph.END)
	return g
}

func TestInterrupt_PausesAndResumes(t *testing.T) {
	ctx := rsCtx(t)
	var rec rsRecorder
	var askRuns, bRuns atomic.Int32
	c := rsCompile(t, rsAskGraph(&rec, &askRuns, &bRuns), graph.WithCheckpointer(checkpoint.NewMemory()))

	out, err := c.Invoke(ctx, rsState{Log: []string{"in"}}, graph.WithThread("t1"))
	ir := rsInterrupted(t, err)
	rsWantLog(t, out, "in", "a") // the state so far
	if len(ir.Interrupts) != 1 {
		t.Fatalf("interrupts = %+v, want one", ir.Interrupts)
	}
	it := ir.Interrupts[0]
	if it.Value != "what is your name?" || it.Node != "ask" || it.ID == "" || it.When != "during" || it.NS != "" {
		t.Fatalf("interrupt = %+v", it)
	}
	if !strings.Contains(err.Error(), "what is your name?") {
		t.Errorf("error %q does not show the payload", err)
	}
	if bRuns.Load() != 0 {
		t.Fatalf("b ran before the interrupt was answered")
	}

	out, err = c.Resume(ctx, "bob", graph.WithThread("t1"))
	if err != nil {
		t.Fatalf("resume: %v", err)
	}
	rsWantLog(t, out, "in", "a", "hello bob", "b")
	if got := rec.get(); !slices.Equal(got, []string{"bob"}) {
		t.Fatalf("node saw %q, want [bob]", got)
	}
	if askRuns.Load() != 2 || bRuns.Load() != 1 {
		t.Fatalf("ask ran %d times, b %d times; want 2 and 1", askRuns.Load(), bRuns.Load())
	}

	// The thread is finished now.
	if _, err := c.Resume(ctx, "again", graph.WithThread("t1")); !errors.Is(err, graph.ErrNothingToResume) {
		t.Fatalf("resume of a finished thread: %v, want ErrNothingToResume", err)
	}
}

func TestInterrupt_SeveralCallsInOneNodeResumeInOrder(t *testing.T) {
	ctx := rsCtx(t)
	var runs rsRecorder // what every run of the node saw before it stopped or finished
	g := graph.New[rsState]()
	g.AddNode("form", func(ctx context.Context, _ rsState) (rsState, error) {
		first, err := graph.Interrupt[string](ctx, "first?")
		if err != nil {
			runs.add("run:-")
			return rsState{}, err
		}
		second, err := graph.Interrupt[string](ctx, "second?")
		if err != nil {
			runs.add("run:" + first)
			return rsState{}, err
		}
		runs.add("run:" + first + "," + second)
		return rsState{Log: []string{first, second}}, nil
	})
	g.AddEdge(graph.START, "form")
	g.AddEdge("form", graph.END)
	saver := checkpoint.NewMemory()
	c := rsCompile(t, g, graph.WithCheckpointer(saver))
	th := graph.WithThread("multi")

	_, err := c.Invoke(ctx, rsState{}, th)
	ir1 := rsInterrupted(t, err)
	if len(ir1.Interrupts) != 1 || ir1.Interrupts[0].Value != "first?" {
		t.Fatalf("first pause: %+v", ir1.Interrupts)
	}
	_, err = c.Resume(ctx, "one", th)
	ir2 := rsInterrupted(t, err)
	if len(ir2.Interrupts) != 1 || ir2.Interrupts[0].Value != "second?" {
		t.Fatalf("second pause: %+v", ir2.Interrupts)
	}
	if ir2.Interrupts[0].ID == ir1.Interrupts[0].ID {
		t.Fatalf("both interrupts have ID %q", ir1.Interrupts[0].ID)
	}
	// A fresh compiled graph, as in another process: the first answer comes back from the saver.
	c2 := rsCompile(t, g, graph.WithCheckpointer(saver))
	out, err := c2.Resume(ctx, "two", th)
	if err != nil {
		t.Fatalf("second resume: %v", err)
	}
	rsWantLog(t, out, "one", "two")
	if got, want := runs.get(), []string{"run:-", "run:one", "run:one,two"}; !slices.Equal(got, want) {
		t.Fatalf("runs saw %q, want %q", got, want)
	}
}

type rsQuestion struct {
	Draft string
	Words int
}

type rsAnswer struct {
	Approved bool
	Note     string
}

func rsTypedGraph(rec *rsRecorder) *graph.StateGraph[rsState] {
	g := graph.New[rsState]()
	g.AddNode("review", func(ctx context.Context, _ rsState) (rsState, error) {
		a1, err := graph.Interrupt[rsAnswer](ctx, rsQuestion{Draft: "v1", Words: 3})
		if err != nil {
			return rsState{}, err
		}
		a2, err := graph.Interrupt[*rsAnswer](ctx, rsQuestion{Draft: "v2", Words: 5})
		if err != nil {
			return rsState{}, err
		}
		if a2 == nil {
			return rsState{}, errors.New("nil second answer")
		}
		rec.add(fmtAnswer(a1), fmtAnswer(*a2))
		return rsState{Log: []string{fmtAnswer(a1), fmtAnswer(*a2)}}, nil
	})
	g.AddEdge(graph.START, "review")
	g.AddEdge("review", graph.END)
	return g
}

func TestInterrupt_TypedPayloadAndAnswer(t *testing.T) {
	cases := []struct {
		name           string
		first, second  any
		wantA1, wantA2 string
	}{
		{"structs", rsAnswer{Approved: true, Note: "fine"}, &rsAnswer{Note: "meh"}, "true/fine", "false/meh"},
		{"maps", map[string]any{"Approved": true, "Note": "from json"}, map[string]any{"Approved": true, "Note": "x"}, "true/from json", "true/x"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := rsCtx(t)
			rec := &rsRecorder{}
			c := rsCompile(t, rsTypedGraph(rec), graph.WithCheckpointer(checkpoint.NewMemory()))
			th := graph.WithThread("typed")
			_, err := c.Invoke(ctx, rsState{}, th)
			ir := rsInterrupted(t, err)
			if q, ok := ir.Interrupts[0].Value.(rsQuestion); !ok || q != (rsQuestion{Draft: "v1", Words: 3}) {
				t.Fatalf("payload = %#v, want the rsQuestion given to Interrupt", ir.Interrupts[0].Value)
			}
			_, err = c.Resume(ctx, tc.first, th)
			ir = rsInterrupted(t, err)
			if q, ok := ir.Interrupts[0].Value.(rsQuestion); !ok || q.Draft != "v2" {
				t.Fatalf("second payload = %#v", ir.Interrupts[0].Value)
			}
			// The first answer is now replayed from the checkpoint (decoded, then converted to rsAnswer).
			out, err := c.Resume(ctx, tc.second, th)
			if err != nil {
				t.Fatalf("resume: %v", err)
			}
			rsWantLog(t, out, tc.wantA1, tc.wantA2)
			if got := rec.get(); !slices.Equal(got, []string{tc.wantA1, tc.wantA2}) {
				t.Fatalf("node saw %q", got)
			}
		})
	}
}

func fmtAnswer(a rsAnswer) string {
	if a.Approved {
		return "true/" + a.Note
	}
	return "false/" + a.Note
}

func TestInterrupt_AnswerOfTheWrongTypeFailsTheNode(t *testing.T) {
	ctx := rsCtx(t)
	g := graph.New[rsState]()
	g.AddNode("count", func(ctx context.Context, _ rsState) (rsState, error) {
		n, err := graph.Interrupt[int](ctx, "how many?")
		if err != nil {
			return rsState{}, err
		}
		return rsState{N: n}, nil
	})
	g.AddEdge(graph.START, "count")
	g.AddEdge("count", graph.END)
	c := rsCompile(t, g, graph.WithCheckpointer(checkpoint.NewMemory()))
	th := graph.WithThread("wrong-type")
	_, err := c.Invoke(ctx, rsState{}, th)
	rsInterrupted(t, err)
	_, err = c.Resume(ctx, "not a number", th)
	var ne *graph.NodeError
	if !errors.As(err, &ne) || ne.Node != "count" {
		t.Fatalf("resume with a string for Interrupt[int]: %v, want a *NodeError of count", err)
	}
	if !strings.Contains(err.Error(), "int") {
		t.Fatalf("error %q does not name the wanted type", err)
	}
}

func TestInterrupt_WithoutCheckpointer(t *testing.T) {
	ctx := rsCtx(t)
	var fromInterrupt atomic.Value
	g := graph.New[rsState]()
	g.AddNode("ask", func(ctx context.Context, _ rsState) (rsState, error) {
		_, err := graph.Interrupt[string](ctx, "?")
		if err != nil {
			fromInterrupt.Store(err)
		}
		return rsState{}, err
	})
	g.AddEdge(graph.START, "ask")
	g.AddEdge("ask", graph.END)
	c := rsCompile(t, g)

	_, err := c.Invoke(ctx, rsState{})
	if !errors.Is(err, graph.ErrNoCheckpointer) {
		t.Fatalf("Invoke: %v, want ErrNoCheckpointer", err)
	}
	var ir *graph.Interrupted
	if errors.As(err, &ir) {
		t.Fatalf("a run without checkpointer reported an interrupt: %v", err)
	}
	if e, _ := fromInterrupt.Load().(error); !errors.Is(e, graph.ErrNoCheckpointer) {
		t.Fatalf("Interrupt returned %v, want ErrNoCheckpointer", e)
	}
	// A thread without a checkpointer is no better.
	if _, err := c.Invoke(ctx, rsState{}, graph.WithThread("t")); !errors.Is(err, graph.ErrNoCheckpointer) {
		t.Fatalf("Invoke with a thread but no checkpointer: %v, want ErrNoCheckpointer", err)
	}
	// Nor can such a graph be resumed.
	if _, err := c.Resume(ctx, "x", graph.WithThread("t")); !errors.Is(err, graph.ErrNoCheckpointer) {
		t.Fatalf("Resume without checkpointer: %v, want ErrNoCheckpointer", err)
	}
}

func TestInterrupt_OutsideANode(t *testing.T) {
	v, err := graph.Interrupt[string](context.Background(), "payload")
	if err == nil {
		t.Fatal("Interrupt outside a node returned no error")
	}
	if v != "" {
		t.Fatalf("Interrupt outside a node returned %q", v)
	}
	var ir *graph.Interrupted
	if errors.As(err, &ir) {
		t.Fatalf("Interrupt outside a node looks like a real interrupt: %v", err)
	}
	// Emit and CurrentTask are harmless there too.
	graph.Emit(context.Background(), "nobody listens")
	if _, ok := graph.CurrentTask(context.Background()); ok {
		t.Fatal("CurrentTask outside a node says ok")
	}
}

func TestInterrupt_SwallowedErrorStillPauses(t *testing.T) {
	ctx := rsCtx(t)
	var rec rsRecorder
	var nextRuns atomic.Int32
	g := graph.New[rsState]()
	g.AddNode("sloppy", func(ctx context.Context, _ rsState) (rsState, error) {
		v, err := graph.Interrupt[string](ctx, "answer me")
		if err != nil {
			// Ignores the error and returns an update as if nothing happened.
			return rsState{Log: []string{"swallowed"}}, nil
		}
		rec.add(v)
		return rsState{Log: []string{"got " + v}}, nil
	})
	g.AddNode("next", rsLog("next", &nextRuns))
	g.AddEdge(graph.START, "sloppy")
	g.AddEdge("sloppy", "next")
	g.AddEdge("next", graph.END)
	c := rsCompile(t, g, graph.WithCheckpointer(checkpoint.NewMemory()))
	th := graph.WithThread("sloppy")

	out, err := c.Invoke(ctx, rsState{}, th)
	ir := rsInterrupted(t, err)
	if ir.Interrupts[0].Value != "answer me" || ir.Interrupts[0].Node != "sloppy" {
		t.Fatalf("interrupt = %+v", ir.Interrupts[0])
	}
	if slices.Contains(out.Log, "swallowed") || nextRuns.Load() != 0 {
		t.Fatalf("the update of an interrupted node was used: log %q, next ran %d times", out.Log, nextRuns.Load())
	}
	out, err = c.Resume(ctx, "yes", th)
	if err != nil {
		t.Fatalf("resume: %v", err)
	}
	rsWantLog(t, out, "got yes", "next")
	if got := rec.get(); !slices.Equal(got, []string{"yes"}) {
		t.Fatalf("node saw %q", got)
	}
}

// rsTwoAsks is START → {a, b} → join → END where a and b both interrupt in the same superstep.
func rsTwoAsks(aRuns, bRuns, joinRuns *atomic.Int32) *graph.StateGraph[rsState] {
	g := graph.New[rsState]()
	ask := func(name string, runs *atomic.Int32) graph.NodeFunc[rsState] {
		return func(ctx context.Context, _ rsState) (rsState, error) {
			runs.Add(1)
			v, err := graph.Interrupt[string](ctx, "question from "+name)
			if err != nil {
				return rsState{}, err
			}
			return rsState{Log: []string{name + "=" + v}}, nil
		}
	}
	g.AddNode("a", ask("a", aRuns))
	g.AddNode("b", ask("b", bRuns))
	g.AddNode("join", rsLog("join", joinRuns))
	g.AddEdge(graph.START, "a")
	g.AddEdge(graph.START, "b")
	g.AddEdge("a", "join")
	g.AddEdge("b", "join")
	g.AddEdge("join", graph.END)
	return g
}

// rsIDs maps the node of each interrupt to its ID.
func rsIDs(t *testing.T, ir *graph.Interrupted) map[string]string {
	t.Helper()
	ids := map[string]string{}
	for _, it := range ir.Interrupts {
		if it.When != "during" || it.ID == "" {
			t.Fatalf("interrupt %+v", it)
		}
		ids[it.Node] = it.ID
	}
	return ids
}

func TestInterrupt_ParallelInterruptsNeedResumeByID(t *testing.T) {
	ctx := rsCtx(t)
	var aRuns, bRuns, joinRuns atomic.Int32
	c := rsCompile(t, rsTwoAsks(&aRuns, &bRuns, &joinRuns), graph.WithCheckpointer(checkpoint.NewMemory()))
	th := graph.WithThread("two")

	_, err := c.Invoke(ctx, rsState{}, th)
	ir := rsInterrupted(t, err)
	ids := rsIDs(t, ir)
	if len(ir.Interrupts) != 2 || ids["a"] == "" || ids["b"] == "" || ids["a"] == ids["b"] {
		t.Fatalf("interrupts = %+v, want one from a and one from b with distinct IDs", ir.Interrupts)
	}

	// A plain value is ambiguous.
	_, err = c.Resume(ctx, "same for both", th)
	if err == nil || errors.As(err, &ir) || !strings.Contains(err.Error(), "ResumeByID") {
		t.Fatalf("plain resume of two interrupts: %v, want an error pointing to ResumeByID", err)
	}
	if aRuns.Load() != 1 || bRuns.Load() != 1 {
		t.Fatalf("a refused resume ran nodes: a %d, b %d", aRuns.Load(), bRuns.Load())
	}

	out, err := c.Resume(ctx, graph.ResumeByID{ids["a"]: "A", ids["b"]: "B"}, th)
	if err != nil {
		t.Fatalf("resume by ID: %v", err)
	}
	rsWantLog(t, out, "a=A", "b=B", "join")
	if joinRuns.Load() != 1 {
		t.Fatalf("join ran %d times", joinRuns.Load())
	}
}

func TestInterrupt_ResumeByIDAnsweringOneLeavesTheOther(t *testing.T) {
	ctx := rsCtx(t)
	var aRuns, bRuns, joinRuns atomic.Int32
	c := rsCompile(t, rsTwoAsks(&aRuns, &bRuns, &joinRuns), graph.WithCheckpointer(checkpoint.NewMemory()))
	th := graph.WithThread("one-of-two")

	_, err := c.Invoke(ctx, rsState{}, th)
	ids := rsIDs(t, rsInterrupted(t, err))

	_, err = c.Resume(ctx, graph.ResumeByID{ids["a"]: "A"}, th)
	ir := rsInterrupted(t, err)
	if len(ir.Interrupts) != 1 || ir.Interrupts[0].Node != "b" || ir.Interrupts[0].ID != ids["b"] {
		t.Fatalf("after answering a: interrupts %+v, want only b's (ID %q)", ir.Interrupts, ids["b"])
	}
	if aRuns.Load() != 2 || joinRuns.Load() != 0 {
		t.Fatalf("a ran %d times, join %d; want 2 and 0", aRuns.Load(), joinRuns.Load())
	}

	// Only b is pending now, so a plain value is fine; a does not run again.
	out, err := c.Resume(ctx, "B", th)
	if err != nil {
		t.Fatalf("resume: %v", err)
	}
	rsWantLog(t, out, "a=A", "b=B", "join")
	if aRuns.Load() != 2 || bRuns.Load() != 3 || joinRuns.Load() != 1 {
		t.Fatalf("runs: a %d, b %d, join %d; want 2, 3, 1", aRuns.Load(), bRuns.Load(), joinRuns.Load())
	}
}

func TestInterrupt_ResumeByIDUnknownID(t *testing.T) {
	ctx := rsCtx(t)
	var aRuns, bRuns, joinRuns atomic.Int32
	c := rsCompile(t, rsTwoAsks(&aRuns, &bRuns, &joinRuns), graph.WithCheckpointer(checkpoint.NewMemory()))
	th := graph.WithThread("unknown-id")
	_, err := c.Invoke(ctx, rsState{}, th)
	ids := rsIDs(t, rsInterrupted(t, err))

	_, err = c.Resume(ctx, graph.ResumeByID{ids["a"]: "A", "no-such-id": "?"}, th)
	if err == nil {
		t.Fatal("resume with an unknown interrupt ID succeeded")
	}
	for _, want := range []string{"no-such-id", ids["a"], ids["b"]} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	if aRuns.Load() != 1 || bRuns.Load() != 1 {
		t.Fatalf("a refused resume ran nodes: a %d, b %d", aRuns.Load(), bRuns.Load())
	}
	// Nothing was recorded: the right answer still works.
	out, err := c.Resume(ctx, graph.ResumeByID{ids["a"]: "A", ids["b"]: "B"}, th)
	if err != nil {
		t.Fatalf("resume: %v", err)
	}
	rsWantLog(t, out, "a=A", "b=B", "join")
}

func TestInterrupt_FinishedSiblingIsNotRunAgain(t *testing.T) {
	ctx := rsCtx(t)
	var aRuns, bRuns, afterRuns atomic.Int32
	g := graph.New[rsState]()
	g.AddNode("a", func(context.Context, rsState) (rsState, error) {
		aRuns.Add(1)
		return rsState{Log: []string{"a"}, N: 7}, nil
	})
	g.AddNode("b", func(ctx context.Context, _ rsState) (rsState, error) {
		bRuns.Add(1)
		v, err := graph.Interrupt[string](ctx, "b?")
		if err != nil {
			return rsState{}, err
		}
		return rsState{Log: []string{"b=" + v}}, nil
	})
	g.AddNode("after", func(_ context.Context, s rsState) (rsState, error) {
		afterRuns.Add(1)
		return rsState{Log: []string{"after"}, N: s.N + 1}, nil
	})
	g.AddEdge(graph.START, "a")
	g.AddEdge(graph.START, "b")
	g.AddEdge("a", "after")
	g.AddEdge("b", "after")
	g.AddEdge("after", graph.END)
	c := rsCompile(t, g, graph.WithCheckpointer(checkpoint.NewMemory()))
	th := graph.WithThread("sibling")

	out, err := c.Invoke(ctx, rsState{Log: []string{"in"}}, th)
	rsInterrupted(t, err)
	rsWantLog(t, out, "in", "a") // the paused step shows what its finished task wrote
	snap, err := c.State(ctx, th)
	if err != nil {
		t.Fatal(err)
	}
	rsWantLog(t, snap.Values, "in", "a")
	if !slices.Equal(snap.Next, []string{"b"}) || len(snap.Tasks) != 2 || !snap.Tasks[0].Done || snap.Tasks[1].Done {
		t.Fatalf("next %v, tasks %+v; want b still to run, a done", snap.Next, snap.Tasks)
	}

	out, err = c.Resume(ctx, "ok", th)
	if err != nil {
		t.Fatalf("resume: %v", err)
	}
	if aRuns.Load() != 1 || bRuns.Load() != 2 || afterRuns.Load() != 1 {
		t.Fatalf("runs: a %d, b %d, after %d; want 1, 2, 1", aRuns.Load(), bRuns.Load(), afterRuns.Load())
	}
	rsWantLog(t, out, "in", "a", "b=ok", "after")
	if out.N != 8 {
		t.Fatalf("N = %d, want 8 (a's 7 plus one)", out.N)
	}
}

// rsBeforeAfterGraph is START → a → x → b → END with run counters.
func rsBeforeAfterGraph(a, x, b *atomic.Int32) *graph.StateGraph[rsState] {
	g := graph.New[rsState]()
	g.AddNode("a", rsLog("a", a))
	g.AddNode("x", rsLog("x", x))
	g.AddNode("b", rsLog("b", b))
	g.AddEdge(graph.START, "a")
	g.AddEdge("a", "x")
	g.AddEdge("x", "b")
	g.AddEdge("b", graph.END)
	return g
}

func TestInterrupt_Before(t *testing.T) {
	for _, perRun := range []bool{false, true} {
		name := "compile option"
		if perRun {
			name = "run option"
		}
		t.Run(name, func(t *testing.T) {
			ctx := rsCtx(t)
			var a, x, b atomic.Int32
			compileOpts := []graph.Option{graph.WithCheckpointer(checkpoint.NewMemory())}
			runOpts := []graph.Option{graph.WithThread("before")}
			if perRun {
				runOpts = append(runOpts, graph.WithInterruptBefore("x"))
			} else {
				compileOpts = append(compileOpts, graph.WithInterruptBefore("x"))
			}
			c := rsCompile(t, rsBeforeAfterGraph(&a, &x, &b), compileOpts...)

			out, err := c.Invoke(ctx, rsState{}, runOpts...)
			ir := rsInterrupted(t, err)
			if len(ir.Interrupts) != 1 || ir.Interrupts[0].Node != "x" || ir.Interrupts[0].When != "before" || ir.Interrupts[0].ID == "" {
				t.Fatalf("interrupts = %+v, want one before x", ir.Interrupts)
			}
			if x.Load() != 0 || a.Load() != 1 {
				t.Fatalf("a ran %d times, x %d; want 1 and 0", a.Load(), x.Load())
			}
			rsWantLog(t, out, "a")

			// Nothing asked for a value, so a value is refused (and changes nothing).
			if _, err := c.Resume(ctx, "unexpected", runOpts...); err == nil || errors.As(err, &ir) {
				t.Fatalf("resume of a before-pause with a value: %v, want an error", err)
			}
			if x.Load() != 0 {
				t.Fatal("a refused resume ran x")
			}

			out, err = c.Resume(ctx, nil, runOpts...)
			if err != nil {
				t.Fatalf("resume: %v (x must not pause again)", err)
			}
			rsWantLog(t, out, "a", "x", "b")
			if a.Load() != 1 || x.Load() != 1 || b.Load() != 1 {
				t.Fatalf("runs a %d, x %d, b %d; want 1 each", a.Load(), x.Load(), b.Load())
			}
		})
	}
}

func TestInterrupt_BeforeThenInterruptInTheSameNode(t *testing.T) {
	ctx := rsCtx(t)
	var runs atomic.Int32
	g := graph.New[rsState]()
	g.AddNode("x", func(ctx context.Context, _ rsState) (rsState, error) {
		runs.Add(1)
		v, err := graph.Interrupt[string](ctx, "x?")
		if err != nil {
			return rsState{}, err
		}
		return rsState{Log: []string{"x=" + v}}, nil
	})
	g.AddEdge(graph.START, "x")
	g.AddEdge("x", graph.END)
	c := rsCompile(t, g, graph.WithCheckpointer(checkpoint.NewMemory()), graph.WithInterruptBefore("x"))
	th := graph.WithThread("both")
	_, err := c.Invoke(ctx, rsState{}, th)
	if ir := rsInterrupted(t, err); ir.Interrupts[0].When != "before" {
		t.Fatalf("first pause %+v, want before", ir.Interrupts)
	}
	_, err = c.Resume(ctx, nil, th)
	if ir := rsInterrupted(t, err); ir.Interrupts[0].When != "during" || ir.Interrupts[0].Value != "x?" {
		t.Fatalf("second pause %+v, want x's own interrupt", ir.Interrupts)
	}
	out, err := c.Resume(ctx, "go", th)
	if err != nil {
		t.Fatalf("resume: %v", err)
	}
	rsWantLog(t, out, "x=go")
	if runs.Load() != 2 {
		t.Fatalf("x ran %d times, want 2", runs.Load())
	}
}

func TestInterrupt_After(t *testing.T) {
	for _, perRun := range []bool{false, true} {
		name := "compile option"
		if perRun {
			name = "run option"
		}
		t.Run(name, func(t *testing.T) {
			ctx := rsCtx(t)
			var a, x, b atomic.Int32
			compileOpts := []graph.Option{graph.WithCheckpointer(checkpoint.NewMemory())}
			runOpts := []graph.Option{graph.WithThread("after")}
			if perRun {
				runOpts = append(runOpts, graph.WithInterruptAfter("x"))
			} else {
				compileOpts = append(compileOpts, graph.WithInterruptAfter("x"))
			}
			c := rsCompile(t, rsBeforeAfterGraph(&a, &x, &b), compileOpts...)

			out, err := c.Invoke(ctx, rsState{}, runOpts...)
			ir := rsInterrupted(t, err)
			if len(ir.Interrupts) != 1 || ir.Interrupts[0].Node != "x" || ir.Interrupts[0].When != "after" {
				t.Fatalf("interrupts = %+v, want one after x", ir.Interrupts)
			}
			if x.Load() != 1 || b.Load() != 0 {
				t.Fatalf("x ran %d times, b %d; want 1 and 0", x.Load(), b.Load())
			}
			rsWantLog(t, out, "a", "x")

			out, err = c.Resume(ctx, nil, runOpts...)
			if err != nil {
				t.Fatalf("resume: %v", err)
			}
			rsWantLog(t, out, "a", "x", "b")
			if a.Load() != 1 || x.Load() != 1 || b.Load() != 1 {
				t.Fatalf("runs a %d, x %d, b %d; want 1 each", a.Load(), x.Load(), b.Load())
			}
		})
	}
}

func TestInterrupt_AfterANodeInALoopPausesEveryTime(t *testing.T) {
	ctx := rsCtx(t)
	g := graph.New[rsState]()
	g.AddNode("x", func(_ context.Context, s rsState) (rsState, error) {
		return rsState{N: s.N + 1}, nil
	})
	g.AddEdge(graph.START, "x")
	g.AddConditionalEdges("x", func(_ context.Context, s rsState) string {
		if s.N < 3 {
			return "x"
		}
		return graph.END
	}, "x", graph.END)
	c := rsCompile(t, g, graph.WithCheckpointer(checkpoint.NewMemory()), graph.WithInterruptAfter("x"))
	th := graph.WithThread("loop")

	out, err := c.Invoke(ctx, rsState{}, th)
	if ir := rsInterrupted(t, err); ir.Interrupts[0].When != "after" || out.N != 1 {
		t.Fatalf("first pause: %+v with N %d, want after x with N 1", ir.Interrupts, out.N)
	}
	out, err = c.Resume(ctx, nil, th)
	if ir := rsInterrupted(t, err); ir.Interrupts[0].When != "after" || out.N != 2 {
		t.Fatalf("second pause: %+v with N %d, want after x with N 2", ir.Interrupts, out.N)
	}
	// The third run of x ends the graph, and pauses too; the thread has then finished.
	out, err = c.Resume(ctx, nil, th)
	if ir := rsInterrupted(t, err); ir.Interrupts[0].When != "after" || out.N != 3 {
		t.Fatalf("last pause: %+v with N %d, want after x with N 3", ir.Interrupts, out.N)
	}
	if _, err := c.Resume(ctx, nil, th); !errors.Is(err, graph.ErrNothingToResume) {
		t.Fatalf("resume of the finished thread: err %v, want ErrNothingToResume", err)
	}
}

func TestInterrupt_BeforeAndAfterNeedACheckpointer(t *testing.T) {
	ctx := rsCtx(t)
	var a, x, b atomic.Int32
	c := rsCompile(t, rsBeforeAfterGraph(&a, &x, &b))

	_, err := c.Invoke(ctx, rsState{}, graph.WithInterruptBefore("x"))
	if !errors.Is(err, graph.ErrNoCheckpointer) {
		t.Fatalf("interrupt before without checkpointer: %v, want ErrNoCheckpointer", err)
	}
	if x.Load() != 0 {
		t.Fatal("x ran although the run could not pause before it")
	}

	_, err = c.Invoke(ctx, rsState{}, graph.WithInterruptAfter("x"))
	if !errors.Is(err, graph.ErrNoCheckpointer) {
		t.Fatalf("interrupt after without checkpointer: %v, want ErrNoCheckpointer", err)
	}
	if b.Load() != 0 {
		t.Fatal("b ran although the run should have stopped after x")
	}

	// The compile options are checked against the graph's nodes.
	if _, err := rsBeforeAfterGraph(&a, &x, &b).Compile(graph.WithInterruptBefore("nope")); err == nil {
		t.Fatal("interrupt before an unknown node compiled")
	}
}

func TestInterrupt_InSendTasks(t *testing.T) {
	ctx := rsCtx(t)
	var rec rsRecorder
	g := graph.New[rsState]()
	g.AddRouter(graph.START, func(context.Context, rsState) graph.Next[rsState] {
		var nx graph.Next[rsState]
		for i := range 3 {
			nx.Sends = append(nx.Sends, graph.Send[rsState]{Node: "ask", Arg: rsState{N: i}})
		}
		return nx
	}, "ask")
	g.AddNode("ask", func(ctx context.Context, s rsState) (rsState, error) {
		v, err := graph.Interrupt[string](ctx, s.N)
		if err != nil {
			return rsState{}, err
		}
		entry := fmt.Sprintf("%d=%s", s.N, v)
		rec.add(entry)
		return rsState{Log: []string{entry}}, nil
	})
	g.AddEdge("ask", graph.END)
	c := rsCompile(t, g, graph.WithCheckpointer(checkpoint.NewMemory()))
	th := graph.WithThread("sends")

	_, err := c.Invoke(ctx, rsState{}, th)
	ir := rsInterrupted(t, err)
	if len(ir.Interrupts) != 3 {
		t.Fatalf("interrupts %+v, want one per Send", ir.Interrupts)
	}
	answers := graph.ResumeByID{}
	for _, it := range ir.Interrupts {
		n, ok := it.Value.(int)
		if !ok || it.Node != "ask" {
			t.Fatalf("interrupt %+v, want the Send's argument as payload", it)
		}
		answers[it.ID] = fmt.Sprint("answer", n)
	}
	if len(answers) != 3 {
		t.Fatalf("interrupt IDs are not distinct: %+v", ir.Interrupts)
	}
	out, err := c.Resume(ctx, answers, th)
	if err != nil {
		t.Fatalf("resume: %v", err)
	}
	// Every task got its own argument back from the checkpoint and its own answer.
	rsWantLog(t, out, "0=answer0", "1=answer1", "2=answer2")
}

func TestInterrupt_SameNodeInSuccessiveSupersteps(t *testing.T) {
	ctx := rsCtx(t)
	g := graph.New[rsState]()
	g.AddNode("ask", func(ctx context.Context, s rsState) (rsState, error) {
		v, err := graph.Interrupt[string](ctx, fmt.Sprint("round ", s.N))
		if err != nil {
			return rsState{}, err
		}
		return rsState{Log: []string{v}, N: s.N + 1}, nil
	})
	g.AddEdge(graph.START, "ask")
	g.AddConditionalEdges("ask", func(_ context.Context, s rsState) string {
		if s.N < 3 {
			return "ask"
		}
		return graph.END
	}, "ask", graph.END)
	c := rsCompile(t, g, graph.WithCheckpointer(checkpoint.NewMemory()))
	th := graph.WithThread("rounds")

	_, err := c.Invoke(ctx, rsState{}, th)
	seenIDs := map[string]bool{}
	for round := range 3 {
		ir := rsInterrupted(t, err)
		if it := ir.Interrupts[0]; it.Value != fmt.Sprint("round ", round) || seenIDs[it.ID] {
			t.Fatalf("round %d: interrupt %+v (an answer of an earlier round must not be reused)", round, it)
		} else {
			seenIDs[it.ID] = true
		}
		var out rsState
		out, err = c.Resume(ctx, fmt.Sprint("r", round), th)
		if round == 2 {
			if err != nil {
				t.Fatalf("last resume: %v", err)
			}
			rsWantLog(t, out, "r0", "r1", "r2")
		}
	}
}

func TestInterrupt_InANodeWithATimeoutAndRetries(t *testing.T) {
	ctx := rsCtx(t)
	var runs atomic.Int32
	g := graph.New[rsState]()
	g.AddNode("ask", func(ctx context.Context, _ rsState) (rsState, error) {
		runs.Add(1)
		v, err := graph.Interrupt[string](ctx, "?")
		if err != nil {
			return rsState{}, err
		}
		return rsState{Log: []string{v}}, nil
	}, graph.WithTimeout(time.Minute), graph.WithRetry(graph.RetryPolicy{MaxAttempts: 5}))
	g.AddEdge(graph.START, "ask")
	g.AddEdge("ask", graph.END)
	c := rsCompile(t, g, graph.WithCheckpointer(checkpoint.NewMemory()))
	th := graph.WithThread("timeout")
	_, err := c.Invoke(ctx, rsState{}, th)
	rsInterrupted(t, err)
	if runs.Load() != 1 {
		t.Fatalf("an interrupt was retried: %d runs", runs.Load())
	}
	out, err := c.Resume(ctx, "fine", th)
	if err != nil {
		t.Fatalf("resume: %v", err)
	}
	rsWantLog(t, out, "fine")
}
