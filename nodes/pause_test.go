package nodes_test

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/nodes"
	"github.com/agiraph/agiraph/nodes/eventlog"
	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/providers/scripted"
)

// A run whose context ends is paused, not completed: Run says so with ErrInterrupted, no
// agent.completed is logged, a Resume whose context has ended already says so too, and
// Resume finishes it with the same output as a run that was never interrupted.
func TestCancelledRunIsPaused(t *testing.T) {
	want := run(t, newSquad(t), "AI chips").Output

	s := newSquad(t)
	res, _, err := runUntil(t, s, "a node completes", func(e eventlog.Event) bool { return e.Type == eventlog.NodeCompleted })
	require.ErrorIs(t, err, nodes.ErrInterrupted)
	require.ErrorIs(t, err, context.Canceled)
	assert.False(t, res.Finished)
	assert.Empty(t, res.Output)
	assert.NotContains(t, types(t, s), eventlog.AgentCompleted)
	assert.Contains(t, types(t, s), eventlog.AgentPaused)

	ended, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = resume(ended, s, res.RunID)
	require.ErrorIs(t, err, nodes.ErrInterrupted)
	require.ErrorIs(t, err, context.Canceled)

	ctx2, cancel2 := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel2()
	again, err := resume(ctx2, s, res.RunID)
	require.NoError(t, err)
	assert.True(t, again.Finished)
	assert.Equal(t, want, again.Output)
	completed := 0
	for _, ty := range types(t, s) {
		if ty == eventlog.AgentCompleted {
			completed++
		}
	}
	assert.Equal(t, 1, completed)

	// Resuming a complete run changes nothing.
	before := len(types(t, s))
	final, err := resume(ctx2, s, res.RunID)
	require.NoError(t, err)
	assert.True(t, final.Finished)
	assert.Equal(t, want, final.Output)
	assert.Len(t, types(t, s), before+0, "a complete run logs nothing when resumed")
}

// A run in which nothing moves for the stall window says what it waits on, instead of sitting
// "working": here the coordinator's question to the human.
func TestStallIsReported(t *testing.T) {
	coord := scripted.NewFunc("asker", func(_ context.Context, req providers.Request) (scripted.Turn, error) {
		return scTurn(req, scripted.Call("ask_human", map[string]string{"question": "Which market?"})), nil
	})
	s := scSquad(t, coord, []providers.Model{scripted.New("unused")}, nodes.WithStall(100*time.Millisecond), nodes.WithTick(10*time.Millisecond))
	events, stop := s.Subscribe(0)
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), scTimeout)
	defer cancel()
	r, err := s.Start(ctx, "chips")
	require.NoError(t, err)
	e := waitFor(t, events, "agent.waiting", func(e eventlog.Event) bool { return e.Type == eventlog.AgentWaiting })
	assert.Contains(t, e.Text, "Which market?")
	assert.Contains(t, e.Text, "the human")
	require.NoError(t, r.Pause())
	_, err = r.Wait()
	require.NoError(t, err)
}

// A damaged outcome record ends its node — failed, with an error that names it and says
// what to do, and tried again; or done, when its files were published — and not the run, which
// ends as it would have. (When the
// run was cancelled after its tick had decided to start the node again, the resume runs it at
// once and writes a new outcome over the damaged one; the test tries until it sees the
// damaged record collected.)
func TestDamagedOutcomeFailsTheNodeOnly(t *testing.T) {
	want := run(t, newSquad(t), "AI chips").Output
	for attempt := 1; attempt <= 10; attempt++ {
		if damagedOutcome(t, want) {
			return
		}
	}
	t.Fatal("in 10 tries the damaged outcome was never collected")
}

// damagedOutcome cancels a run while a node works, damages the node's outcome in the store,
// resumes the run and checks it; it reports whether the damaged record was collected.
func damagedOutcome(t *testing.T, want string) bool {
	s := newSquad(t)
	res, started, err := runUntil(t, s, "a node starts", func(e eventlog.Event) bool { return e.Type == eventlog.NodeStarted })
	require.ErrorIs(t, err, nodes.ErrInterrupted)
	path := "outcome/" + res.RunID + "/" + started.Node // its key in the store
	b, err := s.ReadBoard(res.RunID)
	require.NoError(t, err)
	if n, _ := b.Node(started.Node); n.Status != nodes.NodeRunning {
		return false // it ended before the cancellation: nothing to damage
	}
	db, err := sql.Open("sqlite", filepath.Join(string(s.Home()), "state.db"))
	require.NoError(t, err)
	defer db.Close()
	damaged, err := db.Exec(`UPDATE squad_docs SET value = '{"assignment": "cut off' WHERE key = ?`, path)
	require.NoError(t, err)
	if n, _ := damaged.RowsAffected(); n != 1 {
		return false // it ended without an outcome saved
	}

	ctx2, cancel2 := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel2()
	again, err := resume(ctx2, s, res.RunID)
	if err != nil {
		dump(t, s)
	}
	require.NoError(t, err)
	assert.Equal(t, want, again.Output)
	evs, err := s.Events(0, 0)
	require.NoError(t, err)
	var named []eventlog.Event // the node's end, which names the damaged file
	for _, e := range evs {
		if (e.Type == eventlog.NodeFailed || e.Type == eventlog.NodeCompleted) && strings.Contains(e.Text, path) {
			named = append(named, e)
		}
	}
	if len(named) == 0 {
		return false
	}
	require.Len(t, named, 1)
	if named[0].Type == eventlog.NodeFailed { // nothing was published: tried again
		assert.Contains(t, named[0].Text, "repair")
	}
	return true
}

// runUntil runs s toward "AI chips" and cancels the run at the first event that until accepts;
// it returns what the run returned and that event.
func runUntil(t *testing.T, s *nodes.Squad, what string, until func(eventlog.Event) bool) (nodes.Result, eventlog.Event, error) {
	t.Helper()
	events, stop := s.Subscribe(0)
	defer stop()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r, err := s.Start(ctx, "AI chips")
	require.NoError(t, err)
	e := waitFor(t, events, what, until)
	cancel()
	res, err := r.Wait()
	return res, e, err
}

// A run whose start a kill cut short, before its goal was saved, cannot be resumed (there is no
// goal) and says so with ErrNotStarted; started again with the same id, it runs. A run that did
// start keeps its id.
func TestRunCutShortBeforeItBeganStartsAgain(t *testing.T) {
	s := newSquad(t)
	require.NoError(t, os.MkdirAll(filepath.Join(string(s.Home()), "runs", "r1", "nodes"), 0o755))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := resume(ctx, s, "r1")
	require.ErrorIs(t, err, nodes.ErrNotStarted)
	assert.Contains(t, err.Error(), `"r1"`)

	res, err := s.Run(ctx, "AI chips", nodes.WithRunID("r1"))
	require.NoError(t, err)
	assert.True(t, res.Finished)
	_, err = s.Run(ctx, "AI chips", nodes.WithRunID("r1"))
	require.ErrorContains(t, err, "already exists")
}
