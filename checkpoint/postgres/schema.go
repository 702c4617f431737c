package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The tables of this package. Their names are prefixed, since a PostgreSQL database is often
// shared with an application and other libraries (LangGraph's savers use "checkpoints").
const (
	schemaTable      = "agiraph_checkpoint_schema"
	checkpointsTable = "agiraph_checkpoints"
	writesTable      = "agiraph_checkpoint_writes"
)

// migrationLock is the key of the advisory lock that migrations hold, so that
// processes opening a database at once migrate it one after the other: "agcp" and 1.
const migrationLock = 0x6167637000000001

// A migration moves the schema from version n to n+1, where n is its index in migrations. Released
// migrations are never changed; a new schema is a new migration at the end.
type migration struct {
	name  string
	stmts []string
}

// migrations are the versions of the schema, oldest first: migrations[i] makes version i+1.
var migrations = []migration{
	{
		name: "checkpoints and writes",
		stmts: []string{
			// One row per applied migration; the schema's version is the greatest.
			`CREATE TABLE ` + schemaTable + ` (
				version    integer     PRIMARY KEY,
				name       text        NOT NULL,
				applied_at timestamptz NOT NULL DEFAULT now()
			)`,
			// One row per checkpoint. pk is the row's key for writes; the checkpoint's address is
			// (thread_id, ns, id), whose index also serves "latest" (the greatest id), List's
			// newest-first order and DeleteThread. The collation "C" orders IDs byte-wise, as the
			// Saver contract says, whatever the database's locale.
			`CREATE TABLE ` + checkpointsTable + ` (
				pk         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
				thread_id  text COLLATE "C" NOT NULL,
				ns         text COLLATE "C" NOT NULL,
				id         text COLLATE "C" NOT NULL,
				parent_id  text   NOT NULL,
				step       bigint NOT NULL,
				source     text   NOT NULL,
				run_id     text   NOT NULL,
				format     bigint NOT NULL,
				created_at timestamptz, -- NULL for the zero time
				next       bytea,       -- the frontier, in the encoding of checkpoint/internal/codec; NULL when empty
				joins      bytea,       -- join progress, likewise
				meta       bytea,       -- metadata, likewise
				state      bytea,       -- the encoded state, as given; NULL when the checkpoint has no snapshot
				UNIQUE (thread_id, ns, id)
			)`,
			// One row per task write, in the order they were put (seq). A write is keyed by its
			// checkpoint and (task_id, kind, idx); the first one put is kept. The key's index also
			// finds a checkpoint's writes.
			`CREATE TABLE ` + writesTable + ` (
				seq        bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
				checkpoint bigint NOT NULL REFERENCES ` + checkpointsTable + ` (pk) ON DELETE CASCADE,
				task_id    text   NOT NULL,
				kind       text   NOT NULL,
				idx        bigint NOT NULL,
				node       text   NOT NULL,
				value      bytea, -- the encoded value, as given
				UNIQUE (checkpoint, task_id, kind, idx)
			)`,
		},
	},
}

// schemaVersion is the version of the schema this package writes.
func schemaVersion() int { return len(migrations) }

// querier is what reads the schema version: the pool or a transaction.
type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// readVersion returns the schema version of the database: 0 when it has no schema table.
func readVersion(ctx context.Context, q querier) (int, error) {
	var exists bool
	if err := q.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, schemaTable).Scan(&exists); err != nil || !exists {
		return 0, err
	}
	var v int
	err := q.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM `+schemaTable).Scan(&v)
	return v, err
}

// migrate brings the database to the version of the last of list, applying the missing migrations
// and recording them in one transaction, under an advisory lock, so that a process that fails half
// way leaves the old version and several processes opening a new database apply each migration
// once. It refuses a database newer than list.
func migrate(ctx context.Context, pool *pgxpool.Pool, db string, list []migration) error {
	// Most opens find the schema up to date and need no lock.
	v, err := readVersion(ctx, pool)
	if err != nil {
		return fmt.Errorf("checkpoint/postgres: %s: read the schema version: %w", db, err)
	}
	if err := checkVersion(db, v, len(list)); err != nil || v == len(list) {
		return err
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("checkpoint/postgres: %s: %w", db, err)
	}
	defer conn.Release()
	// The lock is the session's, taken before the transaction begins: a transaction that begins
	// sees the catalog as it is then, so the tables another process created while this one waited
	// for the lock are seen.
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, int64(migrationLock)); err != nil {
		return fmt.Errorf("checkpoint/postgres: %s: wait for the migration lock: %w", db, err)
	}
	defer func() {
		if _, err := conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, int64(migrationLock)); err != nil {
			conn.Conn().Close(context.WithoutCancel(ctx)) // closing the session releases its lock
		}
	}()
	tx, err := conn.Begin(ctx)
	if err != nil {
		return fmt.Errorf("checkpoint/postgres: %s: begin the schema migration: %w", db, err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	// Another process may have migrated in between.
	if v, err = readVersion(ctx, tx); err != nil {
		return fmt.Errorf("checkpoint/postgres: %s: read the schema version: %w", db, err)
	}
	if err := checkVersion(db, v, len(list)); err != nil || v == len(list) {
		return err
	}
	for ; v < len(list); v++ {
		m := list[v]
		for _, stmt := range m.stmts {
			if _, err := tx.Exec(ctx, stmt); err != nil {
				return fmt.Errorf("checkpoint/postgres: %s: migrate the schema to version %d (%s): %w", db, v+1, m.name, err)
			}
		}
		if _, err := tx.Exec(ctx, `INSERT INTO `+schemaTable+` (version, name) VALUES ($1, $2)`, v+1, m.name); err != nil {
			return fmt.Errorf("checkpoint/postgres: %s: record the schema version %d: %w", db, v+1, err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("checkpoint/postgres: %s: commit the schema migration to version %d: %w", db, len(list), err)
	}
	return nil
}

// checkVersion returns a *SchemaVersionError when version is newer than latest.
func checkVersion(db string, version, latest int) error {
	if version > latest {
		return &SchemaVersionError{Database: db, Version: version, Supported: latest}
	}
	return nil
}
