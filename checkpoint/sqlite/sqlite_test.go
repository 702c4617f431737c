package sqlite_test

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agiraph/agiraph/checkpoint"
	"github.com/agiraph/agiraph/checkpoint/checkpointtest"
	"github.com/agiraph/agiraph/checkpoint/sqlite"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func open(t *testing.T, path string, opts ...sqlite.Option) *sqlite.Saver {
	t.Helper()
	s, err := sqlite.Open(path, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	return s
}

// rawDB opens the file with plain database/sql, to look at it or damage it.
func rawDB(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", path+"?_busy_timeout=60000")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func exec1(t *testing.T, db *sql.DB, query string, args ...any) {
	t.Helper()
	if _, err := db.Exec(query, args...); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
}

// TestConformance: the Saver passes the checkpoint.Saver conformance suite, each property on a fresh
// database file.
func TestConformance(t *testing.T) {
	t.Parallel()
	checkpointtest.Run(t, func(t *testing.T) checkpoint.Saver {
		return open(t, filepath.Join(t.TempDir(), "checkpoints.db"))
	})
}

// TestConformance_SyncFull: the same with synchronous=FULL and one reader, which changes how
// connections are used but not what is stored.
func TestConformance_SyncFull(t *testing.T) {
	t.Parallel()
	checkpointtest.Run(t, func(t *testing.T) checkpoint.Saver {
		return open(t, filepath.Join(t.TempDir(), "checkpoints.db"), sqlite.WithSynchronous(sqlite.SyncFull), sqlite.WithMaxReaders(1))
	})
}

func cp(id, parent string, step int, state []byte) checkpoint.Checkpoint {
	return checkpoint.Checkpoint{
		ID: id, ParentID: parent, Step: step, Source: checkpoint.SourceLoop, RunID: "run-1", State: state,
		Next:      []checkpoint.Task{{ID: "0", Node: "agent"}, {ID: "1", Node: "tool", Arg: []byte(`{"q":1}`), Push: true}},
		Joins:     map[string][]string{"j": {"a"}},
		Meta:      map[string]string{"step": fmt.Sprint(step)},
		Format:    1,
		CreatedAt: time.Date(2025, 1, 2, 3, 4, 5, 6000, time.UTC).Add(time.Duration(step) * time.Minute),
	}
}

func upd(task, value string) checkpoint.Write {
	return checkpoint.Write{TaskID: task, Node: "node-" + task, Kind: checkpoint.WriteUpdate, Value: []byte(value)}
}

// dump reads everything a saver has of the given threads and namespaces, as text to compare.
func dump(t *testing.T, s checkpoint.Saver, cfgs ...checkpoint.Config) string {
	t.Helper()
	var b strings.Builder
	for _, cfg := range cfgs {
		l, err := s.List(context.Background(), cfg, checkpoint.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, tu := range l {
			c := tu.Checkpoint
			fmt.Fprintf(&b, "%+v %s %s %d %s %s state=%x next=%+v joins=%v meta=%v format=%d at=%s\n",
				tu.Config, c.ID, c.ParentID, c.Step, c.Source, c.RunID, c.State, c.Next, c.Joins, c.Meta, c.Format, c.CreatedAt.UTC().Format(time.RFC3339Nano))
			for _, w := range tu.Writes {
				fmt.Fprintf(&b, "  %s %s %s %d %q\n", w.TaskID, w.Node, w.Kind, w.Idx, w.Value)
			}
		}
	}
	return b.String()
}

// TestReopen: everything written before Close is there after Open; the file and its missing parent
// directories are created privately, and Close leaves no write-ahead log behind.
func TestReopen(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "a", "b", "checkpoints.db")
	s, err := sqlite.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<14) // 256 KiB, over many pages
	cfgs := []checkpoint.Config{{ThreadID: "t1"}, {ThreadID: "t1", NS: "sub:1"}, {ThreadID: "t2"}}
	for _, cfg := range cfgs {
		parent := ""
		for i := range 5 {
			state := []byte(fmt.Sprintf(`{"i":%d}`, i))
			if i == 2 {
				state = big
			}
			at, err := s.Put(ctx, cfg, cp(fmt.Sprint("c", i), parent, i, state))
			if err != nil {
				t.Fatal(err)
			}
			if err := s.PutWrites(ctx, at, []checkpoint.Write{upd("0", "out"), upd("1", strings.Repeat("v", 3000))}); err != nil {
				t.Fatal(err)
			}
			parent = at.CheckpointID
		}
	}
	before := dump(t, s, cfgs...)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path + "-wal"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the write-ahead log is still there after Close: %v", err)
	}
	for _, p := range []struct {
		path string
		mode fs.FileMode
	}{{path, 0o600}, {filepath.Join(dir, "a"), 0o700 | fs.ModeDir}, {filepath.Join(dir, "a", "b"), 0o700 | fs.ModeDir}} {
		fi, err := os.Stat(p.path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode() != p.mode {
			t.Errorf("%s has mode %v, want %v", p.path, fi.Mode(), p.mode)
		}
	}

	s2 := open(t, path)
	if after := dump(t, s2, cfgs...); after != before {
		t.Errorf("after reopening:\n%s\nbefore:\n%s", after, before)
	}
	if strings.Count(before, "\n") != 3*5*3 {
		t.Errorf("dump has %d lines, want %d:\n%s", strings.Count(before, "\n"), 3*5*3, before)
	}
	tu, err := s2.Get(ctx, checkpoint.Config{ThreadID: "t1", NS: "sub:1"})
	if err != nil || tu.Checkpoint.ID != "c4" || len(tu.Writes) != 2 {
		t.Fatalf("latest of t1/sub:1 after reopening: %+v, %v", tu, err)
	}
}

// steps writes n checkpoints to thread cfg with two writes each and reads each back.
func steps(ctx context.Context, s checkpoint.Saver, cfg checkpoint.Config, prefix string, n int) error {
	parent := ""
	for i := range n {
		id := fmt.Sprintf("%s-%03d", prefix, i)
		at, err := s.Put(ctx, cfg, cp(id, parent, i, []byte(id)))
		if err != nil {
			return err
		}
		if err := s.PutWrites(ctx, at, []checkpoint.Write{upd("0", id)}); err != nil {
			return err
		}
		if err := s.PutWrites(ctx, at, []checkpoint.Write{upd("1", id), upd("0", "dup")}); err != nil {
			return err
		}
		tu, err := s.Get(ctx, at)
		if err != nil {
			return err
		}
		if len(tu.Writes) != 2 || string(tu.Checkpoint.State) != id {
			return fmt.Errorf("%s read back with state %q and %d writes", id, tu.Checkpoint.State, len(tu.Writes))
		}
		if _, err := s.List(ctx, cfg, checkpoint.ListOptions{Limit: 2}); err != nil {
			return err
		}
		parent = id
	}
	return nil
}

// checkSteps checks that thread cfg has the checkpoints steps wrote for each prefix, with their
// writes.
func checkSteps(t *testing.T, s checkpoint.Saver, cfg checkpoint.Config, n int, prefixes ...string) {
	t.Helper()
	l, err := s.List(context.Background(), cfg, checkpoint.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, p := range prefixes {
		for i := range n {
			want = append(want, fmt.Sprintf("%s-%03d", p, i))
		}
	}
	slices.Sort(want)
	slices.Reverse(want)
	var got []string
	for _, tu := range l {
		got = append(got, tu.Checkpoint.ID)
		id := tu.Checkpoint.ID
		if len(tu.Writes) != 2 || string(tu.Writes[0].Value) != id || string(tu.Writes[1].Value) != id {
			t.Errorf("%s has writes %+v", id, tu.Writes)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("thread %s has %d checkpoints, want %d", cfg.ThreadID, len(got), len(want))
	}
}

// TestTwoSaversOneFile: two Savers on one file, each with its own connections (as two processes
// would have), write and read concurrently from several goroutines, to their own threads and to a
// shared one; no call fails (no SQLITE_BUSY) and each Saver sees everything. The busy timeout is
// generous so that the test checks the locking, not the speed of the machine.
func TestTwoSaversOneFile(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "shared.db")
	savers := []*sqlite.Saver{open(t, path, sqlite.WithBusyTimeout(time.Minute)), open(t, path, sqlite.WithBusyTimeout(time.Minute))}
	const perWorker = 40
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i, s := range savers {
		for g := range 2 {
			wg.Go(func() {
				prefix := fmt.Sprintf("s%d-g%d", i, g)
				if err := steps(ctx, s, checkpoint.Config{ThreadID: prefix}, prefix, perWorker); err != nil {
					errs <- fmt.Errorf("%s: %w", prefix, err)
				}
				if err := steps(ctx, s, checkpoint.Config{ThreadID: "shared"}, prefix, perWorker); err != nil {
					errs <- fmt.Errorf("%s in the shared thread: %w", prefix, err)
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for _, s := range savers {
		var all []string
		for i := range savers {
			for g := range 2 {
				prefix := fmt.Sprintf("s%d-g%d", i, g)
				checkSteps(t, s, checkpoint.Config{ThreadID: prefix}, perWorker, prefix)
				all = append(all, prefix)
			}
		}
		checkSteps(t, s, checkpoint.Config{ThreadID: "shared"}, perWorker, all...)
	}
}

const helperEnv = "AGIRAPH_SQLITE_HELPER_DB"

// writerChild is the second process of TestTwoProcesses (see TestMain): it opens the database at
// path, says "ready", waits for a line on its standard input, then writes. It returns the exit code.
func writerChild(path string) int {
	s, err := sqlite.Open(path, sqlite.WithBusyTimeout(time.Minute))
	if err != nil {
		fmt.Println("open:", err)
		return 2
	}
	fmt.Println("ready")
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		fmt.Println("stdin:", err)
		return 2
	}
	ctx := context.Background()
	var wg sync.WaitGroup
	var failed sync.Map
	wg.Go(func() {
		if err := steps(ctx, s, checkpoint.Config{ThreadID: "child"}, "child", 60); err != nil {
			failed.Store("child", err)
		}
	})
	wg.Go(func() {
		if err := steps(ctx, s, checkpoint.Config{ThreadID: "shared"}, "child", 60); err != nil {
			failed.Store("shared", err)
		}
	})
	wg.Wait()
	code := 0
	failed.Range(func(k, v any) bool {
		fmt.Printf("%s: %v\n", k, v)
		code = 1
		return true
	})
	if err := s.Close(); err != nil {
		fmt.Println("close:", err)
		code = 1
	}
	return code
}

// TestTwoProcesses: this test's binary runs again as a second process (writerChild) that writes
// to the same file while this one does; both sets of checkpoints and writes are there.
func TestTwoProcesses(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "shared.db")
	s := open(t, path, sqlite.WithBusyTimeout(time.Minute))

	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+path)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := false
	t.Cleanup(func() {
		if !done {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	out := bufio.NewReader(stdout)
	line, err := out.ReadString('\n')
	if err != nil || line != "ready\n" {
		t.Fatalf("the helper process said %q (%v); stderr: %s", line, err, stderr.String())
	}
	// Both processes have the file open; both write now.
	if _, err := stdin.Write([]byte("go\n")); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	wg.Go(func() { errs <- steps(ctx, s, checkpoint.Config{ThreadID: "parent"}, "parent", 60) })
	wg.Go(func() { errs <- steps(ctx, s, checkpoint.Config{ThreadID: "shared"}, "parent", 60) })
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	rest, _ := out.ReadString(0)
	err = cmd.Wait()
	done = true
	if err != nil {
		t.Fatalf("the helper process failed: %v\nstdout: %s\nstderr: %s", err, rest, stderr.String())
	}
	checkSteps(t, s, checkpoint.Config{ThreadID: "parent"}, 60, "parent")
	checkSteps(t, s, checkpoint.Config{ThreadID: "child"}, 60, "child")
	checkSteps(t, s, checkpoint.Config{ThreadID: "shared"}, 60, "child", "parent")
}

// TestConcurrentFirstOpen: several Savers opening a new file at once all succeed, and the schema
// is created once.
func TestConcurrentFirstOpen(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "new.db")
	const n = 6
	savers := make([]*sqlite.Saver, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { savers[i], errs[i] = sqlite.Open(path, sqlite.WithBusyTimeout(time.Minute)) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("open %d: %v", i, err)
			continue
		}
		t.Cleanup(func() { savers[i].Close() })
		if _, err := savers[i].Put(context.Background(), checkpoint.Config{ThreadID: "t"}, cp(fmt.Sprint("c", i), "", i, nil)); err != nil {
			t.Errorf("put through saver %d: %v", i, err)
		}
	}
	if l, err := savers[0].List(context.Background(), checkpoint.Config{ThreadID: "t"}, checkpoint.ListOptions{}); err != nil || len(l) != n {
		t.Errorf("list: %d checkpoints, %v; want %d", len(l), err, n)
	}
}

// TestNewerSchemaRefused: a database of a newer schema version is refused with an error naming both
// versions, and left as it was.
func TestNewerSchemaRefused(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "newer.db")
	s, err := sqlite.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(context.Background(), checkpoint.Config{ThreadID: "t"}, cp("c1", "", 0, nil)); err != nil {
		t.Fatal(err)
	}
	s.Close()
	db := rawDB(t, path)
	var current int
	if err := db.QueryRow("PRAGMA user_version").Scan(&current); err != nil || current < 1 {
		t.Fatalf("user_version of a new database: %d, %v", current, err)
	}
	exec1(t, db, fmt.Sprintf("PRAGMA user_version = %d", current+41))

	_, err = sqlite.Open(path)
	var sv *sqlite.SchemaVersionError
	if !errors.As(err, &sv) || !errors.Is(err, sqlite.ErrSchemaTooNew) {
		t.Fatalf("open of a newer database: %v, want a *SchemaVersionError", err)
	}
	if sv.Version != current+41 || sv.Supported != current || sv.Path != path {
		t.Errorf("error fields %+v, want version %d, supported %d, path %s", sv, current+41, current, path)
	}
	for _, part := range []string{path, fmt.Sprint(current + 41), fmt.Sprint(current)} {
		if !strings.Contains(err.Error(), part) {
			t.Errorf("error %q does not name %s", err, part)
		}
	}
	var after, rows int
	if err := db.QueryRow("PRAGMA user_version").Scan(&after); err != nil || after != current+41 {
		t.Errorf("user_version after the refusal: %d, %v", after, err)
	}
	if err := db.QueryRow("SELECT count(*) FROM checkpoints").Scan(&rows); err != nil || rows != 1 {
		t.Errorf("checkpoints after the refusal: %d, %v", rows, err)
	}
}

// TestNotADatabase: a file that is not a SQLite database is refused with an error naming it, and not
// changed.
func TestNotADatabase(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for name, content := range map[string][]byte{
		"short.txt": []byte("hello\n"),
		"long.txt":  bytes.Repeat([]byte("this is not a database, just some text\n"), 200),
		"zeros.bin": make([]byte, 8192),
	} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, content, 0o644); err != nil {
			t.Fatal(err)
		}
		s, err := sqlite.Open(path)
		if err == nil {
			s.Close()
			t.Errorf("%s was opened as a database", name)
			continue
		}
		if !errors.Is(err, sqlite.ErrNotDatabase) || !strings.Contains(err.Error(), path) {
			t.Errorf("open %s: %v; want ErrNotDatabase naming the file", name, err)
		}
		if got, _ := os.ReadFile(path); !bytes.Equal(got, content) {
			t.Errorf("%s was changed by the failed open", name)
		}
	}
	// A directory is no database either.
	if s, err := sqlite.Open(dir); err == nil {
		s.Close()
		t.Error("a directory was opened as a database")
	} else if !strings.Contains(err.Error(), dir) {
		t.Errorf("open of a directory: %v; want an error naming it", err)
	}
	if _, err := sqlite.Open(""); err == nil {
		t.Error("an empty path was accepted")
	}
}

// TestForeignDatabase: Open neither uses nor changes a SQLite database of another application; it
// accepts an empty file.
func TestForeignDatabase(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	app := filepath.Join(dir, "app.db")
	db := rawDB(t, app)
	exec1(t, db, "CREATE TABLE users (name TEXT)")
	other := filepath.Join(dir, "other.db")
	exec1(t, rawDB(t, other), "PRAGMA application_id = 42")
	for _, path := range []string{app, other} {
		s, err := sqlite.Open(path)
		if err == nil {
			s.Close()
			t.Errorf("%s was opened", path)
			continue
		}
		if !errors.Is(err, sqlite.ErrForeignDatabase) || !strings.Contains(err.Error(), path) {
			t.Errorf("open %s: %v; want ErrForeignDatabase naming the file", path, err)
		}
	}
	var tables int
	if err := db.QueryRow("SELECT count(*) FROM sqlite_schema WHERE name = 'checkpoints'").Scan(&tables); err != nil || tables != 0 {
		t.Errorf("the application's database got a checkpoints table (%d, %v)", tables, err)
	}

	empty := filepath.Join(dir, "empty.db")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	s := open(t, empty)
	if _, err := s.Put(context.Background(), checkpoint.Config{ThreadID: "t"}, cp("c1", "", 0, nil)); err != nil {
		t.Fatal(err)
	}
}

// TestCorruptRows: a row damaged behind the Saver's back makes Get and List fail with a
// *CorruptError naming the thread, the namespace, the checkpoint and the column, never a panic;
// other checkpoints stay readable.
func TestCorruptRows(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tc := range []struct {
		column, damage string
	}{
		{"checkpoints.next", "UPDATE checkpoints SET next = 'garbage' WHERE id = 'c2'"},
		{"checkpoints.next", "UPDATE checkpoints SET next = x'0105' WHERE id = 'c2'"},                     // more tasks than bytes
		{"checkpoints.next", "UPDATE checkpoints SET next = CAST(next || x'00' AS BLOB) WHERE id = 'c2'"}, // trailing bytes
		{"checkpoints.next", "UPDATE checkpoints SET next = substr(next, 1, 5) WHERE id = 'c2'"},          // truncated
		{"checkpoints.joins", "UPDATE checkpoints SET joins = x'02' WHERE id = 'c2'"},                     // unknown version
		{"checkpoints.meta", "UPDATE checkpoints SET meta = x'0105' WHERE id = 'c2'"},
		{"checkpoints.step", "UPDATE checkpoints SET step = 'abc' WHERE id = 'c2'"},
		{"checkpoints.created_at", "UPDATE checkpoints SET created_at = 'yesterday' WHERE id = 'c2'"},
		{"checkpoints.state", "UPDATE checkpoints SET state = 1.5 WHERE id = 'c2'"},
		{"writes.idx", "UPDATE writes SET idx = 'x' WHERE task_id = '1' AND checkpoint = (SELECT pk FROM checkpoints WHERE id = 'c2')"},
		{"writes.kind", "UPDATE writes SET kind = 99 WHERE task_id = '1' AND checkpoint = (SELECT pk FROM checkpoints WHERE id = 'c2')"},
		{"checkpoints.source", "UPDATE checkpoints SET source = -1 WHERE id = 'c2'"},
		{"checkpoints.parent_id", "UPDATE checkpoints SET parent_id = x'0102' WHERE id = 'c2'"},
		{"checkpoints.run_id", "UPDATE checkpoints SET run_id = 7 WHERE id = 'c2'"},
	} {
		t.Run(tc.damage, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "c.db")
			s := open(t, path)
			cfg := checkpoint.Config{ThreadID: "thread-x", NS: "ns-y"}
			for i, id := range []string{"c1", "c2", "c3"} {
				at, err := s.Put(ctx, cfg, cp(id, "", i, []byte("state")))
				if err != nil {
					t.Fatal(err)
				}
				if err := s.PutWrites(ctx, at, []checkpoint.Write{upd("0", "a"), upd("1", "b")}); err != nil {
					t.Fatal(err)
				}
			}
			exec1(t, rawDB(t, path), tc.damage)

			check := func(what string, err error) {
				t.Helper()
				var ce *sqlite.CorruptError
				if !errors.As(err, &ce) {
					t.Fatalf("%s: %v, want a *CorruptError", what, err)
				}
				if ce.ThreadID != "thread-x" || ce.NS != "ns-y" || ce.CheckpointID != "c2" || ce.Column != tc.column {
					t.Errorf("%s: error fields %+v, want thread-x, ns-y, c2, %s", what, ce, tc.column)
				}
				for _, part := range []string{"thread-x", "c2", tc.column} {
					if !strings.Contains(err.Error(), part) {
						t.Errorf("%s: error %q does not name %s", what, err, part)
					}
				}
			}
			_, err := s.Get(ctx, checkpoint.Config{ThreadID: "thread-x", NS: "ns-y", CheckpointID: "c2"})
			check("get c2", err)
			_, err = s.List(ctx, cfg, checkpoint.ListOptions{})
			check("list", err)
			for _, id := range []string{"c1", "c3", ""} {
				if _, err := s.Get(ctx, checkpoint.Config{ThreadID: "thread-x", NS: "ns-y", CheckpointID: id}); err != nil {
					t.Errorf("get %q next to the damaged row: %v", id, err)
				}
			}
			if l, err := s.List(ctx, cfg, checkpoint.ListOptions{Limit: 1}); err != nil || len(l) != 1 {
				t.Errorf("list of the newest only: %d, %v", len(l), err)
			}
		})
	}
}

// TestPutWritesNeedsACheckpointID: PutWrites does not guess which checkpoint is meant.
func TestPutWritesNeedsACheckpointID(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := open(t, filepath.Join(t.TempDir(), "c.db"))
	if _, err := s.Put(ctx, checkpoint.Config{ThreadID: "t"}, cp("c1", "", 0, nil)); err != nil {
		t.Fatal(err)
	}
	for _, ws := range [][]checkpoint.Write{{upd("0", "x")}, {upd("0", "x"), upd("1", "y")}} {
		if err := s.PutWrites(ctx, checkpoint.Config{ThreadID: "t"}, ws); err == nil {
			t.Errorf("PutWrites of %d writes without a checkpoint ID succeeded", len(ws))
		}
	}
}

// TestPathNeedsNoEscaping: a path with characters that a SQLite URI reserves is used as it is.
func TestPathNeedsNoEscaping(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "we?ird #dir %41 ü")
	path := filepath.Join(dir, "db?x=1#frag")
	s := open(t, path)
	if _, err := s.Put(context.Background(), checkpoint.Config{ThreadID: "t"}, cp("c1", "", 0, nil)); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("the database is not at %s: %v", path, err)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), "db?x=1#frag") {
			t.Errorf("unexpected file %q next to the database", e.Name())
		}
	}
}

// TestClosedSaver: calls after Close fail instead of panicking, and Close twice is harmless.
func TestClosedSaver(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, err := sqlite.Open(filepath.Join(t.TempDir(), "c.db"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	cfg := checkpoint.Config{ThreadID: "t", CheckpointID: "c1"}
	if _, err := s.Put(ctx, cfg, cp("c1", "", 0, nil)); err == nil {
		t.Error("Put after Close succeeded")
	}
	if err := s.PutWrites(ctx, cfg, []checkpoint.Write{upd("0", "x")}); err == nil {
		t.Error("PutWrites after Close succeeded")
	}
	if _, err := s.Get(ctx, cfg); err == nil {
		t.Error("Get after Close succeeded")
	}
	if _, err := s.List(ctx, cfg, checkpoint.ListOptions{}); err == nil {
		t.Error("List after Close succeeded")
	}
	if err := s.DeleteThread(ctx, "t"); err == nil {
		t.Error("DeleteThread after Close succeeded")
	}
}

// TestPutWithAParentOnANewThread: a checkpoint with a parent is put as one of a thread that
// exists; on a thread the database does not have (a copied checkpoint, a thread deleted since),
// the thread is added, alone and in a step with writes.
func TestPutWithAParentOnANewThread(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "c.db")
	s := open(t, path)
	_, err := s.Put(ctx, checkpoint.Config{ThreadID: "copy"}, cp("c2", "c1", 1, []byte(`{"n":1}`)))
	require.NoError(t, err, "a checkpoint with a parent on a new thread")
	got, err := s.Get(ctx, checkpoint.Config{ThreadID: "copy"})
	require.NoError(t, err)
	assert.Equal(t, "c2", got.Checkpoint.ID)
	assert.Equal(t, "c1", got.Checkpoint.ParentID)

	require.NoError(t, s.DeleteThread(ctx, "copy"))
	_, err = s.Put(ctx, checkpoint.Config{ThreadID: "copy"}, cp("c1", "", 0, []byte(`{}`)))
	require.NoError(t, err)
	require.NoError(t, s.DeleteThread(ctx, "copy"))
	_, err = s.Put(ctx, checkpoint.Config{ThreadID: "copy"}, cp("c3", "c2", 2, nil))
	require.NoError(t, err, "a checkpoint with a parent on a thread deleted since")
	_, err = s.PutStep(ctx, checkpoint.Config{ThreadID: "copy", CheckpointID: "c3"}, []checkpoint.Write{upd("0", "x"), upd("1", "y")},
		checkpoint.Config{ThreadID: "copy"}, cp("c4", "c3", 3, nil))
	require.NoError(t, err)
	got, err = s.Get(ctx, checkpoint.Config{ThreadID: "copy"})
	require.NoError(t, err)
	assert.Equal(t, "c4", got.Checkpoint.ID)
	n := 0
	require.NoError(t, rawDB(t, path).QueryRow(`SELECT count(*) FROM checkpoint_threads WHERE name = 'copy'`).Scan(&n))
	assert.Equal(t, 1, n, "one row for the thread")
}
