// Package pgstore is the squad store on PostgreSQL (see package nodes/store), for a fleet: the
// stores of many agents share one database with their checkpoints (package checkpoint/postgres),
// each agent's rows and threads apart, and a task's change commits in the transaction that saves
// the task's writes.
package pgstore

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agiraph/agiraph/checkpoint"
	"github.com/agiraph/agiraph/checkpoint/postgres"
	"github.com/agiraph/agiraph/nodes/eventlog"
	"github.com/agiraph/agiraph/nodes/store"
)

// DB is a PostgreSQL database that holds the squad stores of many agents.
type DB struct {
	saver *postgres.Saver
}

// schema creates the stores' tables. An agent's events and lines are numbered by its row of
// squad_seqs, which a transaction that appends locks until it commits, so that Seqs follow the
// order of commits and a reader never sees a later one before an earlier.
var schema = []string{
	`CREATE TABLE IF NOT EXISTS squad_docs (agent text NOT NULL, key text COLLATE "C" NOT NULL, version bigint NOT NULL, value bytea NOT NULL, PRIMARY KEY (agent, key))`,
	`CREATE TABLE IF NOT EXISTS squad_seqs (agent text PRIMARY KEY, events bigint NOT NULL DEFAULT 0, lines bigint NOT NULL DEFAULT 0)`,
	`CREATE TABLE IF NOT EXISTS squad_events (agent text NOT NULL, seq bigint NOT NULL, key text, event bytea NOT NULL, PRIMARY KEY (agent, seq))`,
	`CREATE UNIQUE INDEX IF NOT EXISTS squad_events_key ON squad_events (agent, key) WHERE key IS NOT NULL`,
	`CREATE TABLE IF NOT EXISTS squad_lines (agent text NOT NULL, seq bigint NOT NULL, key text, line bytea NOT NULL, PRIMARY KEY (agent, seq))`,
	`CREATE UNIQUE INDEX IF NOT EXISTS squad_lines_key ON squad_lines (agent, key) WHERE key IS NOT NULL`,
}

// Open connects to the database at url (see postgres.Open), with the stores' tables created if
// missing. Close it when done.
func Open(ctx context.Context, url string) (*DB, error) {
	d := &DB{}
	saver, err := postgres.Open(ctx, url, postgres.WithEffects(d.effect))
	if err != nil {
		return nil, err
	}
	return d.start(ctx, saver)
}

// New is Open on a pool the caller made (see postgres.New); Close does not close it.
func New(ctx context.Context, pool *pgxpool.Pool) (*DB, error) {
	d := &DB{}
	saver, err := postgres.New(ctx, pool, postgres.WithEffects(d.effect))
	if err != nil {
		return nil, err
	}
	return d.start(ctx, saver)
}

// start creates the stores' tables with saver, and returns d using it.
func (d *DB) start(ctx context.Context, saver *postgres.Saver) (*DB, error) {
	d.saver = saver
	// Two processes creating the tables at once would race: one lock for the schema.
	err := saver.Write(ctx, func(ctx context.Context, tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(7023546081)`); err != nil {
			return err
		}
		for _, q := range schema {
			if _, err := tx.Exec(ctx, q); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		_ = saver.Close() // the error before is the one to report
		return nil, fmt.Errorf("nodes/store/pgstore: create the tables: %w", err)
	}
	return d, nil
}

// Saver returns the checkpoint saver of the database, whose Fenced savers an Agent may use.
func (d *DB) Saver() *postgres.Saver { return d.saver }

// Close closes the database's connections.
func (d *DB) Close() error { return d.saver.Close() }

// Agent returns the store of agent id (which must not contain "/"). It writes through saver,
// which is d.Saver() or a saver Fenced from it — then what the agent's store writes, the
// changes of its steps and those it applies alone, is refused once the fence does not hold — and
// keeps the agent's threads there under "<id>/". Closing the store closes nothing: d does.
func (d *DB) Agent(id string, saver *postgres.Saver) (*Store, error) {
	if id == "" || strings.Contains(id, "/") {
		return nil, fmt.Errorf("nodes/store/pgstore: agent id %q: it must be non-empty and without %q", id, "/")
	}
	return &Store{agent: id, pg: saver, saver: prefixed{StepSaver: saver, prefix: id + "/"}}, nil
}

// effect applies a task's change, in the transaction that saves the task's writes, to the store
// of the agent whose thread it is.
func (d *DB) effect(ctx context.Context, tx pgx.Tx, threadID string, w checkpoint.Write) error {
	agent, _, ok := strings.Cut(threadID, "/")
	if !ok {
		return fmt.Errorf("nodes/store/pgstore: thread %q is no agent's: a change needs an Agent's saver", threadID)
	}
	ch, err := store.Decode(w.Value)
	if err != nil {
		return err
	}
	return apply(ctx, tx, agent, ch)
}

// Store is the store of one agent.
type Store struct {
	agent string
	pg    *postgres.Saver // the agent's, perhaps fenced
	saver prefixed        // pg, with the agent's threads apart
}

var _ store.Store = (*Store)(nil)

// Saver returns the agent's saver.
func (s *Store) Saver() checkpoint.Saver { return s.saver }

// Close does nothing: the DB holds the connections.
func (s *Store) Close() error { return nil }

// Apply commits ch alone.
func (s *Store) Apply(ctx context.Context, ch store.Change) error {
	if err := ch.Check(); err != nil {
		return err
	}
	return s.pg.Write(ctx, func(ctx context.Context, tx pgx.Tx) error { return apply(ctx, tx, s.agent, ch) })
}

// apply writes ch of agent, checked, in tx. It first takes the agent's numbering row, and holds it to the
// commit: an agent's changes are made one at a time — so two of them never lock its documents
// in opposite orders — and its events and lines are numbered in the order of the commits.
func apply(ctx context.Context, tx pgx.Tx, agent string, ch store.Change) error {
	var events, lines int64
	err := tx.QueryRow(ctx, `INSERT INTO squad_seqs (agent) VALUES ($1)
		ON CONFLICT (agent) DO UPDATE SET agent = excluded.agent RETURNING events, lines`, agent).Scan(&events, &lines)
	if err != nil {
		return fmt.Errorf("nodes/store/pgstore: take the agent's row: %w", err)
	}
	for _, d := range ch.Docs {
		var err error
		if d.Value == nil {
			_, err = tx.Exec(ctx, `DELETE FROM squad_docs WHERE agent = $1 AND key = $2`, agent, d.Key)
		} else {
			_, err = tx.Exec(ctx, `INSERT INTO squad_docs (agent, key, version, value) VALUES ($1, $2, $3, $4)
				ON CONFLICT (agent, key) DO UPDATE SET version = excluded.version, value = excluded.value
				WHERE excluded.version = 0 OR excluded.version > squad_docs.version`, agent, d.Key, d.Version, []byte(d.Value))
		}
		if err != nil {
			return fmt.Errorf("nodes/store/pgstore: document %s: %w", d.Key, err)
		}
	}
	if len(ch.Events) == 0 && len(ch.Lines) == 0 {
		return nil
	}
	for _, e := range ch.Events {
		b, err := store.EncodeEvent(e)
		if err == nil {
			events, err = appendRow(ctx, tx, "squad_events", "event", agent, events, e.Key, b)
		}
		if err != nil {
			return fmt.Errorf("nodes/store/pgstore: %s event: %w", e.Type, err)
		}
	}
	for _, l := range ch.Lines {
		b, err := store.EncodeLine(l)
		if err == nil {
			lines, err = appendRow(ctx, tx, "squad_lines", "line", agent, lines, l.Key, b)
		}
		if err != nil {
			return fmt.Errorf("nodes/store/pgstore: conversation line: %w", err)
		}
	}
	_, err = tx.Exec(ctx, `UPDATE squad_seqs SET events = $2, lines = $3 WHERE agent = $1`, agent, events, lines)
	return err
}

// appendRow appends b to table as the row after last, unless key is set and a row has it; it
// returns the last Seq used.
func appendRow(ctx context.Context, tx pgx.Tx, table, col, agent string, last int64, key string, b []byte) (int64, error) {
	if key != "" {
		var found bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM `+table+` WHERE agent = $1 AND key = $2)`, agent, key).Scan(&found); err != nil || found {
			return last, err
		}
	}
	_, err := tx.Exec(ctx, `INSERT INTO `+table+` (agent, seq, key, `+col+`) VALUES ($1, $2, $3, $4)`, agent, last+1, nullable(key), b)
	return last + 1, err
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// Doc returns the document under key.
func (s *Store) Doc(ctx context.Context, key string) (store.Doc, error) {
	d := store.Doc{Key: key}
	var v []byte
	err := s.pg.Pool().QueryRow(ctx, `SELECT version, value FROM squad_docs WHERE agent = $1 AND key = $2`, s.agent, key).Scan(&d.Version, &v)
	if errors.Is(err, pgx.ErrNoRows) {
		return d, nil
	}
	if err != nil {
		return d, fmt.Errorf("nodes/store/pgstore: document %s: %w", key, err)
	}
	d.Value = v
	return d, nil
}

// Docs returns the documents under prefixes, in key order, read by one statement (one snapshot).
func (s *Store) Docs(ctx context.Context, prefixes ...string) ([]store.Doc, error) {
	if len(prefixes) == 0 {
		return nil, nil
	}
	rows, err := s.pg.Pool().Query(ctx, `SELECT key, version, value FROM squad_docs
		WHERE agent = $1 AND EXISTS (SELECT 1 FROM unnest($2::text[]) AS p WHERE starts_with(key, p)) ORDER BY key`, s.agent, prefixes)
	if err != nil {
		return nil, fmt.Errorf("nodes/store/pgstore: documents %s: %w", strings.Join(prefixes, ", "), err)
	}
	docs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Doc, error) {
		var d store.Doc
		var v []byte
		err := r.Scan(&d.Key, &d.Version, &v)
		d.Value = v
		return d, err
	})
	if err != nil {
		return nil, fmt.Errorf("nodes/store/pgstore: documents %s: %w", strings.Join(prefixes, ", "), err)
	}
	return docs, nil
}

// Events returns the events after seq after.
func (s *Store) Events(ctx context.Context, after int64, limit int) ([]eventlog.Event, error) {
	return page(ctx, s, "squad_events", "event", after, limit, store.DecodeEvent)
}

// LastEvent returns the agent's last event; its Seq is 0 when there is none.
func (s *Store) LastEvent(ctx context.Context) (eventlog.Event, error) {
	var seq int64
	var key *string
	var b []byte
	err := s.pg.Pool().QueryRow(ctx, `SELECT seq, key, event FROM squad_events WHERE agent = $1 ORDER BY seq DESC LIMIT 1`, s.agent).Scan(&seq, &key, &b)
	if errors.Is(err, pgx.ErrNoRows) {
		return eventlog.Event{}, nil
	}
	if err != nil {
		return eventlog.Event{}, fmt.Errorf("nodes/store/pgstore: read the last event: %w", err)
	}
	e, err := store.DecodeEvent(seq, deref(key), b)
	if err != nil {
		return eventlog.Event{}, fmt.Errorf("nodes/store/pgstore: read events: row %d: %w", seq, err)
	}
	return e, nil
}

// Lines returns the conversation lines after seq after.
func (s *Store) Lines(ctx context.Context, after int64, limit int) ([]store.Line, error) {
	return page(ctx, s, "squad_lines", "line", after, limit, store.DecodeLine)
}

// page reads up to limit (0: all) of the agent's rows of table after seq after.
func page[T any](ctx context.Context, s *Store, table, col string, after int64, limit int, dec func(int64, string, []byte) (T, error)) ([]T, error) {
	var lim any // NULL: no limit
	if limit > 0 {
		lim = limit
	}
	what := strings.TrimPrefix(table, "squad_")
	rows, err := s.pg.Pool().Query(ctx, `SELECT seq, key, `+col+` FROM `+table+` WHERE agent = $1 AND seq > $2 ORDER BY seq LIMIT $3`, s.agent, after, lim)
	if err != nil {
		return nil, fmt.Errorf("nodes/store/pgstore: read %s: %w", what, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (T, error) {
		var seq int64
		var key *string
		var b []byte
		if err := r.Scan(&seq, &key, &b); err != nil {
			var zero T
			return zero, err
		}
		return dec(seq, deref(key), b)
	})
	if err != nil {
		return nil, fmt.Errorf("nodes/store/pgstore: read %s: %w", what, err)
	}
	return out, nil
}

// deref is the key a row holds, "" for NULL.
func deref(key *string) string {
	if key == nil {
		return ""
	}
	return *key
}
