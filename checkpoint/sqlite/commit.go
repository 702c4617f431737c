package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"sync"
)

// A committer runs the writes of a Saver, each a function of a transaction, grouping those that
// come while one commits into the next transaction (group commit): when many goroutines write at
// once — a superstep's tasks, the runs of many threads — each waits for one commit and the next,
// not for every write queued before it, and the log grows by the pages the group changed, once.
// Each write of a group runs within a savepoint: one that fails is undone alone and reported to
// its caller, and the others commit.
type committer struct {
	db                         *sql.DB // one connection
	savepoint, release, rollTo *sql.Stmt
	committed                  func() // called after each group, if set

	mu    sync.Mutex
	queue []*write // waiting for the next group
	busy  bool     // a caller leads: it commits groups until the queue is empty
}

// A write is one caller's function and, once its group committed (done), its result.
type write struct {
	ctx   context.Context
	fn    writeFunc
	alone bool // fn writes with one statement: alone in its group, it needs no transaction
	err   error
	wake  chan struct{} // the result is in, or the caller leads (lead)
	done  bool          // under mu
	lead  bool          // under mu
}

// A writeFunc writes in tx, the group's transaction: through the Saver's prepared statements,
// bound to tx with bind, or with tx itself. tx is nil for a write alone in its group that needs no
// transaction (see committer.do): it uses the statements as they are.
type writeFunc func(ctx context.Context, tx *sql.Tx) error

// bind returns st bound to tx, or st itself when tx is nil.
func bind(ctx context.Context, tx *sql.Tx, st *sql.Stmt) *sql.Stmt {
	if tx == nil {
		return st
	}
	return tx.StmtContext(ctx, st)
}

// prepare prepares the savepoint statements on db.
func (c *committer) prepare(ctx context.Context, db *sql.DB) error {
	c.db = db
	for _, st := range []struct {
		dst  **sql.Stmt
		text string
	}{{&c.savepoint, "SAVEPOINT w"}, {&c.release, "RELEASE w"}, {&c.rollTo, "ROLLBACK TO w"}} {
		p, err := db.PrepareContext(ctx, st.text)
		if err != nil {
			return fmt.Errorf("prepare %q: %w", st.text, err)
		}
		*st.dst = p
	}
	return nil
}

// close closes the statements.
func (c *committer) close() error {
	var errs []error
	for _, st := range []*sql.Stmt{c.savepoint, c.release, c.rollTo} {
		if st != nil {
			errs = append(errs, st.Close())
		}
	}
	return errors.Join(errs...)
}

// do runs fn in a transaction, perhaps with other callers' writes, and returns once it has
// committed, or failed: fn's error, or the commit's. fn must write only in the transaction it is
// given, and use ctx for it (the group's, not the caller's: an interrupted statement would roll
// the whole transaction back). alone says fn makes one change with one statement of the Saver,
// which needs no transaction of its own when no other write shares the group: fn then gets a nil
// transaction. A caller whose ctx ends before
// its group begins gets ctx's error, and its fn does not run.
func (c *committer) do(ctx context.Context, alone bool, fn writeFunc) error {
	w := &write{ctx: ctx, fn: fn, alone: alone, wake: make(chan struct{}, 1)}
	c.mu.Lock()
	c.queue = append(c.queue, w)
	if !c.busy {
		c.busy = true
		c.mu.Unlock()
		c.lead()
		return w.err
	}
	c.mu.Unlock()
	select {
	case <-w.wake:
	case <-ctx.Done():
		c.mu.Lock()
		if i := slices.Index(c.queue, w); i >= 0 && !w.lead {
			c.queue = slices.Delete(c.queue, i, i+1)
			c.mu.Unlock()
			return ctx.Err()
		}
		c.mu.Unlock()
		<-w.wake // its group runs
	}
	c.mu.Lock()
	lead := w.lead && !w.done
	c.mu.Unlock()
	if lead {
		c.lead()
	}
	return w.err
}

// lead commits the queued writes as one group, then hands the lead to the first caller that
// queued meanwhile, if any: a caller commits one group besides waiting for its own.
func (c *committer) lead() {
	c.mu.Lock()
	group := c.queue
	c.queue = nil
	c.mu.Unlock()
	c.commit(group)
	if c.committed != nil {
		c.committed()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, w := range group {
		w.done = true
		w.wake <- struct{}{} // the leader's own token is never read
	}
	if len(c.queue) == 0 {
		c.busy = false
		return
	}
	next := c.queue[0]
	next.lead = true
	next.wake <- struct{}{}
}

// commit runs group's writes in one transaction and sets each one's result. The deferred
// rollback runs before the recovery of a panic, so a panicking group leaves nothing behind.
func (c *committer) commit(group []*write) {
	todo := make([]*write, 0, len(group))
	for _, w := range group {
		if w.err = w.ctx.Err(); w.err == nil {
			todo = append(todo, w)
		}
	}
	if len(todo) == 0 {
		return
	}
	fail := func(ws []*write, err error) {
		for _, w := range ws {
			w.err = err
		}
	}
	defer func() {
		// A write that panics fails its group, rolled back, rather than leave the callers
		// waiting for a group that never ends.
		if p := recover(); p != nil {
			fail(todo, fmt.Errorf("checkpoint/sqlite: a write panicked: %v", p))
		}
	}()
	ctx := context.Background()
	if len(todo) == 1 && todo[0].alone {
		todo[0].err = todo[0].fn(ctx, nil)
		return
	}
	tx, err := c.db.BeginTx(ctx, nil)
	if err != nil {
		fail(todo, err)
		return
	}
	defer tx.Rollback()
	if len(todo) == 1 {
		if todo[0].err = todo[0].fn(ctx, tx); todo[0].err == nil {
			todo[0].err = tx.Commit()
		}
		return
	}
	savepoint, release, rollTo := bind(ctx, tx, c.savepoint), bind(ctx, tx, c.release), bind(ctx, tx, c.rollTo)
	var ok []*write
	for i, w := range todo {
		if _, err := savepoint.ExecContext(ctx); err != nil {
			fail(append(ok, todo[i:]...), err)
			return
		}
		if w.err = w.fn(ctx, tx); w.err == nil {
			ok = append(ok, w)
		} else if _, err := rollTo.ExecContext(ctx); err != nil {
			// SQLite rolled the whole transaction back (a full disk, an I/O error): the
			// writes before are undone too, and those after are not tried.
			fail(ok, w.err)
			fail(todo[i+1:], w.err)
			return
		}
		if _, err := release.ExecContext(ctx); err != nil {
			fail(append(ok, todo[i+1:]...), err)
			return
		}
	}
	if err := tx.Commit(); err != nil {
		fail(ok, err)
	}
}
