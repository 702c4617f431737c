// Package sqlitestore is the squad store on SQLite (see package nodes/store): its tables live in
// the checkpoint database of package checkpoint/sqlite, and a task's change commits in the
// transaction that saves the task's writes.
package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/agiraph/agiraph/checkpoint"
	"github.com/agiraph/agiraph/checkpoint/sqlite"
	"github.com/agiraph/agiraph/nodes/store"
)

// Store is a store.Store in a SQLite database file.
type Store struct {
	reads
	saver *sqlite.Saver
	// The statements that write, prepared once on the writing connection.
	putDoc, deleteDoc, addEvent, addLine *sql.Stmt
}

var _ store.Store = (*Store)(nil)

// schema creates the store's tables beside the checkpoints'. Documents are rows of a table with
// rowids, whose rows of up to almost a page fit in it (a table without rowids keeps at most about
// a quarter of a page of a row in it, and the rest on a page of its own). Events and lines are kept as their JSON without the Seq, which is the row's; a key is
// unique where there is one (and only those that have one are indexed).
var schema = []string{
	`CREATE TABLE IF NOT EXISTS squad_docs (key TEXT PRIMARY KEY, version INTEGER NOT NULL, value BLOB NOT NULL)`,
	`CREATE TABLE IF NOT EXISTS squad_events (seq INTEGER PRIMARY KEY, key TEXT, event BLOB NOT NULL)`,
	`CREATE UNIQUE INDEX IF NOT EXISTS squad_events_key ON squad_events (key) WHERE key IS NOT NULL`,
	`CREATE TABLE IF NOT EXISTS squad_lines (seq INTEGER PRIMARY KEY, key TEXT, line BLOB NOT NULL)`,
	`CREATE UNIQUE INDEX IF NOT EXISTS squad_lines_key ON squad_lines (key) WHERE key IS NOT NULL`,
}

// Open opens the store in the database file at path (see sqlite.Open, whose options it takes),
// creating its tables if they are missing. Close it when done.
func Open(path string, opts ...sqlite.Option) (*Store, error) {
	st := &Store{}
	saver, err := sqlite.Open(path, append(opts, sqlite.WithEffects(st.effect))...)
	if err != nil {
		return nil, err
	}
	st.saver, st.reads = saver, reads{saver.DB()}
	err = saver.Write(context.Background(), func(ctx context.Context, tx *sql.Tx) error {
		if err := rowidDocs(ctx, tx); err != nil {
			return err
		}
		for _, q := range schema {
			if _, err := tx.ExecContext(ctx, q); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		_ = saver.Close() // the error before is the one to report
		return nil, fmt.Errorf("nodes/store/sqlitestore: %s: create the tables: %w", path, err)
	}
	for _, p := range []struct {
		dst   **sql.Stmt
		query string
	}{
		{&st.putDoc, `INSERT INTO squad_docs (key, version, value) VALUES (?, ?, ?)
			ON CONFLICT (key) DO UPDATE SET version = excluded.version, value = excluded.value
			WHERE excluded.version = 0 OR excluded.version > squad_docs.version`},
		{&st.deleteDoc, `DELETE FROM squad_docs WHERE key = ?`},
		{&st.addEvent, `INSERT INTO squad_events (key, event) VALUES (?, ?) ON CONFLICT (key) WHERE key IS NOT NULL DO NOTHING`},
		{&st.addLine, `INSERT INTO squad_lines (key, line) VALUES (?, ?) ON CONFLICT (key) WHERE key IS NOT NULL DO NOTHING`},
	} {
		if *p.dst, err = saver.Prepare(context.Background(), p.query); err != nil {
			_ = st.Close() // the error before is the one to report
			return nil, err
		}
	}
	return st, nil
}

// rowidDocs moves the documents of a database made when they were kept in a table without
// rowids into one with rowids (see schema).
func rowidDocs(ctx context.Context, tx *sql.Tx) error {
	var old int
	err := tx.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = 'squad_docs' AND sql LIKE '%WITHOUT ROWID'`).Scan(&old)
	if err != nil || old == 0 {
		return err
	}
	for _, q := range []string{
		`ALTER TABLE squad_docs RENAME TO squad_docs_without_rowid`,
		schema[0],
		`INSERT INTO squad_docs (key, version, value) SELECT key, version, value FROM squad_docs_without_rowid`,
		`DROP TABLE squad_docs_without_rowid`,
	} {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("move the documents to a table with rowids: %w", err)
		}
	}
	return nil
}

// Saver returns the checkpoint saver the store's tables live beside.
func (s *Store) Saver() checkpoint.Saver { return s.saver }

// Close closes the database.
func (s *Store) Close() error {
	var errs []error
	for _, st := range []*sql.Stmt{s.putDoc, s.deleteDoc, s.addEvent, s.addLine} {
		if st != nil {
			errs = append(errs, st.Close())
		}
	}
	return errors.Join(append(errs, s.saver.Close())...)
}

// effect applies a task's change inside the transaction that saves the task's writes.
func (s *Store) effect(ctx context.Context, tx *sql.Tx, _ string, w checkpoint.Write) error {
	ch, err := store.Decode(w.Value)
	if err != nil {
		return err
	}
	return s.apply(ctx, tx, ch)
}

// Apply commits ch alone.
func (s *Store) Apply(ctx context.Context, ch store.Change) error {
	if err := ch.Check(); err != nil {
		return err
	}
	return s.saver.Write(ctx, func(ctx context.Context, tx *sql.Tx) error { return s.apply(ctx, tx, ch) })
}

// apply writes ch, checked, in tx.
func (s *Store) apply(ctx context.Context, tx *sql.Tx, ch store.Change) error {
	for _, d := range ch.Docs {
		var err error
		if d.Value == nil {
			_, err = tx.StmtContext(ctx, s.deleteDoc).ExecContext(ctx, d.Key)
		} else {
			_, err = tx.StmtContext(ctx, s.putDoc).ExecContext(ctx, d.Key, d.Version, []byte(d.Value))
		}
		if err != nil {
			return fmt.Errorf("nodes/store/sqlitestore: document %s: %w", d.Key, err)
		}
	}
	for _, e := range ch.Events {
		b, err := store.EncodeEvent(e)
		if err == nil {
			_, err = tx.StmtContext(ctx, s.addEvent).ExecContext(ctx, nullable(e.Key), b)
		}
		if err != nil {
			return fmt.Errorf("nodes/store/sqlitestore: %s event: %w", e.Type, err)
		}
	}
	for _, l := range ch.Lines {
		b, err := store.EncodeLine(l)
		if err == nil {
			_, err = tx.StmtContext(ctx, s.addLine).ExecContext(ctx, nullable(l.Key), b)
		}
		if err != nil {
			return fmt.Errorf("nodes/store/sqlitestore: conversation line: %w", err)
		}
	}
	return nil
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}
