package nodes

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/runtime/workspace"
)

// Changes made at once share their syncs and reach the disk in the order they were made: the
// board read back from its folder is the board in memory.
func TestBoardChangesReachTheDiskInOrder(t *testing.T) {
	b, run := newTestBoard(t)
	n, _, err := b.create(nodeSpec{Task: "count"})
	require.NoError(t, err)

	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			_, _, err := b.create(nodeSpec{Task: fmt.Sprint("task ", i), Deps: []string{n.ID}})
			assert.NoError(t, err)
			for range 5 {
				_, err := b.update(n.ID, func(n *Node) error { n.Attempts++; return nil })
				assert.NoError(t, err)
			}
			_, _, err = b.updateRun("", func(s *runState) { s.Stage++ })
			assert.NoError(t, err)
		})
	}
	wg.Wait()
	again, err := openBoard(run, time.Now)
	require.NoError(t, err)
	got, _ := again.node(n.ID)
	assert.Equal(t, 100, got.Attempts, "the last change of the node is the one on disk")
	assert.Equal(t, 20, again.runState().Stage)
	assert.Len(t, again.Snapshot().Nodes, 21)
}

// A change whose files cannot be put in place breaks the board: the changes after it fail too,
// and the folder keeps the board as it was before it.
func TestBoardThatCannotBeWrittenStops(t *testing.T) {
	b, run := newTestBoard(t)
	n, _, err := b.create(nodeSpec{Task: "first"})
	require.NoError(t, err)
	other, _, err := b.create(nodeSpec{Task: "other"})
	require.NoError(t, err)

	b.wmu.Lock()
	p, err := b.commit(func(t *tx) error {
		_, err := t.node(n.ID, func(n *Node) error { n.Attempts = 7; return nil })
		return err
	})
	b.wmu.Unlock()
	require.NoError(t, err)
	later := make(chan error, 1)
	go func() { // made in memory after the broken change, it cannot be placed either
		_, err := b.update(other.ID, func(n *Node) error { n.Attempts = 8; return nil })
		later <- err
	}()
	require.NoError(t, os.RemoveAll(string(run.Node(n.ID))))
	require.Error(t, p.place())
	require.ErrorContains(t, <-later, "the board could not be written")
	_, _, err = b.create(nodeSpec{Task: "second"})
	require.ErrorContains(t, err, "the board could not be written")
	_, _, err = b.updateRun("k", func(s *runState) { s.Stage = 3 })
	require.ErrorContains(t, err, "the board could not be written")

	again, err := openBoard(run, time.Now)
	require.NoError(t, err)
	got, _ := again.node(other.ID)
	assert.Zero(t, got.Attempts, "the folder keeps the board as it was")
	assert.Zero(t, again.runState().Stage)
}

// newTestBoard opens the board of a new run.
func newTestBoard(t *testing.T) (*board, workspace.Run) {
	t.Helper()
	run := workspace.Home(t.TempDir()).Run("r1")
	require.NoError(t, run.Create())
	b, err := openBoard(run, time.Now)
	require.NoError(t, err)
	return b, run
}

// A deferred change is made in memory at once and reaches the disk when the board is flushed,
// or before a later change that is placed, or once maxDeferred wait; in the order they were
// made.
func TestDeferredChangesReachTheDiskInOrder(t *testing.T) {
	b, run := newTestBoard(t)
	onDisk := func() *board {
		again, err := openBoard(run, time.Now)
		require.NoError(t, err)
		return again
	}
	n1, _, err := b.createDeferred(nodeSpec{Task: "first"})
	require.NoError(t, err)
	_, ok := b.node(n1.ID)
	require.True(t, ok, "in memory at once")
	assert.Empty(t, onDisk().Snapshot().Nodes, "not on disk before a flush")

	_, err = b.update(n1.ID, func(n *Node) error { n.Attempts = 1; return nil }) // placed: the deferred ones go first
	require.NoError(t, err)
	got, ok := onDisk().node(n1.ID)
	require.True(t, ok)
	assert.Equal(t, 1, got.Attempts)

	for i := range maxDeferred + 10 { // more than wait: the board places them as it goes
		_, _, err := b.createDeferred(nodeSpec{Task: fmt.Sprint("task ", i)})
		require.NoError(t, err)
	}
	assert.Len(t, onDisk().Snapshot().Nodes, 1+maxDeferred, "the first maxDeferred placed")
	require.NoError(t, b.flush())
	nodes := onDisk().Snapshot().Nodes
	require.Len(t, nodes, 1+maxDeferred+10, "the last ones are on disk after a flush")
	assert.Equal(t, fmt.Sprint("task ", maxDeferred+9), nodes[len(nodes)-1].Task, "in order")
	require.NoError(t, b.flush(), "nothing to flush")
}

// A crash of the system may leave a node's _status.md, which is not synced, behind its record
// or damaged: a run opened again rewrites the views that do not say what the records do, and
// only those.
func TestOpenedRunRepairsStatusViews(t *testing.T) {
	b, run := newTestBoard(t)
	var ids []string
	for _, task := range []string{"behind", "gone", "fine"} {
		n, _, err := b.create(nodeSpec{Task: task})
		require.NoError(t, err)
		_, err = b.update(n.ID, func(n *Node) error { n.Status, n.Summary = NodeCompleted, task+" done"; return nil })
		require.NoError(t, err)
		ids = append(ids, n.ID)
	}
	view := func(id string) string { return workspace.Status(run.Node(id)) }
	require.NoError(t, os.WriteFile(view(ids[0]), []byte("PENDING\n\x00\x00\x00\x00"), 0o644)) // an earlier version, padded
	require.NoError(t, os.Remove(view(ids[1])))
	fine, err := os.Stat(view(ids[2]))
	require.NoError(t, err)

	again, err := openBoard(run, time.Now)
	require.NoError(t, err)
	require.NoError(t, again.repairViews())
	for _, id := range ids {
		n, ok := again.node(id)
		require.True(t, ok)
		got, err := os.ReadFile(view(id))
		require.NoError(t, err)
		assert.Equal(t, statusText(&n), string(got), id)
	}
	after, err := os.Stat(view(ids[2]))
	require.NoError(t, err)
	assert.True(t, os.SameFile(fine, after), "a view that was right was written again")
}

// changeAlong runs its write while the change is placed — after the change is made in memory —
// and returns once both are done, with the errors of both: the change is on disk, whatever the
// write returned; a change refused runs no write.
func TestChangeAlong(t *testing.T) {
	b, run := newTestBoard(t)
	n, _, err := b.create(nodeSpec{Task: "count"})
	require.NoError(t, err)
	bump := func(attempts int) func(t *tx) error {
		return func(t *tx) error {
			_, err := t.node(n.ID, func(n *Node) error { n.Attempts = attempts; return nil })
			return err
		}
	}
	refused := errors.New("refused")
	err = b.changeAlong(bump(1), func() error {
		got, _ := b.node(n.ID)
		assert.Equal(t, 1, got.Attempts, "the change is in memory when the write runs")
		return refused
	})
	require.ErrorIs(t, err, refused)
	again, err := openBoard(run, time.Now)
	require.NoError(t, err)
	got, _ := again.node(n.ID)
	assert.Equal(t, 1, got.Attempts, "on disk when changeAlong returns")

	require.Error(t, b.changeAlong(func(*tx) error { return refused }, func() error { t.Error("a change refused runs no write"); return nil }))
}

// flush returns once every change made before it is on disk, also a deferred one that another
// change took to place with it: what a caller orders after a flush (the coordinator's
// conversation, the events of an outcome) never gets ahead of the board.
func TestFlushWaitsForChangesMadeBefore(t *testing.T) {
	b, run := newTestBoard(t)
	n, _, err := b.create(nodeSpec{Task: "count"})
	require.NoError(t, err)
	staged := func(attempts int) *pending { // a change made, not placed
		b.wmu.Lock()
		defer b.wmu.Unlock()
		p, err := b.commit(func(t *tx) error {
			_, err := t.node(n.ID, func(n *Node) error { n.Attempts = attempts; return nil })
			return err
		})
		require.NoError(t, err)
		return p
	}
	first := staged(1)
	_, _, err = b.createDeferred(nodeSpec{Task: "deferred"})
	require.NoError(t, err)
	third := staged(2)
	placed := make(chan error, 1)
	go func() { placed <- third.place() }() // takes the deferred change, and waits for the first
	for taken := false; !taken; time.Sleep(time.Millisecond) {
		b.pmu.Lock()
		taken = len(b.later) == 0
		b.pmu.Unlock()
	}

	flushed := make(chan error, 1)
	go func() { flushed <- b.flush() }()
	select {
	case err := <-flushed:
		t.Fatalf("flush returned (%v) before the deferred change was placed", err)
	case <-time.After(50 * time.Millisecond):
	}
	require.NoError(t, first.place())
	require.NoError(t, <-placed)
	require.NoError(t, <-flushed)
	again, err := openBoard(run, time.Now)
	require.NoError(t, err)
	got, _ := again.node(n.ID)
	assert.Equal(t, 2, got.Attempts)
	assert.Len(t, again.Snapshot().Nodes, 2, "the deferred change is on disk")
}
