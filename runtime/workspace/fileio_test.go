package workspace_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/runtime/workspace"
)

// entries returns the names in dir.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		if e.Name() != workspace.SpareName && !strings.HasPrefix(e.Name(), workspace.SpareName+"-") { // spares stay (spare_linux_test.go)
			names = append(names, e.Name())
		}
	}
	return names
}

func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "_plan.md")
	must(t, workspace.WriteFile(p, []byte("one")))
	if got, _ := os.ReadFile(p); string(got) != "one" {
		t.Fatalf("content = %q", got)
	}
	st, err := os.Stat(p)
	must(t, err)
	if st.Mode().Perm() != 0o644 {
		t.Errorf("new file mode = %v, want 0644", st.Mode().Perm())
	}

	// Replacing keeps the permissions and replaces the file by a rename: a reader holding
	// the old file keeps seeing the old content.
	must(t, os.Chmod(p, 0o600))
	old, err := os.Open(p)
	must(t, err)
	defer old.Close()
	must(t, workspace.WriteFile(p, []byte("two, longer")))
	if got, _ := os.ReadFile(p); string(got) != "two, longer" {
		t.Fatalf("content = %q", got)
	}
	if st, _ := os.Stat(p); st.Mode().Perm() != 0o600 {
		t.Errorf("replaced file mode = %v, want 0600 kept", st.Mode().Perm())
	}
	buf := make([]byte, 64)
	n, _ := old.Read(buf)
	if string(buf[:n]) != "one" {
		t.Errorf("reader of the old file sees %q; want %q (the file must be replaced, not rewritten)", buf[:n], "one")
	}
	if names := entries(t, dir); len(names) != 1 || names[0] != "_plan.md" {
		t.Errorf("directory holds %q, want only _plan.md (no temporary files)", names)
	}

	// Failures name the file and leave nothing behind.
	err = workspace.WriteFile(filepath.Join(dir, "missing", "x.md"), []byte("x"))
	if err == nil || !strings.Contains(err.Error(), filepath.Join(dir, "missing", "x.md")) {
		t.Errorf("write in a missing directory: err = %v, want one naming the file", err)
	}
	must(t, os.Mkdir(filepath.Join(dir, "sub"), 0o755))
	err = workspace.WriteFile(filepath.Join(dir, "sub"), []byte("x"))
	if err == nil {
		t.Error("writing over a directory: no error")
	}
	if names := entries(t, dir); len(names) != 2 {
		t.Errorf("directory holds %q after failed writes, want _plan.md and sub", names)
	}
}

func TestWriteFileConcurrentReaders(t *testing.T) {
	p := filepath.Join(t.TempDir(), "state.json")
	a, b := strings.Repeat("a", 1<<16), strings.Repeat("b", 1<<16)
	must(t, workspace.WriteFile(p, []byte(a)))
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Go(func() {
		for i := 0; i < 50; i++ {
			must(t, workspace.WriteFile(p, []byte([]string{a, b}[i%2])))
		}
		close(stop)
	})
	for {
		select {
		case <-stop:
			wg.Wait()
			if names := entries(t, filepath.Dir(p)); len(names) != 1 {
				t.Errorf("directory holds %q, want only state.json", names)
			}
			return
		default:
		}
		got, err := os.ReadFile(p)
		if err != nil {
			t.Fatalf("reader: %v", err)
		}
		if s := string(got); s != a && s != b {
			t.Fatalf("reader saw a partial or mixed file of %d bytes", len(got))
		}
	}
}

type state struct {
	Name  string   `json:"name"`
	Nodes []string `json:"nodes"`
}

func TestJSON(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "history.json")
	in := state{Name: "w1", Nodes: []string{"n1", "n2"}}
	must(t, workspace.WriteJSON(p, in))
	raw, _ := os.ReadFile(p)
	if want := "{\n  \"name\": \"w1\",\n  \"nodes\": [\n    \"n1\",\n    \"n2\"\n  ]\n}\n"; string(raw) != want {
		t.Errorf("file = %q, want %q", raw, want)
	}
	var out state
	must(t, workspace.ReadJSON(p, &out))
	if out.Name != in.Name || fmt.Sprint(out.Nodes) != fmt.Sprint(in.Nodes) {
		t.Errorf("read back %+v, want %+v", out, in)
	}

	// Errors name the file.
	missing := filepath.Join(dir, "nope.json")
	err := workspace.ReadJSON(missing, &out)
	if err == nil || !strings.Contains(err.Error(), missing) || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: err = %v, want fs.ErrNotExist naming %s", err, missing)
	}
	bad := filepath.Join(dir, "bad.json")
	must(t, os.WriteFile(bad, []byte(`{"name": `), 0o644))
	if err := workspace.ReadJSON(bad, &out); err == nil || !strings.Contains(err.Error(), bad) {
		t.Errorf("truncated JSON: err = %v, want one naming %s", err, bad)
	}
	must(t, os.WriteFile(bad, []byte(`{"name": 3}`), 0o644))
	if err := workspace.ReadJSON(bad, &out); err == nil || !strings.Contains(err.Error(), bad) {
		t.Errorf("mistyped JSON: err = %v, want one naming %s", err, bad)
	}
	if err := workspace.WriteJSON(filepath.Join(dir, "f.json"), func() {}); err == nil || !strings.Contains(err.Error(), "f.json") {
		t.Errorf("unencodable value: err = %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "f.json")); !os.IsNotExist(err) {
		t.Error("a failed WriteJSON left a file")
	}
}

func TestAppendJSONL(t *testing.T) {
	p := filepath.Join(t.TempDir(), "log.jsonl")
	must(t, workspace.AppendJSONL(p, map[string]string{"text": "line\nbreak"}))
	must(t, workspace.AppendJSONL(p, state{Name: "x"}))
	raw, _ := os.ReadFile(p)
	if want := "{\"text\":\"line\\nbreak\"}\n{\"name\":\"x\",\"nodes\":null}\n"; string(raw) != want {
		t.Errorf("file = %q, want %q", raw, want)
	}
	if st, _ := os.Stat(p); st.Mode().Perm() != 0o644 {
		t.Errorf("mode = %v, want 0644", st.Mode().Perm())
	}

	// Concurrent appends make whole lines.
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 50 {
				if err := workspace.AppendJSONL(p, state{Name: fmt.Sprintf("%d-%d", g, i), Nodes: []string{strings.Repeat("z", 500)}}); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	f, err := os.Open(p)
	must(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	lines := 0
	for sc.Scan() {
		lines++
		if lines <= 2 {
			continue
		}
		var s state
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil || len(s.Nodes) != 1 {
			t.Fatalf("line %d is not a whole record: %v", lines, err)
		}
	}
	if lines != 2+8*50 {
		t.Errorf("%d lines, want %d", lines, 2+8*50)
	}

	if err := workspace.AppendJSONL(filepath.Join(p, "x"), 1); err == nil || !strings.Contains(err.Error(), filepath.Join(p, "x")) {
		t.Errorf("append under a file: err = %v, want one naming the path", err)
	}
	if err := workspace.AppendJSONL(p, make(chan int)); err == nil {
		t.Error("unencodable value: no error")
	}
}

// A batch writes its files together: nothing changes before Commit (or CommitSoon, which does
// not wait for the renames to be durable), every file is in place after it, permissions kept,
// and no temporary file is left.
func TestBatch(t *testing.T) {
	for _, c := range []struct {
		name   string
		commit func(*workspace.Batch) error
	}{{"Commit", (*workspace.Batch).Commit}, {"CommitSoon", (*workspace.Batch).CommitSoon}} {
		t.Run(c.name, func(t *testing.T) { testBatch(t, c.commit) })
	}
}

func testBatch(t *testing.T, commit func(*workspace.Batch) error) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.json"), filepath.Join(dir, "sub", "b.md")
	require.NoError(t, os.Mkdir(filepath.Dir(b), 0o755))
	require.NoError(t, os.WriteFile(a, []byte("old"), 0o600))

	var batch workspace.Batch
	require.NoError(t, batch.AddJSON(a, map[string]int{"n": 1}))
	require.NoError(t, batch.Add(b, []byte("new")))
	got, err := os.ReadFile(a)
	require.NoError(t, err)
	assert.Equal(t, "old", string(got), "nothing changes before Commit")
	require.NoError(t, commit(&batch))
	got, err = os.ReadFile(a)
	require.NoError(t, err)
	assert.Equal(t, "{\n  \"n\": 1\n}\n", string(got))
	got, err = os.ReadFile(b)
	require.NoError(t, err)
	assert.Equal(t, "new", string(got))
	st, err := os.Stat(a)
	require.NoError(t, err)
	assert.Equal(t, fs.FileMode(0o600), st.Mode().Perm())
	assert.ElementsMatch(t, []string{"a.json", "sub"}, entries(t, dir))
	assert.Equal(t, []string{"b.md"}, entries(t, filepath.Dir(b)))
	require.NoError(t, commit(&batch), "an empty batch commits nothing")

	// A file that cannot be written is an error of Commit naming it, and no file of the batch
	// changes; Discard drops what was added.
	require.NoError(t, batch.Add(a, []byte("not written")))
	require.NoError(t, batch.Add(filepath.Join(dir, "missing", "c.md"), []byte("x")))
	err = commit(&batch)
	require.Error(t, err)
	assert.Contains(t, err.Error(), filepath.Join(dir, "missing", "c.md"))
	got, err = os.ReadFile(a)
	require.NoError(t, err)
	assert.Equal(t, "{\n  \"n\": 1\n}\n", string(got))
	require.NoError(t, batch.Add(a, []byte("dropped")))
	batch.Discard()
	got, err = os.ReadFile(a)
	require.NoError(t, err)
	assert.Equal(t, "{\n  \"n\": 1\n}\n", string(got))
	assert.ElementsMatch(t, []string{"a.json", "sub"}, entries(t, dir))
}

// A batch appends its lines at Commit, with its files; Discard forgets them, and a line that
// cannot be appended is an error naming its file.
func TestBatchAppends(t *testing.T) {
	dir := t.TempDir()
	log, state := filepath.Join(dir, "history.jsonl"), filepath.Join(dir, "state.json")
	var batch workspace.Batch
	require.NoError(t, batch.Append(log, map[string]string{"node": "n1", "summary": "two\nlines"}))
	require.NoError(t, batch.AddJSON(state, 1))
	assert.NoFileExists(t, log, "nothing is appended before Commit")
	require.NoError(t, batch.Commit())
	require.NoError(t, batch.Append(log, map[string]string{"node": "n2"}))
	require.NoError(t, batch.Commit(), "a batch of lines alone")
	got, err := os.ReadFile(log)
	require.NoError(t, err)
	assert.Equal(t, "{\"node\":\"n1\",\"summary\":\"two\\nlines\"}\n{\"node\":\"n2\"}\n", string(got))

	require.NoError(t, batch.Append(log, map[string]string{"node": "dropped"}))
	batch.Discard()
	require.NoError(t, batch.Commit())
	after, err := os.ReadFile(log)
	require.NoError(t, err)
	assert.Equal(t, got, after)

	missing := filepath.Join(dir, "missing", "history.jsonl")
	require.NoError(t, batch.Append(missing, 1))
	require.NoError(t, batch.AddJSON(state, 2))
	err = batch.Commit()
	require.ErrorContains(t, err, missing)
	b, err := os.ReadFile(state)
	require.NoError(t, err)
	assert.Equal(t, "1\n", string(b), "the files are not written when a line cannot be")
	require.Error(t, batch.Append(log, make(chan int)))
}

// An Appender appends lines as AppendJSONL does, from several goroutines, keeping each file
// open until Close; after Close it still appends, keeping nothing open.
func TestAppender(t *testing.T) {
	dir := t.TempDir()
	log, conv := filepath.Join(dir, "log.jsonl"), filepath.Join(dir, "conversation.jsonl")
	var a workspace.Appender
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			require.NoError(t, a.AppendJSONL(log, map[string]int{"i": i}))
			require.NoError(t, a.AppendJSONL(conv, i))
		})
	}
	wg.Wait()
	require.NoError(t, a.Close())
	require.NoError(t, a.AppendJSONL(log, map[string]int{"i": 20}))
	require.Error(t, a.AppendJSONL(filepath.Join(dir, "missing", "x.jsonl"), 1), "a folder that is not there")

	b, err := os.ReadFile(log)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	assert.Len(t, lines, 21)
	for _, l := range lines {
		var v map[string]int
		require.NoError(t, json.Unmarshal([]byte(l), &v), "line %q", l)
	}
	b, err = os.ReadFile(conv)
	require.NoError(t, err)
	assert.Len(t, strings.Split(strings.TrimSpace(string(b)), "\n"), 20)
}
