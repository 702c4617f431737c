package runner

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
)

// The tables of this package, prefixed as checkpoint/postgres's are, since the database is often
// shared with an application.
const (
	schemaTable = "agiraph_runner_schema"
	runsTable   = "agiraph_runs"
)

// migrationLock is the key of the advisory lock migrations hold ("agrn" and 1), so that processes
// starting on a new database migrate it one after the other.
const migrationLock = 0x6167726e00000001

// migrations are the versions of this package's schema, oldest first: migrations[i] makes version
// i+1. Released migrations are never changed; a new schema is a new migration at the end.
var migrations = [][]string{
	{
		// One row per thread: the operation it was last given, the lease of the process running
		// it, and its outcome. Keeping the lease and the outcome in one row makes ending a run one
		// statement, fenced by the generation.
		`CREATE TABLE ` + runsTable + ` (
			thread_id  text COLLATE "C" PRIMARY KEY,
			graph      text   NOT NULL,
			status     text   NOT NULL,           -- queued, running, done, failed, interrupted
			generation bigint NOT NULL,           -- raised by every enqueue, takeover and handover
			op_id      text   NOT NULL,           -- the run ID of the checkpoints the operation writes
			op_kind    text   NOT NULL,           -- invoke or resume
			op_input   jsonb,                     -- invoke: the input; resume: the value (see resumeInput)
			op_answers text[] NOT NULL DEFAULT '{}', -- resume: the interrupts pending when it was enqueued
			owner      text,                      -- the process holding the lease, while running
			expires_at timestamptz,               -- when the lease ends unless renewed
			job_id     bigint,                    -- the River job of the latest generation
			error_text text,
			interrupts jsonb,
			state      jsonb,
			created_at timestamptz NOT NULL DEFAULT now(),
			updated_at timestamptz NOT NULL DEFAULT now()
		)`,
		`CREATE INDEX agiraph_runs_leases ON ` + runsTable + ` (expires_at) WHERE status = 'running'`,
		`CREATE INDEX agiraph_runs_queued ON ` + runsTable + ` (job_id) WHERE status = 'queued'`,
	},
}

// migrate brings River's schema and this package's up to date, under a session-level advisory lock
// held on one connection of the pool: River's migrations run in transactions of their own.
func migrate(ctx context.Context, pool *pgxpool.Pool, logger *slog.Logger) error {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, int64(migrationLock)); err != nil {
		return fmt.Errorf("wait for the migration lock: %w", err)
	}
	defer func() {
		if _, err := conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, int64(migrationLock)); err != nil {
			conn.Conn().Close(context.WithoutCancel(ctx)) // closing the session releases its lock
		}
	}()
	m, err := rivermigrate.New(riverpgxv5.New(pool), &rivermigrate.Config{Logger: logger})
	if err != nil {
		return err
	}
	if _, err := m.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return fmt.Errorf("the migrations of River: %w", err)
	}
	return pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		// One row per applied migration; the schema's version is the greatest.
		var version int
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+schemaTable+` (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM `+schemaTable).Scan(&version); err != nil {
			return err
		}
		if version > len(migrations) {
			return fmt.Errorf("the database has schema version %d of %s, newer than this program knows (%d)", version, runsTable, len(migrations))
		}
		for i := version; i < len(migrations); i++ {
			for _, stmt := range migrations[i] {
				if _, err := tx.Exec(ctx, stmt); err != nil {
					return fmt.Errorf("migration %d: %w", i+1, err)
				}
			}
			if _, err := tx.Exec(ctx, `INSERT INTO `+schemaTable+` (version) VALUES ($1)`, i+1); err != nil {
				return err
			}
		}
		return nil
	})
}
