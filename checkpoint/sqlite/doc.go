// Package sqlite is a checkpoint.Saver that keeps checkpoints in a SQLite database file, with the
// pure Go driver modernc.org/sqlite (no cgo). It is the default saver, for runs on one machine.
//
//	saver, err := sqlite.Open("data/checkpoints.db")
//	if err != nil {
//		return err
//	}
//	defer saver.Close()
//
// [Open] creates the file (mode 0600) or brings its schema up to date. Any number of Savers, in
// one process or several on one machine, may share a file on a local file system. A call that
// returned is committed: a crash of the process loses nothing, and [WithSynchronous] says what a
// power loss may. [WithEffects] and [Saver.Write] let an application keep its own tables in the
// same file, committed with the checkpoints.
//
// Concurrency, durability, storage and the schema's migrations are in docs/checkpoints.md
// (SQLite).
package sqlite
