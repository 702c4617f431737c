// Package sqlite is a checkpoint.Saver that keeps checkpoints in a SQLite database file, with the
// pure Go driver modernc.org/sqlite (no cgo).
//
//	saver, err := sqlite.Open("data/checkpoints.db")
//	if err != nil {
//		return err
//	}
//	defer saver.Close()
//
// # Concurrency
//
// The database is in WAL (write-ahead log) mode: a commit appends the pages it changed to the log
// file next to the database (path + "-wal"), and readers keep reading a consistent snapshot while a
// writer commits, so reads never wait for writes nor writes for reads. Writes are serialized by
// SQLite; a Saver sends all its writes through one connection, and reads through a pool of
// read-only connections. Its writers do not queue one behind the other: the writes that come
// while a transaction commits are committed together in the next (group commit), each within a
// savepoint, so that one that fails is undone alone. When many threads write at once (the tasks of
// a superstep, the workers of a squad), a write waits for at most the commit under way and its
// own, and the log takes the pages a group changed once. Several Savers, in one process or in several
// processes on one machine, may share a file: a writer that finds the write lock taken waits for it
// up to the busy timeout (WithBusyTimeout, default 5 seconds), and every transaction that writes
// takes the write lock when it begins (BEGIN IMMEDIATE), so that two writers never deadlock. Under a
// sustained stream of writes from one process, another process's writer may wait long; raise the
// busy timeout if processes share a busy file. The file must be on a local file system: WAL needs
// shared memory, which network file systems do not provide. Do not open the database file with
// anything but SQLite while it is in use: closing any other descriptor of the file drops SQLite's
// POSIX locks in the whole process.
//
// # Effects
//
// What an application keeps beside its checkpoints (a squad's board, its messages) may live in
// tables of its own in the same file, changed in the transactions that save the checkpoints:
// WithEffects gives the Saver a handler that applies each checkpoint.WriteEffect write of
// PutWrites and PutStep with the *sql.Tx of the call, within the call's savepoint, so that a
// task's output and its changes commit together or not at all. Write runs the application's
// other changes through the same writer, grouped with the checkpoints' writes; DB is the
// read-only pool for reading them. Open accepts a checkpoint database with such tables.
//
// # Durability
//
// Every Put, PutWrites and PutStep is atomic, and committed when it returns (perhaps in one
// transaction with other callers' writes): a crash of the process then loses nothing. What a crash of the machine (power loss, kernel panic) may lose depends on
// WithSynchronous:
//
//   - SyncNormal (the default, PRAGMA synchronous=NORMAL) syncs the log to the disk only when it is
//     copied into the database (a WAL checkpoint, see below). The database is never corrupted, but the
//     transactions committed since the last sync may be lost: the run resumes from an earlier
//     checkpoint and redoes the steps after it. A commit costs no fsync.
//   - SyncFull (PRAGMA synchronous=FULL) syncs the log at every commit, so that nothing that
//     returned is lost, at the price of an fsync per commit (from about 0.1 ms on a fast SSD to
//     several milliseconds on a slow disk), shared by the writes committed together.
//
// The log is copied into the database (checkpointed) in the background, on a connection of the
// Saver's own, once a commit left WithWALAutocheckpoint pages (default 256 pages of 1 KiB) in it
// not yet copied: commits only append to the log and never wait for the copy's syncs. Should the
// copy fall behind, the commit that takes the log past eight times that copies it itself. The log
// file is truncated back to about that size when it is reused (PRAGMA journal_size_limit), so
// that a burst of large writes does not leave a large file behind. When the last connection to
// the database closes, SQLite checkpoints the log and removes it.
//
// # Storage
//
// New databases use pages of 1 KiB rather than SQLite's usual 4 KiB: a step writes a few small
// rows, and each commit appends every page it touched to the log, so smaller pages mean a smaller
// log and fewer checkpoints for the same log size. Large states still work (overflow pages), at a
// somewhat higher cost per megabyte. States and task write values are stored as given, never
// re-encoded; a checkpoint's frontier, joins and metadata use a compact binary encoding (a version byte,
// then counts and length-prefixed strings and bytes), which keeps any string and any argument
// exactly. New database files are created with permissions 0600 (and missing parent directories
// with 0700), since checkpoints hold the states of conversations.
//
// # Schema and migrations
//
// The schema has a version, stored in the database (PRAGMA user_version) and marked as this
// package's (PRAGMA application_id). The package holds an ordered list of migrations, each taking
// the schema from one version to the next; released migrations are never edited, a change of the
// schema is a new migration at the end. Open applies the missing migrations, all in one immediate
// transaction together with the new version number, so that an interrupted upgrade leaves the old
// version intact and two processes opening an old file upgrade it once. Open refuses, without
// changing anything:
//
//   - a database whose version is newer than this package knows (a *SchemaVersionError, which
//     errors.Is reports as ErrSchemaTooNew): downgrades are not supported, and an older program
//     could misread a newer schema;
//   - a file that is not a SQLite database (ErrNotDatabase);
//   - a SQLite database that another application made (ErrForeignDatabase): one with another
//     application ID, or with tables but no version. An empty file, or a missing one, is fine.
//
// A row that cannot be decoded (a damaged file, or a manual edit) makes Get and List fail with a
// *CorruptError naming the thread, the namespace, the checkpoint and the column.
package sqlite
