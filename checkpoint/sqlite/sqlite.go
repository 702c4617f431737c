package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"time"

	sqlitedrv "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/agiraph/agiraph/checkpoint"
	"github.com/agiraph/agiraph/checkpoint/internal/codec"
	"github.com/agiraph/agiraph/internal/sqliteuri"
	"github.com/google/uuid"
)

// Synchronous is how hard SQLite works to make a commit survive a power failure (PRAGMA
// synchronous). See the package documentation for the trade-off.
type Synchronous int

const (
	// SyncNormal syncs the write-ahead log only when it is copied into the database: commits are
	// atomic and the database cannot be corrupted, but a power failure or an operating system
	// crash may lose the last commits. A crash of the process alone loses nothing. The default.
	SyncNormal Synchronous = iota
	// SyncFull syncs the write-ahead log at every commit: a commit that returned survives a power
	// failure, at the price of one fsync per Put and per PutWrites.
	SyncFull
)

func (s Synchronous) pragma() string {
	if s == SyncFull {
		return "FULL"
	}
	return "NORMAL"
}

// Defaults of the options.
const (
	DefaultBusyTimeout       = 5 * time.Second
	DefaultWALAutocheckpoint = 2048 // pages, so a log of about 4 MiB in a new database, as SQLite's own default
)

// pageSize is the page size of new databases. Each commit appends every page it changed to the
// write-ahead log, so small pages keep a step's log writes, and the log, small; but a page too
// small for a few rows leaves much of itself unused as rows grow. Half SQLite's usual 4 KiB
// keeps both small (see docs/checkpoints.md); states of many pages are rare, and SQLite handles
// them with overflow pages.
const pageSize = 2048

// Option configures Open.
type Option func(*options)

type options struct {
	busyTimeout    time.Duration
	sync           Synchronous
	autocheckpoint int
	readers        int
	effects        EffectHandler
}

// An EffectHandler applies an effect write (checkpoint.WriteEffect) of the thread threadID to
// what its owner keeps in the database, with tx, the transaction that saves the writes of its
// call, and ctx for it (not the caller's context). It must not call the Saver.
type EffectHandler func(ctx context.Context, tx *sql.Tx, threadID string, w checkpoint.Write) error

// WithBusyTimeout sets how long a call waits for a lock another process (or another Saver on the
// same file) holds before failing with SQLITE_BUSY (default DefaultBusyTimeout). Writers of one
// Saver never wait on each other this way: they share its single writing connection, those that
// come while a transaction commits grouped into the next.
func WithBusyTimeout(d time.Duration) Option {
	return func(o *options) { o.busyTimeout = d }
}

// WithSynchronous chooses the durability of commits (default SyncNormal).
func WithSynchronous(s Synchronous) Option {
	return func(o *options) { o.sync = s }
}

// WithWALAutocheckpoint sets after how many pages (of 2 KiB in a database this package created)
// not yet copied the write-ahead log is copied into the database, in the background (default
// DefaultWALAutocheckpoint; a commit copies it itself at eight times that, PRAGMA
// wal_autocheckpoint); a log file that grew larger than a quarter more than that is truncated when
// it is reused (PRAGMA journal_size_limit). A larger value means fewer checkpoints and a larger
// log file; 0 or less keeps the default.
func WithWALAutocheckpoint(pages int) Option {
	return func(o *options) { o.autocheckpoint = pages }
}

// WithEffects makes the Saver give each effect write of PutWrites and PutStep to fn, in the
// transaction that saves the writes of the call and within the savepoint of that call: when fn
// fails, nothing of the call is saved, and the calls grouped with it in the transaction are not
// affected. A write's key is kept, so that fn gets it once (see checkpoint.WriteEffect). A Saver
// without it refuses effect writes with checkpoint.ErrNoEffectHandler.
func WithEffects(fn EffectHandler) Option {
	return func(o *options) { o.effects = fn }
}

// WithMaxReaders sets how many connections may read at once (default: GOMAXPROCS, at least 2).
// Reads never wait for writes, nor writes for reads.
func WithMaxReaders(n int) Option {
	return func(o *options) { o.readers = n }
}

// Saver is a checkpoint.Saver that keeps checkpoints in a SQLite database file. It is safe for
// concurrent use, and several Savers, in one process or in several, may use the same file.
type Saver struct {
	path string
	wdb  *sql.DB // one connection, through c
	c    committer
	rdb  *sql.DB // reads, in read-only transactions
	log  *logCopier

	effects EffectHandler // nil: effect writes are refused

	putThread, putCheckpoint, putWriteSelect, putWrite, lookup *sql.Stmt
	deleteWrites, deleteCheckpoints, deleteThread              *sql.Stmt
	getByID, getLatest, getWrites                              *sql.Stmt
	list                                                       [8]*sql.Stmt // by the bits of listBefore, listSource, listRunID

	sync Synchronous
}

var (
	_ checkpoint.StepSaver    = (*Saver)(nil)
	_ checkpoint.CommitSyncer = (*Saver)(nil)
)

// Open opens the checkpoint database at path, creating the file and its parent directories if
// they are missing, and brings its schema up to date. It fails with an error wrapping
// ErrNotDatabase for a file that is not a SQLite database, ErrForeignDatabase for a database
// another application made, and a *SchemaVersionError for a database of a newer version of this
// package. Close the Saver when done.
func Open(path string, opts ...Option) (*Saver, error) {
	o := options{busyTimeout: DefaultBusyTimeout, autocheckpoint: DefaultWALAutocheckpoint, readers: max(2, runtime.GOMAXPROCS(0))}
	for _, opt := range opts {
		opt(&o)
	}
	o.busyTimeout = max(0, o.busyTimeout)
	if o.autocheckpoint <= 0 {
		o.autocheckpoint = DefaultWALAutocheckpoint
	}
	if o.readers < 1 {
		o.readers = 1
	}
	if path == "" {
		return nil, errors.New("checkpoint/sqlite: open: the database path is empty")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("checkpoint/sqlite: open %s: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o700); err != nil {
		return nil, fmt.Errorf("checkpoint/sqlite: open %s: %w", path, err)
	}
	// Create a missing file privately (SQLite would use 0644): checkpoints hold the states of
	// conversations. The log and shared-memory files take the database file's permissions.
	if f, err := os.OpenFile(abs, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600); err == nil {
		_ = f.Close() // empty: nothing to lose
	} else if !errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("checkpoint/sqlite: open %s: %w", path, err)
	}

	s := &Saver{path: path, effects: o.effects, sync: o.sync}
	if err := s.open(abs, o); err != nil {
		_ = s.Close() // the open's error is the one to report
		return nil, err
	}
	return s, nil
}

func (s *Saver) open(abs string, o options) error {
	ctx := context.Background()
	var err error
	if s.wdb, err = sql.Open("sqlite", dsn(abs, o, true)); err != nil {
		return fmt.Errorf("checkpoint/sqlite: open %s: %w", s.path, err)
	}
	s.wdb.SetMaxOpenConns(1)
	s.wdb.SetMaxIdleConns(1)
	s.wdb.SetConnMaxIdleTime(0)
	s.wdb.SetConnMaxLifetime(0)
	if s.rdb, err = sql.Open("sqlite", dsn(abs, o, false)); err != nil {
		return fmt.Errorf("checkpoint/sqlite: open %s: %w", s.path, err)
	}
	s.rdb.SetMaxOpenConns(o.readers)
	s.rdb.SetMaxIdleConns(o.readers)

	// Connections that open a new file at the same time race to switch it to WAL and to create the
	// schema; SQLite answers some of them SQLITE_BUSY at once, without waiting (to avoid a
	// deadlock between two readers that both want to write), so the setup is retried for as long
	// as the busy timeout allows.
	err = retryBusy(o.busyTimeout, func() error {
		if err := s.wdb.PingContext(ctx); err != nil {
			return openError(s.path, err)
		}
		if err := migrate(ctx, s.wdb, s.path, migrations); err != nil {
			if e := notADatabase(s.path, err); e != nil {
				return e
			}
			return err
		}
		if err := s.rdb.PingContext(ctx); err != nil {
			return openError(s.path, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if s.log, err = newLogCopier(abs, dsn(abs, o, true), o.autocheckpoint); err != nil {
		return fmt.Errorf("checkpoint/sqlite: open %s: %w", s.path, err)
	}
	s.c.committed = s.log.poked
	return s.prepare(ctx)
}

// retryBusy calls f until it returns anything but SQLITE_BUSY or SQLITE_LOCKED, or timeout has
// passed.
func retryBusy(timeout time.Duration, f func() error) error {
	deadline := time.Now().Add(timeout)
	for delay := time.Millisecond; ; delay = min(2*delay, 50*time.Millisecond) {
		err := f()
		var se *sqlitedrv.Error
		if err == nil || !errors.As(err, &se) || time.Now().After(deadline) {
			return err
		}
		if code := se.Code() & 0xff; code != sqlite3.SQLITE_BUSY && code != sqlite3.SQLITE_LOCKED {
			return err
		}
		time.Sleep(delay)
	}
}

// dsn is the data source name of the connections of one pool; every connection applies its
// settings when it opens. The driver applies _busy_timeout first, so that what follows waits for
// locks, then the _pragma list, then _foreign_keys, _journal_mode, _synchronous and _query_only:
// page_size (in the list) thus comes before journal_mode, as it must, since WAL fixes the page
// size of a new database.
func dsn(abs string, o options, write bool) string {
	q := url.Values{}
	q.Set("_busy_timeout", strconv.FormatInt(o.busyTimeout.Milliseconds(), 10))
	q.Set("_synchronous", o.sync.pragma())
	if write {
		q["_pragma"] = []string{
			fmt.Sprintf("page_size(%d)", pageSize),
			fmt.Sprintf("wal_autocheckpoint(%d)", o.autocheckpoint*backstop), // the copier's (see logCopier)
			fmt.Sprintf("journal_size_limit(%d)", journalSizeLimit(o.autocheckpoint)),
		}
		q.Set("_foreign_keys", "1")
		q.Set("_journal_mode", "WAL")
		q.Set("_txlock", "immediate")
	} else {
		// Readers do not write; the last connection to close checkpoints the log, which
		// query_only does not prevent.
		q.Set("_query_only", "1")
	}
	return sqliteuri.Of(abs, q)
}

// journalSizeLimit is the size the write-ahead log is truncated to when it restarts: a little more
// than the autocheckpoint threshold, so that the log is truncated only after a commit made it
// grow past its usual size (a large state, say).
func journalSizeLimit(autocheckpoint int) int {
	return 32 + autocheckpoint*5/4*(pageSize+24)
}

// openError explains an error of opening or pinging the database.
func openError(path string, err error) error {
	if e := notADatabase(path, err); e != nil {
		return e
	}
	return fmt.Errorf("checkpoint/sqlite: open %s: %w", path, err)
}

// notADatabase returns the error of Open for a file that is not a database, if err says so.
func notADatabase(path string, err error) error {
	var se *sqlitedrv.Error
	if errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_NOTADB {
		return &fileError{msg: fmt.Sprintf("checkpoint/sqlite: %s is not a SQLite database (%v)", path, err), kind: ErrNotDatabase, err: err}
	}
	return nil
}

const cpColumns = `pk, id, parent_id, step, source, run_id, format, created_at, next, joins, meta, state, state IS NULL`

// threadIs is the condition that a checkpoint is of the thread whose ID is the parameter.
const threadIs = `thread = (SELECT id FROM checkpoint_threads WHERE name = ?)`

// The list statements, one per combination of the filters SQL applies (these bits), so that each
// uses the (thread, ns, id) index for its range and its order.
const (
	listBefore = 1 << iota
	listSource
	listRunID
)

func listQuery(variant int) string {
	q := `SELECT ` + cpColumns + ` FROM checkpoints WHERE ` + threadIs + ` AND ns = ?`
	if variant&listBefore != 0 {
		q += ` AND id < ?`
	}
	if variant&listSource != 0 {
		q += ` AND source = ?`
	}
	if variant&listRunID != 0 {
		q += ` AND run_id = ?`
	}
	return q + ` ORDER BY id DESC LIMIT ?`
}

// prepare prepares the statements once; database/sql prepares each again on every connection of
// its pool the first time it runs there, and keeps it.
func (s *Saver) prepare(ctx context.Context) error {
	type stmt struct {
		db   *sql.DB
		dst  **sql.Stmt
		text string
	}
	stmts := []stmt{
		{s.wdb, &s.putThread, `INSERT INTO checkpoint_threads (name) VALUES (?) ON CONFLICT (name) DO NOTHING`},
		{s.wdb, &s.putCheckpoint, `INSERT INTO checkpoints (thread, ns, id, parent_id, step, source, run_id, format, created_at, next, joins, meta, state)
			VALUES ((SELECT id FROM checkpoint_threads WHERE name = ?), ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (thread, ns, id) DO UPDATE SET parent_id = excluded.parent_id, step = excluded.step,
				source = excluded.source, run_id = excluded.run_id, format = excluded.format, created_at = excluded.created_at,
				next = excluded.next, joins = excluded.joins, meta = excluded.meta, state = excluded.state`},
		{s.wdb, &s.putWriteSelect, `INSERT INTO writes (checkpoint, task_id, kind, idx, node, value)
			SELECT pk, ?, ?, ?, ?, ? FROM checkpoints WHERE ` + threadIs + ` AND ns = ? AND id = ?
			ON CONFLICT (checkpoint, task_id, kind, idx) DO NOTHING`},
		{s.wdb, &s.putWrite, `INSERT INTO writes (checkpoint, task_id, kind, idx, node, value) VALUES (?, ?, ?, ?, ?, ?)
			ON CONFLICT (checkpoint, task_id, kind, idx) DO NOTHING`},
		{s.wdb, &s.lookup, `SELECT pk FROM checkpoints WHERE ` + threadIs + ` AND ns = ? AND id = ?`},
		{s.wdb, &s.deleteWrites, `DELETE FROM writes WHERE checkpoint IN (SELECT pk FROM checkpoints WHERE ` + threadIs + `)`},
		{s.wdb, &s.deleteCheckpoints, `DELETE FROM checkpoints WHERE ` + threadIs},
		{s.wdb, &s.deleteThread, `DELETE FROM checkpoint_threads WHERE name = ?`},
		{s.rdb, &s.getByID, `SELECT ` + cpColumns + ` FROM checkpoints WHERE ` + threadIs + ` AND ns = ? AND id = ?`},
		{s.rdb, &s.getLatest, `SELECT ` + cpColumns + ` FROM checkpoints WHERE ` + threadIs + ` AND ns = ? ORDER BY id DESC LIMIT 1`},
		{s.rdb, &s.getWrites, `SELECT checkpoint, task_id, kind, idx, node, value, value IS NULL FROM writes
			WHERE checkpoint IN (SELECT value FROM json_each(?)) ORDER BY seq`},
	}
	for v := range s.list {
		stmts = append(stmts, stmt{s.rdb, &s.list[v], listQuery(v)})
	}
	if err := s.c.prepare(ctx, s.wdb); err != nil {
		return fmt.Errorf("checkpoint/sqlite: open %s: %w", s.path, err)
	}
	for _, st := range stmts {
		p, err := st.db.PrepareContext(ctx, st.text)
		if err != nil {
			return fmt.Errorf("checkpoint/sqlite: open %s: prepare %q: %w", s.path, st.text, err)
		}
		*st.dst = p
	}
	return nil
}

// Close closes the database. Calls after Close fail. When it is the last connection to the file,
// SQLite copies the write-ahead log into the database and removes it.
func (s *Saver) Close() error {
	var errs []error
	for _, st := range append([]*sql.Stmt{s.putThread, s.putCheckpoint, s.putWriteSelect, s.putWrite, s.lookup, s.deleteWrites,
		s.deleteCheckpoints, s.deleteThread, s.getByID, s.getLatest, s.getWrites}, s.list[:]...) {
		if st != nil {
			errs = append(errs, st.Close())
		}
	}
	errs = append(errs, s.c.close())
	if s.log != nil {
		errs = append(errs, s.log.close())
	}
	// Readers first, so that the writer's connection is the last and checkpoints the log.
	if s.rdb != nil {
		errs = append(errs, s.rdb.Close())
	}
	if s.wdb != nil {
		errs = append(errs, s.wdb.Close())
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("checkpoint/sqlite: close %s: %w", s.path, err)
	}
	return nil
}

// Put stores cp under cfg's thread and namespace; a checkpoint with the same ID there is replaced
// and keeps its writes.
func (s *Saver) Put(ctx context.Context, cfg checkpoint.Config, cp checkpoint.Checkpoint) (checkpoint.Config, error) {
	if err := ctx.Err(); err != nil {
		return checkpoint.Config{}, err
	}
	if cfg.ThreadID == "" || cp.ID == "" {
		return checkpoint.Config{}, fmt.Errorf("checkpoint/sqlite: put needs a thread ID and a checkpoint ID (thread %q, checkpoint %q)", cfg.ThreadID, cp.ID)
	}
	err := s.c.do(ctx, false, func(ctx context.Context, tx *sql.Tx) error {
		return s.put(ctx, tx, cfg, cp)
	})
	if err != nil {
		return checkpoint.Config{}, putError(cfg, cp, err)
	}
	return checkpoint.Config{ThreadID: cfg.ThreadID, NS: cfg.NS, CheckpointID: cp.ID}, nil
}

// put puts cp under cfg in tx, and cfg's thread first if it is new. A checkpoint with a parent
// is put first as one of a thread that exists, which it nearly always is: that saves a statement
// a checkpoint. A thread row it lacks fails the statement alone (its thread is NOT NULL), and
// then the thread is put and the checkpoint again.
func (s *Saver) put(ctx context.Context, tx *sql.Tx, cfg checkpoint.Config, cp checkpoint.Checkpoint) error {
	var created any
	if !cp.CreatedAt.IsZero() {
		created = cp.CreatedAt.UnixMicro()
	}
	stmt := tx.StmtContext(ctx, s.putCheckpoint)
	putCheckpoint := func() error {
		_, err := stmt.ExecContext(ctx, cfg.ThreadID, cfg.NS, idArg(cp.ID), idArg(cp.ParentID), cp.Step, sources.arg(string(cp.Source)), idArg(cp.RunID),
			cp.Format, created, codec.EncodeNext(cp.Next), codec.EncodeJoins(cp.Joins), codec.EncodeMeta(cp.Meta), blob(cp.State))
		return err
	}
	if cp.ParentID != "" {
		var se *sqlitedrv.Error
		if err := putCheckpoint(); err == nil || !errors.As(err, &se) || se.Code() != sqlite3.SQLITE_CONSTRAINT_NOTNULL {
			return err
		}
	}
	if _, err := tx.StmtContext(ctx, s.putThread).ExecContext(ctx, cfg.ThreadID); err != nil {
		return err
	}
	return putCheckpoint()
}

func putError(cfg checkpoint.Config, cp checkpoint.Checkpoint, err error) error {
	return fmt.Errorf("checkpoint/sqlite: put checkpoint %s of thread %q namespace %q: %w", cp.ID, cfg.ThreadID, cfg.NS, err)
}

// PutStep records writes of the checkpoint parent addresses, then stores cp under cfg, in one
// transaction (see checkpoint.StepSaver): a step costs one commit, and one sync with SyncFull.
func (s *Saver) PutStep(ctx context.Context, parent checkpoint.Config, writes []checkpoint.Write, cfg checkpoint.Config, cp checkpoint.Checkpoint) (checkpoint.Config, error) {
	if len(writes) == 0 {
		return s.Put(ctx, cfg, cp)
	}
	if err := ctx.Err(); err != nil {
		return checkpoint.Config{}, err
	}
	if cfg.ThreadID == "" || cp.ID == "" || parent.CheckpointID == "" {
		return checkpoint.Config{}, fmt.Errorf("checkpoint/sqlite: put step needs a thread ID, a checkpoint ID and its parent's (thread %q, checkpoint %q, parent %q)", cfg.ThreadID, cp.ID, parent.CheckpointID)
	}
	if err := s.checkEffects(writes); err != nil {
		return checkpoint.Config{}, s.writesError(parent, err)
	}
	var wrote bool
	err := s.c.do(ctx, false, func(ctx context.Context, tx *sql.Tx) error {
		if err := s.insertWrites(ctx, tx, parent, writes); err != nil {
			return err
		}
		wrote = true
		return s.put(ctx, tx, cfg, cp)
	})
	switch {
	case err == nil:
		return checkpoint.Config{ThreadID: cfg.ThreadID, NS: cfg.NS, CheckpointID: cp.ID}, nil
	case !wrote:
		return checkpoint.Config{}, s.writesError(parent, err)
	}
	return checkpoint.Config{}, putError(cfg, cp, err)
}

// blob is b as a query argument: NULL for nil, the bytes otherwise. An empty slice is passed as
// empty text, which SQLite stores as a zero-length value that is not NULL, whatever the driver
// makes of a zero-length buffer.
func blob(b []byte) any {
	if b == nil {
		return nil
	}
	if len(b) == 0 {
		return ""
	}
	return b
}

// PutWrites records writes of tasks of the checkpoint cfg addresses, in their order, ignoring a
// write whose (TaskID, Kind, Idx) the checkpoint already has. It fails with an error wrapping
// checkpoint.ErrNotFound when the checkpoint does not exist. The writes of one call are saved
// together or not at all.
func (s *Saver) PutWrites(ctx context.Context, cfg checkpoint.Config, writes []checkpoint.Write) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if cfg.CheckpointID == "" {
		return fmt.Errorf("checkpoint/sqlite: put writes of thread %q namespace %q: the config names no checkpoint", cfg.ThreadID, cfg.NS)
	}
	if len(writes) == 0 {
		if err := checkExists(ctx, s.lookup, cfg); err != nil {
			return s.writesError(cfg, err)
		}
		return nil
	}
	if err := s.checkEffects(writes); err != nil {
		return s.writesError(cfg, err)
	}
	insert := func(ctx context.Context, tx *sql.Tx) error {
		return s.insertWrites(ctx, tx, cfg, writes)
	}
	// A write alone is one statement, but an effect write takes its handler's too.
	alone := len(writes) == 1 && writes[0].Kind != checkpoint.WriteEffect
	if err := s.c.do(ctx, alone, insert); err != nil {
		return s.writesError(cfg, err)
	}
	return nil
}

// insertWrites inserts writes of the checkpoint cfg addresses, in their order, in tx, skipping
// those whose key it has, and gives each effect write it inserts to the effect handler;
// ErrNotFound when the checkpoint does not exist. One write that is not an effect takes one
// statement that changes anything.
func (s *Saver) insertWrites(ctx context.Context, tx *sql.Tx, cfg checkpoint.Config, writes []checkpoint.Write) error {
	if len(writes) == 1 {
		// The common case, one statement: the checkpoint is looked up while inserting.
		w := writes[0]
		res, err := bind(ctx, tx, s.putWriteSelect).ExecContext(ctx, w.TaskID, kinds.arg(string(w.Kind)), w.Idx, w.Node, value(w), cfg.ThreadID, cfg.NS, idArg(cfg.CheckpointID))
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err != nil {
			return err
		}
		if n == 1 {
			return s.applyEffect(ctx, tx, cfg.ThreadID, w, n)
		}
		// Nothing was inserted: the write is a duplicate, or the checkpoint does not exist.
		return checkExists(ctx, bind(ctx, tx, s.lookup), cfg)
	}
	pk, err := lookupPK(ctx, bind(ctx, tx, s.lookup), cfg)
	if err != nil {
		return err
	}
	stmt := bind(ctx, tx, s.putWrite)
	for _, w := range writes {
		res, err := stmt.ExecContext(ctx, pk, w.TaskID, kinds.arg(string(w.Kind)), w.Idx, w.Node, value(w))
		if err != nil {
			return err
		}
		if w.Kind != checkpoint.WriteEffect {
			continue
		}
		n, err := res.RowsAffected()
		if err != nil {
			return err
		}
		if err := s.applyEffect(ctx, tx, cfg.ThreadID, w, n); err != nil {
			return err
		}
	}
	return nil
}

// value is the value of w as stored: an effect write's key is kept, not its value.
func value(w checkpoint.Write) any {
	if w.Kind == checkpoint.WriteEffect {
		return nil
	}
	return blob(w.Value)
}

// applyEffect gives w to the effect handler when it is an effect write and inserting it changed
// n (1) rows, that is when its key is new.
func (s *Saver) applyEffect(ctx context.Context, tx *sql.Tx, threadID string, w checkpoint.Write, n int64) error {
	if w.Kind != checkpoint.WriteEffect || n == 0 {
		return nil
	}
	if err := s.effects(ctx, tx, threadID, w); err != nil {
		return fmt.Errorf("effect %d of task %q: %w", w.Idx, w.TaskID, err)
	}
	return nil
}

// checkEffects refuses effect writes when the Saver has no effect handler.
func (s *Saver) checkEffects(writes []checkpoint.Write) error {
	if s.effects == nil && slices.ContainsFunc(writes, func(w checkpoint.Write) bool { return w.Kind == checkpoint.WriteEffect }) {
		return checkpoint.ErrNoEffectHandler
	}
	return nil
}

// Write runs fn in a transaction of the Saver's writer, as it runs PutWrites and PutStep: grouped
// with the writes that come at the same time, in its own savepoint, so that fn's error undoes
// only what fn did. It returns once the transaction committed, with fn's error or the commit's.
// It is for the changes of what an owner keeps beside the checkpoints in the database, made
// outside any graph task; fn must use tx, and the ctx it is given for it (the group's, not the
// caller's), and must not call the Saver. A caller whose ctx ends before its group begins gets
// ctx's error, and fn does not run.
func (s *Saver) Write(ctx context.Context, fn func(ctx context.Context, tx *sql.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := s.c.do(ctx, false, fn); err != nil {
		return fmt.Errorf("checkpoint/sqlite: write in %s: %w", s.path, err)
	}
	return nil
}

// OpenReader opens the database at path to read only: connections that refuse to write
// (WithMaxReaders of them; its other options are Open's), for a program that reads what a Saver
// wrote — in this process or another — without opening one: it migrates and prepares nothing,
// and changes nothing of its own (SQLite itself still finishes, as any connection does, what a
// writer killed in the middle of a change left behind). A missing file is an error wrapping
// fs.ErrNotExist. Close the DB when done.
func OpenReader(path string, opts ...Option) (*sql.DB, error) {
	o := options{busyTimeout: DefaultBusyTimeout, readers: 1}
	for _, opt := range opts {
		opt(&o)
	}
	abs, err := filepath.Abs(path)
	if err == nil {
		_, err = os.Stat(abs)
	}
	if err != nil {
		return nil, fmt.Errorf("checkpoint/sqlite: open %s to read: %w", path, err)
	}
	// query_only, not mode=ro: a connection opened read-only could not roll back what a writer
	// killed while it made the database left in its journal, and would refuse to read it.
	db, err := sql.Open("sqlite", dsn(abs, o, false))
	if err != nil {
		return nil, fmt.Errorf("checkpoint/sqlite: open %s to read: %w", path, err)
	}
	db.SetMaxOpenConns(max(o.readers, 1))
	if err := db.Ping(); err != nil {
		_ = db.Close() // the ping's error is the one to report
		return nil, openError(path, err)
	}
	return db, nil
}

// Prepare prepares query on the Saver's writing connection, for the functions of Write and the
// effect handler to run in their transaction through tx.StmtContext: an owner of tables beside
// the checkpoints prepares its statements once rather than at every write. Close the statement
// before the Saver.
func (s *Saver) Prepare(ctx context.Context, query string) (*sql.Stmt, error) {
	st, err := s.wdb.PrepareContext(ctx, query)
	if err != nil {
		return nil, fmt.Errorf("checkpoint/sqlite: prepare in %s: %w", s.path, err)
	}
	return st, nil
}

// SyncsCommits reports whether the saver syncs each commit to the disk before it returns: with
// SyncFull (see checkpoint.CommitSyncer).
func (s *Saver) SyncsCommits() bool { return s.sync == SyncFull }

// DB returns the Saver's pool of read-only connections to the database, for reading what an
// owner keeps beside the checkpoints. Its connections refuse to write: writes go through Write,
// or an effect handler (WithEffects). The Saver closes it.
func (s *Saver) DB() *sql.DB { return s.rdb }

// checkExists returns checkpoint.ErrNotFound when the checkpoint cfg addresses does not exist.
func checkExists(ctx context.Context, lookup *sql.Stmt, cfg checkpoint.Config) error {
	_, err := lookupPK(ctx, lookup, cfg)
	return err
}

// lookupPK returns the row of the checkpoint cfg addresses, or checkpoint.ErrNotFound.
func lookupPK(ctx context.Context, lookup *sql.Stmt, cfg checkpoint.Config) (int64, error) {
	var pk int64
	err := lookup.QueryRowContext(ctx, cfg.ThreadID, cfg.NS, idArg(cfg.CheckpointID)).Scan(&pk)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, checkpoint.ErrNotFound
	}
	return pk, err
}

func (s *Saver) writesError(cfg checkpoint.Config, err error) error {
	return fmt.Errorf("checkpoint/sqlite: put writes of thread %q namespace %q checkpoint %q: %w", cfg.ThreadID, cfg.NS, cfg.CheckpointID, err)
}

// Get returns the checkpoint cfg addresses, or the latest of its namespace (the greatest ID) when
// cfg.CheckpointID is empty, with its writes, read in one transaction. It returns an error
// wrapping checkpoint.ErrNotFound when there is none, and a *CorruptError for a row that cannot be
// decoded.
func (s *Saver) Get(ctx context.Context, cfg checkpoint.Config) (*checkpoint.Tuple, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	tx, err := s.rdb.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, s.getError(cfg, err)
	}
	defer tx.Rollback()
	var row *sql.Row
	if cfg.CheckpointID == "" {
		row = tx.StmtContext(ctx, s.getLatest).QueryRowContext(ctx, cfg.ThreadID, cfg.NS)
	} else {
		row = tx.StmtContext(ctx, s.getByID).QueryRowContext(ctx, cfg.ThreadID, cfg.NS, idArg(cfg.CheckpointID))
	}
	var r cpRow
	if err := r.scan(row); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			err = checkpoint.ErrNotFound
		}
		return nil, s.getError(cfg, err)
	}
	t, pk, err := r.tuple(cfg)
	if err != nil {
		return nil, err
	}
	if err := s.writes(ctx, tx, cfg, []*checkpoint.Tuple{t}, []int64{pk}); err != nil {
		return nil, err
	}
	if err := tx.Commit(); err != nil {
		return nil, s.getError(cfg, err)
	}
	return t, nil
}

func (s *Saver) getError(cfg checkpoint.Config, err error) error {
	what := "the latest checkpoint"
	if cfg.CheckpointID != "" {
		what = "checkpoint " + cfg.CheckpointID
	}
	return fmt.Errorf("checkpoint/sqlite: get %s of thread %q namespace %q: %w", what, cfg.ThreadID, cfg.NS, err)
}

// List returns the checkpoints of cfg's thread and namespace, newest (greatest ID) first, with
// their writes, read in one transaction of two queries (the checkpoints, then all their writes),
// so a page of a long thread is cheap to read. Before, Source and RunID are applied by SQLite,
// Meta by ListOptions.Match; Limit counts the checkpoints that pass every filter. IDs order
// byte-wise, except that an ID that is a UUID in its canonical text (as the graph engine makes
// them) is greater than every ID that is not one: see idArg.
func (s *Saver) List(ctx context.Context, cfg checkpoint.Config, opts checkpoint.ListOptions) ([]checkpoint.Tuple, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	variant, args := 0, []any{cfg.ThreadID, cfg.NS}
	if opts.Before != "" {
		variant |= listBefore
		args = append(args, idArg(opts.Before))
	}
	if opts.Source != "" {
		variant |= listSource
		args = append(args, sources.arg(string(opts.Source)))
	}
	if opts.RunID != "" {
		variant |= listRunID
		args = append(args, idArg(opts.RunID))
	}
	limit := opts.Limit
	if limit <= 0 || len(opts.Meta) > 0 {
		limit = -1 // no limit in SQL: the Meta filter is applied while reading
	}
	args = append(args, limit)

	tx, err := s.rdb.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, s.listError(cfg, err)
	}
	defer tx.Rollback()
	rows, err := tx.StmtContext(ctx, s.list[variant]).QueryContext(ctx, args...)
	if err != nil {
		return nil, s.listError(cfg, err)
	}
	var out []checkpoint.Tuple
	var pks []int64
	for rows.Next() {
		var r cpRow
		if err := r.scan(rows); err != nil {
			rows.Close()
			return nil, s.listError(cfg, err)
		}
		t, pk, err := r.tuple(cfg)
		if err != nil {
			rows.Close()
			return nil, err
		}
		if !opts.Match(&t.Checkpoint) {
			continue
		}
		out = append(out, *t)
		pks = append(pks, pk)
		if opts.Limit > 0 && len(out) == opts.Limit {
			break
		}
	}
	if err := rows.Close(); err != nil {
		return nil, s.listError(cfg, err)
	}
	if err := rows.Err(); err != nil {
		return nil, s.listError(cfg, err)
	}
	tuples := make([]*checkpoint.Tuple, len(out))
	for i := range out {
		tuples[i] = &out[i]
	}
	if err := s.writes(ctx, tx, cfg, tuples, pks); err != nil {
		return nil, err
	}
	if err := tx.Commit(); err != nil {
		return nil, s.listError(cfg, err)
	}
	return out, nil
}

func (s *Saver) listError(cfg checkpoint.Config, err error) error {
	return fmt.Errorf("checkpoint/sqlite: list checkpoints of thread %q namespace %q: %w", cfg.ThreadID, cfg.NS, err)
}

// DeleteThread removes every checkpoint and write of a thread, in all namespaces, in one
// transaction. Deleting a thread that has nothing is not an error.
func (s *Saver) DeleteThread(ctx context.Context, threadID string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	err := s.c.do(ctx, false, func(ctx context.Context, tx *sql.Tx) error {
		if _, err := bind(ctx, tx, s.deleteWrites).ExecContext(ctx, threadID); err != nil {
			return err
		}
		if _, err := bind(ctx, tx, s.deleteCheckpoints).ExecContext(ctx, threadID); err != nil {
			return err
		}
		_, err := bind(ctx, tx, s.deleteThread).ExecContext(ctx, threadID)
		return err
	})
	if err != nil {
		return fmt.Errorf("checkpoint/sqlite: delete thread %q: %w", threadID, err)
	}
	return nil
}

// PatchMetadata merges meta into the Meta of the checkpoint cfg addresses (the latest of its
// namespace when cfg.CheckpointID is empty), in one write transaction; an error wrapping
// checkpoint.ErrNotFound when there is none.
func (s *Saver) PatchMetadata(ctx context.Context, cfg checkpoint.Config, meta map[string]string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	query, args := `SELECT pk, meta FROM checkpoints WHERE `+threadIs+` AND ns = ? ORDER BY id DESC LIMIT 1`, []any{cfg.ThreadID, cfg.NS}
	if cfg.CheckpointID != "" {
		query, args = `SELECT pk, meta FROM checkpoints WHERE `+threadIs+` AND ns = ? AND id = ?`, append(args, idArg(cfg.CheckpointID))
	}
	err := s.c.do(ctx, false, func(ctx context.Context, tx *sql.Tx) error {
		var (
			pk  int64
			raw []byte
		)
		if err := tx.QueryRowContext(ctx, query, args...).Scan(&pk, &raw); errors.Is(err, sql.ErrNoRows) {
			return checkpoint.ErrNotFound
		} else if err != nil {
			return err
		}
		merged, err := codec.MergeMeta(raw, meta)
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `UPDATE checkpoints SET meta = ? WHERE pk = ?`, merged, pk)
		return err
	})
	if err != nil {
		return fmt.Errorf("checkpoint/sqlite: patch the metadata of thread %q namespace %q checkpoint %q: %w", cfg.ThreadID, cfg.NS, cfg.CheckpointID, err)
	}
	return nil
}

// writes reads the writes of the checkpoints of tuples, whose rows are pks, in one query, and
// sets them in the order they were put.
func (s *Saver) writes(ctx context.Context, tx *sql.Tx, cfg checkpoint.Config, tuples []*checkpoint.Tuple, pks []int64) error {
	if len(tuples) == 0 {
		return nil
	}
	byPK := make(map[int64]*checkpoint.Tuple, len(pks))
	for i, pk := range pks {
		byPK[pk] = tuples[i]
	}
	first := tuples[0].Checkpoint.ID // names the read in errors
	rows, err := tx.StmtContext(ctx, s.getWrites).QueryContext(ctx, pkList(pks))
	if err != nil {
		return s.readError(cfg, first, err)
	}
	defer rows.Close()
	var v [7]any
	for rows.Next() {
		if err := rows.Scan(&v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6]); err != nil {
			return s.readError(cfg, first, err)
		}
		pk, _ := v[0].(int64)
		t := byPK[pk]
		if t == nil {
			return s.readError(cfg, first, fmt.Errorf("a write of row %v, which was not read", v[0]))
		}
		d := rowDecoder{cfg: cfg, id: t.Checkpoint.ID, table: "writes"}
		w := checkpoint.Write{
			TaskID: d.text(v[1], "task_id"),
			Kind:   checkpoint.WriteKind(d.code(kinds, v[2], "kind")),
			Idx:    d.integer(v[3], "idx"),
			Node:   d.text(v[4], "node"),
			Value:  d.blob(v[5], v[6], "value"),
		}
		if d.err != nil {
			return d.err
		}
		t.Writes = append(t.Writes, w)
	}
	if err := rows.Err(); err != nil {
		return s.readError(cfg, first, err)
	}
	return nil
}

// pkList is pks as a JSON array, for json_each.
func pkList(pks []int64) string {
	b := make([]byte, 0, 2+len(pks)*8)
	b = append(b, '[')
	for i, pk := range pks {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, pk, 10)
	}
	return string(append(b, ']'))
}

func (s *Saver) readError(cfg checkpoint.Config, id string, err error) error {
	return fmt.Errorf("checkpoint/sqlite: read thread %q namespace %q checkpoint %q: %w", cfg.ThreadID, cfg.NS, id, err)
}

// cpRow is a row of the checkpoints table as cpColumns reads it: raw values, decoded by tuple, so
// that a value of the wrong type is reported as corruption of its column.
type cpRow [13]any

func (r *cpRow) scan(sc interface{ Scan(...any) error }) error {
	return sc.Scan(&r[0], &r[1], &r[2], &r[3], &r[4], &r[5], &r[6], &r[7], &r[8], &r[9], &r[10], &r[11], &r[12])
}

// tuple decodes the row; it also returns the row's pk.
func (r *cpRow) tuple(cfg checkpoint.Config) (*checkpoint.Tuple, int64, error) {
	d := rowDecoder{cfg: cfg, table: "checkpoints"}
	d.id = d.checkpointID(r[1], "id") // first, for the error messages
	pk := d.integer64(r[0], "pk")
	cp := checkpoint.Checkpoint{
		ID:       d.id,
		ParentID: d.checkpointID(r[2], "parent_id"),
		Step:     d.integer(r[3], "step"),
		Source:   checkpoint.Source(d.code(sources, r[4], "source")),
		RunID:    d.checkpointID(r[5], "run_id"),
		Format:   d.integer(r[6], "format"),
		State:    d.blob(r[11], r[12], "state"),
	}
	if r[7] != nil {
		cp.CreatedAt = time.UnixMicro(d.integer64(r[7], "created_at")).UTC()
	}
	var err error
	if cp.Next, err = codec.DecodeNext(d.raw(r[8], "next")); err != nil {
		d.fail("next", err)
	}
	if cp.Joins, err = codec.DecodeJoins(d.raw(r[9], "joins")); err != nil {
		d.fail("joins", err)
	}
	if cp.Meta, err = codec.DecodeMeta(d.raw(r[10], "meta")); err != nil {
		d.fail("meta", err)
	}
	if d.err != nil {
		return nil, 0, d.err
	}
	return &checkpoint.Tuple{Config: checkpoint.Config{ThreadID: cfg.ThreadID, NS: cfg.NS, CheckpointID: cp.ID}, Checkpoint: cp}, pk, nil
}

// rowDecoder converts the raw values of a row; the first failure is kept as a *CorruptError.
type rowDecoder struct {
	cfg   checkpoint.Config
	id    string
	table string
	err   error
}

func (d *rowDecoder) fail(column string, err error) {
	if d.err == nil {
		d.err = &CorruptError{ThreadID: d.cfg.ThreadID, NS: d.cfg.NS, CheckpointID: d.id, Column: d.table + "." + column, Err: err, Saver: "checkpoint/sqlite"}
	}
}

func describe(v any) string {
	switch v := v.(type) {
	case nil:
		return "NULL"
	case []byte:
		return fmt.Sprintf("a blob of %d bytes", len(v))
	case string:
		if len(v) > 20 {
			v = v[:20] + "..."
		}
		return fmt.Sprintf("the text %q", v)
	default:
		return fmt.Sprintf("the %T %v", v, v)
	}
}

func (d *rowDecoder) text(v any, column string) string {
	switch v := v.(type) {
	case string:
		return v
	case []byte:
		return string(v)
	}
	d.fail(column, fmt.Errorf("holds %s, not text", describe(v)))
	return ""
}

// checkpointID is the ID an ID column holds (see idArg).
func (d *rowDecoder) checkpointID(v any, column string) string {
	switch v := v.(type) {
	case string:
		return v
	case []byte:
		if u, err := uuid.FromBytes(v); err == nil {
			return u.String()
		}
	}
	d.fail(column, fmt.Errorf("holds %s, not an ID", describe(v)))
	return ""
}

// code is the name a column of c holds (see code).
func (d *rowDecoder) code(c code, v any, column string) string {
	name, ok := c.name(v)
	if !ok {
		d.fail(column, fmt.Errorf("holds %s, not a name", describe(v)))
	}
	return name
}

func (d *rowDecoder) integer64(v any, column string) int64 {
	if n, ok := v.(int64); ok {
		return n
	}
	d.fail(column, fmt.Errorf("holds %s, not an integer", describe(v)))
	return 0
}

func (d *rowDecoder) integer(v any, column string) int {
	n := d.integer64(v, column)
	if int64(int(n)) != n {
		d.fail(column, fmt.Errorf("holds %d, too large for an int", n))
	}
	return int(n)
}

// raw returns the bytes of a blob column, nil for NULL.
func (d *rowDecoder) raw(v any, column string) []byte {
	switch v := v.(type) {
	case nil:
		return nil
	case []byte:
		return v
	case string:
		return []byte(v)
	}
	d.fail(column, fmt.Errorf("holds %s, not a blob", describe(v)))
	return nil
}

// blob returns the bytes of a blob column, keeping NULL (nil) and empty (non-nil) apart: the
// driver reads both as nil, so isNull (the column's "IS NULL") tells them apart.
func (d *rowDecoder) blob(v, isNull any, column string) []byte {
	b := d.raw(v, column)
	if b == nil && isNull == int64(0) {
		b = []byte{}
	}
	return b
}
