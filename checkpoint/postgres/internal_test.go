package postgres

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/checkpoint"
	"github.com/agiraph/agiraph/internal/pgtest"
)

// rawPool opens a pool on a new test database without a Saver: a database that migrate can bring
// to any version.
func rawPool(t *testing.T) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), pgtest.Start(t))
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return pool
}

func version(t *testing.T, pool *pgxpool.Pool) int {
	t.Helper()
	v, err := readVersion(context.Background(), pool)
	require.NoError(t, err)
	return v
}

// seeds write a checkpoint with two writes into a database at a schema version, with plain SQL of
// that version, as an older program would have. A new migration that changes these tables adds the
// seed of its version, so that TestMigrateFromEveryVersion keeps proving that old data survives.
var seeds = map[int]func(t *testing.T, pool *pgxpool.Pool){
	1: func(t *testing.T, pool *pgxpool.Pool) {
		for _, q := range []string{
			`INSERT INTO agiraph_checkpoints (thread_id, ns, id, parent_id, step, source, run_id, format, created_at, next, joins, meta, state)
			 VALUES ('old', '', 'c1', '', 3, 'loop', 'run', 1, to_timestamp(1700000000), '\x0101013001610200', NULL, '\x0101016b0176', '\x7b7d')`,
			`INSERT INTO agiraph_checkpoint_writes (checkpoint, task_id, kind, idx, node, value) VALUES ((SELECT pk FROM agiraph_checkpoints WHERE id = 'c1'), '0', 'update', 0, 'a', '\x31')`,
			`INSERT INTO agiraph_checkpoint_writes (checkpoint, task_id, kind, idx, node, value) VALUES ((SELECT pk FROM agiraph_checkpoints WHERE id = 'c1'), '0', 'resume', -1, 'a', NULL)`,
		} {
			_, err := pool.Exec(context.Background(), q)
			require.NoError(t, err, q)
		}
	},
}

// checkSeed checks what a seed wrote, read by a Saver of the current version.
func checkSeed(t *testing.T, s *Saver) {
	t.Helper()
	tu, err := s.Get(context.Background(), checkpoint.Config{ThreadID: "old"})
	require.NoError(t, err)
	want := checkpoint.Checkpoint{
		ID: "c1", Step: 3, Source: checkpoint.SourceLoop, RunID: "run", Format: 1,
		CreatedAt: time.Unix(1700000000, 0).UTC(), State: []byte("{}"),
		Next: []checkpoint.Task{{ID: "0", Node: "a", Arg: []byte{}}},
		Meta: map[string]string{"k": "v"},
	}
	assert.Equal(t, want, tu.Checkpoint)
	require.Len(t, tu.Writes, 2)
	assert.Equal(t, "1", string(tu.Writes[0].Value))
	assert.Equal(t, -1, tu.Writes[1].Idx)
	assert.Nil(t, tu.Writes[1].Value)
}

// TestMigrateFromEveryVersion: a database left at any older schema version, with data written at
// that version, is brought to the current version by New, and its data reads back.
func TestMigrateFromEveryVersion(t *testing.T) {
	for from := 0; from < len(migrations); from++ {
		t.Run(fmt.Sprint("from version ", from), func(t *testing.T) {
			ctx := context.Background()
			pool := rawPool(t)
			require.NoError(t, migrate(ctx, pool, "test", migrations[:from]))
			require.Equal(t, from, version(t, pool))
			seed := seeds[from]
			if seed != nil {
				seed(t, pool)
			}
			s, err := New(ctx, pool)
			require.NoError(t, err)
			defer s.Close()
			assert.Equal(t, schemaVersion(), version(t, pool))
			if seed != nil {
				checkSeed(t, s)
			}
		})
	}
}

// TestMigrateToANewVersion: with a migration added to the list (as a later release would), a
// database of the current version is upgraded in place, its data kept; migrating again does
// nothing; and this release refuses the upgraded database, naming both versions, without
// changing it.
func TestMigrateToANewVersion(t *testing.T) {
	ctx := context.Background()
	pool := rawPool(t)
	s, err := New(ctx, pool)
	require.NoError(t, err)
	seeds[1](t, pool)

	next := append(slices.Clone(migrations), migration{
		name: "test: notes on checkpoints",
		stmts: []string{
			`ALTER TABLE agiraph_checkpoints ADD COLUMN note text NOT NULL DEFAULT ''`,
			`UPDATE agiraph_checkpoints SET note = 'migrated ' || id`,
		},
	})
	for range 2 {
		require.NoError(t, migrate(ctx, pool, "test", next))
		require.Equal(t, len(next), version(t, pool))
		var note string
		require.NoError(t, pool.QueryRow(ctx, `SELECT note FROM agiraph_checkpoints WHERE id = 'c1'`).Scan(&note))
		assert.Equal(t, "migrated c1", note)
	}
	checkSeed(t, s) // a Saver already open reads on

	_, err = New(ctx, pool)
	var sv *SchemaVersionError
	require.ErrorAs(t, err, &sv)
	assert.ErrorIs(t, err, ErrSchemaTooNew)
	assert.Equal(t, len(next), sv.Version)
	assert.Equal(t, len(migrations), sv.Supported)
	assert.Contains(t, err.Error(), fmt.Sprintf("schema version %d, but this program knows versions up to %d", len(next), len(migrations)))
	assert.Contains(t, err.Error(), "@127.0.0.1:", "the error names the database")
	assert.Equal(t, len(next), version(t, pool), "the refused database is left as it was")
}

// TestFailedMigrationRollsBack: a migration that fails leaves the database at its old version,
// without any change of the migrations of that attempt, and the error names the version and the
// migration.
func TestFailedMigrationRollsBack(t *testing.T) {
	ctx := context.Background()
	pool := rawPool(t)
	bad := append(slices.Clone(migrations), migration{
		name:  "test: half good",
		stmts: []string{`CREATE TABLE extra (x int)`, `THIS IS NOT SQL`},
	})
	err := migrate(ctx, pool, "test-db", bad)
	require.Error(t, err)
	for _, part := range []string{"test-db", fmt.Sprint("version ", len(bad)), "test: half good"} {
		assert.Contains(t, err.Error(), part)
	}
	assert.Equal(t, 0, version(t, pool), "all of it was rolled back, the good migrations too")
	var tables int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM pg_tables WHERE schemaname = 'public'`).Scan(&tables))
	assert.Zero(t, tables)
	require.NoError(t, migrate(ctx, pool, "test-db", migrations), "the good migrations still apply")
}

// The write statements' argument counts follow the arguments their callers give.
func TestWriteArgumentCounts(t *testing.T) {
	cfg := checkpoint.Config{ThreadID: "t", CheckpointID: "c"}
	assert.Len(t, putArgs(cfg, checkpoint.Checkpoint{}), nPut)
	assert.Len(t, putTypes, nPut)
	assert.Equal(t, nPut, strings.Count(putColumns, ",")+1)
	assert.Len(t, writeArgs(cfg, nil), nWrite)
}
