package sqlitestore_test

import (
	"context"
	"database/sql"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/checkpoint/sqlite"
	"github.com/agiraph/agiraph/nodes/eventlog"
	"github.com/agiraph/agiraph/nodes/store"
	"github.com/agiraph/agiraph/nodes/store/sqlitestore"
	"github.com/agiraph/agiraph/nodes/store/storetest"
)

func open(t *testing.T, path string) *sqlitestore.Store {
	t.Helper()
	s, err := sqlitestore.Open(path)
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return open(t, filepath.Join(t.TempDir(), "state.db")) })
}

// TestReopen: what a store committed is there when the file is opened again, and numbering goes
// on after it.
func TestReopen(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state.db")
	s, err := sqlitestore.Open(path)
	require.NoError(t, err)
	var ch store.Change
	require.NoError(t, ch.Put("run/r1", map[string]string{"goal": "g"}))
	ch.Events = []eventlog.Event{{Type: eventlog.AgentStarted}}
	require.NoError(t, s.Apply(ctx, ch))
	require.NoError(t, s.Close())

	s = open(t, path)
	got, err := s.Doc(ctx, "run/r1")
	require.NoError(t, err)
	assert.JSONEq(t, `{"goal":"g"}`, string(got.Value))
	require.NoError(t, s.Apply(ctx, store.Change{Events: []eventlog.Event{{Type: eventlog.AgentCompleted}}}))
	evs, err := s.Events(ctx, 0, 0)
	require.NoError(t, err)
	require.Len(t, evs, 2)
	assert.Equal(t, int64(2), evs[1].Seq)
}

// A Reader reads what a Store committed — from another process too — and writes nothing: its
// Apply is refused, and a missing file is not made.
func TestReader(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state.db")
	_, err := sqlitestore.OpenReader(path)
	require.ErrorIs(t, err, fs.ErrNotExist)
	assert.NoFileExists(t, path)

	s := open(t, path)
	var ch store.Change
	require.NoError(t, ch.Put("run/r1", map[string]string{"goal": "g"}))
	ch.Events = []eventlog.Event{{Type: eventlog.AgentStarted, Text: "started"}}
	require.NoError(t, s.Apply(ctx, ch))

	r, err := sqlitestore.OpenReader(path)
	require.NoError(t, err)
	defer r.Close()
	got, err := r.Doc(ctx, "run/r1")
	require.NoError(t, err)
	assert.JSONEq(t, `{"goal":"g"}`, string(got.Value))
	evs, err := r.Events(ctx, 0, 0)
	require.NoError(t, err)
	require.Len(t, evs, 1)
	assert.Equal(t, "started", evs[0].Text)
	require.ErrorIs(t, r.Apply(ctx, ch), store.ErrReadOnly)

	require.NoError(t, s.Apply(ctx, store.Change{Events: []eventlog.Event{{Type: eventlog.AgentCompleted}}}))
	evs, err = r.Events(ctx, 1, 0)
	require.NoError(t, err)
	assert.Len(t, evs, 1, "what the store commits later is read")
}

// Documents of a few hundred bytes, as a run's nodes are, share their pages: the file does not
// take a page a document.
func TestDocumentsSharePages(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state.db")
	s := open(t, path)
	before := pageCount(t, path)
	const docs = 1000
	value := map[string]string{"task": strings.Repeat("x", 400)}
	for i := range docs {
		var ch store.Change
		require.NoError(t, ch.Put(fmt.Sprintf("node/r1/n%d", i), value))
		require.NoError(t, s.Apply(ctx, ch))
	}
	assert.Less(t, pageCount(t, path)-before, docs*3/4, "pages added for %d documents of 400 bytes", docs)
}

// A database whose documents are in a table without rowids, as the store made them before, has
// them moved when it is opened.
func TestDocumentsMovedToRowidTable(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state.db")
	saver, err := sqlite.Open(path)
	require.NoError(t, err)
	require.NoError(t, saver.Write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `CREATE TABLE squad_docs (key TEXT PRIMARY KEY, version INTEGER NOT NULL, value BLOB NOT NULL) WITHOUT ROWID`)
		if err == nil {
			_, err = tx.ExecContext(ctx, `INSERT INTO squad_docs VALUES ('run/r1', 3, '{"goal":"g"}')`)
		}
		return err
	}))
	require.NoError(t, saver.Close())

	s := open(t, path)
	got, err := s.Doc(ctx, "run/r1")
	require.NoError(t, err)
	assert.Equal(t, int64(3), got.Version)
	assert.JSONEq(t, `{"goal":"g"}`, string(got.Value))
	var ddl string
	require.NoError(t, s.Saver().(*sqlite.Saver).DB().QueryRowContext(ctx, `SELECT sql FROM sqlite_schema WHERE name = 'squad_docs'`).Scan(&ddl))
	assert.NotContains(t, ddl, "WITHOUT ROWID")
}

// pageCount is the number of pages of the database at path, its log included.
func pageCount(t *testing.T, path string) int {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	require.NoError(t, err)
	defer db.Close()
	var n int
	require.NoError(t, db.QueryRow(`PRAGMA page_count`).Scan(&n))
	return n
}

// An event's row holds its number and key once, in their columns: not again in the event's JSON.
// Rows kept before, which held them, read the same.
func TestEventRowsHoldSeqAndKeyOnce(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state.db")
	s := open(t, path)
	require.NoError(t, s.Apply(ctx, store.Change{Events: []eventlog.Event{{Type: eventlog.AgentStarted, Text: "new", Key: "r1/started"}}}))
	db := s.Saver().(*sqlite.Saver).DB()
	var stored string
	require.NoError(t, db.QueryRowContext(ctx, `SELECT event FROM squad_events`).Scan(&stored))
	assert.NotContains(t, stored, `"seq"`)
	assert.NotContains(t, stored, `"key"`)

	require.NoError(t, s.Saver().(*sqlite.Saver).Write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO squad_events (key, event) VALUES ('r1/done', '{"seq":0,"time":"2026-11-27T10:00:00Z","type":"agent.completed","text":"old","key":"r1/done"}')`)
		return err
	}))
	evs, err := s.Events(ctx, 0, 0)
	require.NoError(t, err)
	require.Len(t, evs, 2)
	assert.Equal(t, []string{"new", "old"}, []string{evs[0].Text, evs[1].Text})
	assert.Equal(t, []string{"r1/started", "r1/done"}, []string{evs[0].Key, evs[1].Key})
	assert.Equal(t, []int64{1, 2}, []int64{evs[0].Seq, evs[1].Seq})
}
