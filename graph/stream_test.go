package graph_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agiraph/agiraph/checkpoint"
	"github.com/agiraph/agiraph/graph"
	"github.com/agiraph/agiraph/internal/leaktest"
)

// stItem is one pair yielded by a stream.
type stItem struct {
	ev  graph.Event
	err error
}

func stCollect(seq iter.Seq2[graph.Event, error]) []stItem {
	var out []stItem
	for ev, err := range seq {
		out = append(out, stItem{ev, err})
	}
	return out
}

// stEvents returns the events of the items, failing the test on any error.
func stEvents(t *testing.T, items []stItem) []graph.Event {
	t.Helper()
	var evs []graph.Event
	for _, it := range items {
		if it.err != nil {
			t.Fatalf("stream yielded error %v", it.err)
		}
		evs = append(evs, it.ev)
	}
	return evs
}

func stOfMode(evs []graph.Event, m graph.Mode) []graph.Event {
	var out []graph.Event
	for _, ev := range evs {
		if ev.Mode == m {
			out = append(out, ev)
		}
	}
	return out
}

// stLine is START → names... → END, each node logging its name and counted in calls.
func stLine(calls sgCounters, names ...string) *graph.StateGraph[rsState] {
	return sgChain(calls, names...)
}

func TestStream_Values(t *testing.T) {
	ctx := rsCtx(t)
	c := rsCompile(t, stLine(newSgCounters("a", "b"), "a", "b"))
	for _, opts := range [][]graph.Option{nil, {graph.WithStreamMode(graph.ModeValues)}} {
		evs := stEvents(t, stCollect(c.Stream(ctx, rsState{Log: []string{"in"}}, opts...)))
		want := [][]string{{"in"}, {"in", "a"}, {"in", "a", "b"}}
		if len(evs) != len(want) {
			t.Fatalf("%d events, want %d: %+v", len(evs), len(want), evs)
		}
		for i, ev := range evs {
			s, ok := ev.Data.(rsState)
			if ev.Mode != graph.ModeValues || !ok || !slices.Equal(s.Log, want[i]) || ev.Step != i || ev.Namespace != "" {
				t.Fatalf("event %d = %+v, want the values %q at step %d", i, ev, want[i], i)
			}
		}
	}
}

// stDiamond is START → {a, b} → c → END.
func stDiamond(calls sgCounters) *graph.StateGraph[rsState] {
	g := graph.New[rsState]()
	for _, n := range []string{"a", "b", "c"} {
		g.AddNode(n, rsLog(n, calls[n]))
	}
	g.AddEdge(graph.START, "a")
	g.AddEdge(graph.START, "b")
	g.AddEdge("a", "c")
	g.AddEdge("b", "c")
	g.AddEdge("c", graph.END)
	return g
}

func TestStream_Updates(t *testing.T) {
	ctx := rsCtx(t)
	c := rsCompile(t, stDiamond(newSgCounters("a", "b", "c")))
	evs := stEvents(t, stCollect(c.Stream(ctx, rsState{}, graph.WithStreamMode(graph.ModeUpdates))))
	if len(evs) != 3 {
		t.Fatalf("%d events, want 3: %+v", len(evs), evs)
	}
	var firstStep []string
	for i, ev := range evs {
		s, ok := ev.Data.(rsState)
		if ev.Mode != graph.ModeUpdates || !ok || !slices.Equal(s.Log, []string{ev.Node}) || ev.TaskID == "" {
			t.Fatalf("event %d = %+v, want the update of its node", i, ev)
		}
		if i < 2 {
			firstStep = append(firstStep, ev.Node)
			if ev.Step != 1 {
				t.Fatalf("event %d at step %d, want 1", i, ev.Step)
			}
		}
	}
	slices.Sort(firstStep)
	if !slices.Equal(firstStep, []string{"a", "b"}) || evs[2].Node != "c" || evs[2].Step != 2 {
		t.Fatalf("updates came from %v then %s (step %d), want a and b then c at step 2", firstStep, evs[2].Node, evs[2].Step)
	}
}

// stEmitters is START → {e1, e2, e3} → last → END; every e node emits perNode values and last one.
func stEmitters(perNode int, calls sgCounters) *graph.StateGraph[rsState] {
	g := graph.New[rsState]()
	for _, n := range []string{"e1", "e2", "e3"} {
		g.AddNode(n, func(ctx context.Context, _ rsState) (rsState, error) {
			for i := range perNode {
				graph.Emit(ctx, fmt.Sprintf("%s-%d", n, i))
			}
			if calls != nil {
				calls[n].Add(1)
			}
			return rsState{Log: []string{n}}, nil
		})
		g.AddEdge(graph.START, n)
		g.AddEdge(n, "last")
	}
	g.AddNode("last", func(ctx context.Context, _ rsState) (rsState, error) {
		if calls != nil {
			calls["last"].Add(1)
		}
		graph.Emit(ctx, "last-0")
		return rsState{Log: []string{"last"}}, nil
	})
	g.AddEdge("last", graph.END)
	return g
}

func TestStream_Custom(t *testing.T) {
	ctx := rsCtx(t)
	const per = 20
	c := rsCompile(t, stEmitters(per, nil))
	evs := stEvents(t, stCollect(c.Stream(ctx, rsState{}, graph.WithStreamMode(graph.ModeCustom))))
	byNode := map[string][]string{}
	for _, ev := range evs {
		if ev.Mode != graph.ModeCustom || ev.Namespace != "" {
			t.Fatalf("unexpected event %+v", ev)
		}
		s, _ := ev.Data.(string)
		if !strings.HasPrefix(s, ev.Node+"-") {
			t.Fatalf("event %+v: data does not come from its node", ev)
		}
		byNode[ev.Node] = append(byNode[ev.Node], s)
	}
	if len(evs) != 3*per+1 {
		t.Fatalf("%d custom events, want %d", len(evs), 3*per+1)
	}
	for _, n := range []string{"e1", "e2", "e3"} {
		if len(byNode[n]) != per {
			t.Fatalf("%s emitted %d values, want %d", n, len(byNode[n]), per)
		}
		for i, s := range byNode[n] {
			if s != fmt.Sprintf("%s-%d", n, i) {
				t.Fatalf("%s's values out of order: %q", n, byNode[n])
			}
		}
	}
	if evs[len(evs)-1].Node != "last" {
		t.Fatalf("the last event is from %s, want last", evs[len(evs)-1].Node)
	}

	// Without ModeCustom nothing is emitted, and Emit does not block.
	evs = stEvents(t, stCollect(c.Stream(ctx, rsState{}, graph.WithStreamMode(graph.ModeValues))))
	if n := len(stOfMode(evs, graph.ModeCustom)); n != 0 {
		t.Fatalf("%d custom events in a values stream", n)
	}
	if out, err := c.Invoke(ctx, rsState{}); err != nil || len(out.Log) != 4 {
		t.Fatalf("Invoke with emitting nodes: %+v, %v", out, err)
	}
}

func TestStream_Tasks(t *testing.T) {
	ctx := rsCtx(t)
	g := graph.New[rsState]()
	g.AddRouter(graph.START, func(context.Context, rsState) graph.Next[rsState] {
		return graph.Next[rsState]{
			Goto:  []string{"a"},
			Sends: []graph.Send[rsState]{{Node: "work", Arg: rsState{N: 1}}, {Node: "work", Arg: rsState{N: 2}}},
		}
	}, "a", "work")
	g.AddNode("a", rsLog("a", nil))
	g.AddNode("work", func(_ context.Context, s rsState) (rsState, error) {
		return rsState{Log: []string{fmt.Sprint("work", s.N)}}, nil
	})
	g.AddNode("b", rsLog("b", nil))
	g.AddEdge("a", "b")
	g.AddEdge("work", graph.END)
	g.AddEdge("b", graph.END)
	c := rsCompile(t, g)
	evs := stEvents(t, stCollect(c.Stream(ctx, rsState{}, graph.WithStreamMode(graph.ModeTasks))))

	type key struct {
		step int
		id   string
	}
	started := map[key]graph.TaskEvent{}
	finished := map[key]bool{}
	nodes := map[string]int{}
	for _, ev := range evs {
		te, ok := ev.Data.(graph.TaskEvent)
		if ev.Mode != graph.ModeTasks || !ok {
			t.Fatalf("unexpected event %+v", ev)
		}
		k := key{ev.Step, ev.TaskID}
		if !te.Finished {
			if _, dup := started[k]; dup {
				t.Fatalf("task %+v started twice", k)
			}
			started[k] = te
			nodes[ev.Node]++
			continue
		}
		st, ok := started[k]
		if !ok || finished[k] {
			t.Fatalf("task %+v (%s) finished without a start, or twice", k, ev.Node)
		}
		finished[k] = true
		if te.Err != nil || te.Push != st.Push {
			t.Fatalf("finish event %+v of %s does not match its start %+v", te, ev.Node, st)
		}
		if ev.Node == "work" {
			if arg, ok := st.Input.(rsState); !st.Push || !ok || (arg.N != 1 && arg.N != 2) {
				t.Fatalf("start of a Send task: %+v, want Push and its argument", st)
			}
		} else if st.Push || st.Input != nil {
			t.Fatalf("start of %s: %+v, want an edge task without input", ev.Node, st)
		}
	}
	if len(evs) != 8 || len(finished) != 4 || !reflect.DeepEqual(nodes, map[string]int{"a": 1, "work": 2, "b": 1}) {
		t.Fatalf("%d events, %d finished tasks, starts by node %v; want 8, 4 and a, work×2, b", len(evs), len(finished), nodes)
	}
}

func TestStream_TaskEventsCarryErrorsAndInterrupts(t *testing.T) {
	ctx := rsCtx(t)
	g := graph.New[rsState]()
	g.AddNode("bad", func(context.Context, rsState) (rsState, error) { return rsState{}, errRsBoom })
	g.AddEdge(graph.START, "bad")
	g.AddEdge("bad", graph.END)
	items := stCollect(rsCompile(t, g).Stream(ctx, rsState{}, graph.WithStreamMode(graph.ModeTasks)))
	if len(items) != 3 {
		t.Fatalf("%d items, want start, finish and the error", len(items))
	}
	if te, _ := items[1].ev.Data.(graph.TaskEvent); !te.Finished || !errors.Is(te.Err, errRsBoom) {
		t.Fatalf("finish event %+v, want the node's error", items[1].ev)
	}

	var rec rsRecorder
	var askRuns, bRuns atomic.Int32
	c := rsCompile(t, rsAskGraph(&rec, &askRuns, &bRuns), graph.WithCheckpointer(checkpoint.NewMemory()))
	items = stCollect(c.Stream(ctx, rsState{}, graph.WithThread("tasks"), graph.WithStreamMode(graph.ModeTasks)))
	var found bool
	for _, it := range items {
		if te, ok := it.ev.Data.(graph.TaskEvent); ok && te.Finished && it.ev.Node == "ask" {
			found = len(te.Interrupts) == 1 && te.Interrupts[0].Value == "what is your name?"
		}
	}
	if !found {
		t.Fatalf("no finish event of ask with its interrupt: %+v", items)
	}
}

func TestStream_Checkpoints(t *testing.T) {
	ctx := rsCtx(t)
	saver := checkpoint.NewMemory()
	c := rsCompile(t, stLine(newSgCounters("a", "b"), "a", "b"), graph.WithCheckpointer(saver))
	evs := stEvents(t, stCollect(c.Stream(ctx, rsState{}, graph.WithThread("cps"), graph.WithStreamMode(graph.ModeCheckpoints))))
	list, err := saver.List(ctx, checkpoint.Config{ThreadID: "cps"}, checkpoint.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 3 || len(list) != 3 {
		t.Fatalf("%d checkpoint events and %d checkpoints, want 3 and 3", len(evs), len(list))
	}
	wantNext := [][]string{{"a"}, {"b"}, {}}
	for i, ev := range evs {
		ce, ok := ev.Data.(graph.CheckpointEvent)
		if ev.Mode != graph.ModeCheckpoints || !ok {
			t.Fatalf("event %d = %+v", i, ev)
		}
		wantSource := checkpoint.SourceLoop
		if i == 0 {
			wantSource = checkpoint.SourceInput
		}
		if ce.Source != wantSource || !slices.Equal(ce.Next, wantNext[i]) || ev.Step != i {
			t.Fatalf("event %d = %+v (step %d), want source %s, next %v", i, ce, ev.Step, wantSource, wantNext[i])
		}
		saved := list[len(list)-1-i]
		if ce.Config.ThreadID != "cps" || ce.Config.CheckpointID != saved.Checkpoint.ID {
			t.Fatalf("event %d names %+v, want checkpoint %s", i, ce.Config, saved.Checkpoint.ID)
		}
	}

	// Nothing is saved without a checkpointer, so nothing is reported.
	plain := rsCompile(t, stLine(newSgCounters("a", "b"), "a", "b"))
	if evs := stEvents(t, stCollect(plain.Stream(ctx, rsState{}, graph.WithStreamMode(graph.ModeCheckpoints)))); len(evs) != 0 {
		t.Fatalf("%d checkpoint events without a checkpointer", len(evs))
	}
}

func TestStream_CombinedModes(t *testing.T) {
	ctx := rsCtx(t)
	c := rsCompile(t, stEmitters(2, nil), graph.WithCheckpointer(checkpoint.NewMemory()))
	count := func(m graph.Mode) map[graph.Mode]int {
		evs := stEvents(t, stCollect(c.Stream(ctx, rsState{}, graph.WithThread(fmt.Sprint("combined-", m)), graph.WithStreamMode(m))))
		n := map[graph.Mode]int{}
		for _, ev := range evs {
			n[ev.Mode]++
		}
		return n
	}
	// Three parallel e nodes then last: 2 supersteps, 4 tasks, 7 custom values, 3 checkpoints.
	got := count(graph.ModeValues | graph.ModeUpdates | graph.ModeCustom)
	if want := map[graph.Mode]int{graph.ModeValues: 3, graph.ModeUpdates: 4, graph.ModeCustom: 7}; !reflect.DeepEqual(got, want) {
		t.Fatalf("values|updates|custom: %v, want %v", got, want)
	}
	got = count(graph.ModeDebug)
	if want := map[graph.Mode]int{graph.ModeTasks: 8, graph.ModeCheckpoints: 3}; !reflect.DeepEqual(got, want) {
		t.Fatalf("debug: %v, want %v", got, want)
	}
}

// stNested is START → p1 → sub → p2 → END, where sub is START → s1 → s2 → END and s1 emits.
func stNested(t *testing.T) *graph.Compiled[rsState] {
	child := graph.New[rsState]()
	child.AddNode("s1", func(ctx context.Context, _ rsState) (rsState, error) {
		graph.Emit(ctx, "from s1")
		return rsState{Log: []string{"s1"}}, nil
	})
	child.AddNode("s2", rsLog("s2", nil))
	child.AddEdge(graph.START, "s1")
	child.AddEdge("s1", "s2")
	child.AddEdge("s2", graph.END)
	g := graph.New[rsState]()
	g.AddNode("p1", func(ctx context.Context, _ rsState) (rsState, error) {
		graph.Emit(ctx, "from p1")
		return rsState{Log: []string{"p1"}}, nil
	})
	g.AddSubgraph("sub", rsCompile(t, child))
	g.AddNode("p2", rsLog("p2", nil))
	g.AddEdge(graph.START, "p1")
	g.AddEdge("p1", "sub")
	g.AddEdge("sub", "p2")
	g.AddEdge("p2", graph.END)
	return rsCompile(t, g, graph.WithCheckpointer(checkpoint.NewMemory()))
}

func TestStream_Subgraphs(t *testing.T) {
	ctx := rsCtx(t)
	c := stNested(t)
	modes := graph.WithStreamMode(graph.ModeValues | graph.ModeUpdates | graph.ModeCustom)

	evs := stEvents(t, stCollect(c.Stream(ctx, rsState{}, graph.WithThread("subs"), modes, graph.WithSubgraphs())))
	var inner []graph.Event
	for _, ev := range evs {
		if ev.Namespace != "" {
			inner = append(inner, ev)
			if !strings.HasPrefix(ev.Namespace, "sub:") {
				t.Fatalf("subgraph event %+v has namespace %q, want one under sub", ev, ev.Namespace)
			}
		}
	}
	var innerUpdates, innerCustom []string
	innerValues := 0
	for _, ev := range inner {
		switch ev.Mode {
		case graph.ModeUpdates:
			innerUpdates = append(innerUpdates, ev.Node)
		case graph.ModeCustom:
			innerCustom = append(innerCustom, fmt.Sprint(ev.Data))
		case graph.ModeValues:
			if _, ok := ev.Data.(rsState); !ok {
				t.Fatalf("subgraph values event %+v", ev)
			}
			innerValues++
		}
	}
	if !slices.Equal(innerUpdates, []string{"s1", "s2"}) || !slices.Equal(innerCustom, []string{"from s1"}) || innerValues != 3 {
		t.Fatalf("subgraph events: updates %v, custom %v, %d values; want s1 and s2, [from s1], 3", innerUpdates, innerCustom, innerValues)
	}
	// The parent's own events are all there too.
	var outerUpdates []string
	for _, ev := range stOfMode(evs, graph.ModeUpdates) {
		if ev.Namespace == "" {
			outerUpdates = append(outerUpdates, ev.Node)
		}
	}
	if !slices.Equal(outerUpdates, []string{"p1", "sub", "p2"}) {
		t.Fatalf("parent updates %v", outerUpdates)
	}

	// Without WithSubgraphs only the parent's events come, and its subgraphs' custom events.
	evs = stEvents(t, stCollect(c.Stream(ctx, rsState{}, graph.WithThread("no-subs"), modes)))
	var custom []string
	for _, ev := range evs {
		if ev.Mode == graph.ModeCustom {
			custom = append(custom, fmt.Sprint(ev.Data))
		} else if ev.Namespace != "" || ev.Node == "s1" || ev.Node == "s2" {
			t.Fatalf("subgraph event %+v without WithSubgraphs", ev)
		}
	}
	if !slices.Equal(custom, []string{"from p1", "from s1"}) || len(stOfMode(evs, graph.ModeUpdates)) != 3 {
		t.Fatalf("without WithSubgraphs: custom %v and %d updates; want [from p1 from s1] and 3", custom, len(stOfMode(evs, graph.ModeUpdates)))
	}
}

func TestStream_ErrorIsYieldedLast(t *testing.T) {
	ctx := rsCtx(t)
	g := graph.New[rsState]()
	g.AddNode("ok", rsLog("ok", nil))
	g.AddNode("bad", func(context.Context, rsState) (rsState, error) { return rsState{}, errRsBoom })
	g.AddEdge(graph.START, "ok")
	g.AddEdge("ok", "bad")
	g.AddEdge("bad", graph.END)
	items := stCollect(rsCompile(t, g).Stream(ctx, rsState{}, graph.WithStreamMode(graph.ModeValues|graph.ModeUpdates)))
	if len(items) != 4 { // input values, ok's update, values after step 1, the error
		t.Fatalf("%d items, want 4: %+v", len(items), items)
	}
	for _, it := range items[:len(items)-1] {
		if it.err != nil {
			t.Fatalf("error %v before the end", it.err)
		}
	}
	last := items[len(items)-1]
	var ne *graph.NodeError
	if !errors.As(last.err, &ne) || ne.Node != "bad" || !reflect.DeepEqual(last.ev, graph.Event{}) {
		t.Fatalf("last item %+v, want bad's NodeError with a zero event", last)
	}

	// An interrupt is the last item of its stream too.
	var rec rsRecorder
	var askRuns, bRuns atomic.Int32
	c := rsCompile(t, rsAskGraph(&rec, &askRuns, &bRuns), graph.WithCheckpointer(checkpoint.NewMemory()))
	items = stCollect(c.Stream(ctx, rsState{}, graph.WithThread("stream-ir")))
	if ir := rsInterrupted(t, items[len(items)-1].err); ir.Interrupts[0].Node != "ask" {
		t.Fatalf("interrupt %+v", ir.Interrupts)
	}
	for _, it := range items[:len(items)-1] {
		if it.err != nil {
			t.Fatalf("error %v before the end", it.err)
		}
	}

	// A run that cannot start yields just its error.
	items = stCollect(c.Stream(ctx, rsState{}))
	if len(items) != 1 || items[0].err == nil {
		t.Fatalf("stream of a checkpointed graph without a thread: %+v, want one error", items)
	}
}

func TestStream_BreakStopsTheRun(t *testing.T) {
	defer leaktest.Check(t)()
	ctx := rsCtx(t)

	t.Run("at a values event", func(t *testing.T) {
		calls := newSgCounters("a", "b", "c")
		c := rsCompile(t, stLine(calls, "a", "b", "c"))
		n := 0
		for ev, err := range c.Stream(ctx, rsState{}) {
			if err != nil {
				t.Fatal(err)
			}
			n++
			if s := ev.Data.(rsState); slices.Equal(s.Log, []string{"a"}) {
				break
			}
		}
		if n != 2 {
			t.Fatalf("%d events before the break, want 2", n)
		}
		calls.want(t, map[string]int32{"a": 1, "b": 0, "c": 0})
	})

	t.Run("at a task start", func(t *testing.T) {
		calls := newSgCounters("a", "b", "c")
		c := rsCompile(t, stLine(calls, "a", "b", "c"))
		for ev, err := range c.Stream(ctx, rsState{}, graph.WithStreamMode(graph.ModeTasks)) {
			if err != nil {
				t.Fatal(err)
			}
			if ev.Node == "b" {
				break
			}
		}
		calls.want(t, map[string]int32{"a": 1, "b": 0, "c": 0})
	})

	t.Run("at the start of one of parallel tasks", func(t *testing.T) {
		calls := newSgCounters("e1", "e2", "e3", "last")
		c := rsCompile(t, stEmitters(1, calls))
		for ev, err := range c.Stream(ctx, rsState{}, graph.WithStreamMode(graph.ModeTasks)) {
			if err != nil {
				t.Fatal(err)
			}
			if te := ev.Data.(graph.TaskEvent); te.Finished {
				t.Fatalf("a task finished before the first start event: %+v", ev)
			}
			break
		}
		// The reader stopped before any task could be reported running: none ran.
		calls.want(t, map[string]int32{"e1": 0, "e2": 0, "e3": 0, "last": 0})
	})

	t.Run("at a custom event of parallel tasks", func(t *testing.T) {
		calls := newSgCounters("e1", "e2", "e3", "last")
		c := rsCompile(t, stEmitters(50, calls))
		got := 0
		for _, err := range c.Stream(ctx, rsState{}, graph.WithStreamMode(graph.ModeCustom)) {
			if err != nil {
				t.Fatal(err)
			}
			got++
			break
		}
		if got != 1 {
			t.Fatalf("%d events", got)
		}
		// The emitters were not left blocked: they all returned, and the run went no further.
		calls.want(t, map[string]int32{"e1": 1, "e2": 1, "e3": 1, "last": 0})
	})

	t.Run("while a sibling still runs", func(t *testing.T) {
		var sawCancel atomic.Bool
		var nextRuns atomic.Int32
		g := graph.New[rsState]()
		g.AddNode("quick", rsLog("quick", nil))
		g.AddNode("slow", func(ctx context.Context, _ rsState) (rsState, error) {
			<-ctx.Done() // returns only when the run is stopped (or the test's guard expires)
			sawCancel.Store(true)
			return rsState{}, ctx.Err()
		})
		g.AddNode("next", rsLog("next", &nextRuns))
		g.AddEdge(graph.START, "quick")
		g.AddEdge(graph.START, "slow")
		g.AddEdge("quick", "next")
		g.AddEdge("slow", "next")
		g.AddEdge("next", graph.END)
		c := rsCompile(t, g)
		for ev, err := range c.Stream(ctx, rsState{}, graph.WithStreamMode(graph.ModeUpdates)) {
			if err != nil {
				t.Fatal(err)
			}
			if ev.Node == "quick" {
				break
			}
		}
		if ctx.Err() != nil {
			t.Fatal("the test's guard expired: breaking did not cancel the running task")
		}
		if !sawCancel.Load() || nextRuns.Load() != 0 {
			t.Fatalf("slow saw the cancellation: %v; next ran %d times", sawCancel.Load(), nextRuns.Load())
		}
	})

	t.Run("in a subgraph event", func(t *testing.T) {
		var p2Runs atomic.Int32
		child := graph.New[rsState]()
		child.AddNode("s1", func(ctx context.Context, _ rsState) (rsState, error) {
			for i := range 10 {
				graph.Emit(ctx, i)
			}
			return rsState{Log: []string{"s1"}}, nil
		})
		child.AddEdge(graph.START, "s1")
		child.AddEdge("s1", graph.END)
		g := graph.New[rsState]()
		g.AddSubgraph("sub", rsCompile(t, child))
		g.AddNode("p2", rsLog("p2", &p2Runs))
		g.AddEdge(graph.START, "sub")
		g.AddEdge("sub", "p2")
		g.AddEdge("p2", graph.END)
		c := rsCompile(t, g)
		for ev, err := range c.Stream(ctx, rsState{}, graph.WithStreamMode(graph.ModeCustom), graph.WithSubgraphs()) {
			if err != nil {
				t.Fatal(err)
			}
			if ev.Namespace == "" {
				t.Fatalf("custom event %+v without the subgraph's namespace", ev)
			}
			break
		}
		if p2Runs.Load() != 0 {
			t.Fatal("the parent went on after the reader stopped")
		}
	})
}

func TestStream_Resume(t *testing.T) {
	ctx := rsCtx(t)
	var rec rsRecorder
	var askRuns, bRuns atomic.Int32
	c := rsCompile(t, rsAskGraph(&rec, &askRuns, &bRuns), graph.WithCheckpointer(checkpoint.NewMemory()))
	th := graph.WithThread("stream-resume")
	items := stCollect(c.Stream(ctx, rsState{}, th, graph.WithStreamMode(graph.ModeUpdates)))
	rsInterrupted(t, items[len(items)-1].err)

	evs := stEvents(t, stCollect(c.StreamResume(ctx, "ann", th, graph.WithStreamMode(graph.ModeUpdates|graph.ModeValues))))
	var updates []string
	for _, ev := range stOfMode(evs, graph.ModeUpdates) {
		updates = append(updates, ev.Node)
	}
	if !slices.Equal(updates, []string{"ask", "b"}) {
		t.Fatalf("resumed stream updates from %v, want ask and b only", updates)
	}
	values := stOfMode(evs, graph.ModeValues)
	if len(values) == 0 {
		t.Fatal("no values events")
	}
	rsWantLog(t, values[len(values)-1].Data.(rsState), "a", "hello ann", "b")
	if got := rec.get(); !slices.Equal(got, []string{"ann"}) {
		t.Fatalf("node saw %q", got)
	}

	// Nothing is left: the stream says so.
	items = stCollect(c.StreamResume(ctx, nil, th))
	if len(items) == 0 || !errors.Is(items[len(items)-1].err, graph.ErrNothingToResume) {
		t.Fatalf("stream resume of a finished thread: %+v, want ErrNothingToResume", items)
	}
}

func TestStream_StoppedRunResumes(t *testing.T) {
	defer leaktest.Check(t)()
	for _, at := range []string{"values after a", "start of b"} {
		t.Run(at, func(t *testing.T) {
			ctx := rsCtx(t)
			calls := newSgCounters("a", "b", "c")
			c := rsCompile(t, stLine(calls, "a", "b", "c"), graph.WithCheckpointer(checkpoint.NewMemory()))
			th := graph.WithThread("stopped")
			for ev, err := range c.Stream(ctx, rsState{}, th, graph.WithStreamMode(graph.ModeValues|graph.ModeTasks)) {
				if err != nil {
					t.Fatal(err)
				}
				if s, ok := ev.Data.(rsState); ok && at == "values after a" && slices.Equal(s.Log, []string{"a"}) {
					break
				}
				if ev.Mode == graph.ModeTasks && at == "start of b" && ev.Node == "b" {
					break
				}
			}
			calls.want(t, map[string]int32{"a": 1, "b": 0, "c": 0})
			out, err := c.Resume(ctx, nil, th)
			if err != nil {
				t.Fatalf("resume: %v", err)
			}
			rsWantLog(t, out, "a", "b", "c")
			calls.want(t, map[string]int32{"a": 1, "b": 1, "c": 1})
		})
	}
}
