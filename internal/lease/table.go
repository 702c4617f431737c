package lease

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/agiraph/agiraph/checkpoint/postgres"
)

// A Table is a table whose rows each carry a lease, in the columns owner (text: the holder, NULL
// when none), generation (bigint: raised by every taking) and expires_at (timestamptz: when the
// lease ends unless renewed), beside a key column (text). Its methods make the lease's statements
// on db, a pool, a connection or a transaction; the rows are the user's, who adds its own
// conditions and columns to a statement with an [Extra].
type Table struct {
	Name  string        // the table, as SQL: a name, schema-qualified if need be
	Key   string        // its key column
	Owner string        // this process's name in the leases it takes (see [Owner])
	TTL   time.Duration // how long a lease lasts unless renewed
}

// DB runs a Table's statements: a *pgxpool.Pool, a *pgx.Conn or a pgx.Tx.
type DB interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Extra is what a user adds to a statement of a Table: Set, columns it sets as well
// ("status = $1, updated_at = now()"), and Where, a condition on the table's columns that a row
// must meet as well ("NOT deleted"). Their placeholders $1, $2, … number Args; the lease's own
// arguments follow them.
type Extra struct {
	Set   string
	Where string
	Args  []any
}

// A Cond is a condition on the leases of a Table's rows, made by [Table.Held], [Table.Ours],
// [Table.Others] or [Table.Free] (the zero Cond is none of them, and not to be used).
type Cond struct {
	sql  func(first int) string // the condition, its placeholders numbered from $first
	args []any
}

// and is c AND d.
func (c Cond) and(d Cond) Cond {
	return Cond{
		sql:  func(first int) string { return c.sql(first) + " AND (" + d.sql(first+len(c.args)) + ")" },
		args: append(c.args[:len(c.args):len(c.args)], d.args...),
	}
}

// p is the placeholder of argument i (from 0) of those numbered from first.
func p(first, i int) string { return "$" + strconv.Itoa(first+i) }

// row is the condition that a row's key is key.
func (t *Table) row(key string) Cond {
	return Cond{sql: func(f int) string { return t.Key + " = " + p(f, 0) }, args: []any{key}}
}

// Held is the condition that this process holds lease gen of row key: what a holder's write
// checks (see [Table.Write] and [Table.Fence]). A takeover raises the generation, so that it no
// longer holds, even should the new holder be this process again.
func (t *Table) Held(key string, gen int64) Cond {
	return t.row(key).and(Cond{
		sql:  func(f int) string { return "owner = " + p(f, 0) + " AND generation = " + p(f, 1) },
		args: []any{t.Owner, gen},
	})
}

// Ours is the condition that no other process holds row key's lease: no process does, or this
// one does, whatever the generation.
func (t *Table) Ours(key string) Cond {
	return t.row(key).and(Cond{sql: func(f int) string { return "owner IS NULL OR owner = " + p(f, 0) }, args: []any{t.Owner}})
}

// Others is the condition that another process holds row key's lease, not expired.
func (t *Table) Others(key string) Cond {
	return t.row(key).and(Cond{sql: func(f int) string { return "owner <> " + p(f, 0) + " AND expires_at > now()" }, args: []any{t.Owner}})
}

// Free is the condition that a row's lease is free to take: no process holds it, or its holder
// let it expire.
func (t *Table) Free() Cond {
	return Cond{sql: func(int) string { return "owner IS NULL OR expires_at < now()" }}
}

// statement joins a statement's parts: head, then SET the lease's own columns (sets, if any) and
// x.Set, then WHERE c and x.Where, then tail. It returns the statement and its arguments: x's,
// then own (which sets and tail number from len(x.Args)+1), then c's.
func statement(head, sets string, c Cond, tail string, x Extra, own ...any) (string, []any) {
	var b strings.Builder
	b.WriteString(head)
	if sets != "" || x.Set != "" {
		b.WriteString(" SET ")
		b.WriteString(sets)
		if sets != "" && x.Set != "" {
			b.WriteString(", ")
		}
		b.WriteString(x.Set)
	}
	first := len(x.Args) + len(own) + 1
	b.WriteString(" WHERE (" + c.sql(first) + ")")
	if x.Where != "" {
		b.WriteString(" AND (" + x.Where + ")")
	}
	b.WriteString(tail)
	args := make([]any, 0, first-1+len(c.args))
	return b.String(), append(append(append(args, x.Args...), own...), c.args...)
}

// Take takes the lease of row key for this process when it is [Table.Free] and the row meets
// x.Where: it raises the row's generation, sets x.Set too, and returns the new generation.
// taken is false when the row is held by another process, or does not meet x.Where, or is not
// there.
func (t *Table) Take(ctx context.Context, db DB, key string, x Extra) (gen int64, taken bool, err error) {
	n := len(x.Args)
	q, args := statement(`UPDATE `+t.Name,
		"owner = "+p(n+1, 0)+", generation = generation + 1, expires_at = now() + make_interval(secs => "+p(n+1, 1)+")",
		t.row(key).and(t.Free()), " RETURNING generation", x, t.Owner, t.TTL.Seconds())
	err = db.QueryRow(ctx, q, args...).Scan(&gen)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return 0, false, nil
	case err != nil:
		return 0, false, t.errorf("take the lease of", key, err)
	}
	return gen, true, nil
}

// Write sets x.Set in the row that meets c and x.Where, typically a holder's write under
// [Table.Held]; it reports whether a row did.
func (t *Table) Write(ctx context.Context, db DB, c Cond, x Extra) (bool, error) {
	if x.Set == "" {
		return false, fmt.Errorf("lease: a write to %s that sets no column", t.Name)
	}
	return t.update(ctx, db, "", c, x)
}

// update sets sets and x.Set in the rows that meet c and x.Where, and reports whether any did.
func (t *Table) update(ctx context.Context, db DB, sets string, c Cond, x Extra) (bool, error) {
	q, args := statement(`UPDATE `+t.Name, sets, c, "", x)
	tag, err := db.Exec(ctx, q, args...)
	if err != nil {
		return false, fmt.Errorf("lease: write to %s: %w", t.Name, err)
	}
	return tag.RowsAffected() > 0, nil
}

// Renew renews this process's lease gen of row key for a TTL more, counted by the database; it
// reports whether the lease was still held (false: another process took it). It is a [Renew]
// for [Keep] once key and gen are given.
func (t *Table) Renew(ctx context.Context, db DB, key string, gen int64) (held bool, err error) {
	return t.update(ctx, db, "", t.Held(key, gen), Extra{Set: "expires_at = now() + make_interval(secs => $1)", Args: []any{t.TTL.Seconds()}})
}

// Release ends this process's lease gen of row key, setting x.Set too, when the row still is this
// process's and meets x.Where; it reports whether it was. The generation stays: the next taking
// raises it.
func (t *Table) Release(ctx context.Context, db DB, key string, gen int64, x Extra) (released bool, err error) {
	return t.update(ctx, db, "owner = NULL, expires_at = NULL", t.Held(key, gen), x)
}

// Find selects cols of the rows that meet c and x.Where, by key. With [Table.Free], it lists the
// rows whose lease is free to take, such as those whose holder died.
func (t *Table) Find(ctx context.Context, db DB, cols string, c Cond, x Extra) (pgx.Rows, error) {
	q, args := statement(`SELECT `+cols+` FROM `+t.Name, "", c, " ORDER BY "+t.Key, x)
	rows, err := db.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("lease: read %s: %w", t.Name, err)
	}
	return rows, nil
}

// Claim ends the leases of up to limit rows that are [Table.Free] and meet x.Where, raising their
// generation so that the writes of a holder that let its lease expire are refused, and sets x.Set
// too, whose expressions name the row's columns as leased.column. Rows that another transaction
// locked are skipped: of processes claiming at once, one claims each row. It returns, for each
// row claimed, its key, its new generation, then the columns old as they were before.
func (t *Table) Claim(ctx context.Context, db DB, x Extra, old []string, limit int) (pgx.Rows, error) {
	cols, ret := t.Key, ""
	for _, c := range old {
		cols += ", " + c
		ret += ", old." + c
	}
	where := t.Free().sql(0) // no arguments
	if x.Where != "" {
		where += ") AND (" + x.Where
	}
	set := "generation = leased.generation + 1, owner = NULL, expires_at = NULL"
	if x.Set != "" {
		set += ", " + x.Set
	}
	n := len(x.Args)
	q := `WITH old AS (SELECT ` + cols + ` FROM ` + t.Name + ` WHERE (` + where + `)
			ORDER BY ` + t.Key + ` LIMIT ` + p(n+1, 0) + ` FOR UPDATE SKIP LOCKED)
		UPDATE ` + t.Name + ` AS leased SET ` + set + ` FROM old WHERE leased.` + t.Key + ` = old.` + t.Key + `
		RETURNING leased.` + t.Key + `, leased.generation` + ret
	rows, err := db.Query(ctx, q, append(x.Args[:n:n], limit)...)
	if err != nil {
		return nil, fmt.Errorf("lease: claim the expired leases of %s: %w", t.Name, err)
	}
	return rows, nil
}

// Fence is c as the fence of a saver's writes ([postgres.Saver.Fenced]): they are made only while
// c holds, typically [Table.Held].
func (t *Table) Fence(c Cond) postgres.Fence {
	return postgres.Fence{Table: t.Name, Where: c.sql(1), Args: c.args}
}

// errorf is the error of a statement on row key.
func (t *Table) errorf(what, key string, err error) error {
	return fmt.Errorf("lease: %s row %q of %s: %w", what, key, t.Name, err)
}
