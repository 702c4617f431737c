package postgres

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agiraph/agiraph/checkpoint"
	"github.com/agiraph/agiraph/checkpoint/internal/codec"
)

// Saver is a checkpoint.Saver that keeps checkpoints in a PostgreSQL database. It is safe for
// concurrent use, and any number of Savers, in one process or in many, may use the same database.
type Saver struct {
	pool    *pgxpool.Pool
	owned   bool   // the pool is the Saver's: Close closes it
	db      string // user@host:port/name, for errors
	closed  atomic.Bool
	queries [1 << 4]string // the read query by the bits of readByID, readBefore, readSource, readRunID
	writes  writeQueries   // the statements that write, with the fence's condition (see Fenced)
	fence   *Fence         // nil when not fenced
	effects EffectHandler  // nil: effect writes are refused
}

// An EffectHandler applies an effect write (checkpoint.WriteEffect) of the thread threadID to
// what its owner keeps in the database, with tx, the transaction that saves the writes of its
// call. It must not call the Saver.
type EffectHandler func(ctx context.Context, tx pgx.Tx, threadID string, w checkpoint.Write) error

// Option configures Open and New.
type Option func(*Saver)

// WithEffects makes the Saver give each effect write of PutWrites and PutStep to fn, in the
// transaction that saves the writes of the call (and checks the fence of a fenced Saver): when fn
// fails, nothing of the call is saved. A write's key is kept, so that fn gets it once (see
// checkpoint.WriteEffect). A Saver without it refuses effect writes with
// checkpoint.ErrNoEffectHandler.
func WithEffects(fn EffectHandler) Option {
	return func(s *Saver) { s.effects = fn }
}

var (
	_ checkpoint.StepSaver    = (*Saver)(nil)
	_ checkpoint.CommitSyncer = (*Saver)(nil)
)

// SyncsCommits reports true: PostgreSQL syncs a commit to its disk before it returns (unless
// its synchronous_commit setting is turned off, which gives that up for the whole server).
func (s *Saver) SyncsCommits() bool { return true }

// errClosed is the error of calls on a closed Saver.
var errClosed = errors.New("the saver is closed")

// Open connects to the PostgreSQL database at url (a URL or a key=value connection string, as
// pgxpool.ParseConfig reads them) through a pool of its own and brings the schema up to date (see
// New). The URL's parameters configure the pool and the sessions: pool_max_conns, search_path (the
// schema of the tables), synchronous_commit (see docs/checkpoints.md). Close the Saver when
// done; it closes the pool.
func Open(ctx context.Context, url string, opts ...Option) (*Saver, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("checkpoint/postgres: open: %w", err)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("checkpoint/postgres: open %s: %w", describe(cfg), err)
	}
	s, err := New(ctx, pool, opts...)
	if err != nil {
		pool.Close()
		return nil, err
	}
	s.owned = true
	return s, nil
}

// New makes a Saver on a pool the caller owns, and brings the database's schema up to date: it
// creates the tables in a new database and applies the migrations an older one lacks, in one
// transaction under an advisory lock, so that processes starting together migrate once. It fails
// with a *SchemaVersionError for a database of a newer version of this package, and with the
// connection's error when the database cannot be reached. Close does not close the pool.
func New(ctx context.Context, pool *pgxpool.Pool, opts ...Option) (*Saver, error) {
	if pool == nil {
		return nil, errors.New("checkpoint/postgres: new: the pool is nil")
	}
	s := &Saver{pool: pool, db: describe(pool.Config()), writes: newWriteQueries("")}
	for _, opt := range opts {
		opt(s)
	}
	for v := range s.queries {
		s.queries[v] = readQuery(v)
	}
	if err := migrate(ctx, pool, s.db, migrations); err != nil {
		return nil, err
	}
	return s, nil
}

// describe names the database of cfg for errors, without the password.
func describe(cfg *pgxpool.Config) string {
	c := cfg.ConnConfig
	return c.User + "@" + net.JoinHostPort(c.Host, strconv.Itoa(int(c.Port))) + "/" + c.Database
}

// Close makes later calls fail and, when Open made the pool, closes it (waiting for the calls in
// progress to return their connections). Closing twice is harmless.
func (s *Saver) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	if s.owned {
		s.pool.Close()
	}
	return nil
}

// check returns why a call cannot start: a closed Saver or a done context.
func (s *Saver) check(ctx context.Context) error {
	if s.closed.Load() {
		return errClosed
	}
	return ctx.Err()
}

// putColumns are the columns a checkpoint is stored in, and upsert what putting one that exists
// replaces (its writes are kept).
const (
	putColumns = `thread_id, ns, id, parent_id, step, source, run_id, format, created_at, next, joins, meta, state`
	upsert     = `ON CONFLICT (thread_id, ns, id) DO UPDATE SET parent_id = excluded.parent_id, step = excluded.step,
		source = excluded.source, run_id = excluded.run_id, format = excluded.format, created_at = excluded.created_at,
		next = excluded.next, joins = excluded.joins, meta = excluded.meta, state = excluded.state`
)

// putTypes are the types of putColumns, in their order; nPut the number of putArgs, and nWrite
// that of writeArgs.
var putTypes = []string{"text", "text", "text", "text", "bigint", "text", "text", "bigint", "timestamptz", "bytea", "bytea", "bytea", "bytea"}

const (
	nPut   = 13
	nWrite = 8
)

// putArgs are the arguments of cp, stored under cfg, for putColumns.
func putArgs(cfg checkpoint.Config, cp checkpoint.Checkpoint) []any {
	var created *time.Time
	if !cp.CreatedAt.IsZero() {
		t := cp.CreatedAt.Truncate(time.Microsecond) // PostgreSQL keeps microseconds
		created = &t
	}
	return []any{cfg.ThreadID, cfg.NS, cp.ID, cp.ParentID, cp.Step, string(cp.Source), cp.RunID,
		cp.Format, created, codec.EncodeNext(cp.Next), codec.EncodeJoins(cp.Joins), codec.EncodeMeta(cp.Meta), cp.State}
}

// writeArgs are the arguments of writes of the checkpoint cfg addresses (see newWriteQueries).
func writeArgs(cfg checkpoint.Config, writes []checkpoint.Write) []any {
	n := len(writes)
	tasks, kinds, nodes, idxs, values := make([]string, n), make([]string, n), make([]string, n), make([]int64, n), make([][]byte, n)
	for i, w := range writes {
		tasks[i], kinds[i], idxs[i], nodes[i] = w.TaskID, string(w.Kind), int64(w.Idx), w.Node
		if w.Kind != checkpoint.WriteEffect { // an effect write's key is kept, not its value
			values[i] = w.Value
		}
	}
	return []any{cfg.ThreadID, cfg.NS, cfg.CheckpointID, tasks, kinds, idxs, nodes, values}
}

// args are a write statement's arguments: its own, then the fence's.
func (s *Saver) args(own ...any) []any {
	if s.fence == nil {
		return own
	}
	return append(own, s.fence.Args...)
}

// Put stores cp under cfg's thread and namespace; a checkpoint with the same ID there is replaced
// and keeps its writes. It is one statement, so one transaction.
func (s *Saver) Put(ctx context.Context, cfg checkpoint.Config, cp checkpoint.Checkpoint) (checkpoint.Config, error) {
	err := s.checkPut(ctx, cfg, cp)
	if err == nil {
		err = s.fenced(s.pool.QueryRow(ctx, s.writes.put, s.args(putArgs(cfg, cp)...)...))
	}
	if err != nil {
		return checkpoint.Config{}, putError(cfg, cp, err)
	}
	return checkpoint.Config{ThreadID: cfg.ThreadID, NS: cfg.NS, CheckpointID: cp.ID}, nil
}

func (s *Saver) checkPut(ctx context.Context, cfg checkpoint.Config, cp checkpoint.Checkpoint) error {
	if err := s.check(ctx); err != nil {
		return err
	}
	if cfg.ThreadID == "" || cp.ID == "" {
		return errors.New("put needs a thread ID and a checkpoint ID")
	}
	return nil
}

func putError(cfg checkpoint.Config, cp checkpoint.Checkpoint, err error) error {
	return fmt.Errorf("checkpoint/postgres: put checkpoint %q of thread %q namespace %q: %w", cp.ID, cfg.ThreadID, cfg.NS, err)
}

// PutWrites records writes of tasks of the checkpoint cfg addresses, in their order, ignoring a
// write whose (TaskID, Kind, Idx) the checkpoint already has. It fails with an error wrapping
// checkpoint.ErrNotFound when the checkpoint does not exist. The writes of one call are one
// statement: saved together or not at all; with effect writes, that statement and the effect
// handler's work are one transaction.
func (s *Saver) PutWrites(ctx context.Context, cfg checkpoint.Config, writes []checkpoint.Write) error {
	err := s.check(ctx)
	if err == nil && cfg.CheckpointID == "" {
		err = errors.New("the config names no checkpoint")
	}
	if err == nil {
		var found int
		err = s.write(ctx, s.writes.putWrites, s.writes.putWritesEffects, s.args(writeArgs(cfg, writes)...), cfg.ThreadID, writes, &found)
		if err == nil && found == 0 {
			err = checkpoint.ErrNotFound
		}
	}
	if err != nil {
		return fmt.Errorf("checkpoint/postgres: put writes of thread %q namespace %q checkpoint %q: %w", cfg.ThreadID, cfg.NS, cfg.CheckpointID, err)
	}
	return nil
}

// PutStep records writes of the checkpoint parent addresses and stores cp under cfg, as PutWrites
// and Put do, in one statement: one round trip, both saved or neither (see
// checkpoint.StepSaver). With effect writes, the statement and the effect handler's work are one
// transaction.
func (s *Saver) PutStep(ctx context.Context, parent checkpoint.Config, writes []checkpoint.Write, cfg checkpoint.Config, cp checkpoint.Checkpoint) (checkpoint.Config, error) {
	err := s.checkPut(ctx, cfg, cp)
	if err == nil && parent.CheckpointID == "" {
		err = fmt.Errorf("the parent's config (thread %q namespace %q) names no checkpoint", parent.ThreadID, parent.NS)
	}
	if err == nil {
		var found int
		err = s.write(ctx, s.writes.putStep, s.writes.putStepEffects, s.args(append(writeArgs(parent, writes), putArgs(cfg, cp)...)...), parent.ThreadID, writes, &found)
		if err == nil && found == 0 {
			err = fmt.Errorf("its parent %q: %w", parent.CheckpointID, checkpoint.ErrNotFound)
		}
	}
	if err != nil {
		return checkpoint.Config{}, putError(cfg, cp, err)
	}
	return checkpoint.Config{ThreadID: cfg.ThreadID, NS: cfg.NS, CheckpointID: cp.ID}, nil
}

// write runs the statement that saves writes: query alone, or, when writes hold effect writes,
// withEffects in a transaction with the effect handler, which gets each effect write the
// statement inserted, in the order of writes. found is the count of the checkpoint the statement
// looked up; when it is 0, nothing is applied.
func (s *Saver) write(ctx context.Context, query, withEffects string, args []any, threadID string, writes []checkpoint.Write, found *int) error {
	if !slices.ContainsFunc(writes, func(w checkpoint.Write) bool { return w.Kind == checkpoint.WriteEffect }) {
		return s.fenced(s.pool.QueryRow(ctx, query, args...), found)
	}
	if s.effects == nil {
		return checkpoint.ErrNoEffectHandler
	}
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var tasks []string
		var idxs []int64
		if err := s.fenced(tx.QueryRow(ctx, withEffects, args...), found, &tasks, &idxs); err != nil {
			return err
		}
		type key struct {
			task string
			idx  int
		}
		inserted := make(map[key]bool, len(tasks))
		for i := range tasks {
			inserted[key{tasks[i], int(idxs[i])}] = true
		}
		for _, w := range writes {
			k := key{w.TaskID, w.Idx}
			if w.Kind != checkpoint.WriteEffect || !inserted[k] {
				continue
			}
			delete(inserted, k) // the same key twice in writes: the first was inserted
			if err := s.effects(ctx, tx, threadID, w); err != nil {
				return fmt.Errorf("effect %d of task %q: %w", w.Idx, w.TaskID, err)
			}
		}
		return nil
	})
}

// Write runs fn in a transaction, after checking the fence of a fenced Saver (ErrFenced when it
// does not hold; the fence's rows stay locked until the transaction ends), and commits it when fn
// returns nil. It is for the changes of what an owner keeps beside the checkpoints in the
// database, made outside any graph task. fn must not call the Saver.
func (s *Saver) Write(ctx context.Context, fn func(ctx context.Context, tx pgx.Tx) error) error {
	if err := s.inTx(ctx, fn); err != nil {
		return fmt.Errorf("checkpoint/postgres: write in %s: %w", s.db, err)
	}
	return nil
}

// inTx runs fn in a transaction after checking the fence, as Write says.
func (s *Saver) inTx(ctx context.Context, fn func(ctx context.Context, tx pgx.Tx) error) error {
	if err := s.check(ctx); err != nil {
		return err
	}
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if s.fence != nil {
			if err := s.fenced(tx.QueryRow(ctx, s.writes.fence, s.fence.Args...)); err != nil {
				return err
			}
		}
		return fn(ctx, tx)
	})
}

// PatchMetadata merges meta into the Meta of the checkpoint cfg addresses (the latest of its
// namespace when cfg.CheckpointID is empty), in one transaction that locks its row (and checks
// the fence of a fenced Saver); an error wrapping checkpoint.ErrNotFound when there is none.
func (s *Saver) PatchMetadata(ctx context.Context, cfg checkpoint.Config, meta map[string]string) error {
	err := s.inTx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		var (
			id  string
			raw []byte
		)
		err := tx.QueryRow(ctx, `SELECT id, meta FROM `+checkpointsTable+` WHERE thread_id = $1 AND ns = $2 AND ($3 = '' OR id = $3)
			ORDER BY id DESC LIMIT 1 FOR UPDATE`, cfg.ThreadID, cfg.NS, cfg.CheckpointID).Scan(&id, &raw)
		if errors.Is(err, pgx.ErrNoRows) {
			return checkpoint.ErrNotFound
		} else if err != nil {
			return err
		}
		merged, err := codec.MergeMeta(raw, meta)
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE `+checkpointsTable+` SET meta = $4 WHERE thread_id = $1 AND ns = $2 AND id = $3`,
			cfg.ThreadID, cfg.NS, id, merged)
		return err
	})
	if err != nil {
		return fmt.Errorf("checkpoint/postgres: patch the metadata of thread %q namespace %q checkpoint %q: %w", cfg.ThreadID, cfg.NS, cfg.CheckpointID, err)
	}
	return nil
}

// Pool returns the Saver's connection pool, for reading what an owner keeps beside the
// checkpoints; changes go through Write, or an effect handler (WithEffects), so that a fenced
// Saver checks its fence. A Saver that Open made closes it.
func (s *Saver) Pool() *pgxpool.Pool { return s.pool }

// fenced scans the row a write statement returns: whether its fence held (ErrFenced when not)
// and, into dest, the columns after it.
func (s *Saver) fenced(row pgx.Row, dest ...any) error {
	var held bool
	if err := row.Scan(append([]any{&held}, dest...)...); err != nil {
		return err
	}
	if !held {
		return s.fenceError()
	}
	return nil
}

// The filters of the read query, as bits of its variant.
const (
	readByID = 1 << iota
	readBefore
	readSource
	readRunID
)

// readQuery reads checkpoints of a thread and namespace, newest first, each with its writes as
// arrays in the order they were put: one statement, so one consistent snapshot, and one round
// trip. The filters of variant take the arguments after the thread and namespace, in the order
// of their bits; the last argument is the limit (NULL for none).
func readQuery(variant int) string {
	q := `SELECT c.id, c.parent_id, c.step, c.source, c.run_id, c.format, c.created_at, c.next, c.joins, c.meta, c.state,
		w.task_ids, w.kinds, w.idxs, w.nodes, w.vals
	FROM ` + checkpointsTable + ` c LEFT JOIN LATERAL (
		SELECT array_agg(task_id ORDER BY seq) AS task_ids, array_agg(kind ORDER BY seq) AS kinds, array_agg(idx ORDER BY seq) AS idxs,
			array_agg(node ORDER BY seq) AS nodes, array_agg(value ORDER BY seq) AS vals
		FROM ` + writesTable + ` WHERE checkpoint = c.pk) w ON true
	WHERE c.thread_id = $1 AND c.ns = $2`
	arg := 2
	for bit, cond := range []string{"c.id =", "c.id <", "c.source =", "c.run_id ="} {
		if variant&(1<<bit) != 0 {
			arg++
			q += " AND " + cond + " $" + strconv.Itoa(arg)
		}
	}
	return q + ` ORDER BY c.id DESC LIMIT $` + strconv.Itoa(arg+1)
}

// read runs the read query of variant and decodes its rows; keep, when set, says which
// checkpoints to return (the others are skipped), and limit (0 for none) counts the kept ones.
func (s *Saver) read(ctx context.Context, cfg checkpoint.Config, variant int, args []any, limit int, keep func(*checkpoint.Checkpoint) bool) ([]checkpoint.Tuple, error) {
	var sqlLimit *int
	if limit > 0 && keep == nil {
		sqlLimit = &limit
	}
	rows, err := s.pool.Query(ctx, s.queries[variant], append(append([]any{cfg.ThreadID, cfg.NS}, args...), sqlLimit)...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []checkpoint.Tuple
	for rows.Next() {
		var (
			cp                  checkpoint.Checkpoint
			source              string
			created             *time.Time
			next, joins, meta   []byte
			tasks, kinds, nodes []string
			idxs                []int64
			values              [][]byte
		)
		if err := rows.Scan(&cp.ID, &cp.ParentID, &cp.Step, &source, &cp.RunID, &cp.Format, &created, &next, &joins, &meta, &cp.State,
			&tasks, &kinds, &idxs, &nodes, &values); err != nil {
			return nil, fmt.Errorf("read checkpoint %q: %w", cp.ID, err)
		}
		cp.Source = checkpoint.Source(source)
		if created != nil {
			cp.CreatedAt = created.UTC()
		}
		if err := decodeColumns(&cp, next, joins, meta); err != nil {
			return nil, &CorruptError{ThreadID: cfg.ThreadID, NS: cfg.NS, CheckpointID: cp.ID, Column: checkpointsTable + "." + err.column, Err: err.err, Saver: "checkpoint/postgres"}
		}
		if keep != nil && !keep(&cp) {
			continue
		}
		t := checkpoint.Tuple{Config: checkpoint.Config{ThreadID: cfg.ThreadID, NS: cfg.NS, CheckpointID: cp.ID}, Checkpoint: cp}
		if len(tasks) > 0 {
			t.Writes = make([]checkpoint.Write, len(tasks))
			for i := range tasks {
				t.Writes[i] = checkpoint.Write{TaskID: tasks[i], Kind: checkpoint.WriteKind(kinds[i]), Idx: int(idxs[i]), Node: nodes[i], Value: values[i]}
			}
		}
		out = append(out, t)
		if limit > 0 && len(out) == limit {
			break
		}
	}
	rows.Close()
	return out, rows.Err()
}

// columnError is a column of the checkpoints table that does not decode.
type columnError struct {
	column string
	err    error
}

// decodeColumns decodes the encoded columns into cp.
func decodeColumns(cp *checkpoint.Checkpoint, next, joins, meta []byte) *columnError {
	var err error
	if cp.Next, err = codec.DecodeNext(next); err != nil {
		return &columnError{"next", err}
	}
	if cp.Joins, err = codec.DecodeJoins(joins); err != nil {
		return &columnError{"joins", err}
	}
	if cp.Meta, err = codec.DecodeMeta(meta); err != nil {
		return &columnError{"meta", err}
	}
	return nil
}

// Get returns the checkpoint cfg addresses, or the latest of its namespace (the greatest ID) when
// cfg.CheckpointID is empty, with its writes, read in one statement. It returns an error wrapping
// checkpoint.ErrNotFound when there is none, and a *CorruptError for a row that cannot be decoded.
func (s *Saver) Get(ctx context.Context, cfg checkpoint.Config) (*checkpoint.Tuple, error) {
	err := s.check(ctx)
	var found []checkpoint.Tuple
	if err == nil {
		variant, args := 0, []any(nil)
		if cfg.CheckpointID != "" {
			variant, args = readByID, []any{cfg.CheckpointID}
		}
		found, err = s.read(ctx, cfg, variant, args, 1, nil)
	}
	if err == nil && len(found) == 0 {
		err = checkpoint.ErrNotFound
	}
	var ce *CorruptError
	if errors.As(err, &ce) {
		return nil, err
	}
	if err != nil {
		what := "the latest checkpoint"
		if cfg.CheckpointID != "" {
			what = "checkpoint " + strconv.Quote(cfg.CheckpointID)
		}
		return nil, fmt.Errorf("checkpoint/postgres: get %s of thread %q namespace %q: %w", what, cfg.ThreadID, cfg.NS, err)
	}
	return &found[0], nil
}

// List returns the checkpoints of cfg's thread and namespace, newest (greatest ID) first, with
// their writes, read in one statement. Before, Source and RunID are applied by PostgreSQL, Meta by
// ListOptions.Match; Limit counts the checkpoints that pass every filter.
func (s *Saver) List(ctx context.Context, cfg checkpoint.Config, opts checkpoint.ListOptions) ([]checkpoint.Tuple, error) {
	err := s.check(ctx)
	var out []checkpoint.Tuple
	if err == nil {
		variant, args := 0, []any(nil)
		for _, f := range []struct {
			bit   int
			value string
		}{{readBefore, opts.Before}, {readSource, string(opts.Source)}, {readRunID, opts.RunID}} { // in the order of the bits
			if f.value != "" {
				variant |= f.bit
				args = append(args, f.value)
			}
		}
		var keep func(*checkpoint.Checkpoint) bool
		if len(opts.Meta) > 0 {
			keep = func(cp *checkpoint.Checkpoint) bool { return opts.Match(cp) }
		}
		out, err = s.read(ctx, cfg, variant, args, opts.Limit, keep)
	}
	var ce *CorruptError
	if err != nil && !errors.As(err, &ce) {
		return nil, fmt.Errorf("checkpoint/postgres: list checkpoints of thread %q namespace %q: %w", cfg.ThreadID, cfg.NS, err)
	}
	return out, err
}

// DeleteThread removes every checkpoint and write of a thread, in all namespaces, in one statement
// (the writes go with their checkpoints). Deleting a thread that has nothing is not an error.
func (s *Saver) DeleteThread(ctx context.Context, threadID string) error {
	err := s.check(ctx)
	if err == nil {
		err = s.fenced(s.pool.QueryRow(ctx, s.writes.deleteThread, s.args(threadID)...))
	}
	if err != nil {
		return fmt.Errorf("checkpoint/postgres: delete thread %q: %w", threadID, err)
	}
	return nil
}
