package nodes

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/nodes/bus"
	"github.com/agiraph/agiraph/nodes/store"
	"github.com/agiraph/agiraph/nodes/workspace"
)

var bg = context.Background()

func asJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

// newTestBoard opens the board of a new run on a store in memory, whose changes commit at once.
func newTestBoard(t *testing.T) (*board, workspace.Run, store.Store) {
	t.Helper()
	run := workspace.Home(t.TempDir()).Run("r1")
	require.NoError(t, run.Create())
	st := store.NewMemory()
	b, err := openBoard(bg, st, run, time.Now)
	require.NoError(t, err)
	b.save = func(ctx context.Context, ch store.Change, after func()) error {
		return store.Commit(ctx, st, ch, after)
	}
	return b, run, st
}

// Changes made at once each commit the documents they change: the board read back from the
// store is the board in memory.
func TestBoardChangesReachTheStore(t *testing.T) {
	b, run, st := newTestBoard(t)
	n, _, err := b.create(bg, nodeSpec{Task: "count"})
	require.NoError(t, err)

	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			_, _, err := b.create(bg, nodeSpec{Task: fmt.Sprint("task ", i), Deps: []string{n.ID}})
			assert.NoError(t, err)
			for range 5 {
				_, err := b.update(bg, n.ID, func(n *Node) error { n.Attempts++; return nil })
				assert.NoError(t, err)
			}
		})
	}
	wg.Wait()
	_, _, err = b.spawn(bg, workerSpec{Name: "Ada"})
	require.NoError(t, err)
	again, err := openBoard(bg, st, run, time.Now)
	require.NoError(t, err)
	got, _ := again.node(n.ID)
	assert.Equal(t, 100, got.Attempts, "the last change of the node is the one in the store")
	assert.Equal(t, asJSON(t, b.Snapshot()), asJSON(t, again.Snapshot()))
	assert.Equal(t, b.version, again.version, "the versions go on from the last")
}

// Changes whose steps commit in another order than they were made in leave the newest of each
// document in the store: a step that changed a node and committed late does not take back what
// a later change of the node made.
func TestBoardChangesCommittedLateDoNotGoBack(t *testing.T) {
	b, run, st := newTestBoard(t)
	var held []store.Change
	b.save = func(_ context.Context, ch store.Change, after func()) error { // a step that has not ended
		held = append(held, ch)
		return nil
	}
	n, _, err := b.create(bg, nodeSpec{Task: "count"})
	require.NoError(t, err)
	for i := range 3 {
		_, err := b.update(bg, n.ID, func(n *Node) error { n.Attempts = i + 1; return nil })
		require.NoError(t, err)
	}
	for i := len(held) - 1; i >= 0; i-- { // the newest first
		require.NoError(t, st.Apply(bg, held[i]))
	}
	again, err := openBoard(bg, st, run, time.Now)
	require.NoError(t, err)
	got, ok := again.node(n.ID)
	require.True(t, ok)
	assert.Equal(t, 3, got.Attempts)
}

// A node's views — _spec.md, _refs.json, _status.md — are written from the store once a change
// commits, and a run opened again rewrites those that do not say what the records do (a crash
// between a commit and its views, a view damaged), and only those.
func TestOpenedRunRepairsViews(t *testing.T) {
	b, run, st := newTestBoard(t)
	src, _, err := b.create(bg, nodeSpec{Task: "source"})
	require.NoError(t, err)
	var ids []string
	for _, task := range []string{"behind", "gone", "fine"} {
		n, _, err := b.create(bg, nodeSpec{Task: task, Refs: map[string]string{"in": "nodes/" + src.ID + "/published"}})
		require.NoError(t, err)
		_, err = b.update(bg, n.ID, func(n *Node) error { n.Status, n.Summary = NodeCompleted, task+" done"; return nil })
		require.NoError(t, err)
		ids = append(ids, n.ID)
	}
	status := func(id string) string { return workspace.Status(run.Node(id)) }
	require.NoError(t, os.WriteFile(status(ids[0]), []byte("PENDING\n\x00\x00\x00\x00"), 0o644)) // an earlier version, padded
	require.NoError(t, os.Remove(status(ids[1])))
	require.NoError(t, os.Remove(workspace.Spec(run.Node(ids[1]))))
	require.NoError(t, os.Remove(workspace.Refs(run.Node(ids[1]))))
	fine, err := os.Stat(status(ids[2]))
	require.NoError(t, err)

	again, err := openBoard(bg, st, run, time.Now)
	require.NoError(t, err)
	require.NoError(t, again.repairViews("home"))
	for _, id := range ids {
		n, ok := again.node(id)
		require.True(t, ok)
		got, err := os.ReadFile(status(id))
		require.NoError(t, err)
		assert.Equal(t, statusText(&n), string(got), id)
		spec, err := os.ReadFile(workspace.Spec(run.Node(id)))
		require.NoError(t, err)
		assert.Equal(t, specText(&n), string(spec))
		refs, err := os.ReadFile(workspace.Refs(run.Node(id)))
		require.NoError(t, err)
		assert.JSONEq(t, `{"in":"nodes/n1/published"}`, string(refs))
	}
	after, err := os.Stat(status(ids[2]))
	require.NoError(t, err)
	assert.True(t, os.SameFile(fine, after), "a view that was right was written again")
}

// Views noted as written (a run that ended) are not read back when the board opens again in the
// same home at the same version; in another home, after a later change, or with a view that could
// not be written, they are, and a stale one is rewritten.
func TestNotedViewsAreNotReadBack(t *testing.T) {
	b, run, st := newTestBoard(t)
	n, _, err := b.create(bg, nodeSpec{Task: "write"})
	require.NoError(t, err)
	_, err = b.update(bg, n.ID, func(n *Node) error { n.Status = NodeCompleted; return nil })
	require.NoError(t, err)
	status := workspace.Status(run.Node(n.ID))
	damage := func() { require.NoError(t, os.WriteFile(status, []byte("stale\n"), 0o644)) }
	reopen := func(home string) string {
		again, err := openBoard(bg, st, run, time.Now)
		require.NoError(t, err)
		require.NoError(t, again.repairViews(home))
		got, err := os.ReadFile(status)
		require.NoError(t, err)
		return string(got)
	}

	require.NoError(t, b.noteViews(bg, "home"))
	damage()
	assert.Equal(t, "stale\n", reopen("home"), "noted views are not read back")
	now, ok := b.node(n.ID)
	require.True(t, ok)
	assert.Equal(t, statusText(&now), reopen("elsewhere"), "another home reads them back")

	damage()
	require.NoError(t, b.noteViews(bg, "home"))
	_, err = b.update(bg, n.ID, func(n *Node) error { n.Summary = "done"; return nil })
	require.NoError(t, err)
	damage() // the change's view lost, as a crash before it was written would
	assert.Contains(t, reopen("home"), "done", "a change after the note has the views read back")

	// A view that cannot be written stays due, and the views are not noted.
	require.NoError(t, os.RemoveAll(string(run.Node(n.ID))))
	require.NoError(t, os.WriteFile(string(run.Node(n.ID)), nil, 0o644)) // a file where the folder was
	_, err = b.update(bg, n.ID, func(n *Node) error { n.Summary = "again"; return nil })
	require.NoError(t, err)
	b.vmu.Lock()
	assert.Contains(t, b.due, n.ID, "the view that could not be written is still due")
	b.vmu.Unlock()
	require.NoError(t, b.noteViews(bg, "home"))
	again, err := openBoard(bg, st, run, time.Now)
	require.NoError(t, err)
	assert.NotEqual(t, again.version, again.noted.Version, "the views were noted with one due")
}

// A run whose board was kept in its folder (_node.json, worker.json) before the store held
// boards has it copied into the store when it is opened, damaged records named.
func TestBoardInFilesIsCopiedIntoTheStore(t *testing.T) {
	run := workspace.Home(t.TempDir()).Run("r1")
	require.NoError(t, run.Create())
	n1 := Node{ID: "n1", Task: "old", Status: NodeCompleted}
	require.NoError(t, run.Node("n1").Create())
	require.NoError(t, workspace.WriteJSON(run.Node("n1").Path(nodeFile), n1))
	require.NoError(t, run.Node("n2").Create())
	require.NoError(t, os.WriteFile(run.Node("n2").Path(nodeFile), []byte("{not json"), 0o644))
	require.NoError(t, run.Worker("ada").Create())
	require.NoError(t, workspace.WriteJSON(filepath.Join(string(run.Worker("ada")), workerFile), Worker{ID: "ada", Name: "Ada", Status: WorkerIdle}))

	st := store.NewMemory()
	b, err := openBoard(bg, st, run, time.Now)
	require.NoError(t, err)
	got, _ := b.node("n1")
	assert.Equal(t, NodeCompleted, got.Status)
	damaged, _ := b.node("n2")
	assert.Equal(t, NodeFailed, damaged.Status)
	assert.Contains(t, damaged.Damaged, run.Node("n2").Path(nodeFile))
	_, ok := b.worker("Ada")
	assert.True(t, ok)

	docs, err := st.Docs(bg, "")
	require.NoError(t, err)
	assert.Len(t, docs, 3, "the board is in the store")
	require.NoError(t, os.Remove(run.Node("n1").Path(nodeFile)))
	again, err := openBoard(bg, st, run, time.Now)
	require.NoError(t, err)
	assert.Equal(t, b.Snapshot(), again.Snapshot(), "read from the store, not the files")
}

// A change that cannot be committed is taken back: the board in memory stays the board in the
// store, and the same change tried again is made.
func TestBoardChangeNotCommittedIsTakenBack(t *testing.T) {
	b, _, st := newTestBoard(t)
	n1, _, err := b.create(bg, nodeSpec{Task: "first"})
	require.NoError(t, err)
	save := b.save
	refused := fmt.Errorf("the disk is full")
	b.save = func(context.Context, store.Change, func()) error { return refused }
	_, _, err = b.create(bg, nodeSpec{Task: "second", Key: "call1"})
	require.ErrorIs(t, err, refused)
	_, err = b.update(bg, n1.ID, func(n *Node) error { n.Attempts = 7; return nil })
	require.ErrorIs(t, err, refused)
	_, _, err = b.spawn(bg, workerSpec{Name: "Ada"})
	require.ErrorIs(t, err, refused)
	assert.Len(t, b.Snapshot().Nodes, 1, "the node not committed is not on the board")
	got, _ := b.node(n1.ID)
	assert.Zero(t, got.Attempts)
	assert.Empty(t, b.Snapshot().Workers)

	b.save = save
	n2, created, err := b.create(bg, nodeSpec{Task: "second", Key: "call1"})
	require.NoError(t, err)
	assert.True(t, created, "tried again, the node is made")
	assert.Equal(t, "n2", n2.ID)
	docs, err := st.Docs(bg, nodeKey("r1", ""))
	require.NoError(t, err)
	assert.Len(t, docs, 2)
}

// A node's status view says what the board says once the changes have committed, whatever
// order their commits came in.
func TestStatusViewFollowsTheBoard(t *testing.T) {
	b, run, st := newTestBoard(t)
	n, _, err := b.create(bg, nodeSpec{Task: "count"})
	require.NoError(t, err)
	var late []func()
	b.save = func(_ context.Context, ch store.Change, after func()) error {
		late = append(late, func() {
			require.NoError(t, st.Apply(bg, ch))
			after()
		})
		return nil
	}
	_, err = b.update(bg, n.ID, func(n *Node) error { n.Status = NodeCompleted; return nil })
	require.NoError(t, err)
	_, err = b.update(bg, n.ID, func(n *Node) error { n.Status = NodePending; return nil })
	require.NoError(t, err)
	late[1]() // the later change commits first
	late[0]()
	got, err := os.ReadFile(workspace.Status(run.Node(n.ID)))
	require.NoError(t, err)
	assert.Equal(t, "PENDING\n", string(got))
}

// With a writer to tell (viewsDue), a node created has its views written at once, for its
// worker, and later changes leave its status to the writer: written at its flush, once, as the
// board has it then, however many times it changed meanwhile; a flush of one node writes that
// node's alone.
func TestViewsWrittenByFlush(t *testing.T) {
	b, run, _ := newTestBoard(t)
	told := 0
	b.viewsDue = func() { told++ }
	status := func(id string) string {
		got, err := os.ReadFile(workspace.Status(run.Node(id)))
		require.NoError(t, err)
		return string(got)
	}
	n1, _, err := b.create(bg, nodeSpec{Task: "count"})
	require.NoError(t, err)
	n2, _, err := b.create(bg, nodeSpec{Task: "sum"})
	require.NoError(t, err)
	assert.FileExists(t, workspace.Spec(run.Node(n1.ID)))
	assert.Equal(t, "PENDING\n", status(n1.ID))
	assert.Zero(t, told)
	for _, id := range []string{n1.ID, n2.ID} {
		for _, st := range []NodeStatus{NodeRunning, NodeCompleted} {
			_, err = b.update(bg, id, func(n *Node) error { n.Status = st; return nil })
			require.NoError(t, err)
		}
	}
	assert.Equal(t, 4, told)
	assert.Equal(t, "PENDING\n", status(n1.ID), "left to the writer")

	b.flushViews(n1.ID)
	assert.Equal(t, "COMPLETED\n", status(n1.ID))
	assert.Equal(t, "PENDING\n", status(n2.ID))
	b.flushViews()
	assert.Equal(t, "COMPLETED\n", status(n2.ID))
	require.NoError(t, os.Remove(workspace.Status(run.Node(n1.ID))))
	b.flushViews()
	assert.NoFileExists(t, workspace.Status(run.Node(n1.ID)), "a flush writes what changed since the last")
}

// A change of a node that leaves its status's text as it was writes no view: a view removed
// stays removed until the text changes.
func TestViewsWrittenWhenTheirTextChanges(t *testing.T) {
	b, run, _ := newTestBoard(t)
	told := 0
	b.viewsDue = func() { told++ }
	n, _, err := b.create(bg, nodeSpec{Task: "count"})
	require.NoError(t, err)
	path := workspace.Status(run.Node(n.ID))
	require.NoError(t, os.Remove(path))
	_, err = b.update(bg, n.ID, func(n *Node) error { n.Attempts++; return nil })
	require.NoError(t, err)
	b.flushViews()
	assert.Zero(t, told)
	assert.NoFileExists(t, path, "the same text is not written again")

	_, err = b.update(bg, n.ID, func(n *Node) error { n.Status = NodeRunning; return nil })
	require.NoError(t, err)
	b.flushViews()
	assert.Equal(t, 1, told)
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "RUNNING\n", string(got))
}

// A run whose state was in its _run.json has it copied into the store when it is opened, so
// that the squad finds it among its runs (the latest, for a trigger) without reading files.
func TestRunStateInAFileIsCopiedIntoTheStore(t *testing.T) {
	run := workspace.Home(t.TempDir()).Run("r1")
	require.NoError(t, run.Create())
	require.NoError(t, workspace.WriteJSON(filepath.Join(string(run), runFile), map[string]any{"goal": "old goal", "stage": 2, "applied": []string{"k"}}))
	st := store.NewMemory()
	b, err := openBoard(bg, st, run, time.Now)
	require.NoError(t, err)
	assert.Equal(t, "old goal", b.runState().Goal)
	d, err := st.Doc(bg, runKey("r1"))
	require.NoError(t, err)
	require.NotNil(t, d.Value)
	assert.Contains(t, string(d.Value), `"stage":2`)
}

// The messages a run's bus kept in its own log before the store held them are copied into the
// store, in order, and the bus opened on the store has them.
func TestBusLogIsCopiedIntoTheStore(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "_messages")
	b, err := bus.Open(dir)
	require.NoError(t, err)
	for _, body := range []string{"one", "two"} {
		_, err = b.Send(bg, bus.Human, bus.Coordinator, body)
		require.NoError(t, err)
	}
	require.NoError(t, b.Close())

	st := store.NewMemory()
	j, err := runJournal(st, dir, "r1")
	require.NoError(t, err)
	require.NoError(t, j.Close())
	b, err = bus.Open(dir, bus.WithJournal(&busJournal{st: st, run: "r1"}))
	require.NoError(t, err)
	defer b.Close()
	msgs, err := b.Messages()
	require.NoError(t, err)
	require.Len(t, msgs, 2)
	assert.Equal(t, "two", msgs[1].Body)
	assert.Equal(t, 2, b.Pending(bus.Coordinator))
}
