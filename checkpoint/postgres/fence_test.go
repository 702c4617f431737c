package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/checkpoint"
	"github.com/agiraph/agiraph/checkpoint/checkpointtest"
	"github.com/agiraph/agiraph/checkpoint/postgres"
	"github.com/agiraph/agiraph/internal/pgtest"
)

// leased makes a saver on a new database with a lease table whose row says "me" holds thread t,
// fenced by that row, and a connection to change the row.
func leased(t *testing.T, opts ...postgres.Option) (*postgres.Saver, *pgx.Conn) {
	t.Helper()
	url := pgtest.Start(t)
	s := open(t, url, opts...)
	conn, err := pgx.Connect(context.Background(), url)
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close(context.Background()) })
	_, err = conn.Exec(context.Background(), `CREATE TABLE leases (thread text PRIMARY KEY, owner text NOT NULL);
		INSERT INTO leases VALUES ('t', 'me')`)
	require.NoError(t, err)
	return s.Fenced(postgres.Fence{Table: "leases", Where: "thread = $1 AND owner = $2", Args: []any{"t", "me"}}), conn
}

// A fenced saver whose fence holds is a saver like any other.
func TestFencedConformance(t *testing.T) {
	checkpointtest.Run(t, func(t *testing.T) checkpoint.Saver {
		s, _ := leased(t)
		return s
	})
}

// Once the row is another's, every write is refused with ErrFenced and changes nothing; reads go on.
func TestFenceRefusesWrites(t *testing.T) {
	s, conn := leased(t)
	ctx := context.Background()
	cfg := checkpoint.Config{ThreadID: "t"}
	_, err := s.Put(ctx, cfg, cp("c1", 0))
	require.NoError(t, err)
	_, err = conn.Exec(ctx, `UPDATE leases SET owner = 'another' WHERE thread = 't'`)
	require.NoError(t, err)

	c1 := checkpoint.Config{ThreadID: "t", CheckpointID: "c1"}
	w := []checkpoint.Write{{TaskID: "0", Node: "agent", Kind: checkpoint.WriteUpdate, Value: []byte("x")}}
	_, err = s.Put(ctx, cfg, cp("c2", 1))
	assert.ErrorIs(t, err, postgres.ErrFenced, "Put")
	assert.ErrorIs(t, s.PutWrites(ctx, c1, w), postgres.ErrFenced, "PutWrites")
	_, err = s.PutStep(ctx, c1, w, cfg, cp("c3", 1))
	assert.ErrorIs(t, err, postgres.ErrFenced, "PutStep")
	assert.ErrorIs(t, s.DeleteThread(ctx, "t"), postgres.ErrFenced, "DeleteThread")
	assert.Contains(t, s.PutWrites(ctx, c1, w).Error(), "leases", "the error names the fence")

	got, err := s.Get(ctx, cfg)
	require.NoError(t, err)
	assert.Equal(t, "c1", got.Checkpoint.ID, "a refused write was stored")
	assert.Empty(t, got.Writes)
}

// A takeover that locks the row makes a write wait; once it commits, the write is refused, and
// had it rolled back, the write would have been made.
func TestFenceWaitsForATakeover(t *testing.T) {
	for _, commit := range []bool{true, false} {
		t.Run(map[bool]string{true: "committed", false: "rolled back"}[commit], func(t *testing.T) {
			s, conn := leased(t)
			ctx := context.Background()
			cfg := checkpoint.Config{ThreadID: "t"}
			tx, err := conn.Begin(ctx)
			require.NoError(t, err)
			_, err = tx.Exec(ctx, `UPDATE leases SET owner = 'another' WHERE thread = 't'`)
			require.NoError(t, err)
			done := make(chan error, 1)
			go func() {
				_, err := s.Put(ctx, cfg, cp("c1", 0))
				done <- err
			}()
			select {
			case err := <-done:
				t.Fatalf("the write did not wait for the takeover: %v", err)
			case <-time.After(200 * time.Millisecond): // waiting, as it should (not a timing assertion: a guard)
			}
			if commit {
				require.NoError(t, tx.Commit(ctx))
				assert.ErrorIs(t, <-done, postgres.ErrFenced)
				_, err = s.Get(ctx, cfg)
				assert.ErrorIs(t, err, checkpoint.ErrNotFound)
			} else {
				require.NoError(t, tx.Rollback(ctx))
				assert.NoError(t, <-done)
			}
		})
	}
}
