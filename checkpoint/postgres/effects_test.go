package postgres_test

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/checkpoint"
	"github.com/agiraph/agiraph/checkpoint/checkpointtest"
	"github.com/agiraph/agiraph/checkpoint/postgres"
	"github.com/agiraph/agiraph/internal/pgtest"
)

func TestEffectsConformance(t *testing.T) {
	checkpointtest.RunEffects(t, func(t *testing.T, h checkpointtest.Handler) checkpoint.Saver {
		return open(t, pgtest.Start(t), postgres.WithEffects(func(_ context.Context, _ pgx.Tx, threadID string, w checkpoint.Write) error {
			return h(threadID, w)
		}))
	})
}

var errRefused = errors.New("refused")

// board is an effect handler that keeps each effect in a table of its own, made by the first
// transaction that needs it, with the number of update writes of its task saved before it; it
// refuses an effect whose value is "fail", after inserting it.
func board(ctx context.Context, tx pgx.Tx, threadID string, w checkpoint.Write) error {
	if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS board (thread text, task text, idx bigint, value text, updates bigint, seq bigint GENERATED ALWAYS AS IDENTITY)`); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, `INSERT INTO board (thread, task, idx, value, updates)
		SELECT $1, $2, $3, $4, count(*) FROM agiraph_checkpoint_writes WHERE task_id = $2 AND kind = 'update'`,
		threadID, w.TaskID, w.Idx, string(w.Value))
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

// readBoard reads the board through the Saver's pool; nil when it has no table yet.
func readBoard(t *testing.T, s *postgres.Saver) []boardRow {
	t.Helper()
	rows, err := s.Pool().Query(context.Background(), `SELECT thread, task, idx, value, updates FROM board ORDER BY seq`)
	require.NoError(t, err)
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[boardRow])
	require.NoError(t, err)
	return out
}

func eff(task string, idx int, value string) checkpoint.Write {
	return checkpoint.Write{TaskID: task, Node: "n", Kind: checkpoint.WriteEffect, Idx: idx, Value: []byte(value)}
}

// TestEffectSQLCommitsWithTheWrites: a handler's SQL in the Saver's transaction commits with the
// writes, after those before it, and rolls back with them.
func TestEffectSQLCommitsWithTheWrites(t *testing.T) {
	ctx := context.Background()
	s := open(t, pgtest.Start(t), postgres.WithEffects(board))
	thread := checkpoint.Config{ThreadID: "t"}
	c1, err := s.Put(ctx, thread, cp("c1", 0))
	require.NoError(t, err)

	require.NoError(t, s.PutWrites(ctx, c1, []checkpoint.Write{eff("a", 0, "alone")}))
	_, err = s.PutStep(ctx, c1, []checkpoint.Write{upd("b", "out"), eff("b", 0, "card")}, thread, cp("c2", 1))
	require.NoError(t, err)
	want := []boardRow{{"t", "a", 0, "alone", 0}, {"t", "b", 0, "card", 1}}
	assert.Equal(t, want, readBoard(t, s))

	err = s.PutWrites(ctx, c1, []checkpoint.Write{upd("c", "out"), eff("c", 0, "ok"), eff("c", 1, "fail")})
	require.ErrorIs(t, err, errRefused)
	assert.ErrorContains(t, err, `effect 1 of task "c"`)
	_, err = s.PutStep(ctx, c1, []checkpoint.Write{eff("c", 0, "fail")}, thread, cp("c3", 2))
	require.ErrorIs(t, err, errRefused)
	assert.Equal(t, want, readBoard(t, s), "the failed calls' rows are rolled back")
	got, err := s.Get(ctx, c1)
	require.NoError(t, err)
	assert.Len(t, got.Writes, 3, "a/effect, b/update, b/effect")
	_, err = s.Get(ctx, checkpoint.Config{ThreadID: "t", CheckpointID: "c3"})
	require.ErrorIs(t, err, checkpoint.ErrNotFound)
}

// TestWrite: Write commits fn's changes, undoes them when fn fails, and, fenced, is refused once
// the fence does not hold; so are effect writes, which are not applied.
func TestWrite(t *testing.T) {
	ctx := context.Background()
	s, conn := leased(t)
	require.NoError(t, s.Write(ctx, func(ctx context.Context, tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `CREATE TABLE events (what text)`)
		return err
	}))
	insert := func(what string, fail error) func(ctx context.Context, tx pgx.Tx) error {
		return func(ctx context.Context, tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `INSERT INTO events VALUES ($1)`, what); err != nil {
				return err
			}
			return fail
		}
	}
	require.NoError(t, s.Write(ctx, insert("one", nil)))
	require.ErrorIs(t, s.Write(ctx, insert("refused", errRefused)), errRefused)
	events := func() []string {
		rows, err := s.Pool().Query(ctx, `SELECT what FROM events`)
		require.NoError(t, err)
		out, err := pgx.CollectRows(rows, pgx.RowTo[string])
		require.NoError(t, err)
		return out
	}
	assert.Equal(t, []string{"one"}, events())

	_, err := conn.Exec(ctx, `UPDATE leases SET owner = 'another' WHERE thread = 't'`)
	require.NoError(t, err)
	require.ErrorIs(t, s.Write(ctx, insert("fenced", nil)), postgres.ErrFenced)
	assert.Equal(t, []string{"one"}, events())
}

// TestFencedEffects: a fenced Saver keeps its handler, and applies no effect once its fence does
// not hold.
func TestFencedEffects(t *testing.T) {
	ctx := context.Background()
	f, conn := leased(t, postgres.WithEffects(board))
	c1, err := f.Put(ctx, checkpoint.Config{ThreadID: "t"}, cp("c1", 0))
	require.NoError(t, err)
	require.NoError(t, f.PutWrites(ctx, c1, []checkpoint.Write{eff("a", 0, "held")}))

	_, err = conn.Exec(ctx, `UPDATE leases SET owner = 'another' WHERE thread = 't'`)
	require.NoError(t, err)
	require.ErrorIs(t, f.PutWrites(ctx, c1, []checkpoint.Write{eff("b", 0, "lost")}), postgres.ErrFenced)
	_, err = f.PutStep(ctx, c1, []checkpoint.Write{eff("b", 0, "lost")}, checkpoint.Config{ThreadID: "t"}, cp("c2", 1))
	require.ErrorIs(t, err, postgres.ErrFenced)
	assert.Equal(t, []boardRow{{"t", "a", 0, "held", 0}}, readBoard(t, f))
}
