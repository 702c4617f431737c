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

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/checkpoint"
	"github.com/agiraph/agiraph/graph"
)

// dlState is a state that only grows: every step and every input appends one entry to Log.
type dlState struct {
	Log []string `graph:"append"`
}

// dlEntry is the n-th entry of the main branch's log: its number and a payload.
func dlEntry(n int) string { return dlEntries[n] }

var dlEntries = func() []string {
	entries := make([]string, 2500)
	for i := range entries {
		entries[i] = fmt.Sprintf("%06d:%s", i, strings.Repeat("x", 250))
	}
	return entries
}()

const dlStepsPerInvoke = 10

// dlGraph appends an entry per step, dlStepsPerInvoke steps after each input; fail, when set, is
// asked before each step whether it fails.
func dlGraph(t *testing.T, saver checkpoint.Saver, fail func(n int) bool) *graph.Compiled[dlState] {
	t.Helper()
	g := graph.New[dlState]()
	g.AddNode("tick", func(_ context.Context, s dlState) (dlState, error) {
		if fail != nil && fail(len(s.Log)) {
			return dlState{}, errors.New("flaky")
		}
		return dlState{Log: []string{dlEntry(len(s.Log))}}, nil
	})
	g.AddEdge(graph.START, "tick")
	g.AddConditionalEdges("tick", func(_ context.Context, s dlState) string {
		if len(s.Log)%(dlStepsPerInvoke+1) != 0 {
			return "tick"
		}
		return graph.END
	}, "tick", graph.END)
	c, err := g.Compile(graph.WithCheckpointer(saver))
	require.NoError(t, err)
	return c
}

// dlMain checks that log is the main branch's log of n entries.
func dlMain(t *testing.T, log []string, n int) {
	t.Helper()
	require.Len(t, log, n)
	for i, e := range log {
		if e != dlEntry(i) {
			require.Failf(t, "wrong entry", "entry %d is %.12q, want %.12q", i, e, dlEntry(i))
		}
	}
}

// countingSaver counts what it is given to store (states, Send arguments, write values) and the
// reads it serves.
type countingSaver struct {
	checkpoint.Saver
	mu         sync.Mutex
	bytes      int
	snapshots  int
	gets, list atomic.Int32
}

func (c *countingSaver) Put(ctx context.Context, cfg checkpoint.Config, cp checkpoint.Checkpoint) (checkpoint.Config, error) {
	c.mu.Lock()
	c.bytes += len(cp.State)
	if cp.State != nil {
		c.snapshots++
	}
	for _, t := range cp.Next {
		c.bytes += len(t.Arg)
	}
	c.mu.Unlock()
	return c.Saver.Put(ctx, cfg, cp)
}

func (c *countingSaver) PutWrites(ctx context.Context, cfg checkpoint.Config, ws []checkpoint.Write) error {
	c.mu.Lock()
	for _, w := range ws {
		c.bytes += len(w.Value)
	}
	c.mu.Unlock()
	return c.Saver.PutWrites(ctx, cfg, ws)
}

func (c *countingSaver) Get(ctx context.Context, cfg checkpoint.Config) (*checkpoint.Tuple, error) {
	c.gets.Add(1)
	return c.Saver.Get(ctx, cfg)
}

func (c *countingSaver) List(ctx context.Context, cfg checkpoint.Config, opts checkpoint.ListOptions) ([]checkpoint.Tuple, error) {
	c.list.Add(1)
	return c.Saver.List(ctx, cfg, opts)
}

func (c *countingSaver) stored() (bytes, snapshots int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.bytes, c.snapshots
}

// TestDeltas_StorageGrowsWithTheAppends: a thread whose state only grows, over 2,000 supersteps
// and 200 invocations (each a new input), stores a bounded multiple of what was appended — not a
// full state per input nor every few steps — and rebuilds the same states on resume, in its
// history and on branches.
func TestDeltas_StorageGrowsWithTheAppends(t *testing.T) {
	ctx := context.Background()
	const invokes = 200
	saver := &countingSaver{Saver: checkpoint.NewMemory()}
	thread := graph.WithThread("grows")
	var failed atomic.Bool
	flaky := func(n int) bool { return n == 100*(dlStepsPerInvoke+1)+5 && !failed.Swap(true) }

	payload := 0
	for i := range invokes {
		n := i * (dlStepsPerInvoke + 1)
		input := dlState{Log: []string{dlEntry(n)}}
		// A new compiled graph each time, as in a new process.
		out, err := dlGraph(t, saver, flaky).Invoke(ctx, input, thread)
		if i == 100 {
			require.Error(t, err, "the flaky step did not fail")
			out, err = dlGraph(t, saver, nil).Resume(ctx, nil, thread)
		}
		require.NoError(t, err, "invocation %d", i)
		dlMain(t, out.Log, n+dlStepsPerInvoke+1)
		for _, e := range out.Log[n:] {
			payload += len(e)
		}
	}
	c := dlGraph(t, saver, nil)
	total := invokes * (dlStepsPerInvoke + 1)
	snap, err := c.State(ctx, thread)
	require.NoError(t, err)
	dlMain(t, snap.Values.Log, total)
	assert.Equal(t, invokes*(dlStepsPerInvoke+1), snap.Step+1, "one checkpoint per input and per superstep")

	bytes, snapshots := saver.stored()
	t.Logf("appended %d bytes; stored %d (%.2f times), %d snapshots", payload, bytes, float64(bytes)/float64(payload), snapshots)
	assert.LessOrEqual(t, bytes, 4*payload+64<<10, "stored bytes")
	assert.Less(t, snapshots, 40, "snapshots")

	// Loading the latest state reads its chain in a few pages.
	saver.gets.Store(0)
	saver.list.Store(0)
	_, err = c.State(ctx, thread)
	require.NoError(t, err)
	assert.LessOrEqual(t, saver.gets.Load()+saver.list.Load(), int32(14), "reads to load the latest state")

	// Every checkpoint's state, as History rebuilds it, is the log up to that step.
	hist, err := c.History(ctx, checkpoint.ListOptions{}, thread)
	require.NoError(t, err)
	require.Len(t, hist, total)
	for i, h := range hist {
		require.Equal(t, total-1-i, h.Step)
		dlMain(t, h.Values.Log, h.Step+1)
	}

	// Branches: a new input into an old checkpoint, and the old checkpoint's step run again.
	old := hist[total-1-1234]
	require.Equal(t, 1234, old.Step)
	branch, err := c.Invoke(ctx, dlState{Log: []string{"branch"}}, thread, graph.WithCheckpointID(old.Config.CheckpointID))
	require.NoError(t, err)
	dlMain(t, branch.Log[:1235], 1235)
	assert.Equal(t, "branch", branch.Log[1235])
	assert.Len(t, branch.Log, 1243) // steps to the end of the invocation the old checkpoint is in
	fork, err := c.Resume(ctx, nil, thread, graph.WithCheckpointID(old.Config.CheckpointID))
	require.NoError(t, err)
	dlMain(t, fork.Log, 1243)

	// History holds both branches and the main line, each rebuilt exactly: every state is the one
	// State rebuilds on its own, and the main line's are still the log up to their step.
	hist, err = c.History(ctx, checkpoint.ListOptions{}, thread)
	require.NoError(t, err)
	require.Len(t, hist, total+8+9) // the branch's input and 7 steps, the fork's copy and 8 steps
	byID := map[string]graph.Snapshot[dlState]{}
	for _, h := range hist {
		byID[h.Config.CheckpointID] = h
	}
	mainLine := map[string]bool{}
	for id := snap.Config.CheckpointID; id != ""; id = byID[id].ParentID {
		mainLine[id] = true
	}
	require.Len(t, mainLine, total)
	for _, h := range hist {
		if mainLine[h.Config.CheckpointID] {
			dlMain(t, h.Values.Log, h.Step+1)
			continue
		}
		alone, err := c.State(ctx, thread, graph.WithCheckpointID(h.Config.CheckpointID))
		require.NoError(t, err)
		require.Equal(t, alone.Values, h.Values, "checkpoint %s (step %d, %s)", h.Config.CheckpointID, h.Step, h.Source)
	}
}

// TestDeltas_InputIsAnUpdate: a second invocation's checkpoint holds no state; its input is a
// write of the checkpoint it continues, and without that write the thread is reported corrupt.
func TestDeltas_InputIsAnUpdate(t *testing.T) {
	ctx := context.Background()
	mem := checkpoint.NewMemory()
	thread := graph.WithThread("inputs")
	c := dlGraph(t, mem, nil)
	for i := range 2 {
		_, err := c.Invoke(ctx, dlState{Log: []string{dlEntry(i * (dlStepsPerInvoke + 1))}}, thread)
		require.NoError(t, err)
	}
	inputs, err := mem.List(ctx, checkpoint.Config{ThreadID: "inputs"}, checkpoint.ListOptions{Source: checkpoint.SourceInput})
	require.NoError(t, err)
	require.Len(t, inputs, 2)
	second := inputs[0].Checkpoint
	assert.Nil(t, second.State, "the second input's checkpoint holds a snapshot")
	parent, err := mem.Get(ctx, checkpoint.Config{ThreadID: "inputs", CheckpointID: second.ParentID})
	require.NoError(t, err)
	var found bool
	for _, w := range parent.Writes {
		found = found || w.Kind == checkpoint.WriteInput && w.TaskID == second.ID && strings.Contains(string(w.Value), dlEntry(dlStepsPerInvoke+1))
	}
	assert.True(t, found, "the input is not saved with the checkpoint before it: %+v", parent.Writes)

	lost := &rsHookSaver{Saver: mem, mutate: func(tu *checkpoint.Tuple) {
		tu.Writes = slices.DeleteFunc(tu.Writes, func(w checkpoint.Write) bool { return w.Kind == checkpoint.WriteInput })
	}}
	_, err = dlGraph(t, lost, nil).State(ctx, thread, graph.WithCheckpointID(second.ID))
	var corrupt *graph.CorruptCheckpointError
	require.ErrorAs(t, err, &corrupt)
	assert.Equal(t, second.ID, corrupt.CheckpointID)
}

// TestDeltas_SmallStateStoredOnce: a thread whose state stays small stores it whole in its first
// checkpoint only, over a few steps, and rebuilds it from there.
func TestDeltas_SmallStateStoredOnce(t *testing.T) {
	ctx := context.Background()
	saver := &countingSaver{Saver: checkpoint.NewMemory()}
	g := graph.New[dlState]()
	g.AddNode("turn", func(_ context.Context, s dlState) (dlState, error) {
		return dlState{Log: []string{fmt.Sprintf("turn %d", len(s.Log))}}, nil
	})
	g.AddEdge(graph.START, "turn")
	g.AddConditionalEdges("turn", func(_ context.Context, s dlState) string {
		if len(s.Log) < 6 {
			return "turn"
		}
		return graph.END
	}, "turn", graph.END)
	c, err := g.Compile(graph.WithCheckpointer(saver))
	require.NoError(t, err)
	thread := graph.WithThread("small")
	_, err = c.Invoke(ctx, dlState{Log: []string{"input"}}, thread)
	require.NoError(t, err)

	_, snapshots := saver.stored()
	assert.Equal(t, 1, snapshots, "checkpoints that hold the whole state")
	snap, err := c.State(ctx, thread)
	require.NoError(t, err)
	assert.Equal(t, []string{"input", "turn 1", "turn 2", "turn 3", "turn 4", "turn 5"}, snap.Values.Log)
}
