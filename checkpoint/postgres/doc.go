// Package postgres is a checkpoint.Saver that keeps checkpoints in a PostgreSQL database, through
// pgx (github.com/jackc/pgx/v5) and its connection pool. It is the saver for runs spread over
// several processes or machines; checkpoint/sqlite stays the zero-setup default for one machine.
//
//	saver, err := postgres.Open(ctx, "postgres://agiraph:secret@db.internal:5432/agiraph")
//	if err != nil {
//		return err
//	}
//	defer saver.Close()
//
// New makes a Saver on a *pgxpool.Pool the application already has; Close then leaves the pool
// open.
//
// # Concurrency
//
// Every Put, PutWrites, Get, List and DeleteThread is one SQL statement, so one transaction (a
// PutWrites or PutStep with effect writes is one transaction of several, see Effects):
// PostgreSQL's row locks and unique constraints make any number of Savers, in one process or in
// many, safe on one database, on one thread as on different ones. Putting the same checkpoint twice
// is an upsert on its (thread, namespace, ID) key, putting the same write twice keeps the first
// (ON CONFLICT DO NOTHING on its key), and a read sees one consistent snapshot of a checkpoint and
// its writes. Writes of concurrent calls come back in the order PostgreSQL numbered them.
//
// # Fencing
//
// Several processes sharing a thread need one writer at a time; a lease (a row saying which
// process runs the thread) gives that, but a process that lost its lease may not know it yet.
// Saver.Fenced makes every write check a row of the caller's in the statement that writes, and
// lock it (FOR SHARE): a write is made only while the row matches, a change of the row (a
// takeover) waits for the writes in progress, and the writes after it fail with ErrFenced. The
// package runner and the server's replicas fence their runs' checkpoints by their leases.
//
// # Effects
//
// What an application keeps beside its checkpoints (a squad's board, its messages) may live in
// tables of its own in the same database, changed in the transactions that save the checkpoints:
// WithEffects gives the Saver a handler that applies each checkpoint.WriteEffect write of
// PutWrites and PutStep with the pgx.Tx of the call, so that a task's output and its changes
// commit together or not at all. A call that carries effect writes is a transaction of a few
// statements rather than one statement; the others are unchanged. Write runs the application's
// other changes in a transaction (checking the fence of a fenced Saver); Pool is for reading
// them.
//
// # Durability
//
// A call that returned is committed. With PostgreSQL's default, synchronous_commit=on, a commit
// waits until the server has flushed its write-ahead log to the disk, so nothing that returned is
// lost even if the server's machine loses power: that costs an fsync of the server's per Put and
// per PutWrites. With synchronous_commit=off (add it to the URL's parameters, or set it for the
// database or the role), a commit returns before the flush: the database is never corrupted, but a
// crash of the server may lose the last commits (by default up to about 0.6 s of them) — the run
// then resumes from an earlier checkpoint and redoes the steps after it, as with checkpoint/sqlite's
// default, SyncNormal.
//
// # Storage
//
// A checkpoint is a row, a task write is a row; states and write values are stored as given, never
// re-encoded, and a checkpoint without a snapshot stores none, so storage grows with the updates of
// the steps, not with the whole state. The frontier, joins and metadata use the compact binary
// encoding checkpoint/sqlite uses. Checkpoint IDs are ordered byte-wise (collation "C"), whatever
// the database's locale.
//
// # Schema and migrations
//
// The tables are agiraph_checkpoints, agiraph_checkpoint_writes and agiraph_checkpoint_schema, in
// the first schema of the connection's search_path (add search_path to the URL to keep them
// apart). The schema has a version: agiraph_checkpoint_schema has a row for each migration applied.
// The package holds an ordered list of migrations, each taking the schema from one version to the
// next; released migrations are never edited, a change of the schema is a new migration at the
// end. Open and New apply the missing migrations, all in one transaction that also records them and
// holds an advisory lock, so that an interrupted upgrade leaves the old version intact and several
// processes starting on an old database upgrade it once. They refuse a database whose version is
// newer than this package knows, without changing it (a *SchemaVersionError, which errors.Is
// reports as ErrSchemaTooNew): downgrades are not supported, and an older program could misread a
// newer schema.
//
// A row whose encoded columns cannot be decoded (a manual edit, say) makes Get and List fail with a
// *CorruptError naming the thread, the namespace, the checkpoint and the column.
package postgres
