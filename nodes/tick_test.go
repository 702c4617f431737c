package nodes_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/checkpoint"
	"github.com/agiraph/agiraph/models"
	"github.com/agiraph/agiraph/nodes"
	"github.com/agiraph/agiraph/nodes/eventlog"
	"github.com/agiraph/agiraph/nodes/replay"
	"github.com/agiraph/agiraph/nodes/store"
	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/providers/scripted"
)

// A worker that finishes while the coordinator's turn runs starts its next node in the tick
// that follows, before the coordinator's next turn: route_frontier applies what ended during
// decide_next before it plans, rather than leave it to the next collect. Ben's first node, n2,
// ends while the coordinator is in the turn n1's completion woke it for; n3, Ben's next node,
// must start before the coordinator's following turn. A squad whose recorder records other runs
// than this one (a server's replay.Runs) does the same as one without a recorder: n2 counts as
// ended as soon as it ends, not once a point of a tick takes it.
func TestWorkerFinishedDuringTurnStartsInNextTick(t *testing.T) {
	for name, opts := range map[string][]nodes.Option{
		"no recorder":            nil,
		"runs recording another": {nodes.WithRecorder(runsRecording(t, "another"))},
	} {
		t.Run(name, func(t *testing.T) { workerFinishedDuringTurn(t, opts...) })
	}
}

// runsRecording returns a server's recorder asked to record run id only.
func runsRecording(t *testing.T, id string) *replay.Runs {
	var rs replay.Runs
	rs.Record(id, filepath.Join(t.TempDir(), id+".cassette"))
	return &rs
}

func workerFinishedDuringTurn(t *testing.T, opts ...nodes.Option) {
	release := make(chan struct{})
	var squad *nodes.Squad
	coord := scripted.NewFunc("tick-coordinator", func(ctx context.Context, req providers.Request) (scripted.Turn, error) {
		text, _ := scripted.Last(req)
		switch {
		case len(req.Messages) == 1:
			return scTurn(req,
				scripted.Call("spawn_worker", map[string]any{"name": "Ann"}),
				scripted.Call("spawn_worker", map[string]any{"name": "Ben"}),
				scripted.Call("create_work_node", map[string]any{"task": "Quick note.", "worker": "Ann"}),
				scripted.Call("create_work_node", map[string]any{"task": "Slow note.", "worker": "Ben"}),
				scripted.Call("create_work_node", map[string]any{"task": "Next note.", "worker": "Ben"})), nil
		case strings.Contains(text, "Stage 1 is complete"):
			return scTurn(req, scripted.Call("finish", map[string]string{"output": "done"})), nil
		case strings.Contains(text, "Node n1 (Ann) completed"):
			close(release)
			for !nodes.AssignmentEnded(squad, "tick.n2.1") { // n2 ends within this turn
				select {
				case <-ctx.Done():
					return scripted.Turn{}, ctx.Err()
				case <-time.After(time.Millisecond):
				}
			}
		}
		return scTurn(req, scripted.Call("wait", map[string]string{})), nil
	})
	worker := noteWorker("tick-worker", func(ctx context.Context, node string) error {
		if node != "n2" {
			return nil
		}
		select {
		case <-release:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	s, err := nodes.New(append([]nodes.Option{nodes.WithHome(t.TempDir()), nodes.WithCoordinatorModel(coord.Name()), nodes.WithModel(worker.Name()),
		nodes.WithModelOptions(models.WithModels(coord, worker), models.WithoutRetry()), nodes.WithTick(20 * time.Millisecond)}, opts...)...)
	require.NoError(t, err)
	defer s.Close()
	squad = s
	ctx, cancel := context.WithTimeout(context.Background(), scTimeout)
	defer cancel()
	res, err := s.Run(ctx, "Write the notes.", nodes.WithRunID("tick"))
	require.NoError(t, err)
	require.Equal(t, "done", res.Output)

	// After n2 completed: n3 starts, then the coordinator takes its next turn.
	var after []string
	seen := false
	for _, e := range scEvents(t, s) {
		switch {
		case e.Type == eventlog.NodeCompleted && e.Node == "n2":
			seen = true
		case seen && e.Type == eventlog.NodeStarted:
			after = append(after, "start "+e.Node)
		case seen && e.Type == "x.model_turn" && e.Worker == "coordinator":
			after = append(after, "coordinator turn")
		}
	}
	require.True(t, seen, "n2 completed")
	require.NotEmpty(t, after)
	assert.Equal(t, "start n3", after[0], "what followed n2's completion: %v", after)
}

// A coordinator that waits for the stage (wait with until "stage") takes no turn as each node
// completes, nor is it told of each: it is woken once, by the note that the stage is complete,
// which lists the nodes. One worker does three nodes one after another, so a coordinator woken
// by each would have three wake-ups.
func TestWaitUntilStageWakesOnceForTheStage(t *testing.T) {
	var wakeups []string
	coord := scripted.NewFunc("stage-coordinator", func(_ context.Context, req providers.Request) (scripted.Turn, error) {
		text, results := scripted.Last(req)
		switch {
		case len(req.Messages) == 1:
			return scTurn(req,
				scripted.Call("spawn_worker", map[string]any{"name": "Ann"}),
				scripted.Call("create_work_node", map[string]any{"task": "Note one.", "worker": "Ann"}),
				scripted.Call("create_work_node", map[string]any{"task": "Note two.", "worker": "Ann"}),
				scripted.Call("create_work_node", map[string]any{"task": "Note three.", "worker": "Ann"})), nil
		case len(results) > 0:
			for _, r := range results {
				if r.IsError {
					return scTurn(req, scripted.Call("finish", map[string]string{"output": "FAILED: " + r.Content})), nil
				}
			}
			return scTurn(req, scripted.Call("wait", map[string]string{"until": "stage"})), nil
		case strings.Contains(text, "The run is ending"):
			return scripted.Turn{Text: "noted"}, nil
		}
		wakeups = append(wakeups, text)
		if strings.Contains(text, "Stage 1 is complete") {
			return scTurn(req, scripted.Call("finish", map[string]string{"output": "done"})), nil
		}
		return scTurn(req, scripted.Call("wait", map[string]string{"until": "stage"})), nil
	})
	worker := noteWorker("stage-worker", nil)
	s, err := nodes.New(nodes.WithHome(t.TempDir()), nodes.WithCoordinatorModel(coord.Name()), nodes.WithModel(worker.Name()),
		nodes.WithModelOptions(models.WithModels(coord, worker), models.WithoutRetry()), nodes.WithTick(20*time.Millisecond))
	require.NoError(t, err)
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), scTimeout)
	defer cancel()
	res, err := s.Run(ctx, "Write the notes.")
	require.NoError(t, err)
	require.Equal(t, "done", res.Output)
	require.Len(t, wakeups, 1, "the coordinator's wake-ups: %q", wakeups)
	assert.Contains(t, wakeups[0], "Stage 1 is complete")
	assert.NotContains(t, wakeups[0], "(Ann) completed", "told of each node")
	for _, id := range []string{"n1", "n2", "n3"} {
		assert.Contains(t, wakeups[0], "- "+id+" completed")
	}
}

// wait refuses an until it does not know, naming it and what it knows.
func TestWaitRefusesUnknownUntil(t *testing.T) {
	var refusal string
	coord := scripted.NewFunc("until-coordinator", func(_ context.Context, req providers.Request) (scripted.Turn, error) {
		_, results := scripted.Last(req)
		switch {
		case len(req.Messages) == 1:
			return scTurn(req, scripted.Call("wait", map[string]string{"until": "forever"})), nil
		case len(results) > 0 && results[0].Name == "wait":
			refusal = results[0].Content
		}
		return scTurn(req, scripted.Call("finish", map[string]string{"output": "done"})), nil
	})
	worker := noteWorker("until-worker", nil)
	s, err := nodes.New(nodes.WithHome(t.TempDir()), nodes.WithCoordinatorModel(coord.Name()), nodes.WithModel(worker.Name()),
		nodes.WithModelOptions(models.WithModels(coord, worker), models.WithoutRetry()))
	require.NoError(t, err)
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), scTimeout)
	defer cancel()
	_, err = s.Run(ctx, "Nothing.")
	require.NoError(t, err)
	assert.Contains(t, refusal, `args.until: "forever" is not one of "any", "stage"`)
}

// The tick's checkpoints store its state whole only now and then: each step's update holds the
// whole state already.
func TestTickSnapshotsAreFew(t *testing.T) {
	st := store.NewMemory()
	s := newSquad(t, nodes.WithStore(st))
	res := run(t, s, "AI chips")
	cps, err := st.Saver().List(context.Background(), checkpoint.Config{ThreadID: "squad/" + res.RunID}, checkpoint.ListOptions{})
	require.NoError(t, err)
	snapshots := 0
	for _, cp := range cps {
		if cp.Checkpoint.State != nil {
			snapshots++
		}
	}
	require.Greater(t, len(cps), 10, "a run of a few ticks")
	assert.LessOrEqual(t, snapshots, 1+len(cps)/64, "snapshots among %d checkpoints", len(cps))
}

// The updates the tick graph's steps keep leave out what is zero: a dispatch step, which only
// starts an assignment, keeps an empty update, and no update holds a usage of nothing.
func TestTickUpdatesLeaveOutZeros(t *testing.T) {
	s := newSquad(t)
	run(t, s, "AI chips")
	seen := 0
	for _, u := range tickUpdates(t, s) {
		if u.node != "dispatch" && u.node != "collect" && u.node != "decide_next" {
			continue
		}
		seen++
		assert.NotContains(t, u.value, `"input_tokens":0,"output_tokens":0}`, "a %s update", u.node)
		if u.node == "dispatch" {
			assert.JSONEq(t, `{"update":{}}`, u.value)
		}
	}
	assert.NotZero(t, seen)
}

// A tick's launches are in route_frontier's update, for the dispatch tasks its router sends: the
// updates of the steps after it hold none.
func TestTickLaunchesOnlyInRouteFrontier(t *testing.T) {
	s := newSquad(t)
	run(t, s, "AI chips")
	launched := 0
	for _, u := range tickUpdates(t, s) {
		if u.node == "route_frontier" {
			launched += strings.Count(u.value, `"launches"`)
		} else {
			assert.NotContains(t, u.value, `"launches"`, "a %s update", u.node)
		}
	}
	assert.NotZero(t, launched)
}

// tickUpdates returns the updates the steps of the squad's graphs kept in its state.db, with
// their nodes.
func tickUpdates(t *testing.T, s *nodes.Squad) []struct{ node, value string } {
	t.Helper()
	db, err := sql.Open("sqlite", filepath.Join(string(s.Home()), "state.db"))
	require.NoError(t, err)
	defer db.Close()
	// kind 0: an update (checkpoint/sqlite stores the kinds it knows as small integers)
	rows, err := db.Query(`SELECT node, value FROM writes WHERE kind = 0`)
	require.NoError(t, err)
	defer rows.Close()
	var us []struct{ node, value string }
	for rows.Next() {
		var u struct{ node, value string }
		require.NoError(t, rows.Scan(&u.node, &u.value))
		us = append(us, u)
	}
	require.NoError(t, rows.Err())
	return us
}

// A run saved when dispatch was a task a launch (route_frontier's router sent one dispatch task
// for each launch, its launch in the task's argument) resumes and finishes: such a task runs and
// starts nothing, and the next route_frontier starts the attempts the board says are running.
// The run's dispatch step fails to save, so its latest checkpoint is route_frontier's, whose
// one dispatch task is then made into the tasks of that format before the run is resumed.
func TestResumeDispatchTasksOfOneLaunch(t *testing.T) {
	st, home := store.NewMemory(), t.TempDir()
	open := func(st store.Store) *nodes.Squad {
		coord, worker := benchCoordinator(2, 2), benchWorker()
		s, err := nodes.New(nodes.WithHome(home), nodes.WithStore(st), nodes.WithCoordinatorModel(coord.Name()), nodes.WithModel(worker.Name()),
			nodes.WithModelOptions(models.WithModels(coord, worker), models.WithoutRetry()), nodes.WithTick(20*time.Millisecond))
		require.NoError(t, err)
		t.Cleanup(func() { s.Close() })
		return s
	}
	ctx, cancel := context.WithTimeout(context.Background(), scTimeout)
	defer cancel()
	s := open(failingDispatch{st})
	_, err := s.Run(ctx, "Write the notes.", nodes.WithRunID("r1"))
	require.ErrorIs(t, err, errStoreAway)
	require.NoError(t, s.Close())

	saver, thread := st.Saver(), checkpoint.Config{ThreadID: "squad/r1"}
	latest, err := saver.Get(ctx, thread)
	require.NoError(t, err)
	require.Len(t, latest.Checkpoint.Next, 1)
	require.Equal(t, "dispatch", latest.Checkpoint.Next[0].Node)
	parent, err := saver.Get(ctx, checkpoint.Config{ThreadID: thread.ThreadID, CheckpointID: latest.Checkpoint.ParentID})
	require.NoError(t, err)
	var routed struct {
		Update struct {
			Launches []json.RawMessage `json:"launches"`
		} `json:"update"`
	}
	for _, w := range parent.Writes {
		if w.Node == "route_frontier" && w.Kind == checkpoint.WriteUpdate {
			require.NoError(t, json.Unmarshal(w.Value, &routed))
		}
	}
	require.Len(t, routed.Update.Launches, 2, "route_frontier launched both nodes")
	old := latest.Checkpoint
	old.Next = nil
	for i, l := range routed.Update.Launches {
		old.Next = append(old.Next, checkpoint.Task{ID: fmt.Sprintf("old-dispatch-%d", i), Node: "dispatch", Push: true, Arg: []byte(`{"launch":` + string(l) + `}`)})
	}
	_, err = saver.Put(ctx, thread, old)
	require.NoError(t, err)

	h, err := open(st).Resume(ctx, "r1")
	require.NoError(t, err)
	res, err := h.Wait()
	require.NoError(t, err)
	assert.Equal(t, "all notes written", res.Output)
	require.Len(t, res.Board.Nodes, 2)
	for _, n := range res.Board.Nodes {
		assert.Equal(t, nodes.NodeCompleted, n.Status, "node %s", n.ID)
	}
	resumed, err := saver.Get(ctx, checkpoint.Config{ThreadID: thread.ThreadID, CheckpointID: old.ID})
	require.NoError(t, err)
	ran := map[string]bool{}
	for _, w := range resumed.Writes {
		ran[w.TaskID] = true
	}
	assert.True(t, ran["old-dispatch-0"] && ran["old-dispatch-1"], "the dispatch tasks of one launch ran: %v", ran)
}
