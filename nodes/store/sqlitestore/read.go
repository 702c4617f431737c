package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/agiraph/agiraph/checkpoint"
	"github.com/agiraph/agiraph/checkpoint/sqlite"
	"github.com/agiraph/agiraph/nodes/eventlog"
	"github.com/agiraph/agiraph/nodes/store"
)

// reads are the store's reads, through a pool of read-only connections.
type reads struct{ db *sql.DB }

// Reader is a store that only reads: a program that shows an agent at rest opens one rather
// than a Store, and writes, migrates and prepares nothing. Apply fails with store.ErrReadOnly;
// Saver is nil.
type Reader struct{ reads }

var _ store.Store = (*Reader)(nil)

// OpenReader opens the store in the database file at path to read it (see sqlite.OpenReader).
// A missing file, or one without the store's tables (checkpoints only, or empty), is an error
// wrapping fs.ErrNotExist: there is no store there yet. Close it when done.
func OpenReader(path string) (*Reader, error) {
	db, err := sqlite.OpenReader(path)
	if err != nil {
		return nil, err
	}
	var tables int
	err = db.QueryRow(`SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = 'squad_docs'`).Scan(&tables)
	if err == nil && tables == 0 {
		err = fmt.Errorf("%s has no squad store yet: %w", path, fs.ErrNotExist)
	}
	if err != nil {
		_ = db.Close() // read only
		return nil, fmt.Errorf("nodes/store/sqlitestore: %w", err)
	}
	return &Reader{reads{db}}, nil
}

// Saver returns nil: a Reader saves nothing.
func (r *Reader) Saver() checkpoint.Saver { return nil }

// Apply fails with store.ErrReadOnly.
func (r *Reader) Apply(context.Context, store.Change) error {
	return fmt.Errorf("nodes/store/sqlitestore: %w", store.ErrReadOnly)
}

// Close closes the connections.
func (r *Reader) Close() error { return r.db.Close() }

// Doc returns the document under key.
func (r reads) Doc(ctx context.Context, key string) (store.Doc, error) {
	d := store.Doc{Key: key}
	var v []byte
	err := r.db.QueryRowContext(ctx, `SELECT version, value FROM squad_docs WHERE key = ?`, key).Scan(&d.Version, &v)
	if errors.Is(err, sql.ErrNoRows) {
		return d, nil
	}
	if err != nil {
		return d, fmt.Errorf("nodes/store/sqlitestore: document %s: %w", key, err)
	}
	d.Value = v
	return d, nil
}

// Docs returns the documents under prefixes, in key order, read by one statement (one snapshot).
func (r reads) Docs(ctx context.Context, prefixes ...string) ([]store.Doc, error) {
	if len(prefixes) == 0 {
		return nil, nil
	}
	var where []string
	var args []any
	for _, p := range prefixes {
		if end, ok := after(p); ok {
			where, args = append(where, "(key >= ? AND key < ?)"), append(args, p, end)
		} else {
			where, args = append(where, "key >= ?"), append(args, p)
		}
	}
	what := strings.Join(prefixes, ", ")
	rows, err := r.db.QueryContext(ctx, `SELECT key, version, value FROM squad_docs WHERE `+strings.Join(where, " OR ")+` ORDER BY key`, args...)
	if err != nil {
		return nil, fmt.Errorf("nodes/store/sqlitestore: documents %s: %w", what, err)
	}
	defer rows.Close()
	var docs []store.Doc
	for rows.Next() {
		var d store.Doc
		var v []byte
		if err := rows.Scan(&d.Key, &d.Version, &v); err != nil {
			return nil, fmt.Errorf("nodes/store/sqlitestore: documents %s: %w", what, err)
		}
		d.Value = v
		docs = append(docs, d)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("nodes/store/sqlitestore: documents %s: %w", what, err)
	}
	return docs, nil
}

// after returns the least string greater than every string that starts with prefix, byte-wise
// (the order of SQLite's BINARY collation), and false when there is none (an empty prefix, or
// one of 0xff bytes only).
func after(prefix string) (string, bool) {
	b := []byte(prefix)
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] < 0xff {
			b[i]++
			return string(b[:i+1]), true
		}
	}
	return "", false
}

// Events returns the events after seq after.
func (r reads) Events(ctx context.Context, after int64, limit int) ([]eventlog.Event, error) {
	return page(ctx, r.db, "squad_events", "event", after, limit, store.DecodeEvent)
}

// LastEvent returns the last event; its Seq is 0 when there is none.
func (r reads) LastEvent(ctx context.Context) (eventlog.Event, error) {
	var seq int64
	var key sql.NullString
	var b []byte
	err := r.db.QueryRowContext(ctx, `SELECT seq, key, event FROM squad_events ORDER BY seq DESC LIMIT 1`).Scan(&seq, &key, &b)
	if errors.Is(err, sql.ErrNoRows) {
		return eventlog.Event{}, nil
	}
	if err != nil {
		return eventlog.Event{}, fmt.Errorf("nodes/store/sqlitestore: read the last event: %w", err)
	}
	e, err := store.DecodeEvent(seq, key.String, b)
	if err != nil {
		return eventlog.Event{}, fmt.Errorf("nodes/store/sqlitestore: read events: row %d: %w", seq, err)
	}
	return e, nil
}

// Lines returns the conversation lines after seq after.
func (r reads) Lines(ctx context.Context, after int64, limit int) ([]store.Line, error) {
	return page(ctx, r.db, "squad_lines", "line", after, limit, store.DecodeLine)
}

// page reads up to limit (0: all) rows of table after seq after, decoding column col with dec.
func page[T any](ctx context.Context, db *sql.DB, table, col string, after int64, limit int, dec func(int64, string, []byte) (T, error)) ([]T, error) {
	if limit <= 0 {
		limit = -1 // SQLite: no limit
	}
	what := strings.TrimPrefix(table, "squad_")
	rows, err := db.QueryContext(ctx, `SELECT seq, key, `+col+` FROM `+table+` WHERE seq > ? ORDER BY seq LIMIT ?`, after, limit)
	if err != nil {
		return nil, fmt.Errorf("nodes/store/sqlitestore: read %s: %w", what, err)
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		var seq int64
		var key sql.NullString
		var b []byte
		if err := rows.Scan(&seq, &key, &b); err != nil {
			return nil, fmt.Errorf("nodes/store/sqlitestore: read %s: %w", what, err)
		}
		x, err := dec(seq, key.String, b)
		if err != nil {
			return nil, fmt.Errorf("nodes/store/sqlitestore: read %s: row %d: %w", what, seq, err)
		}
		out = append(out, x)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("nodes/store/sqlitestore: read %s: %w", what, err)
	}
	return out, nil
}
