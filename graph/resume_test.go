package graph_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/agiraph/agiraph/checkpoint"
	"github.com/agiraph/agiraph/graph"
)

// rsHookSaver wraps a Saver: onWrites sees every successful PutWrites, and mutate may change every
// tuple Get returns (to simulate a damaged store).
type rsHookSaver struct {
	checkpoint.Saver
	onWrites func(cfg checkpoint.Config, ws []checkpoint.Write)
	mutate   func(t *checkpoint.Tuple)
}

func (h *rsHookSaver) PutWrites(ctx context.Context, cfg checkpoint.Config, ws []checkpoint.Write) error {
	if err := h.Saver.PutWrites(ctx, cfg, ws); err != nil {
		return err
	}
	if h.onWrites != nil {
		h.onWrites(cfg, ws)
	}
	return nil
}

func (h *rsHookSaver) Get(ctx context.Context, cfg checkpoint.Config) (*checkpoint.Tuple, error) {
	t, err := h.Saver.Get(ctx, cfg)
	if err == nil && h.mutate != nil {
		h.mutate(t)
	}
	return t, err
}

func (h *rsHookSaver) List(ctx context.Context, cfg checkpoint.Config, opts checkpoint.ListOptions) ([]checkpoint.Tuple, error) {
	list, err := h.Saver.List(ctx, cfg, opts)
	if err == nil && h.mutate != nil {
		for i := range list {
			h.mutate(&list[i])
		}
	}
	return list, err
}

var errRsBoom = errors.New("boom")

// rsSiblings is START → {s1, s2, s3, f} → collect → END: f fails (or blocks) in the first superstep
// while its three siblings succeed. Counters count the calls of every node.
type rsSiblings struct {
	calls   map[string]*atomic.Int32
	failing atomic.Bool
	// gate, when set, is waited for by f before it fails: it is closed once the three siblings'
	// updates are saved, so that the failure never overtakes them.
	gate chan struct{}
	// block makes f cancel the run (through cancel) instead of failing.
	block  atomic.Bool
	cancel context.CancelFunc
}

func newRsSiblings() *rsSiblings {
	x := &rsSiblings{calls: map[string]*atomic.Int32{}}
	for _, n := range []string{"s1", "s2", "s3", "f", "collect"} {
		x.calls[n] = new(atomic.Int32)
	}
	return x
}

func (x *rsSiblings) graph() *graph.StateGraph[rsState] {
	g := graph.New[rsState]()
	for _, n := range []string{"s1", "s2", "s3"} {
		g.AddNode(n, func(_ context.Context, _ rsState) (rsState, error) {
			x.calls[n].Add(1)
			u := rsState{Log: []string{n}}
			if n == "s1" {
				u.N = 10 // one task of the step sets N: N keeps one value per step
			}
			return u, nil
		})
		g.AddEdge(graph.START, n)
		g.AddEdge(n, "collect")
	}
	g.AddNode("f", func(ctx context.Context, _ rsState) (rsState, error) {
		x.calls["f"].Add(1)
		if x.failing.Load() || x.block.Load() {
			if x.gate != nil {
				select {
				case <-x.gate:
				case <-ctx.Done():
					return rsState{}, ctx.Err()
				}
			}
			if x.block.Load() {
				x.cancel()
				<-ctx.Done()
				return rsState{}, ctx.Err()
			}
			return rsState{}, errRsBoom
		}
		return rsState{Log: []string{"f"}}, nil
	})
	g.AddEdge(graph.START, "f")
	g.AddEdge("f", "collect")
	g.AddNode("collect", func(_ context.Context, s rsState) (rsState, error) {
		x.calls["collect"].Add(1)
		return rsState{Log: []string{fmt.Sprintf("collect(%d)", len(s.Log))}, N: s.N + 1}, nil
	})
	g.AddEdge("collect", graph.END)
	return g
}

func (x *rsSiblings) counts() map[string]int32 {
	out := map[string]int32{}
	for n, c := range x.calls {
		out[n] = c.Load()
	}
	return out
}

// saverGate returns a saver that closes x.gate once s1, s2 and s3 have saved their updates.
func (x *rsSiblings) saverGate(inner checkpoint.Saver) checkpoint.Saver {
	gate := make(chan struct{})
	x.gate = gate
	var mu sync.Mutex
	saved := map[string]bool{}
	closed := false
	return &rsHookSaver{Saver: inner, onWrites: func(_ checkpoint.Config, ws []checkpoint.Write) {
		mu.Lock()
		defer mu.Unlock()
		for _, w := range ws {
			if w.Kind == checkpoint.WriteUpdate && strings.HasPrefix(w.Node, "s") {
				saved[w.Node] = true
			}
		}
		if len(saved) == 3 && !closed {
			closed = true
			close(gate)
		}
	}}
}

func rsBaseline(t *testing.T) rsState {
	t.Helper()
	x := newRsSiblings()
	want, err := rsCompile(t, x.graph()).Invoke(rsCtx(t), rsState{Log: []string{"in"}})
	if err != nil {
		t.Fatalf("baseline run: %v", err)
	}
	return want
}

func TestResume_AfterAFailureRunsOnlyTheFailedTask(t *testing.T) {
	ctx := rsCtx(t)
	want := rsBaseline(t)
	x := newRsSiblings()
	x.failing.Store(true)
	saver := x.saverGate(checkpoint.NewMemory())
	c := rsCompile(t, x.graph(), graph.WithCheckpointer(saver))
	th := graph.WithThread("crash")

	_, err := c.Invoke(ctx, rsState{Log: []string{"in"}}, th)
	var ne *graph.NodeError
	if !errors.As(err, &ne) || ne.Node != "f" || !errors.Is(err, errRsBoom) {
		t.Fatalf("first run: %v, want f's NodeError wrapping boom", err)
	}
	if got := x.counts(); got["s1"] != 1 || got["s2"] != 1 || got["s3"] != 1 || got["f"] != 1 || got["collect"] != 0 {
		t.Fatalf("calls after the failure: %v", got)
	}

	// Nothing waits for a value: a value is refused, and nothing runs.
	if _, err := c.Resume(ctx, "surprise", th); err == nil {
		t.Fatal("resume with a value when no interrupt is pending succeeded")
	}
	if got := x.counts(); got["f"] != 1 || got["collect"] != 0 {
		t.Fatalf("a refused resume ran nodes: %v", got)
	}

	x.failing.Store(false)
	got, err := c.Resume(ctx, nil, th)
	if err != nil {
		t.Fatalf("resume: %v", err)
	}
	if calls := x.counts(); calls["s1"] != 1 || calls["s2"] != 1 || calls["s3"] != 1 || calls["f"] != 2 || calls["collect"] != 1 {
		t.Fatalf("calls after the resume: %v; want the siblings once, f twice, collect once", calls)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("resumed state %+v, want %+v as in an uninterrupted run", got, want)
	}
}

func TestResume_AfterACancelledRunRunsOnlyTheUnfinishedTask(t *testing.T) {
	want := rsBaseline(t)
	x := newRsSiblings()
	x.block.Store(true)
	saver := x.saverGate(checkpoint.NewMemory())
	c := rsCompile(t, x.graph(), graph.WithCheckpointer(saver))
	th := graph.WithThread("cancelled")

	runCtx, cancel := context.WithCancel(rsCtx(t))
	x.cancel = cancel
	_, err := c.Invoke(runCtx, rsState{Log: []string{"in"}}, th)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled run: %v, want context.Canceled", err)
	}
	if got := x.counts(); got["s1"] != 1 || got["s2"] != 1 || got["s3"] != 1 || got["f"] != 1 || got["collect"] != 0 {
		t.Fatalf("calls after the cancellation: %v", got)
	}

	x.block.Store(false)
	got, err := c.Resume(rsCtx(t), nil, th)
	if err != nil {
		t.Fatalf("resume: %v", err)
	}
	if calls := x.counts(); calls["s1"] != 1 || calls["s2"] != 1 || calls["s3"] != 1 || calls["f"] != 2 || calls["collect"] != 1 {
		t.Fatalf("calls after the resume: %v", calls)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("resumed state %+v, want %+v", got, want)
	}
}

func TestResume_AfterAFailedSendTaskKeepsItsArgument(t *testing.T) {
	ctx := rsCtx(t)
	var failing atomic.Bool
	failing.Store(true)
	calls := map[int]*atomic.Int32{}
	for i := range 4 {
		calls[i] = new(atomic.Int32)
	}
	g := graph.New[rsState]()
	g.AddRouter(graph.START, func(context.Context, rsState) graph.Next[rsState] {
		var n graph.Next[rsState]
		for i := range 4 {
			n.Sends = append(n.Sends, graph.Send[rsState]{Node: "work", Arg: rsState{N: i}})
		}
		return n
	}, "work")
	g.AddNode("work", func(_ context.Context, s rsState) (rsState, error) {
		calls[s.N].Add(1)
		if s.N == 2 && failing.Load() {
			return rsState{}, errRsBoom
		}
		return rsState{Log: []string{fmt.Sprintf("w%d", s.N)}}, nil
	})
	g.AddEdge("work", graph.END)
	// One at a time, in order, so that the siblings are saved before the failure.
	c := rsCompile(t, g, graph.WithCheckpointer(checkpoint.NewMemory()), graph.WithMaxConcurrency(1))
	th := graph.WithThread("send-crash")
	if _, err := c.Invoke(ctx, rsState{}, th); !errors.Is(err, errRsBoom) {
		t.Fatalf("first run: %v", err)
	}
	failing.Store(false)
	out, err := c.Resume(ctx, nil, th)
	if err != nil {
		t.Fatalf("resume: %v", err)
	}
	rsWantLog(t, out, "w0", "w1", "w2", "w3")
	for i, want := range []int32{1, 1, 2, 1} {
		if calls[i].Load() != want {
			t.Errorf("work(%d) ran %d times, want %d", i, calls[i].Load(), want)
		}
	}
}

func TestCheckpoints_OnePerSuperstepNewestFirst(t *testing.T) {
	ctx := rsCtx(t)
	saver := checkpoint.NewMemory()
	g := graph.New[rsState]()
	for _, n := range []string{"a", "b", "c"} {
		g.AddNode(n, rsLog(n, nil))
	}
	g.AddEdge(graph.START, "a")
	g.AddEdge("a", "b")
	g.AddEdge("b", "c")
	g.AddEdge("c", graph.END)
	c := rsCompile(t, g, graph.WithCheckpointer(saver))
	out, err := c.Invoke(ctx, rsState{Log: []string{"in"}}, graph.WithThread("wired"), graph.WithRunID("run-1"))
	if err != nil {
		t.Fatal(err)
	}
	rsWantLog(t, out, "in", "a", "b", "c")

	list, err := saver.List(ctx, checkpoint.Config{ThreadID: "wired"}, checkpoint.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 4 {
		t.Fatalf("%d checkpoints, want 4 (the input and one per superstep)", len(list))
	}
	wantNext := [][]string{{}, {"c"}, {"b"}, {"a"}}
	for i, tu := range list {
		cp := tu.Checkpoint
		if cp.Step != 3-i {
			t.Errorf("checkpoint %d has step %d, want %d", i, cp.Step, 3-i)
		}
		wantSource := checkpoint.SourceLoop
		if i == 3 {
			wantSource = checkpoint.SourceInput
		}
		if cp.Source != wantSource {
			t.Errorf("checkpoint %d has source %q, want %q", i, cp.Source, wantSource)
		}
		if cp.RunID != "run-1" {
			t.Errorf("checkpoint %d has run ID %q", i, cp.RunID)
		}
		if tu.Config.CheckpointID != cp.ID || tu.Config.ThreadID != "wired" || cp.ID == "" {
			t.Errorf("checkpoint %d config %+v, ID %q", i, tu.Config, cp.ID)
		}
		if i < 3 && cp.ParentID != list[i+1].Checkpoint.ID {
			t.Errorf("checkpoint %d has parent %q, want %q", i, cp.ParentID, list[i+1].Checkpoint.ID)
		}
		var next []string
		for _, task := range cp.Next {
			next = append(next, task.Node)
		}
		if !slices.Equal(next, wantNext[i]) {
			t.Errorf("checkpoint %d has next %v, want %v", i, next, wantNext[i])
		}
		// Every task of the frontier saved its update as a write of this checkpoint.
		for _, task := range cp.Next {
			found := false
			for _, w := range tu.Writes {
				found = found || (w.TaskID == task.ID && w.Node == task.Node && w.Kind == checkpoint.WriteUpdate)
			}
			if !found {
				t.Errorf("checkpoint %d: no update write of task %s (%s): %+v", i, task.ID, task.Node, tu.Writes)
			}
		}
	}
	if list[3].Checkpoint.ParentID != "" {
		t.Errorf("the first checkpoint has parent %q", list[3].Checkpoint.ParentID)
	}
	var input rsState
	if err := (checkpoint.JSON{}).Unmarshal(list[3].Checkpoint.State, &input); err != nil || !slices.Equal(input.Log, []string{"in"}) {
		t.Errorf("the input checkpoint holds %+v (%v), want the input", input, err)
	}
	latest, err := saver.Get(ctx, checkpoint.Config{ThreadID: "wired"})
	if err != nil || latest.Checkpoint.ID != list[0].Checkpoint.ID {
		t.Fatalf("latest = %v, %v; want the newest of the list", latest, err)
	}
	// A checkpointer needs a thread.
	if _, err := c.Invoke(ctx, rsState{}, graph.WithThread("")); err == nil {
		t.Fatal("a checkpointer without a thread was accepted")
	}
}

// rsLoop appends N and increments it until N reaches 20; at N == 17 it asks with Interrupt when
// ask is set, and logs the answer (or "go" when it does not ask).
func rsLoop(ask bool) *graph.StateGraph[rsState] {
	g := graph.New[rsState]()
	g.AddNode("tick", func(ctx context.Context, s rsState) (rsState, error) {
		entry := fmt.Sprint(s.N)
		if s.N == 17 {
			v := "go"
			if ask {
				var err error
				if v, err = graph.Interrupt[string](ctx, "continue?"); err != nil {
					return rsState{}, err
				}
			}
			entry += ":" + v
		}
		return rsState{Log: []string{entry}, N: s.N + 1}, nil
	})
	g.AddEdge(graph.START, "tick")
	g.AddConditionalEdges("tick", func(_ context.Context, s rsState) string {
		if s.N < 20 {
			return "tick"
		}
		return graph.END
	}, "tick", graph.END)
	return g
}

func TestCheckpoints_SnapshotEveryRebuildsTheState(t *testing.T) {
	ctx := rsCtx(t)
	plain := rsCompile(t, rsLoop(false))
	want, err := plain.Invoke(ctx, rsState{Log: []string{"in"}})
	if err != nil {
		t.Fatal(err)
	}
	wantAgain, err := plain.Invoke(ctx, rsState{Log: append(slices.Clone(want.Log), "again"), N: want.N})
	if err != nil {
		t.Fatal(err)
	}

	saver := checkpoint.NewMemory()
	th := graph.WithThread("long")
	c := rsCompile(t, rsLoop(true), graph.WithCheckpointer(saver), graph.WithSnapshotEvery(3))
	out, err := c.Invoke(ctx, rsState{Log: []string{"in"}}, th)
	rsInterrupted(t, err)
	if out.N != 17 {
		t.Fatalf("paused at N %d, want 17", out.N)
	}
	// Another compiled graph, as in another process, resumes from the saver alone.
	c2 := rsCompile(t, rsLoop(true), graph.WithCheckpointer(saver), graph.WithSnapshotEvery(3))
	got, err := c2.Resume(ctx, "go", th)
	if err != nil {
		t.Fatalf("resume: %v", err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("resumed run ended with %+v, want %+v", got, want)
	}

	list, err := saver.List(ctx, checkpoint.Config{ThreadID: "long"}, checkpoint.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 21 {
		t.Fatalf("%d checkpoints, want 21", len(list))
	}
	snapshots := 0
	for _, tu := range list {
		cp := tu.Checkpoint
		wantSnap := cp.Source == checkpoint.SourceInput || cp.Step%3 == 0
		if (cp.State != nil) != wantSnap {
			t.Errorf("step %d (%s): has snapshot %v, want %v", cp.Step, cp.Source, cp.State != nil, wantSnap)
		}
		if cp.State != nil {
			snapshots++
		}
	}
	if snapshots != 7 { // the input and steps 3, 6, ..., 18
		t.Errorf("%d snapshots, want 7", snapshots)
	}
	if list[0].Checkpoint.State != nil {
		t.Fatal("the test needs the latest checkpoint to have no snapshot")
	}

	// A second invocation continues from the rebuilt latest state.
	got, err = c2.Invoke(ctx, rsState{Log: []string{"again"}}, th)
	if err != nil {
		t.Fatalf("second invocation: %v", err)
	}
	if !reflect.DeepEqual(got, wantAgain) {
		t.Fatalf("second invocation ended with %+v, want %+v", got, wantAgain)
	}
}

func TestCheckpoints_SecondInvokeContinuesTheThread(t *testing.T) {
	ctx := rsCtx(t)
	saver := checkpoint.NewMemory()
	var runs atomic.Int32
	g := graph.New[rsState]()
	g.AddNode("inc", func(_ context.Context, s rsState) (rsState, error) {
		runs.Add(1)
		return rsState{Log: []string{fmt.Sprintf("inc%d", s.N+1)}, N: s.N + 1}, nil
	})
	g.AddEdge(graph.START, "inc")
	g.AddEdge("inc", graph.END)
	c := rsCompile(t, g, graph.WithCheckpointer(saver))
	th := graph.WithThread("again")

	out, err := c.Invoke(ctx, rsState{Log: []string{"first"}}, th)
	if err != nil {
		t.Fatal(err)
	}
	rsWantLog(t, out, "first", "inc1")
	firstLatest, err := saver.Get(ctx, checkpoint.Config{ThreadID: "again"})
	if err != nil {
		t.Fatal(err)
	}
	out, err = c.Invoke(ctx, rsState{Log: []string{"second"}}, th)
	if err != nil {
		t.Fatal(err)
	}
	rsWantLog(t, out, "first", "inc1", "second", "inc2")
	if out.N != 2 || runs.Load() != 2 {
		t.Fatalf("N %d after %d runs, want 2 and 2", out.N, runs.Load())
	}
	list, err := saver.List(ctx, checkpoint.Config{ThreadID: "again"}, checkpoint.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 4 {
		t.Fatalf("%d checkpoints, want 4", len(list))
	}
	secondInput := list[1].Checkpoint
	if secondInput.Source != checkpoint.SourceInput || secondInput.ParentID != firstLatest.Checkpoint.ID {
		t.Fatalf("second input checkpoint %+v, want source input with parent %s", secondInput, firstLatest.Checkpoint.ID)
	}
	for i := 0; i+1 < len(list); i++ {
		if list[i].Checkpoint.Step <= list[i+1].Checkpoint.Step {
			t.Fatalf("steps do not grow along the thread: %d then %d", list[i+1].Checkpoint.Step, list[i].Checkpoint.Step)
		}
	}
	// An unrelated thread starts from scratch.
	out, err = c.Invoke(ctx, rsState{}, graph.WithThread("other"))
	if err != nil || out.N != 1 {
		t.Fatalf("other thread: %+v, %v", out, err)
	}
}

func TestResume_NothingToResume(t *testing.T) {
	ctx := rsCtx(t)
	g := graph.New[rsState]()
	g.AddNode("a", rsLog("a", nil))
	g.AddEdge(graph.START, "a")
	g.AddEdge("a", graph.END)
	c := rsCompile(t, g, graph.WithCheckpointer(checkpoint.NewMemory()))

	if _, err := c.Resume(ctx, nil, graph.WithThread("never")); !errors.Is(err, graph.ErrNothingToResume) {
		t.Fatalf("resume of an unknown thread: %v, want ErrNothingToResume", err)
	}
	if _, err := c.Invoke(ctx, rsState{}, graph.WithThread("done")); err != nil {
		t.Fatal(err)
	}
	out, err := c.Resume(ctx, nil, graph.WithThread("done"))
	if !errors.Is(err, graph.ErrNothingToResume) {
		t.Fatalf("resume of a finished thread: %v, want ErrNothingToResume", err)
	}
	rsWantLog(t, out, "a")
}

// rsPaused runs rsAskGraph on a fresh saver until it pauses in ask, and returns the saver. Its
// latest checkpoint holds no snapshot.
func rsPaused(t *testing.T, thread string) (*checkpoint.Memory, func(checkpoint.Saver) *graph.Compiled[rsState]) {
	t.Helper()
	var rec rsRecorder
	var askRuns, bRuns atomic.Int32
	mem := checkpoint.NewMemory()
	build := func(s checkpoint.Saver) *graph.Compiled[rsState] {
		return rsCompile(t, rsAskGraph(&rec, &askRuns, &bRuns), graph.WithCheckpointer(s), graph.WithSnapshotEvery(10))
	}
	_, err := build(mem).Invoke(rsCtx(t), rsState{Log: []string{"in"}}, graph.WithThread(thread))
	rsInterrupted(t, err)
	return mem, build
}

func rsCorrupt(t *testing.T, err error, thread, checkpointID string) {
	t.Helper()
	var ce *graph.CorruptCheckpointError
	if !errors.As(err, &ce) {
		t.Fatalf("got %v, want a *graph.CorruptCheckpointError", err)
	}
	if ce.Thread != thread || (checkpointID != "" && ce.CheckpointID != checkpointID) {
		t.Fatalf("corrupt checkpoint error names thread %q checkpoint %q, want %q and %q", ce.Thread, ce.CheckpointID, thread, checkpointID)
	}
	if !strings.Contains(err.Error(), thread) || !strings.Contains(err.Error(), ce.CheckpointID) {
		t.Fatalf("error %q does not name the thread and the checkpoint", err)
	}
}

func TestResume_CorruptState(t *testing.T) {
	ctx := rsCtx(t)
	mem, build := rsPaused(t, "bad-state")
	cfg := checkpoint.Config{ThreadID: "bad-state"}
	latest, err := mem.Get(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	id := latest.Checkpoint.ID
	saver := &rsHookSaver{Saver: mem, mutate: func(tu *checkpoint.Tuple) {
		if tu.Checkpoint.ID == id {
			tu.Checkpoint.State = []byte("{not json")
		}
	}}
	c := build(saver)
	_, err = c.Resume(ctx, "x", graph.WithThread("bad-state"))
	rsCorrupt(t, err, "bad-state", id)
	// Starting a new invocation on the thread reads the same checkpoint.
	_, err = c.Invoke(ctx, rsState{}, graph.WithThread("bad-state"))
	rsCorrupt(t, err, "bad-state", id)
}

func TestResume_CorruptReplayedWrite(t *testing.T) {
	ctx := rsCtx(t)
	mem, build := rsPaused(t, "bad-write")
	list, err := mem.List(ctx, checkpoint.Config{ThreadID: "bad-write"}, checkpoint.ListOptions{})
	if err != nil || len(list) != 2 {
		t.Fatalf("list: %d checkpoints, %v", len(list), err)
	}
	// The latest has no snapshot: its state is the input checkpoint's plus a's saved update.
	if list[0].Checkpoint.State != nil {
		t.Fatal("the test needs the latest checkpoint to have no snapshot")
	}
	parent := list[1].Checkpoint.ID
	saver := &rsHookSaver{Saver: mem, mutate: func(tu *checkpoint.Tuple) {
		if tu.Checkpoint.ID == parent {
			for i := range tu.Writes {
				tu.Writes[i].Value = []byte("garbage")
			}
		}
	}}
	_, err = build(saver).Resume(ctx, "x", graph.WithThread("bad-write"))
	rsCorrupt(t, err, "bad-write", parent)

	// A missing update of a replayed task is reported the same way.
	saver.mutate = func(tu *checkpoint.Tuple) {
		if tu.Checkpoint.ID == parent {
			tu.Writes = nil
		}
	}
	_, err = build(saver).Resume(ctx, "x", graph.WithThread("bad-write"))
	rsCorrupt(t, err, "bad-write", parent)
}

func TestResume_CorruptWriteOfTheFrontier(t *testing.T) {
	for _, kind := range []checkpoint.WriteKind{checkpoint.WriteUpdate, checkpoint.WriteInterrupt, checkpoint.WriteResume} {
		t.Run(string(kind), func(t *testing.T) {
			ctx := rsCtx(t)
			thread := "bad-" + string(kind)
			mem, build := rsPaused(t, thread)
			latest, err := mem.Get(ctx, checkpoint.Config{ThreadID: thread})
			if err != nil || len(latest.Checkpoint.Next) != 1 {
				t.Fatalf("latest: %+v, %v", latest, err)
			}
			task := latest.Checkpoint.Next[0]
			saver := &rsHookSaver{Saver: mem, mutate: func(tu *checkpoint.Tuple) {
				if tu.Checkpoint.ID != latest.Checkpoint.ID {
					return
				}
				// Replace the task's interrupt write, or add a garbage one of this kind.
				ws := slices.DeleteFunc(tu.Writes, func(w checkpoint.Write) bool { return w.Kind == kind })
				tu.Writes = append(ws, checkpoint.Write{TaskID: task.ID, Node: task.Node, Kind: kind, Value: []byte("\x00garbage")})
			}}
			_, err = build(saver).Resume(ctx, nil, graph.WithThread(thread))
			rsCorrupt(t, err, thread, latest.Checkpoint.ID)
		})
	}
}

func TestResume_CorruptFrontier(t *testing.T) {
	state, err := (checkpoint.JSON{}).Marshal(rsState{Log: []string{"saved"}})
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]checkpoint.Checkpoint{
		"unknown node":        {ID: "cp1", State: state, Next: []checkpoint.Task{{ID: "0", Node: "ghost"}}},
		"garbage Send arg":    {ID: "cp1", State: state, Next: []checkpoint.Task{{ID: "0", Node: "b", Push: true, Arg: []byte("[[[")}}},
		"no state, no parent": {ID: "cp1", Next: []checkpoint.Task{{ID: "0", Node: "b"}}},
		"missing parent":      {ID: "cp1", ParentID: "cp0", Next: []checkpoint.Task{{ID: "0", Node: "b"}}},
	}
	for name, cp := range cases {
		t.Run(name, func(t *testing.T) {
			ctx := rsCtx(t)
			mem := checkpoint.NewMemory()
			if _, err := mem.Put(ctx, checkpoint.Config{ThreadID: "hand-made"}, cp); err != nil {
				t.Fatal(err)
			}
			var rec rsRecorder
			var askRuns, bRuns atomic.Int32
			c := rsCompile(t, rsAskGraph(&rec, &askRuns, &bRuns), graph.WithCheckpointer(mem))
			_, err := c.Resume(ctx, nil, graph.WithThread("hand-made"))
			rsCorrupt(t, err, "hand-made", "cp1")
			if bRuns.Load() != 0 || askRuns.Load() != 0 {
				t.Fatal("nodes ran from a corrupt checkpoint")
			}
		})
	}
}

// rsChanState cannot be encoded as JSON.
type rsChanState struct {
	Ch chan int
	N  int
}

type rsFuncState struct {
	F func()
	N int
}

// rsAnyState becomes unencodable when a node puts a channel in V.
type rsAnyState struct {
	V any
	N int
}

func rsOneNode[S any](fn graph.NodeFunc[S]) *graph.StateGraph[S] {
	g := graph.New[S]()
	g.AddNode("only", fn)
	g.AddEdge(graph.START, "only")
	g.AddEdge("only", graph.END)
	return g
}

func TestCheckpoints_UnencodableState(t *testing.T) {
	ctx := rsCtx(t)
	mem := checkpoint.NewMemory()

	chanGraph := rsOneNode(func(_ context.Context, s rsChanState) (rsChanState, error) { return rsChanState{N: s.N + 1}, nil })
	if out, err := rsCompile(t, chanGraph).Invoke(ctx, rsChanState{}); err != nil || out.N != 1 {
		t.Fatalf("without a checkpointer the state needs no encoding: %+v, %v", out, err)
	}
	_, err := rsCompile(t, chanGraph, graph.WithCheckpointer(mem)).Invoke(ctx, rsChanState{}, graph.WithThread("chan"))
	if err == nil || !strings.Contains(err.Error(), "chan int") {
		t.Fatalf("chan state with a checkpointer: %v, want an error naming chan int", err)
	}

	funcGraph := rsOneNode(func(_ context.Context, s rsFuncState) (rsFuncState, error) { return rsFuncState{N: s.N + 1}, nil })
	_, err = rsCompile(t, funcGraph, graph.WithCheckpointer(mem)).Invoke(ctx, rsFuncState{}, graph.WithThread("func"))
	if err == nil || !strings.Contains(err.Error(), "func()") {
		t.Fatalf("func state with a checkpointer: %v, want an error naming func()", err)
	}

	// A state that becomes unencodable in a step fails that step's save.
	anyGraph := rsOneNode(func(_ context.Context, s rsAnyState) (rsAnyState, error) {
		return rsAnyState{V: make(chan string), N: s.N + 1}, nil
	})
	_, err = rsCompile(t, anyGraph, graph.WithCheckpointer(mem)).Invoke(ctx, rsAnyState{}, graph.WithThread("any"))
	if err == nil || !strings.Contains(err.Error(), "chan string") {
		t.Fatalf("state made unencodable by a node: %v, want an error naming chan string", err)
	}
}

func TestCheckpoints_InterruptAndResumeAreRecordedAsWrites(t *testing.T) {
	ctx := rsCtx(t)
	var rec rsRecorder
	var askRuns, bRuns atomic.Int32
	saver := checkpoint.NewMemory()
	c := rsCompile(t, rsAskGraph(&rec, &askRuns, &bRuns), graph.WithCheckpointer(saver))
	th := graph.WithThread("writes")
	_, err := c.Invoke(ctx, rsState{}, th)
	id := rsInterrupted(t, err).Interrupts[0].ID

	paused, err := saver.Get(ctx, checkpoint.Config{ThreadID: "writes"})
	if err != nil {
		t.Fatal(err)
	}
	if len(paused.Checkpoint.Next) != 1 || paused.Checkpoint.Next[0].Node != "ask" {
		t.Fatalf("the paused checkpoint's next is %+v, want ask", paused.Checkpoint.Next)
	}
	kinds := func(ws []checkpoint.Write) []string {
		var out []string
		for _, w := range ws {
			out = append(out, fmt.Sprintf("%s:%s:%d", w.Node, w.Kind, w.Idx))
		}
		return out
	}
	if got := kinds(paused.Writes); !slices.Equal(got, []string{"ask:interrupt:0"}) {
		t.Fatalf("writes of the paused checkpoint: %v", got)
	}
	if !strings.Contains(string(paused.Writes[0].Value), id) {
		t.Fatalf("the interrupt write %s does not hold the interrupt's ID %s", paused.Writes[0].Value, id)
	}

	if _, err := c.Resume(ctx, "zoe", th); err != nil {
		t.Fatal(err)
	}
	after, err := saver.Get(ctx, checkpoint.Config{ThreadID: "writes", CheckpointID: paused.Checkpoint.ID})
	if err != nil {
		t.Fatal(err)
	}
	if got := kinds(after.Writes); !slices.Equal(got, []string{"ask:interrupt:0", "ask:resume:0", "ask:update:0"}) {
		t.Fatalf("writes after the resume: %v", got)
	}
	if !strings.Contains(string(after.Writes[1].Value), "zoe") {
		t.Fatalf("the resume write %s does not hold the answer", after.Writes[1].Value)
	}
	// The resume continued the same chain of checkpoints.
	list, err := saver.List(ctx, checkpoint.Config{ThreadID: "writes"}, checkpoint.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 4 || list[1].Checkpoint.ParentID != paused.Checkpoint.ID {
		t.Fatalf("%d checkpoints; the one after the pause has parent %q, want %q", len(list), list[1].Checkpoint.ParentID, paused.Checkpoint.ID)
	}
}
