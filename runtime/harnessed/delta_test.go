package harnessed_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/checkpoint"
	"github.com/agiraph/agiraph/checkpoint/sqlite"
	"github.com/agiraph/agiraph/providers/scripted"
	"github.com/agiraph/agiraph/runtime"
	"github.com/agiraph/agiraph/runtime/adapter"
	"github.com/agiraph/agiraph/runtime/harnessed"
	"github.com/agiraph/agiraph/runtime/runtimetest"
	"github.com/agiraph/agiraph/tools"
)

// ledger counts the runs of each tool call.
type ledger struct {
	mu   sync.Mutex
	runs map[string]int
}

func (l *ledger) ran(ctx context.Context) {
	c, _ := tools.CallFrom(ctx)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.runs == nil {
		l.runs = map[string]int{}
	}
	l.runs[c.ID]++
}

func (l *ledger) count(id string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.runs[id]
}

// bigTurn is a turn of n calls: every third asks for a sub-node, every fifth is a run of two
// calls of a Safe tool (one step), the others do a unit of work.
func bigTurn(n int) []tools.Call {
	var calls []tools.Call
	for i := 0; len(calls) < n; i++ {
		id := fmt.Sprint("c", len(calls))
		switch {
		case i%5 == 4:
			calls = append(calls, call(id, "peek", struct{}{}), call(id+"b", "peek", struct{}{}))
		case i%3 == 2:
			calls = append(calls, call(id, "create_work_node", adapter.SubNodeArgs{Task: "sub-task " + id}))
		default:
			calls = append(calls, call(id, "work", workArgs{Item: fmt.Sprintf("item %s: do the work and write it down", id)}))
		}
	}
	return calls
}

type workArgs struct {
	Item string `json:"item"`
}

// subNodes are the sub-nodes turn asks for, in order.
func subNodes(turn []tools.Call) []runtime.SubNode {
	var out []runtime.SubNode
	for _, c := range turn {
		if c.Name == "create_work_node" {
			out = append(out, runtime.SubNode{Task: "sub-task " + c.ID})
		}
	}
	return out
}

// steps counts the tools steps of turn: one per call, or per run of Safe calls.
func steps(turn []tools.Call) int {
	n := 0
	for i, c := range turn {
		if c.Name != "peek" || i == 0 || turn[i-1].Name != "peek" {
			n++
		}
	}
	return n
}

// workTools are the tools of bigTurn; stop, when set, is called before each work call runs.
func workTools(l *ledger, stop func(ctx context.Context, id string) error) []tools.Tool {
	return []tools.Tool{
		tools.Func("work", "Work.", func(ctx context.Context, args workArgs) (string, error) {
			c, _ := tools.CallFrom(ctx)
			if stop != nil {
				if err := stop(ctx, c.ID); err != nil {
					return "", err
				}
			}
			l.ran(ctx)
			return "done: " + args.Item, nil
		}),
		tools.Func("peek", "Look.", func(ctx context.Context, _ struct{}) (string, error) {
			l.ran(ctx)
			return "seen", nil
		}, tools.Safe()),
	}
}

// A turn's calls are saved once, by the model step; each tools step saves only what it adds, so
// no step's update grows with the turn.
func TestToolStepsSaveWhatTheyAdd(t *testing.T) {
	const n = 300
	a := assignment(t, "d1", "Do it all.")
	var l ledger
	a.Tools = append(a.Tools, workTools(&l, nil)...)
	turn := bigTurn(n)
	model := scripted.New("w", scripted.Turn{Calls: turn},
		scripted.Turn{Calls: []tools.Call{call("p", "checkpoint", adapter.CheckpointArgs{Summary: "asked"})}}).KeepRequests()
	saver := checkpoint.NewMemory()
	o, err := harnessed.New(model, harnessed.WithSaver(saver)).Run(context.Background(), a, nil)
	require.NoError(t, err)
	require.Equal(t, runtime.Checkpointed, o.Status)
	assert.Equal(t, subNodes(turn), o.SubNodes, "every sub-node asked for, once")

	results := lastResults(model.Requests()[1])
	require.Len(t, results, len(turn))
	for i, r := range results {
		assert.Equal(t, turn[i].ID, r.CallID)
	}

	list, err := saver.List(context.Background(), checkpoint.Config{ThreadID: "d1"}, checkpoint.ListOptions{})
	require.NoError(t, err)
	var sizes []int
	total := 0
	for _, tu := range list {
		total += len(tu.Checkpoint.State)
		for _, w := range tu.Writes {
			total += len(w.Value)
			if w.Node == "tools" && w.Kind == checkpoint.WriteUpdate {
				sizes = append(sizes, len(w.Value))
			}
			if w.Node == "model" && w.Kind == checkpoint.WriteUpdate {
				assert.NotContains(t, string(w.Value), `"pending"`, "the model step saves the answer, not its calls again")
			}
		}
	}
	require.Len(t, sizes, steps(turn)+1, "a step per call, or per run of Safe calls, and the checkpoint's")
	slices.Sort(sizes)
	assert.Less(t, sizes[len(sizes)-2], 600, "the largest update of a tools step but the last, which holds the results message")
	content, err := json.Marshal([]any{turn, results})
	require.NoError(t, err)
	t.Logf("the turn's calls and results take %d bytes as JSON; %d saved", len(content), total)
	assert.Less(t, total, 8*len(content), "bytes saved for the turn (a step saving the turn so far would make it quadratic)")
}

// A worker stopped in the middle of a long turn (cancelled, or its saver failing, as a killed
// process leaves it) continues it when run again: no finished call runs twice, none is lost, and
// the sub-nodes it asked for are reported once.
func TestStoppedMidTurnRunsEveryCallOnce(t *testing.T) {
	for _, stop := range []string{"cancelled", "saver failed"} {
		t.Run(stop, func(t *testing.T) {
			const n = 60
			db, err := sqlite.Open(filepath.Join(t.TempDir(), "w.db"))
			require.NoError(t, err)
			defer db.Close()
			a := assignment(t, "d2", "Do it all.")
			turn := bigTurn(n)
			var l ledger
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			saver := &failingPuts{Saver: db}
			at := 40 + slices.IndexFunc(turn[40:], func(c tools.Call) bool { return c.Name == "work" })
			halt := func(ctx context.Context, id string) error {
				if id != turn[at].ID || l.count(id) > 0 {
					return nil
				}
				if stop == "cancelled" {
					cancel()
					<-ctx.Done()
					return ctx.Err()
				}
				saver.failing.Store(true) // this call's update is saved, its checkpoint is not
				return nil
			}
			base := a.Tools
			a.Tools = slices.Concat(base, workTools(&l, halt))
			first := scripted.New("w", scripted.Turn{Calls: turn})
			o, err := harnessed.New(first, harnessed.WithSaver(saver)).Run(ctx, a, nil)
			if stop == "cancelled" {
				require.ErrorIs(t, err, context.Canceled)
			} else {
				require.ErrorIs(t, err, errDiskGone)
			}
			assert.Equal(t, 1, o.Turns)

			rest := scripted.New("w", scripted.Turn{Calls: []tools.Call{call("p", "checkpoint", adapter.CheckpointArgs{Summary: "asked"})}}).KeepRequests()
			a.Tools = slices.Concat(base, workTools(&l, nil))
			o, err = harnessed.New(rest, harnessed.WithSaver(db)).Run(context.Background(), a, nil)
			require.NoError(t, err)
			require.Equal(t, runtime.Checkpointed, o.Status)

			for _, c := range turn {
				if c.Name != "create_work_node" {
					assert.Equal(t, 1, l.count(c.ID), "runs of call %s", c.ID)
				}
			}
			assert.Equal(t, subNodes(turn), o.SubNodes, "every sub-node asked for, once")
			results := lastResults(rest.Requests()[0])
			require.Len(t, results, len(turn))
			for i, r := range results {
				assert.Equal(t, turn[i].ID, r.CallID)
			}
		})
	}
}

var errDiskGone = errors.New("disk gone")

// failingPuts fails every Put once failing is set.
type failingPuts struct {
	checkpoint.Saver
	failing atomic.Bool
}

func (f *failingPuts) Put(ctx context.Context, cfg checkpoint.Config, cp checkpoint.Checkpoint) (checkpoint.Config, error) {
	if f.failing.Load() {
		return checkpoint.Config{}, errDiskGone
	}
	return f.Saver.Put(ctx, cfg, cp)
}

// A conversational worker woken again and again stores what each wake-up adds, not its whole
// conversation each time.
func TestWakeUpsStoreWhatTheyAdd(t *testing.T) {
	const wakes = 100
	a := assignment(t, "d3", "You coordinate.")
	mb := &runtimetest.Mailbox{}
	a.Mailbox, a.Wake = mb, true
	reply := func(i int) string { return fmt.Sprintf("reply %d: %0500d", i, i) }
	turns := make([]scripted.Turn, wakes+1)
	for i := range turns {
		turns[i] = scripted.Turn{Text: reply(i)}
	}
	saver := checkpoint.NewMemory()
	rt := harnessed.New(scripted.New("coord", turns...), harnessed.WithSaver(saver), harnessed.WithTextEndsTurn(), harnessed.WithMaxIterations(wakes+1))
	added := 0
	for i := range wakes + 1 {
		if i > 0 {
			mb.Deliver("human", fmt.Sprintf("news %d: %0500d", i, i))
		}
		o, err := rt.Run(context.Background(), a, nil)
		require.NoError(t, err)
		require.Equal(t, reply(i), o.Summary)
		added += 2 * len(reply(i))
	}
	list, err := saver.List(context.Background(), checkpoint.Config{ThreadID: "d3"}, checkpoint.ListOptions{})
	require.NoError(t, err)
	stored := 0
	for _, tu := range list {
		stored += len(tu.Checkpoint.State)
		for _, w := range tu.Writes {
			stored += len(w.Value)
		}
	}
	t.Logf("conversation %d bytes, stored %d", added, stored)
	assert.Less(t, stored, 6*added, "bytes stored for %d wake-ups (whole conversations would make it quadratic)", wakes)
}

// Consecutive calls of an idempotent tool run in one step, one after another in their order,
// saved once.
func TestIdempotentCallsShareAStep(t *testing.T) {
	var (
		mu    sync.Mutex
		order []string
		made  = map[string]bool{} // the tool's effects, keyed by the call
	)
	mark := tools.Func("mark", "Mark an item.", func(ctx context.Context, args workArgs) (string, error) {
		c, _ := tools.CallFrom(ctx)
		mu.Lock()
		defer mu.Unlock()
		order = append(order, c.ID)
		made[c.ID] = true
		return "marked " + args.Item, nil
	}, tools.Idempotent())
	var turn []tools.Call
	for i := range 40 {
		turn = append(turn, call(fmt.Sprint("m", i), "mark", workArgs{Item: fmt.Sprint(i)}))
	}
	turn = append(turn, call("w", "work", workArgs{Item: "after"}), call("m40", "mark", workArgs{Item: "40"}))
	var l ledger
	a := assignment(t, "i1", "Mark them.")
	a.Tools = append(a.Tools, mark)
	a.Tools = append(a.Tools, workTools(&l, nil)...)
	model := scripted.New("w", scripted.Turn{Calls: turn},
		scripted.Turn{Calls: []tools.Call{call("p", "publish", adapter.PublishArgs{Summary: "marked"})}})
	saver := checkpoint.NewMemory()
	o, err := harnessed.New(model, harnessed.WithSaver(saver)).Run(context.Background(), a, nil)
	require.NoError(t, err)
	require.Equal(t, runtime.Published, o.Status)

	want := make([]string, 41)
	for i := range want {
		want[i] = fmt.Sprint("m", i)
	}
	assert.Equal(t, want, order, "every call once, in order")
	list, err := saver.List(context.Background(), checkpoint.Config{ThreadID: "i1"}, checkpoint.ListOptions{})
	require.NoError(t, err)
	toolSteps := 0
	for _, tu := range list {
		for _, w := range tu.Writes {
			if w.Node == "tools" && w.Kind == checkpoint.WriteUpdate {
				toolSteps++
			}
		}
	}
	// the 40 marks, the work call, the last mark, and publish: one step each
	assert.Equal(t, 4, toolSteps)
	assert.Len(t, made, 41)
}
