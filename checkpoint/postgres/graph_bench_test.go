package postgres_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/agiraph/agiraph/checkpoint"
	"github.com/agiraph/agiraph/checkpoint/postgres"
	"github.com/agiraph/agiraph/internal/pgtest"
	"github.com/agiraph/agiraph/internal/workload"
)

// tableBytes is the size on disk of the saver's tables in the database at url: rows, indexes and
// out-of-line values (PostgreSQL's write-ahead log is the server's, shared by all databases, and
// recycled; it is not counted).
func tableBytes(b *testing.B, url string) int64 {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int64
	err = conn.QueryRow(ctx, `SELECT pg_total_relation_size('agiraph_checkpoints') + pg_total_relation_size('agiraph_checkpoint_writes')`).Scan(&n)
	if err != nil {
		b.Fatal(err)
	}
	return n
}

// benchLoop is BenchmarkLoop (see package graph) with 500 steps, checkpointed with sync durability
// to a new database of the test cluster per run, whose URL gets params. It reports the time per
// step, db_bytes (the size of the saver's tables when the run has ended) and that per step.
func benchLoop(b *testing.B, params string) {
	workload.SaverLoop(b, func(b *testing.B) (checkpoint.Saver, func() int64) {
		url := pgtest.Start(b) + params
		saver, err := postgres.Open(context.Background(), url)
		if err != nil {
			b.Fatal(err)
		}
		return saver, func() int64 {
			n := tableBytes(b, url)
			saver.Close()
			return n
		}
	})
}

// BenchmarkLoopPostgres: BenchmarkLoopSQLite (see checkpoint/sqlite) on PostgreSQL with the
// server's defaults: every commit waits for the server's fsync.
func BenchmarkLoopPostgres(b *testing.B) { benchLoop(b, "") }

// BenchmarkLoopPostgresAsyncCommit: the same with synchronous_commit=off, the durability of
// checkpoint/sqlite's default (a crash of the server, not of the client, may lose the last
// commits).
func BenchmarkLoopPostgresAsyncCommit(b *testing.B) { benchLoop(b, "&synchronous_commit=off") }
