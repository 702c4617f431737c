package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/checkpoint"
)

// rawWriteDB opens path with the write connection's settings but without a Saver: a database that
// migrate can bring to any version.
func rawWriteDB(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", dsn(path, options{busyTimeout: time.Minute, autocheckpoint: DefaultWALAutocheckpoint}, true))
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { db.Close() })
	return db
}

func userVersion(t *testing.T, db *sql.DB) int {
	t.Helper()
	var v int
	if err := db.QueryRow("PRAGMA user_version").Scan(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// seeds write checkpoints with their writes into a database at a schema version, with plain SQL of
// that version, as an older program would have: the thread "old", a checkpoint with two writes,
// and the thread "uuids", two checkpoints whose IDs are UUIDs, with an effect write. A new
// migration that changes these tables adds the seed of its version, so that
// TestMigrateFromEveryVersion keeps proving that old data survives.
var seeds = map[int]func(t *testing.T, db *sql.DB){
	1: func(t *testing.T, db *sql.DB) {
		execAll(t, db,
			`INSERT INTO checkpoints (thread_id, ns, id, parent_id, step, source, run_id, format, created_at, next, joins, meta, state)
			 VALUES ('old', '', 'c1', '', 3, 'loop', 'run', 1, 1700000000000000, x'0101013001610200', NULL, x'0101016b0176', x'7b7d')`,
			`INSERT INTO writes (checkpoint, task_id, kind, idx, node, value) VALUES ((SELECT pk FROM checkpoints WHERE id = 'c1'), '0', 'update', 0, 'a', x'31')`,
			`INSERT INTO writes (checkpoint, task_id, kind, idx, node, value) VALUES ((SELECT pk FROM checkpoints WHERE id = 'c1'), '0', 'resume', -1, 'a', NULL)`,
			`INSERT INTO checkpoints (thread_id, ns, id, parent_id, step, source, run_id, format, created_at, next, joins, meta, state)
			 VALUES ('uuids', '', '01a22060-f3e0-71af-a58b-0495c6d01b71', '01A22060-F3DE-7B8B-89CA-62173B24975F', 0, 'input', '8cb770b9-307a-4feb-84ae-5dceddae56f1', 1, NULL, NULL, NULL, NULL, NULL),
			        ('uuids', '', '01a22060-f3e0-73d6-bdaa-c2e4136e1a96', '01a22060-f3e0-71af-a58b-0495c6d01b71', 1, 'custom', '8cb770b9-307a-4feb-84ae-5dceddae56f1', 1, NULL, NULL, NULL, NULL, NULL)`,
			`INSERT INTO writes (checkpoint, task_id, kind, idx, node, value) VALUES ((SELECT pk FROM checkpoints WHERE id = '01a22060-f3e0-71af-a58b-0495c6d01b71'), '1', 'effect', 0, 'b', NULL)`,
		)
	},
	2: func(t *testing.T, db *sql.DB) {
		execAll(t, db,
			`INSERT INTO checkpoint_threads (id, name) VALUES (1, 'old'), (2, 'uuids')`,
			`INSERT INTO checkpoints (thread, ns, id, parent_id, step, source, run_id, format, created_at, next, joins, meta, state)
			 VALUES (1, '', 'c1', '', 3, 0, 'run', 1, 1700000000000000, x'0101013001610200', NULL, x'0101016b0176', x'7b7d')`,
			`INSERT INTO writes (checkpoint, task_id, kind, idx, node, value) VALUES ((SELECT pk FROM checkpoints WHERE id = 'c1'), '0', 0, 0, 'a', x'31')`,
			`INSERT INTO writes (checkpoint, task_id, kind, idx, node, value) VALUES ((SELECT pk FROM checkpoints WHERE id = 'c1'), '0', 5, -1, 'a', NULL)`,
			`INSERT INTO checkpoints (thread, ns, id, parent_id, step, source, run_id, format, created_at, next, joins, meta, state)
			 VALUES (2, '', x'01a22060f3e071afa58b0495c6d01b71', '01A22060-F3DE-7B8B-89CA-62173B24975F', 0, 1, x'8cb770b9307a4feb84ae5dceddae56f1', 1, NULL, NULL, NULL, NULL, NULL),
			        (2, '', x'01a22060f3e073d6bdaac2e4136e1a96', x'01a22060f3e071afa58b0495c6d01b71', 1, 'custom', x'8cb770b9307a4feb84ae5dceddae56f1', 1, NULL, NULL, NULL, NULL, NULL)`,
			`INSERT INTO writes (checkpoint, task_id, kind, idx, node, value) VALUES ((SELECT pk FROM checkpoints WHERE id = x'01a22060f3e071afa58b0495c6d01b71'), '1', 1, 0, 'b', NULL)`,
		)
	},
}

func execAll(t *testing.T, db *sql.DB, stmts ...string) {
	t.Helper()
	for _, q := range stmts {
		_, err := db.Exec(q)
		require.NoError(t, err, "seed: %s", q)
	}
}

// checkSeed checks what a seed wrote, read by a Saver of the current version.
func checkSeed(t *testing.T, s *Saver) {
	t.Helper()
	ctx := context.Background()
	tu, err := s.Get(ctx, checkpoint.Config{ThreadID: "old"})
	if err != nil {
		t.Fatal(err)
	}
	want := checkpoint.Checkpoint{
		ID: "c1", Step: 3, Source: checkpoint.SourceLoop, RunID: "run", Format: 1,
		CreatedAt: time.UnixMicro(1700000000000000).UTC(), State: []byte("{}"),
		Next: []checkpoint.Task{{ID: "0", Node: "a", Arg: []byte{}, Push: false}},
		Meta: map[string]string{"k": "v"},
	}
	if got := fmt.Sprintf("%+v", tu.Checkpoint); got != fmt.Sprintf("%+v", want) {
		t.Errorf("the old checkpoint reads as\n%s\nwant\n%+v", got, want)
	}
	if len(tu.Writes) != 2 || string(tu.Writes[0].Value) != "1" || tu.Writes[1].Idx != -1 || tu.Writes[1].Value != nil ||
		tu.Writes[0].Kind != checkpoint.WriteUpdate || tu.Writes[1].Kind != checkpoint.WriteResume {
		t.Errorf("the old writes read as %+v", tu.Writes)
	}

	// The UUIDs are found by their text and read back as it.
	const first, second, run = "01a22060-f3e0-71af-a58b-0495c6d01b71", "01a22060-f3e0-73d6-bdaa-c2e4136e1a96", "8cb770b9-307a-4feb-84ae-5dceddae56f1"
	uuids := checkpoint.Config{ThreadID: "uuids"}
	latest, err := s.Get(ctx, uuids)
	require.NoError(t, err)
	assert.Equal(t, checkpoint.Checkpoint{ID: second, ParentID: first, Step: 1, Source: "custom", RunID: run, Format: 1}, latest.Checkpoint)
	parent, err := s.Get(ctx, checkpoint.Config{ThreadID: "uuids", CheckpointID: latest.Checkpoint.ParentID})
	require.NoError(t, err)
	assert.Equal(t, checkpoint.Checkpoint{ID: first, ParentID: "01A22060-F3DE-7B8B-89CA-62173B24975F", Source: checkpoint.SourceInput, RunID: run, Format: 1}, parent.Checkpoint)
	assert.Equal(t, []checkpoint.Write{{TaskID: "1", Kind: checkpoint.WriteEffect, Node: "b"}}, parent.Writes)
	before, err := s.List(ctx, uuids, checkpoint.ListOptions{Before: second, RunID: run, Source: checkpoint.SourceInput})
	require.NoError(t, err)
	assert.Equal(t, []string{first}, tupleIDs(before))

	// Stored as bytes and codes, each thread's ID once.
	var threads string
	require.NoError(t, s.rdb.QueryRow(`SELECT group_concat(name, ' ') FROM (SELECT name FROM checkpoint_threads ORDER BY name)`).Scan(&threads))
	assert.Equal(t, "old uuids", threads)
	var ids, sources string
	require.NoError(t, s.rdb.QueryRow(`SELECT group_concat(typeof(id) || '/' || typeof(parent_id) || '/' || typeof(run_id), ' '),
		group_concat(typeof(source), ' ') FROM checkpoints WHERE thread = (SELECT id FROM checkpoint_threads WHERE name = 'uuids')`).Scan(&ids, &sources))
	assert.Equal(t, "blob/text/blob blob/blob/blob", ids)
	assert.Equal(t, "integer text", sources)
	var kinds string
	require.NoError(t, s.rdb.QueryRow(`SELECT group_concat(typeof(kind) || ' ' || kind, ', ') FROM (SELECT kind FROM writes ORDER BY seq)`).Scan(&kinds))
	assert.Equal(t, "integer 0, integer 5, integer 1", kinds, "update, resume, effect")
}

func tupleIDs(ts []checkpoint.Tuple) []string {
	var ids []string
	for _, t := range ts {
		ids = append(ids, t.Checkpoint.ID)
	}
	return ids
}

// TestMigrateFromEveryVersion: a database left at any older schema version, with data written at
// that version, opens, is brought to the current version, and its data reads back.
func TestMigrateFromEveryVersion(t *testing.T) {
	t.Parallel()
	for from := 0; from < len(migrations); from++ {
		t.Run(fmt.Sprint("from version ", from), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "old.db")
			db := rawWriteDB(t, path)
			if err := migrate(context.Background(), db, path, migrations[:from]); err != nil {
				t.Fatal(err)
			}
			if got := userVersion(t, db); got != from {
				t.Fatalf("user_version %d after migrating to %d", got, from)
			}
			seed := seeds[from]
			if seed != nil {
				seed(t, db)
			}
			db.Close()

			s, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if got := userVersion(t, s.wdb); got != schemaVersion() {
				t.Errorf("user_version %d after Open, want %d", got, schemaVersion())
			}
			if seed != nil {
				checkSeed(t, s)
			}
		})
	}
}

// TestMigrateToANewVersion: with a migration added to the list (as a later release would), a
// database of the current version is upgraded in place, its data kept; migrating again does
// nothing; and this release's Open refuses the upgraded file.
func TestMigrateToANewVersion(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	seeds[schemaVersion()](t, s.wdb)
	s.Close()

	next := append(slices.Clone(migrations), migration{
		name: "test: notes on checkpoints",
		stmts: []string{
			`ALTER TABLE checkpoints ADD COLUMN note TEXT NOT NULL DEFAULT ''`,
			`UPDATE checkpoints SET note = 'migrated ' || id`,
		},
	})
	db := rawWriteDB(t, path)
	for range 2 {
		if err := migrate(ctx, db, path, next); err != nil {
			t.Fatal(err)
		}
		if got := userVersion(t, db); got != len(next) {
			t.Fatalf("user_version %d, want %d", got, len(next))
		}
		var note string
		if err := db.QueryRow(`SELECT note FROM checkpoints WHERE id = 'c1'`).Scan(&note); err != nil || note != "migrated c1" {
			t.Fatalf("note %q, %v", note, err)
		}
	}
	db.Close()

	_, err = Open(path)
	var sv *SchemaVersionError
	if !errors.As(err, &sv) || sv.Version != len(next) || sv.Supported != len(migrations) {
		t.Fatalf("Open of the upgraded file: %v", err)
	}
}

// TestFailedMigrationRollsBack: a migration that fails leaves the database at its old version,
// without any of that migration's changes, and the error names the version and the migration.
func TestFailedMigrationRollsBack(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "db")
	db := rawWriteDB(t, path)
	bad := append(slices.Clone(migrations), migration{
		name:  "test: half good",
		stmts: []string{`CREATE TABLE extra (x)`, `THIS IS NOT SQL`},
	})
	err := migrate(context.Background(), db, path, bad)
	if err == nil {
		t.Fatal("a broken migration succeeded")
	}
	for _, part := range []string{path, fmt.Sprint("version ", len(bad)), "test: half good"} {
		if !strings.Contains(err.Error(), part) {
			t.Errorf("error %q does not name %q", err, part)
		}
	}
	// All of it was rolled back, the migrations before the broken one included: they run in one
	// transaction.
	if got := userVersion(t, db); got != 0 {
		t.Errorf("user_version %d after the failure, want 0", got)
	}
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM sqlite_schema WHERE type = 'table'`).Scan(&n); err != nil || n != 0 {
		t.Errorf("%d tables after the failure (%v), want none", n, err)
	}
	// The good migrations still apply.
	if err := migrate(context.Background(), db, path, migrations); err != nil {
		t.Fatal(err)
	}
}

// TestPragmas: the connections have the settings the package documentation promises.
func TestPragmas(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		opts           []Option
		sync           int
		busy           int
		autocheckpoint int
	}{
		{nil, 1, 5000, DefaultWALAutocheckpoint},
		{[]Option{WithSynchronous(SyncFull), WithBusyTimeout(1500 * time.Millisecond), WithWALAutocheckpoint(64)}, 2, 1500, 64},
	} {
		s, err := Open(filepath.Join(t.TempDir(), "db"), tc.opts...)
		if err != nil {
			t.Fatal(err)
		}
		pragma := func(db *sql.DB, name string) string {
			var v string
			if err := db.QueryRow("PRAGMA " + name).Scan(&v); err != nil {
				t.Fatalf("PRAGMA %s: %v", name, err)
			}
			return v
		}
		for name, want := range map[string]string{
			"journal_mode":       "wal",
			"page_size":          fmt.Sprint(pageSize),
			"synchronous":        fmt.Sprint(tc.sync),
			"busy_timeout":       fmt.Sprint(tc.busy),
			"foreign_keys":       "1",
			"wal_autocheckpoint": fmt.Sprint(tc.autocheckpoint * backstop), // the copier copies at tc.autocheckpoint
			"journal_size_limit": fmt.Sprint(journalSizeLimit(tc.autocheckpoint)),
			"application_id":     fmt.Sprint(applicationID),
			"query_only":         "0",
		} {
			if got := pragma(s.wdb, name); got != want {
				t.Errorf("writer: %s = %s, want %s", name, got, want)
			}
		}
		for name, want := range map[string]string{
			"synchronous":  fmt.Sprint(tc.sync),
			"busy_timeout": fmt.Sprint(tc.busy),
			"query_only":   "1",
		} {
			if got := pragma(s.rdb, name); got != want {
				t.Errorf("reader: %s = %s, want %s", name, got, want)
			}
		}
		if _, err := s.rdb.Exec(`DELETE FROM checkpoints`); err == nil {
			t.Error("a reader connection could write")
		}
		s.Close()
	}
}

// TestLogStaysSmall: after many steps, once the log's copier has caught up, the write-ahead log
// is no larger than the backstop allows, and a large state makes it grow only until the log
// restarts, once copied.
func TestLogStaysSmall(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "db")
	s, err := Open(path)
	require.NoError(t, err)
	defer s.Close()
	limit := int64(journalSizeLimit(DefaultWALAutocheckpoint))
	walSize := func() int64 {
		fi, err := os.Stat(path + "-wal")
		require.NoError(t, err)
		return fi.Size()
	}
	cfg := checkpoint.Config{ThreadID: "t"}
	value := bytes.Repeat([]byte("v"), 150)
	for i := range 1500 {
		var state []byte
		if i == 700 {
			state = bytes.Repeat([]byte("s"), 2<<20) // a 2 MiB state goes through the log
		}
		at, err := s.Put(ctx, cfg, checkpoint.Checkpoint{ID: fmt.Sprintf("c%05d", i), Next: []checkpoint.Task{{ID: "0", Node: "n"}}, State: state})
		require.NoError(t, err)
		if i == 700 {
			require.GreaterOrEqual(t, walSize(), int64(2<<20), "the log after a 2 MiB state")
		}
		if i == 700 || i%50 == 0 {
			// The copier runs in the background: on a busy machine the commits may outrun it
			// for a while, and the log then grows past the backstop until it has caught up.
			require.Eventually(t, func() bool { return s.log.behind() < s.log.pages }, time.Minute, time.Millisecond, "the log is copied")
		}
		// The next commit restarts the log, which is truncated to the limit.
		require.NoError(t, s.PutWrites(ctx, at, []checkpoint.Write{{TaskID: "0", Node: "n", Kind: checkpoint.WriteUpdate, Value: value}}))
		if i == 700 {
			require.LessOrEqual(t, walSize(), limit, "the log after the commit that followed the large state")
		}
		if i%50 == 0 {
			require.LessOrEqual(t, walSize(), int64(journalSizeLimit(DefaultWALAutocheckpoint*backstop)), "the log after step %d", i)
		}
	}
}

// Commits only append to the log: the Saver's copier copies it into the database, in the
// background. While the copier is held, the log grows past its threshold; once it is free, it
// copies what the commits left.
func TestLogCopiedInBackground(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, err := Open(filepath.Join(t.TempDir(), "db"), WithWALAutocheckpoint(16))
	require.NoError(t, err)
	defer s.Close()
	put := func(i int) {
		_, err := s.Put(ctx, checkpoint.Config{ThreadID: "t"}, checkpoint.Checkpoint{ID: fmt.Sprintf("c%05d", i), State: bytes.Repeat([]byte("s"), 300)})
		require.NoError(t, err)
	}
	s.log.mu.Lock()
	var release sync.Once
	defer release.Do(s.log.mu.Unlock)
	i := 0
	for ; s.log.behind() < 64; i++ {
		require.Less(t, i, 1000, "the log was copied by the commits (%d frames not copied)", s.log.behind())
		put(i)
	}
	release.Do(s.log.mu.Unlock)
	require.Eventually(t, func() bool { return s.log.behind() < 16 }, time.Minute, time.Millisecond, "the copier copied the log")
	i++
	put(i) // the log restarts; what it holds now is this commit's
	assert.Less(t, s.log.behind(), 16)
}

// A thread's ID is stored once, its checkpoints refer to it by number; IDs that are UUIDs are
// stored as their 16 bytes, other IDs as their text, sources and kinds the Saver knows as small
// integers, others as their text; each reads back as the string put, and is found by it.
func TestCompactColumns(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openSaver(t, WithEffects(func(context.Context, *sql.Tx, string, checkpoint.Write) error { return nil }))
	const a, b, run = "01a22060-f3e0-71af-a58b-0495c6d01b71", "01a22060-f3e0-73d6-bdaa-c2e4136e1a96", "8cb770b9-307a-4feb-84ae-5dceddae56f1"
	const upper = "01A22060-F3E0-73D6-BDAA-C2E4136E1A97" // not the canonical text: kept as it is
	thread := checkpoint.Config{ThreadID: "t"}
	put := []checkpoint.Checkpoint{
		{ID: a, Source: checkpoint.SourceInput, RunID: run},
		{ID: b, ParentID: a, Step: 1, Source: checkpoint.SourceLoop, RunID: run},
		{ID: upper, ParentID: b, Step: 2, Source: "elsewhere", RunID: "r2"},
	}
	for _, cp := range put {
		_, err := s.Put(ctx, thread, cp)
		require.NoError(t, err)
	}
	at := checkpoint.Config{ThreadID: "t", CheckpointID: b}
	writes := []checkpoint.Write{{TaskID: "0", Kind: checkpoint.WriteUpdate, Node: "n", Value: []byte("1")},
		{TaskID: "0", Kind: checkpoint.WriteEffect, Node: "n"}, {TaskID: "1", Kind: "note", Node: "m", Value: []byte("2")}}
	require.NoError(t, s.PutWrites(ctx, at, writes))
	require.NoError(t, s.PutWrites(ctx, at, writes[1:2]), "a write put again")

	var stored string
	require.NoError(t, s.rdb.QueryRow(`SELECT group_concat(typeof(id) || ' ' || typeof(parent_id) || ' ' || typeof(source) || ' ' || typeof(run_id), ', ')
		FROM (SELECT * FROM checkpoints ORDER BY pk)`).Scan(&stored))
	assert.Equal(t, "blob text integer blob, blob blob integer blob, text blob text text", stored)
	require.NoError(t, s.rdb.QueryRow(`SELECT group_concat(typeof(kind), ' ') FROM (SELECT kind FROM writes ORDER BY seq)`).Scan(&stored))
	assert.Equal(t, "integer integer text", stored)

	got, err := s.Get(ctx, at)
	require.NoError(t, err)
	assert.Equal(t, put[1], got.Checkpoint)
	assert.Equal(t, []checkpoint.Write{writes[0], writes[1], writes[2]}, got.Writes)
	list, err := s.List(ctx, thread, checkpoint.ListOptions{})
	require.NoError(t, err)
	assert.Equal(t, []string{b, a, upper}, tupleIDs(list), "UUIDs order as their text, after other IDs")
	for _, tc := range []struct {
		opts checkpoint.ListOptions
		want []string
	}{
		{checkpoint.ListOptions{Before: b}, []string{a, upper}},
		{checkpoint.ListOptions{RunID: run}, []string{b, a}},
		{checkpoint.ListOptions{Source: checkpoint.SourceLoop}, []string{b}},
		{checkpoint.ListOptions{Source: "elsewhere", RunID: "r2"}, []string{upper}},
	} {
		list, err := s.List(ctx, thread, tc.opts)
		require.NoError(t, err)
		assert.Equal(t, tc.want, tupleIDs(list), "%+v", tc.opts)
	}
	require.NoError(t, s.PatchMetadata(ctx, at, map[string]string{"k": "v"}))
	got, err = s.Get(ctx, at)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"k": "v"}, got.Checkpoint.Meta)

	// A thread's ID is kept once, while it has checkpoints.
	_, err = s.Put(ctx, checkpoint.Config{ThreadID: "u"}, checkpoint.Checkpoint{ID: a})
	require.NoError(t, err)
	threads := func() (names string) {
		require.NoError(t, s.rdb.QueryRow(`SELECT coalesce(group_concat(name, ' '), '') FROM (SELECT name FROM checkpoint_threads ORDER BY name)`).Scan(&names))
		return names
	}
	assert.Equal(t, "t u", threads())
	require.NoError(t, s.DeleteThread(ctx, "t"))
	assert.Equal(t, "u", threads())
}
