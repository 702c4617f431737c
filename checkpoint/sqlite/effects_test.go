package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/checkpoint"
	"github.com/agiraph/agiraph/checkpoint/checkpointtest"
)

func TestEffectsConformance(t *testing.T) {
	t.Parallel()
	checkpointtest.RunEffects(t, func(t *testing.T, h checkpointtest.Handler) checkpoint.Saver {
		return openSaver(t, WithEffects(func(_ context.Context, _ *sql.Tx, threadID string, w checkpoint.Write) error {
			return h(threadID, w)
		}))
	})
}

var errRefused = errors.New("refused")

// board is an effect handler that keeps each effect in a table of its own, made by the first
// transaction that needs it, with the number of update writes of its task saved before it; it
// refuses an effect whose value is "fail", after inserting it.
func board(ctx context.Context, tx *sql.Tx, threadID string, w checkpoint.Write) error {
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS board (thread TEXT, task TEXT, idx INTEGER, value TEXT, updates INTEGER)`); err != nil {
		return err
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO board SELECT ?, ?, ?, ?, count(*) FROM writes WHERE task_id = ? AND kind = ?`,
		threadID, w.TaskID, w.Idx, string(w.Value), w.TaskID, kinds.arg(string(checkpoint.WriteUpdate)))
	if err == nil && string(w.Value) == "fail" {
		err = errRefused
	}
	return err
}

// boardRow is a row of board.
type boardRow struct {
	Thread, Task string
	Idx          int
	Value        string
	Updates      int
}

// readBoard reads the board through the Saver's read-only pool; nil when it has no table yet.
func readBoard(t *testing.T, s *Saver) []boardRow {
	t.Helper()
	rows, err := s.DB().Query(`SELECT thread, task, idx, value, updates FROM board ORDER BY rowid`)
	if err != nil {
		require.ErrorContains(t, err, "no such table")
		return nil
	}
	defer rows.Close()
	var out []boardRow
	for rows.Next() {
		var r boardRow
		require.NoError(t, rows.Scan(&r.Thread, &r.Task, &r.Idx, &r.Value, &r.Updates))
		out = append(out, r)
	}
	require.NoError(t, rows.Err())
	return out
}

func eff(task string, idx int, value string) checkpoint.Write {
	return checkpoint.Write{TaskID: task, Node: "n", Kind: checkpoint.WriteEffect, Idx: idx, Value: []byte(value)}
}

func update(task string) checkpoint.Write {
	return checkpoint.Write{TaskID: task, Node: "n", Kind: checkpoint.WriteUpdate, Value: []byte("out")}
}

// inOneGroup runs calls, each in a goroutine of its own, queued in this order as one group, and
// returns their errors once the group committed.
func inOneGroup(t *testing.T, s *Saver, calls ...func() error) []error {
	t.Helper()
	_, release := holdGroup(t, s, len(calls))
	errs := make([]error, len(calls))
	var wg sync.WaitGroup
	for i, call := range calls {
		wg.Go(func() { errs[i] = call() })
		waitQueued(t, s, i+1)
	}
	release()
	wg.Wait()
	return errs
}

// TestEffectSQLCommitsWithTheWrites: a handler's SQL in the Saver's transaction commits with the
// writes, after those before it, and rolls back with them.
func TestEffectSQLCommitsWithTheWrites(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openSaver(t, WithEffects(board))
	thread := checkpoint.Config{ThreadID: "t"}
	c1, err := s.Put(ctx, thread, testCheckpoint("c1"))
	require.NoError(t, err)

	require.NoError(t, s.PutWrites(ctx, c1, []checkpoint.Write{eff("a", 0, "alone")}), "an effect alone takes a transaction too")
	_, err = s.PutStep(ctx, c1, []checkpoint.Write{update("b"), eff("b", 0, "card")}, thread, testCheckpoint("c2"))
	require.NoError(t, err)
	want := []boardRow{{"t", "a", 0, "alone", 0}, {"t", "b", 0, "card", 1}}
	assert.Equal(t, want, readBoard(t, s))

	err = s.PutWrites(ctx, c1, []checkpoint.Write{update("c"), eff("c", 0, "ok"), eff("c", 1, "fail")})
	require.ErrorIs(t, err, errRefused)
	assert.ErrorContains(t, err, `effect 1 of task "c"`)
	_, err = s.PutStep(ctx, c1, []checkpoint.Write{eff("c", 0, "fail")}, thread, testCheckpoint("c3"))
	require.ErrorIs(t, err, errRefused)
	assert.Equal(t, want, readBoard(t, s), "the failed calls' rows are rolled back")
	got, err := s.Get(ctx, c1)
	require.NoError(t, err)
	assert.Len(t, got.Writes, 3, "a/effect, b/update, b/effect")
	_, err = s.Get(ctx, checkpoint.Config{ThreadID: "t", CheckpointID: "c3"})
	require.ErrorIs(t, err, checkpoint.ErrNotFound)
}

// TestEffectFailsOnlyItsCaller: in a group, a caller whose handler fails loses its writes and its
// handler's rows; the others' commit.
func TestEffectFailsOnlyItsCaller(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openSaver(t, WithEffects(board))
	c1, err := s.Put(ctx, checkpoint.Config{ThreadID: "t"}, testCheckpoint("c1"))
	require.NoError(t, err)
	putWrites := func(ws ...checkpoint.Write) func() error {
		return func() error { return s.PutWrites(ctx, c1, ws) }
	}
	errs := inOneGroup(t, s,
		putWrites(update("a"), eff("a", 0, "first")),
		putWrites(update("b"), eff("b", 0, "fail")),
		putWrites(eff("c", 0, "last")))
	require.NoError(t, errs[0])
	require.ErrorIs(t, errs[1], errRefused)
	require.NoError(t, errs[2])
	assert.Equal(t, []boardRow{{"t", "a", 0, "first", 1}, {"t", "c", 0, "last", 0}}, readBoard(t, s))
	got, err := s.Get(ctx, c1)
	require.NoError(t, err)
	var tasks []string
	for _, w := range got.Writes {
		tasks = append(tasks, w.TaskID+"/"+string(w.Kind))
	}
	assert.Equal(t, []string{"a/update", "a/effect", "c/effect"}, tasks)
}

// TestWrite: Write commits fn's changes, grouped with the others, and undoes them alone when fn
// fails; DB reads them and refuses to write.
func TestWrite(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openSaver(t)
	require.NoError(t, s.Write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `CREATE TABLE events (what TEXT)`)
		return err
	}))
	insert := func(what string, fail error) func(ctx context.Context, tx *sql.Tx) error {
		return func(ctx context.Context, tx *sql.Tx) error {
			if _, err := tx.ExecContext(ctx, `INSERT INTO events VALUES (?)`, what); err != nil {
				return err
			}
			return fail
		}
	}
	errs := inOneGroup(t, s,
		func() error { return s.Write(ctx, insert("one", nil)) },
		func() error { return s.Write(ctx, insert("refused", errRefused)) },
		func() error {
			_, err := s.Put(ctx, checkpoint.Config{ThreadID: "t"}, testCheckpoint("c1"))
			return err
		})
	require.NoError(t, errs[0])
	require.ErrorIs(t, errs[1], errRefused)
	require.NoError(t, errs[2])

	var events []string
	rows, err := s.DB().QueryContext(ctx, `SELECT what FROM events`)
	require.NoError(t, err)
	for rows.Next() {
		var e string
		require.NoError(t, rows.Scan(&e))
		events = append(events, e)
	}
	require.NoError(t, rows.Close())
	assert.Equal(t, []string{"one"}, events)
	_, err = s.DB().ExecContext(ctx, `INSERT INTO events VALUES ('read-only')`)
	require.Error(t, err, "DB is read-only")

	stopped, cancel := context.WithCancel(ctx)
	cancel()
	require.ErrorIs(t, s.Write(stopped, insert("late", nil)), context.Canceled)
}

// TestOpenWithTablesOfAnOwner: a checkpoint database with tables an effect handler's owner made
// opens again.
func TestOpenWithTablesOfAnOwner(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "c.db")
	s, err := Open(path, WithEffects(board))
	require.NoError(t, err)
	c1, err := s.Put(context.Background(), checkpoint.Config{ThreadID: "t"}, testCheckpoint("c1"))
	require.NoError(t, err)
	require.NoError(t, s.PutWrites(context.Background(), c1, []checkpoint.Write{eff("a", 0, "card")}))
	require.NoError(t, s.Close())

	s, err = Open(path)
	require.NoError(t, err)
	defer s.Close()
	assert.Len(t, readBoard(t, s), 1)
}
