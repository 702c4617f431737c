package sqlite

import (
	"context"
	"database/sql"
	"fmt"
)

// applicationID marks a database made by this package (PRAGMA application_id): "agcp".
const applicationID = 0x61676370

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
			// One row per checkpoint. pk is the row's key for writes; the checkpoint's address is
			// (thread_id, ns, id), whose index also serves "latest" (the greatest id), List's
			// newest-first order and DeleteThread. The small columns come first and the state last,
			// so that reading them never walks a large state's overflow pages.
			`CREATE TABLE checkpoints (
				pk         INTEGER PRIMARY KEY,
				thread_id  TEXT    NOT NULL,
				ns         TEXT    NOT NULL,
				id         TEXT    NOT NULL,
				parent_id  TEXT    NOT NULL,
				step       INTEGER NOT NULL,
				source     TEXT    NOT NULL,
				run_id     TEXT    NOT NULL,
				format     INTEGER NOT NULL,
				created_at INTEGER,  -- Unix microseconds; NULL for the zero time
				next       BLOB,     -- the frontier, in the encoding of checkpoint/internal/codec; NULL when empty
				joins      BLOB,     -- join progress, likewise
				meta       BLOB,     -- metadata, likewise
				state      BLOB,     -- the encoded state, as given; NULL when the checkpoint has no snapshot
				UNIQUE (thread_id, ns, id)
			)`,
			// One row per task write, in the order they were put (seq). A write is keyed by its
			// checkpoint and (task_id, kind, idx); the first one put is kept.
			`CREATE TABLE writes (
				seq        INTEGER PRIMARY KEY,
				checkpoint INTEGER NOT NULL REFERENCES checkpoints (pk) ON DELETE CASCADE,
				task_id    TEXT    NOT NULL,
				kind       TEXT    NOT NULL,
				idx        INTEGER NOT NULL,
				node       TEXT    NOT NULL,
				value      BLOB,     -- the encoded value, as given
				UNIQUE (checkpoint, task_id, kind, idx)
			)`,
		},
	},
	{
		// The same tables, in fewer bytes: a thread's ID once, in checkpoint_threads, its
		// checkpoints referring to it by number; IDs that are UUIDs as their 16 bytes, sources
		// and kinds as small integers (see encoding.go), in columns that have no type, so that
		// SQLite keeps each value as it is given. The tables are made again, as SQLite changes
		// no column's type; the rows keep their pk and seq.
		name: "threads by number, IDs as bytes, sources and kinds as codes",
		stmts: []string{
			`ALTER TABLE writes RENAME TO writes_1`,
			`ALTER TABLE checkpoints RENAME TO checkpoints_1`, // writes_1 now refers to it
			`CREATE TABLE checkpoint_threads (
				id   INTEGER PRIMARY KEY,
				name TEXT    NOT NULL UNIQUE -- the thread's ID
			)`,
			`CREATE TABLE checkpoints (
				pk         INTEGER PRIMARY KEY,
				thread     INTEGER NOT NULL REFERENCES checkpoint_threads (id),
				ns         TEXT    NOT NULL,
				id         BLOB    NOT NULL, -- BLOB: no conversion of what is stored (encoding.go)
				parent_id  BLOB    NOT NULL,
				step       INTEGER NOT NULL,
				source     BLOB    NOT NULL,
				run_id     BLOB    NOT NULL,
				format     INTEGER NOT NULL,
				created_at INTEGER,  -- Unix microseconds; NULL for the zero time
				next       BLOB,     -- the frontier, in the encoding of checkpoint/internal/codec; NULL when empty
				joins      BLOB,     -- join progress, likewise
				meta       BLOB,     -- metadata, likewise
				state      BLOB,     -- the encoded state, as given; NULL when the checkpoint has no snapshot
				UNIQUE (thread, ns, id)
			)`,
			`CREATE TABLE writes (
				seq        INTEGER PRIMARY KEY,
				checkpoint INTEGER NOT NULL REFERENCES checkpoints (pk) ON DELETE CASCADE,
				task_id    TEXT    NOT NULL,
				kind       BLOB    NOT NULL,
				idx        INTEGER NOT NULL,
				node       TEXT    NOT NULL,
				value      BLOB,     -- the encoded value, as given
				UNIQUE (checkpoint, task_id, kind, idx)
			)`,
			`INSERT INTO checkpoint_threads (name) SELECT DISTINCT thread_id FROM checkpoints_1 ORDER BY thread_id`,
			`INSERT INTO checkpoints SELECT pk, (SELECT id FROM checkpoint_threads WHERE name = thread_id), ns, ` + idSQL("id") + `, ` + idSQL("parent_id") + `, step, ` +
				sources.sql("source") + `, ` + idSQL("run_id") + `, format, created_at, next, joins, meta, state
				FROM checkpoints_1 ORDER BY pk`,
			`INSERT INTO writes SELECT seq, checkpoint, task_id, ` + kinds.sql("kind") + `, idx, node, value FROM writes_1 ORDER BY seq`,
			`DROP TABLE writes_1`,
			`DROP TABLE checkpoints_1`,
		},
	},
}

// schemaVersion is the version of the schema this package writes.
func schemaVersion() int { return len(migrations) }

// migrate brings the database to the version of the last of list, applying the missing migrations
// and the new user_version in one immediate transaction, so that a process that crashes half way
// leaves the old version and two processes opening a new file apply each migration once. It
// refuses a database newer than list and one that is not a checkpoint database.
func migrate(ctx context.Context, db *sql.DB, path string, list []migration) error {
	conn, err := db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("checkpoint/sqlite: %s: %w", path, err)
	}
	defer conn.Close()

	// Most opens find the schema up to date and need no write lock.
	st, err := readSchemaState(ctx, conn)
	if err != nil {
		return fmt.Errorf("checkpoint/sqlite: %s: read the schema version: %w", path, err)
	}
	if err := st.check(path, len(list)); err != nil || st.version == len(list) {
		return err
	}

	tx, err := conn.BeginTx(ctx, nil) // BEGIN IMMEDIATE (the DSN's _txlock): take the write lock now
	if err != nil {
		return fmt.Errorf("checkpoint/sqlite: %s: begin the schema migration: %w", path, err)
	}
	defer tx.Rollback()
	// Another process may have migrated in between.
	if st, err = readSchemaState(ctx, tx); err != nil {
		return fmt.Errorf("checkpoint/sqlite: %s: read the schema version: %w", path, err)
	}
	if err := st.check(path, len(list)); err != nil || st.version == len(list) {
		return err
	}
	for v := st.version; v < len(list); v++ {
		for _, stmt := range list[v].stmts {
			if _, err := tx.ExecContext(ctx, stmt); err != nil {
				return fmt.Errorf("checkpoint/sqlite: %s: migrate the schema to version %d (%s): %w", path, v+1, list[v].name, err)
			}
		}
	}
	// PRAGMAs take no parameters; both values are integers of this package.
	if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", len(list))); err != nil {
		return fmt.Errorf("checkpoint/sqlite: %s: set the schema version: %w", path, err)
	}
	if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA application_id = %d", applicationID)); err != nil {
		return fmt.Errorf("checkpoint/sqlite: %s: set the application ID: %w", path, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("checkpoint/sqlite: %s: commit the schema migration to version %d: %w", path, len(list), err)
	}
	return nil
}

// schemaState is what decides whether a database can be used and migrated.
type schemaState struct {
	version int // PRAGMA user_version
	appID   int // PRAGMA application_id
	tables  int // tables in the database
}

type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// readSchemaState reads the state in one statement, so that it is one snapshot even outside a
// transaction: another process may be migrating the database.
func readSchemaState(ctx context.Context, q querier) (schemaState, error) {
	var st schemaState
	err := q.QueryRowContext(ctx, `SELECT
		(SELECT user_version FROM pragma_user_version),
		(SELECT application_id FROM pragma_application_id),
		(SELECT count(*) FROM sqlite_schema WHERE type = 'table')`).Scan(&st.version, &st.appID, &st.tables)
	return st, err
}

// check returns why a database in state st cannot be brought to version latest, or nil.
func (st schemaState) check(path string, latest int) error {
	foreign := func(format string, args ...any) error {
		msg := fmt.Sprintf("checkpoint/sqlite: %s is not a checkpoint database: ", path) + fmt.Sprintf(format, args...)
		return &fileError{msg: msg, kind: ErrForeignDatabase}
	}
	switch {
	case st.appID != 0 && st.appID != applicationID:
		return foreign("it belongs to another application (application_id %#x)", st.appID)
	case st.version != 0 && st.appID != applicationID:
		return foreign("it has schema version %d but not this package's application_id", st.version)
	case st.version == 0 && st.tables != 0:
		return foreign("it has tables (%d) but no checkpoint schema", st.tables)
	case st.version > latest:
		return &SchemaVersionError{Path: path, Version: st.version, Supported: latest}
	}
	return nil
}
