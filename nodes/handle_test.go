package nodes_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/models"
	"github.com/agiraph/agiraph/nodes"
	"github.com/agiraph/agiraph/nodes/bus"
	"github.com/agiraph/agiraph/nodes/demo"
	"github.com/agiraph/agiraph/nodes/eventlog"
	"github.com/agiraph/agiraph/providers"
)

// heldSquad returns a squad of the demo team whose worker holds its turns, until the run is
// paused, while the flag returned is set, as it is at first; held is closed at the first turn held.
func heldSquad(t *testing.T) (*nodes.Squad, *heldWorker, *atomic.Bool) {
	t.Helper()
	hold := new(atomic.Bool)
	hold.Store(true)
	coord, worker := holding(func(providers.Request) bool { return hold.Load() })
	s, err := nodes.New(nodes.WithHome(t.TempDir()), nodes.WithTick(20*time.Millisecond),
		nodes.WithModel(demo.WorkerModel), nodes.WithCoordinatorModel(demo.CoordinatorModel),
		nodes.WithModelOptions(models.WithModels(coord, worker), models.WithoutRetry()))
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s, worker, hold
}

// pausedRun starts a run of s, pauses it at the worker's first turn held and waits for its end.
func pausedRun(t *testing.T, s *nodes.Squad, worker *heldWorker) *nodes.Run {
	t.Helper()
	r := start(t, s, "AI chips")
	awaitHeld(t, worker, r)
	require.NoError(t, r.Pause())
	res, err := r.Wait()
	require.NoError(t, err)
	assert.False(t, res.Finished)
	return r
}

// awaitHeld waits for the worker's first turn held in run r.
func awaitHeld(t *testing.T, worker *heldWorker, r *nodes.Run) {
	t.Helper()
	select {
	case <-worker.held:
	case <-r.Done():
		_, err := r.Wait()
		require.Failf(t, "the run ended before a worker's turn held it", "%v", err)
	}
}

// scContext returns a context that ends after scTimeout, or with the test.
func scContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), scTimeout)
	t.Cleanup(cancel)
	return ctx
}

// Start returns while the run goes on — here a worker's turn holds it — with a handle whose id
// is the run's: its board is the one the squad reads by that id, and its events carry it.
func TestStartReturnsWhileTheRunGoesOn(t *testing.T) {
	s, worker, _ := heldSquad(t)
	events, stop := s.Subscribe(0)
	defer stop()
	r := start(t, s, "AI chips")
	awaitHeld(t, worker, r)
	assert.Equal(t, r.ID(), s.Current().ID())
	started := waitFor(t, events, "agent.started", func(e eventlog.Event) bool { return e.Type == eventlog.AgentStarted })
	assert.Equal(t, r.ID(), started.Run)
	board, err := r.Board()
	require.NoError(t, err)
	stored, err := s.ReadBoard(r.ID())
	require.NoError(t, err)
	require.NotEmpty(t, board.Nodes)
	assert.Equal(t, len(board.Nodes), len(stored.Nodes))

	require.NoError(t, r.Pause())
	res, err := r.Wait()
	require.NoError(t, err)
	assert.Equal(t, r.ID(), res.RunID)
	assert.Nil(t, s.Current(), "no run in progress once it ended")
}

// While a run is in progress, another Start, or a Resume, is refused, naming the run in
// progress, which goes on.
func TestSecondStartIsRefused(t *testing.T) {
	s, worker, _ := heldSquad(t)
	first := start(t, s, "AI chips")
	awaitHeld(t, worker, first)

	_, err := s.Start(context.Background(), "AI chips again")
	require.ErrorIs(t, err, nodes.ErrRunning)
	assert.Contains(t, err.Error(), first.ID())
	_, err = s.Resume(context.Background(), first.ID())
	require.ErrorIs(t, err, nodes.ErrRunning)
	assert.Contains(t, err.Error(), first.ID())

	require.NoError(t, first.Pause())
	_, err = first.Wait()
	require.NoError(t, err)
}

// A bad goal or run id is refused before anything is written, naming what is wrong.
func TestStartRefusesBadGoalAndID(t *testing.T) {
	s := newSquad(t)
	_, err := s.Start(context.Background(), "  ")
	require.ErrorContains(t, err, "goal is empty")
	_, err = s.Start(context.Background(), "AI chips", nodes.WithRunID("../elsewhere"))
	require.ErrorContains(t, err, "run id")
	_, err = s.Resume(context.Background(), "../elsewhere")
	require.ErrorContains(t, err, "run id")
	assert.Nil(t, s.Current())
}

// A handle acts on its own run only: once that run ended, its verbs are refused with ErrNoRun,
// and nothing reaches the run that resumed it, which a newer handle has.
func TestEndedRunTakesNoOrders(t *testing.T) {
	s, worker, _ := heldSquad(t)
	old := pausedRun(t, s, worker)

	newer, err := s.Resume(scContext(t), old.ID())
	require.NoError(t, err)
	require.Equal(t, old.ID(), newer.ID(), "the same run, resumed")

	err = old.Send("", "to the old handle")
	require.ErrorIs(t, err, nodes.ErrNoRun)
	assert.Contains(t, err.Error(), old.ID())
	require.ErrorIs(t, old.Answer(bus.Coordinator, "yes"), nodes.ErrNoRun)
	require.ErrorIs(t, old.Stop(), nodes.ErrNoRun)
	require.ErrorIs(t, old.Pause(), nodes.ErrNoRun)
	_, err = old.Inbox()
	require.ErrorIs(t, err, nodes.ErrNoRun)
	_, err = old.Board()
	require.ErrorIs(t, err, nodes.ErrNoRun)

	select {
	case <-newer.Done():
		require.Fail(t, "the old handle's Pause ended the newer run")
	default:
	}
	require.NoError(t, newer.Pause())
	_, err = newer.Wait()
	require.NoError(t, err)
	entries, _, err := s.Conversation(0, 0)
	require.NoError(t, err)
	for _, e := range entries {
		assert.NotEqual(t, "to the old handle", e.Content, "a message to the old handle reached the newer run")
	}
}

// Wait returns what the blocking Run returns for the same run, and the same each time.
func TestWaitReturnsWhatRunReturns(t *testing.T) {
	want := run(t, newSquad(t), "AI chips")

	r := start(t, newSquad(t), "AI chips")
	got, err := r.Wait()
	require.NoError(t, err)
	assert.True(t, got.Finished)
	assert.Equal(t, want.Output, got.Output)
	assert.Equal(t, len(want.Board.Nodes), len(got.Board.Nodes))
	for _, n := range want.Board.Nodes {
		m, ok := got.Board.Node(n.ID)
		require.True(t, ok, "node %s", n.ID)
		assert.Equal(t, n.Status, m.Status, "node %s", n.ID)
		assert.Equal(t, n.Published, m.Published, "node %s", n.ID)
	}
	again, err := r.Wait()
	require.NoError(t, err)
	assert.Equal(t, got, again)
}

// A run paused through its handle is resumed into a new handle, which finishes it with the
// output of a run never paused.
func TestPauseThenResumeFinishes(t *testing.T) {
	want := run(t, newSquad(t), "AI chips").Output
	s, worker, hold := heldSquad(t)
	paused := pausedRun(t, s, worker)

	hold.Store(false)
	resumed, err := s.Resume(scContext(t), paused.ID())
	require.NoError(t, err)
	assert.NotSame(t, paused, resumed)
	res, err := resumed.Wait()
	require.NoError(t, err)
	assert.True(t, res.Finished)
	assert.Equal(t, want, res.Output)
}

// Start's context bounds the run, not just Start: cancelled once the run is under way, it ends
// the run with ErrInterrupted, paused and resumable.
func TestCancelledStartContextInterruptsTheRun(t *testing.T) {
	s, worker, hold := heldSquad(t)
	ctx, cancel := context.WithCancel(scContext(t))
	defer cancel()
	r, err := s.Start(ctx, "AI chips")
	require.NoError(t, err)
	awaitHeld(t, worker, r)
	cancel()
	res, err := r.Wait()
	require.ErrorIs(t, err, nodes.ErrInterrupted)
	require.ErrorIs(t, err, context.Canceled)
	assert.False(t, res.Finished)
	assert.Contains(t, types(t, s), eventlog.AgentPaused)

	hold.Store(false)
	again, err := resume(scContext(t), s, r.ID())
	require.NoError(t, err)
	assert.True(t, again.Finished)
}

// Closing the squad pauses the run in progress and waits for its end, before its files close:
// the run ends paused, without an error, and resumes to its finish in the squad opened next.
func TestCloseEndsTheRunInProgress(t *testing.T) {
	want := run(t, newSquad(t), "AI chips").Output
	s, worker, _ := heldSquad(t)
	r := start(t, s, "AI chips")
	awaitHeld(t, worker, r)
	require.NoError(t, s.Close())
	res, err := r.Wait()
	require.NoError(t, err)
	assert.False(t, res.Finished)

	s, err = nodes.New(append(demo.Team(), nodes.WithHome(string(s.Home())), nodes.WithTick(20*time.Millisecond))...)
	require.NoError(t, err)
	defer s.Close()
	again, err := resume(scContext(t), s, r.ID())
	require.NoError(t, err)
	assert.True(t, again.Finished)
	assert.Equal(t, want, again.Output)
}
