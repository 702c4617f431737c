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

type thState struct {
	N   int
	Log []string `graph:"append"`
}

// thLoop counts N up to stop, logging each value; calls counts the node's runs, and failAt, when
// it holds a positive value, makes the node fail once when N reaches it.
func thLoop(stop int, calls *atomic.Int32, failAt *atomic.Int32) *graph.StateGraph[thState] {
	g := graph.New[thState]()
	g.AddNode("tick", func(_ context.Context, s thState) (thState, error) {
		calls.Add(1)
		if failAt != nil && failAt.Load() > 0 && int32(s.N) == failAt.Load() {
			failAt.Store(0)
			return thState{}, errors.New("flaky")
		}
		return thState{N: s.N + 1, Log: []string{fmt.Sprint(s.N)}}, nil
	})
	g.AddEdge(graph.START, "tick")
	g.AddConditionalEdges("tick", func(_ context.Context, s thState) string {
		if s.N < stop {
			return "tick"
		}
		return graph.END
	}, "tick", graph.END)
	return g
}

func thCompile(t *testing.T, g *graph.StateGraph[thState], opts ...graph.Option) *graph.Compiled[thState] {
	t.Helper()
	c, err := g.Compile(opts...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func thLog(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprint(i)
	}
	return out
}

func TestStateAndHistory(t *testing.T) {
	ctx := context.Background()
	var calls atomic.Int32
	saver := checkpoint.NewMemory()
	c := thCompile(t, thLoop(7, &calls, nil), graph.WithCheckpointer(saver), graph.WithSnapshotEvery(3))
	thread := graph.WithThread("h")
	if _, err := c.Invoke(ctx, thState{}, thread); err != nil {
		t.Fatal(err)
	}

	snap, err := c.State(ctx, thread)
	if err != nil {
		t.Fatal(err)
	}
	if snap.Values.N != 7 || !slices.Equal(snap.Values.Log, thLog(7)) || len(snap.Next) != 0 || snap.Step != 7 || snap.Source != checkpoint.SourceLoop {
		t.Fatalf("State = %+v, want N 7, a full log, nothing next, step 7, source loop", snap)
	}

	hist, err := c.History(ctx, checkpoint.ListOptions{}, thread)
	if err != nil {
		t.Fatal(err)
	}
	if len(hist) != 8 {
		t.Fatalf("History has %d snapshots, want 8 (input and 7 steps)", len(hist))
	}
	for i, h := range hist {
		step := 7 - i
		if h.Step != step || h.Values.N != step || !slices.Equal(h.Values.Log, thLog(step)) {
			t.Errorf("History[%d] = step %d N %d log %q, want step %d with N and log up to it", i, h.Step, h.Values.N, h.Values.Log, step)
		}
		if step < 7 && !slices.Equal(h.Next, []string{"tick"}) {
			t.Errorf("History[%d].Next = %v, want [tick]", i, h.Next)
		}
		if i+1 < len(hist) && h.ParentID != hist[i+1].Config.CheckpointID {
			t.Errorf("History[%d] has parent %s, want %s", i, h.ParentID, hist[i+1].Config.CheckpointID)
		}
	}

	// Filters and limits reach the saver.
	if h, err := c.History(ctx, checkpoint.ListOptions{Limit: 2}, thread); err != nil || len(h) != 2 || h[0].Step != 7 {
		t.Errorf("History(limit 2) = %d snapshots (err %v), want the 2 newest", len(h), err)
	}
	if h, err := c.History(ctx, checkpoint.ListOptions{Source: checkpoint.SourceInput}, thread); err != nil || len(h) != 1 || h[0].Values.N != 0 {
		t.Errorf("History(source input) = %+v (err %v), want the input checkpoint", h, err)
	}

	// State of an older checkpoint.
	old, err := c.State(ctx, thread, graph.WithCheckpointID(hist[4].Config.CheckpointID))
	if err != nil || old.Values.N != 3 {
		t.Errorf("State at step 3 = %+v (err %v), want N 3", old.Values, err)
	}

	if _, err := c.State(ctx, graph.WithThread("nobody")); !errors.Is(err, checkpoint.ErrNotFound) {
		t.Errorf("State of an unknown thread: err %v, want ErrNotFound", err)
	}
	if _, err := c.State(ctx, thread, graph.WithCheckpointID("nope")); !errors.Is(err, checkpoint.ErrNotFound) {
		t.Errorf("State of an unknown checkpoint: err %v, want ErrNotFound", err)
	}
	bare := thCompile(t, thLoop(1, &calls, nil))
	if _, err := bare.State(ctx, thread); !errors.Is(err, graph.ErrNoCheckpointer) {
		t.Errorf("State without a checkpointer: err %v, want ErrNoCheckpointer", err)
	}
}

func TestStateShowsPendingInterrupt(t *testing.T) {
	ctx := context.Background()
	g := graph.New[thState]()
	g.AddNode("ask", func(ctx context.Context, s thState) (thState, error) {
		v, err := graph.Interrupt[string](ctx, "who?")
		return thState{Log: []string{v}}, err
	})
	g.AddEdge(graph.START, "ask")
	g.AddEdge("ask", graph.END)
	c := thCompile(t, g, graph.WithCheckpointer(checkpoint.NewMemory()))
	thread := graph.WithThread("ask")
	if _, err := c.Invoke(ctx, thState{}, thread); err == nil {
		t.Fatal("no interrupt")
	}
	snap, err := c.State(ctx, thread)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(snap.Next, []string{"ask"}) || len(snap.Interrupts) != 1 || snap.Interrupts[0].Value != "who?" {
		t.Fatalf("State = next %v interrupts %+v, want ask waiting on who?", snap.Next, snap.Interrupts)
	}
	if _, err := c.Resume(ctx, "me", thread); err != nil {
		t.Fatal(err)
	}
	if snap, _ = c.State(ctx, thread); len(snap.Interrupts) != 0 || !slices.Equal(snap.Values.Log, []string{"me"}) {
		t.Errorf("after resume: %+v", snap)
	}
}

// a → b → c with a pause before b: UpdateState as a node decides what runs next.
func thPipeline(ran *[]string) *graph.StateGraph[thState] {
	g := graph.New[thState]()
	for _, name := range []string{"a", "b", "c"} {
		g.AddNode(name, func(_ context.Context, s thState) (thState, error) {
			*ran = append(*ran, name)
			return thState{Log: []string{fmt.Sprintf("%s@%d", name, s.N)}}, nil
		})
	}
	g.AddEdge(graph.START, "a")
	g.AddEdge("a", "b")
	g.AddEdge("b", "c")
	g.AddEdge("c", graph.END)
	return g
}

func TestUpdateState(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name     string
		asNode   string
		wantNext []string
		wantRan  []string // after Resume
		wantLog  []string
	}{
		{"as the node that ran", "a", []string{"b"}, []string{"b", "c"}, []string{"a@0", "b@5", "c@5"}},
		{"as a later node", "b", []string{"c"}, []string{"c"}, []string{"a@0", "c@5"}},
		{"keeping the next tasks", "", []string{"b"}, []string{"b", "c"}, []string{"a@0", "b@5", "c@5"}},
		{"as START", graph.START, []string{"a"}, []string{"a"}, nil}, // starts over and pauses before b again
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var ran []string
			c := thCompile(t, thPipeline(&ran), graph.WithCheckpointer(checkpoint.NewMemory()), graph.WithInterruptBefore("b"))
			thread := graph.WithThread("u")
			var ir *graph.Interrupted
			if _, err := c.Invoke(ctx, thState{}, thread); !errors.As(err, &ir) {
				t.Fatalf("err %v, want a pause before b", err)
			}
			before, _ := c.State(ctx, thread)
			cfg, err := c.UpdateState(ctx, thState{N: 5}, tc.asNode, thread)
			if err != nil {
				t.Fatal(err)
			}
			snap, err := c.State(ctx, thread)
			if err != nil {
				t.Fatal(err)
			}
			if snap.Config != cfg || snap.Source != checkpoint.SourceUpdate || snap.ParentID != before.Config.CheckpointID || snap.Meta["as_node"] != tc.asNode {
				t.Errorf("new checkpoint %+v, want source update, parent %s, as_node %q", snap, before.Config.CheckpointID, tc.asNode)
			}
			if snap.Values.N != 5 || !slices.Equal(snap.Next, tc.wantNext) {
				t.Errorf("after update: N %d next %v, want N 5 next %v", snap.Values.N, snap.Next, tc.wantNext)
			}
			ran = nil
			final, err := c.Resume(ctx, nil, thread)
			if tc.wantLog == nil {
				if !errors.As(err, &ir) || !slices.Equal(ran, tc.wantRan) {
					t.Fatalf("resume ran %v, err %v; want %v then a pause", ran, err, tc.wantRan)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(ran, tc.wantRan) || !slices.Equal(final.Log, tc.wantLog) {
				t.Errorf("resume ran %v with log %q, want %v and %q", ran, final.Log, tc.wantRan, tc.wantLog)
			}
		})
	}

	var ran []string
	c := thCompile(t, thPipeline(&ran), graph.WithCheckpointer(checkpoint.NewMemory()))
	if _, err := c.UpdateState(ctx, thState{}, "ghost", graph.WithThread("x")); err == nil || !strings.Contains(err.Error(), `"ghost"`) {
		t.Errorf("update as an unknown node: err %v", err)
	}
	// An empty thread can be given a state, and then run.
	if _, err := c.UpdateState(ctx, thState{N: 9}, "", graph.WithThread("fresh")); err != nil {
		t.Fatal(err)
	}
	if out, err := c.Invoke(ctx, thState{}, graph.WithThread("fresh")); err != nil || !slices.Equal(out.Log, []string{"a@9", "b@9", "c@9"}) {
		t.Errorf("run after an update of an empty thread: %+v, %v", out, err)
	}
}

func TestTimeTravel(t *testing.T) {
	ctx := context.Background()
	var calls atomic.Int32
	saver := checkpoint.NewMemory()
	c := thCompile(t, thLoop(5, &calls, nil), graph.WithCheckpointer(saver))
	thread := graph.WithThread("tt")
	if _, err := c.Invoke(ctx, thState{}, thread); err != nil {
		t.Fatal(err)
	}
	hist, _ := c.History(ctx, checkpoint.ListOptions{}, thread)
	step2 := hist[3] // newest first: 5, 4, 3, 2
	if step2.Step != 2 {
		t.Fatalf("picked step %d", step2.Step)
	}

	// Replaying from step 2 runs steps 3..5 again on a new branch.
	calls.Store(0)
	final, err := c.Resume(ctx, nil, thread, graph.WithCheckpointID(step2.Config.CheckpointID))
	if err != nil {
		t.Fatal(err)
	}
	if calls.Load() != 3 || final.N != 5 || !slices.Equal(final.Log, thLog(5)) {
		t.Errorf("replay ran the node %d times to %+v, want 3 runs to the same final state", calls.Load(), final)
	}
	after, _ := c.History(ctx, checkpoint.ListOptions{}, thread)
	if len(after) != len(hist)+4 {
		t.Fatalf("history grew from %d to %d, want 4 more (a fork and 3 steps)", len(hist), len(after))
	}
	fork := after[3]
	if fork.Source != checkpoint.SourceFork || fork.Meta["forked_from"] != step2.Config.CheckpointID || fork.ParentID != step2.Config.CheckpointID || fork.Values.N != 2 {
		t.Errorf("fork checkpoint %+v, want a copy of step 2 that names it", fork)
	}
	// The old branch stays as it was.
	if old, err := c.State(ctx, thread, graph.WithCheckpointID(hist[0].Config.CheckpointID)); err != nil || old.Values.N != 5 {
		t.Errorf("old branch's head: %+v, %v", old, err)
	}

	// Invoking with input from an old checkpoint merges the input into that checkpoint's state.
	out, err := c.Invoke(ctx, thState{Log: []string{"again"}}, thread, graph.WithCheckpointID(hist[4].Config.CheckpointID))
	if err != nil {
		t.Fatal(err)
	}
	if want := append(thLog(1), "again", "1", "2", "3", "4"); !slices.Equal(out.Log, want) {
		t.Errorf("log %q, want %q", out.Log, want)
	}
	// A value given with a fork waits for the first Interrupt call; this graph makes none, so the
	// branch runs to its end.
	if _, err := c.Resume(ctx, "x", thread, graph.WithCheckpointID(step2.Config.CheckpointID)); err != nil {
		t.Errorf("resume of a fork with a value: %v", err)
	}
}

// failingSaver fails every Put after the first ok ones.
type failingSaver struct {
	checkpoint.Saver
	ok   atomic.Int32
	puts atomic.Int32
}

var errThDisk = errors.New("disk full")

func (f *failingSaver) Put(ctx context.Context, cfg checkpoint.Config, cp checkpoint.Checkpoint) (checkpoint.Config, error) {
	if f.puts.Add(1) > f.ok.Load() {
		return checkpoint.Config{}, errThDisk
	}
	return f.Saver.Put(ctx, cfg, cp)
}

func TestDurability(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name       string
		mode       graph.Durability
		wantSaved  int // checkpoints in the saver after a 6-step run
		wantFailed bool
	}{
		{"sync", graph.DurabilitySync, 7, false},
		{"async", graph.DurabilityAsync, 7, false},
		{"exit", graph.DurabilityExit, 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var calls atomic.Int32
			saver := checkpoint.NewMemory()
			c := thCompile(t, thLoop(6, &calls, nil), graph.WithCheckpointer(saver), graph.WithDurability(tc.mode), graph.WithSnapshotEvery(4))
			thread := graph.WithThread("d")
			if out, err := c.Invoke(ctx, thState{}, thread); err != nil || out.N != 6 {
				t.Fatalf("run: %+v, %v", out, err)
			}
			list, _ := saver.List(ctx, checkpoint.Config{ThreadID: "d"}, checkpoint.ListOptions{})
			if len(list) != tc.wantSaved {
				t.Errorf("%d checkpoints saved, want %d", len(list), tc.wantSaved)
			}
			snap, err := c.State(ctx, thread)
			if err != nil || snap.Values.N != 6 || !slices.Equal(snap.Values.Log, thLog(6)) || len(snap.Next) != 0 {
				t.Errorf("State after the run: %+v, %v", snap, err)
			}

			// A failure in step 4 is saved too, and Resume continues without redoing steps 1-3.
			calls.Store(0)
			var failAt atomic.Int32
			failAt.Store(3)
			saver = checkpoint.NewMemory()
			c = thCompile(t, thLoop(6, &calls, &failAt), graph.WithCheckpointer(saver), graph.WithDurability(tc.mode))
			if _, err := c.Invoke(ctx, thState{}, thread); err == nil {
				t.Fatal("the flaky step did not fail")
			}
			if calls.Load() != 4 {
				t.Fatalf("%d calls before the failure, want 4", calls.Load())
			}
			out, err := c.Resume(ctx, nil, thread)
			if err != nil || out.N != 6 || !slices.Equal(out.Log, thLog(6)) {
				t.Fatalf("resume: %+v, %v", out, err)
			}
			if calls.Load() != 7 {
				t.Errorf("%d calls in all, want 7 (4 until the failure, then steps 4-6)", calls.Load())
			}
		})
	}

	t.Run("interrupt in exit mode", func(t *testing.T) {
		g := graph.New[thState]()
		g.AddNode("first", func(context.Context, thState) (thState, error) { return thState{Log: []string{"first"}}, nil })
		g.AddNode("ask", func(ctx context.Context, s thState) (thState, error) {
			v, err := graph.Interrupt[string](ctx, "?")
			return thState{Log: []string{v}}, err
		})
		g.AddEdge(graph.START, "first")
		g.AddEdge("first", "ask")
		g.AddEdge("ask", graph.END)
		saver := checkpoint.NewMemory()
		c := thCompile(t, g, graph.WithCheckpointer(saver), graph.WithDurability(graph.DurabilityExit))
		thread := graph.WithThread("x")
		if _, err := c.Invoke(ctx, thState{}, thread); err == nil {
			t.Fatal("no pause")
		}
		// Another graph with the same saver (another process, say) answers.
		c2 := thCompile(t, g, graph.WithCheckpointer(saver))
		out, err := c2.Resume(ctx, "answer", thread)
		if err != nil || !slices.Equal(out.Log, []string{"first", "answer"}) {
			t.Fatalf("resume: %+v, %v", out, err)
		}
	})

	t.Run("async run with more saves than its queue holds", func(t *testing.T) {
		var calls atomic.Int32
		saver := checkpoint.NewMemory()
		c := thCompile(t, thLoop(1500, &calls, nil), graph.WithCheckpointer(saver), graph.WithDurability(graph.DurabilityAsync), graph.WithRecursionLimit(2000))
		if out, err := c.Invoke(ctx, thState{}, graph.WithThread("long")); err != nil || out.N != 1500 {
			t.Fatalf("run: N %d, %v", out.N, err)
		}
		list, _ := saver.List(ctx, checkpoint.Config{ThreadID: "long"}, checkpoint.ListOptions{})
		if len(list) != 1501 {
			t.Errorf("%d checkpoints saved, want 1501", len(list))
		}
	})

	t.Run("a failed background save fails the run", func(t *testing.T) {
		var calls atomic.Int32
		saver := &failingSaver{Saver: checkpoint.NewMemory()}
		saver.ok.Store(3)
		c := thCompile(t, thLoop(50, &calls, nil), graph.WithCheckpointer(saver), graph.WithDurability(graph.DurabilityAsync))
		_, err := c.Invoke(ctx, thState{}, graph.WithThread("f"))
		if !errors.Is(err, errThDisk) {
			t.Fatalf("err %v, want the saver's error", err)
		}
		list, _ := saver.List(ctx, checkpoint.Config{ThreadID: "f"}, checkpoint.ListOptions{})
		if len(list) != 3 {
			t.Errorf("%d checkpoints saved, want the 3 before the failure", len(list))
		}
	})
}

func TestUnknownFormatIsRefused(t *testing.T) {
	ctx := context.Background()
	var calls atomic.Int32
	saver := checkpoint.NewMemory()
	c := thCompile(t, thLoop(2, &calls, nil), graph.WithCheckpointer(saver))
	if _, err := c.Invoke(ctx, thState{}, graph.WithThread("f")); err != nil {
		t.Fatal(err)
	}
	latest, _ := saver.Get(ctx, checkpoint.Config{ThreadID: "f"})
	cp := latest.Checkpoint
	cp.Format = 99
	if _, err := saver.Put(ctx, checkpoint.Config{ThreadID: "f"}, cp); err != nil {
		t.Fatal(err)
	}
	_, err := c.State(ctx, graph.WithThread("f"))
	var ce *graph.CorruptCheckpointError
	if !errors.As(err, &ce) || ce.CheckpointID != cp.ID || !strings.Contains(err.Error(), "format version 99") {
		t.Errorf("err %v, want a CorruptCheckpointError about format version 99", err)
	}
}
