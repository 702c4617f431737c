package postgres

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
)

// ErrFenced is wrapped by the error of a write that a fenced Saver refused: its fence did not
// hold (see Fenced).
var ErrFenced = errors.New("checkpoint/postgres: the fence does not hold")

// A Fence makes writes depend on a row of the database: they are made only while a row of Table
// matches Where — typically the lease of the process that runs a thread, so that a process that
// lost its lease, and whose work goes on for a moment (a node that ignores its context), cannot
// write after another process took the thread over.
type Fence struct {
	// Table is the table, as SQL: a name, schema-qualified if need be.
	Table string
	// Where is a condition on Table's columns, with placeholders $1, $2, … for Args, such as
	// "thread_id = $1 AND owner = $2 AND generation = $3".
	Where string
	Args  []any
}

// Fenced returns a Saver whose writes (Put, PutWrites, PutStep, PatchMetadata, DeleteThread,
// Write) are made only while f holds, and fail with an error wrapping ErrFenced when it does not.
// Each write checks f in the statement that writes (PatchMetadata in its transaction), and locks
// the rows it matched (FOR SHARE), so that a change of them — a takeover — waits for the write to
// commit, and the writes after it are refused. Reads are s's.
// The returned Saver shares s's pool: closing it does not close the pool.
func (s *Saver) Fenced(f Fence) *Saver {
	cond := "EXISTS (SELECT 1 FROM " + f.Table + " WHERE " + f.Where + " FOR SHARE)"
	return &Saver{pool: s.pool, db: s.db, queries: s.queries, writes: newWriteQueries(cond), fence: &f, effects: s.effects}
}

// fenceError is the error of a write whose fence did not hold.
func (s *Saver) fenceError() error {
	return fmt.Errorf("%w: no row of %s where %s (%v)", ErrFenced, s.fence.Table, s.fence.Where, s.fence.Args)
}

// writeQueries are the statements that write. Each reads as f whether the fence holds (held),
// writes only if it does, and returns held first. putWritesEffects and putStepEffects are
// putWrites and putStep that also return the keys (task IDs, then indexes) of the effect writes
// they inserted; fence only checks the fence, for Write's transaction.
type writeQueries struct {
	put, putWrites, putStep, putWritesEffects, putStepEffects, deleteThread, fence string
}

// placeholder matches the placeholders of a fence's condition.
var placeholder = regexp.MustCompile(`\$([0-9]+)`)

// newWriteQueries makes the write statements with the fence condition cond (none when empty),
// whose placeholders $1, $2, … are renumbered to follow each statement's own arguments.
func newWriteQueries(cond string) writeQueries {
	held := func(own int) string {
		if cond == "" {
			return "WITH f AS (SELECT true AS held)"
		}
		return "WITH f AS (SELECT " + placeholder.ReplaceAllStringFunc(cond, func(p string) string {
			k, _ := strconv.Atoi(p[1:])
			return "$" + strconv.Itoa(own+k)
		}) + " AS held)"
	}
	// insert stores the checkpoint given from $first (see putColumns) for each row of from.
	insert := func(first int, from string) string {
		vals := ""
		for i, t := range putTypes {
			if i > 0 {
				vals += ", "
			}
			vals += "$" + strconv.Itoa(first+i) + "::" + t
		}
		return `INSERT INTO ` + checkpointsTable + ` (` + putColumns + `) SELECT ` + vals + ` FROM ` + from + ` ` + upsert
	}
	// writes inserts the writes ($4 to $8) of the checkpoint c ($1, $2, $3) in their order as ins,
	// skipping those whose key the checkpoint has, then, for a step, the checkpoint as cp, and
	// returns whether the fence held and how many checkpoints c found; with effects, also the
	// keys of the effect writes it inserted.
	writes := func(step, effects bool) string {
		own, returning, ret := nWrite, "", `held, (SELECT count(*) FROM c) FROM f`
		if step {
			own += nPut
		}
		if effects {
			// One aggregation, so that the two arrays list the keys in the same order.
			returning = `
		RETURNING task_id, kind, idx`
			ret = `held, (SELECT count(*) FROM c), e.tasks, e.idxs
	FROM f, (SELECT array_agg(task_id) AS tasks, array_agg(idx) AS idxs FROM ins WHERE kind = 'effect') e`
		}
		q := held(own) + `,
	c AS (SELECT pk FROM ` + checkpointsTable + `, f WHERE f.held AND thread_id = $1 AND ns = $2 AND id = $3),
	ins AS (INSERT INTO ` + writesTable + ` (checkpoint, task_id, kind, idx, node, value)
		SELECT c.pk, w.task_id, w.kind, w.idx, w.node, w.value
		FROM c, unnest($4::text[], $5::text[], $6::bigint[], $7::text[], $8::bytea[]) WITH ORDINALITY AS w (task_id, kind, idx, node, value, ord)
		ORDER BY w.ord
		ON CONFLICT (checkpoint, task_id, kind, idx) DO NOTHING` + returning + `)`
		if step {
			q += `,
	cp AS (` + insert(nWrite+1, "c") + `)`
		}
		return q + `
	SELECT ` + ret
	}
	return writeQueries{
		put: held(nPut) + `,
	ins AS (` + insert(1, "f WHERE f.held") + `)
	SELECT held FROM f`,
		putWrites:        writes(false, false),
		putWritesEffects: writes(false, true),
		putStep:          writes(true, false),
		putStepEffects:   writes(true, true),
		deleteThread: held(1) + `,
	d AS (DELETE FROM ` + checkpointsTable + ` WHERE thread_id = $1 AND (SELECT held FROM f))
	SELECT held FROM f`,
		fence: held(0) + ` SELECT held FROM f`,
	}
}
