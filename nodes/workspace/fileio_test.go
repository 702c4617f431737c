package workspace_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/nodes/workspace"
)

// entries returns the names in dir.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

// atomicWrites are the two atomic writes: durable, and not synced.
var atomicWrites = []struct {
	name  string
	write func(path string, data []byte) error
}{{"WriteFile", workspace.WriteFile}, {"WriteView", workspace.WriteView}}

// An atomic write makes a new file 0644, keeps an existing file's permissions, puts a new file
// in place of the old rather than writing over it, and leaves nothing else in the folder, however
// often it rewrites; a failed write names the file and leaves nothing behind.
func TestWrite(t *testing.T) {
	for _, c := range atomicWrites {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, "_plan.md")
			require.NoError(t, c.write(p, []byte("one")))
			got, err := os.ReadFile(p)
			require.NoError(t, err)
			assert.Equal(t, "one", string(got))
			st, err := os.Stat(p)
			require.NoError(t, err)
			assert.Equal(t, fs.FileMode(0o644), st.Mode().Perm(), "a new file's permissions")

			require.NoError(t, os.Chmod(p, 0o600))
			old, err := os.Open(p)
			require.NoError(t, err)
			defer old.Close()
			for _, v := range []string{"two, longer", "three", "four"} {
				require.NoError(t, c.write(p, []byte(v)))
			}
			got, err = os.ReadFile(p)
			require.NoError(t, err)
			assert.Equal(t, "four", string(got))
			st, err = os.Stat(p)
			require.NoError(t, err)
			assert.Equal(t, fs.FileMode(0o600), st.Mode().Perm(), "a rewrite keeps the permissions")
			held, err := io.ReadAll(old)
			require.NoError(t, err)
			assert.Equal(t, "one", string(held), "a reader of the old file saw it written over")
			assert.Equal(t, []string{"_plan.md"}, entries(t, dir))

			missing := filepath.Join(dir, "missing", "x.md")
			assert.ErrorContains(t, c.write(missing, []byte("x")), missing)
			sub := filepath.Join(dir, "sub")
			require.NoError(t, os.Mkdir(sub, 0o755))
			assert.ErrorContains(t, c.write(sub, []byte("x")), sub)
			assert.Equal(t, []string{"_plan.md", "sub"}, entries(t, dir))
		})
	}
}

// Writers of several files of one folder at once, durable and not, and readers of them: every
// read sees one whole version, every file ends with its last, and no temporary file is left.
func TestWriteConcurrentReaders(t *testing.T) {
	dir := t.TempDir()
	const writers, writes = 6, 60
	version := func(w, i int) string { return strings.Repeat(fmt.Sprintf("<%d.%d>", w, i), 500+i*7) }
	var writing, reading sync.WaitGroup
	stop := make(chan struct{})
	for w := range writers {
		p := filepath.Join(dir, fmt.Sprintf("f%d.json", w))
		require.NoError(t, workspace.WriteFile(p, []byte(version(w, 0))))
		writing.Go(func() {
			for i := 1; i <= writes; i++ {
				write := atomicWrites[min(i%3, 1)].write // a third of the writes durable
				assert.NoError(t, write(p, []byte(version(w, i))))
			}
		})
		reading.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				got, err := os.ReadFile(p)
				if !assert.NoError(t, err) {
					return
				}
				var i int
				_, err = fmt.Sscanf(string(got), fmt.Sprintf("<%d.%%d>", w), &i)
				if !assert.NoError(t, err, "%.40q", got) || !assert.Equal(t, version(w, i), string(got), "file %d: a read saw a mix", w) {
					return
				}
			}
		})
	}
	writing.Wait()
	close(stop)
	reading.Wait()
	for w := range writers {
		got, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("f%d.json", w)))
		require.NoError(t, err)
		assert.Equal(t, version(w, writes), string(got))
	}
	assert.Len(t, entries(t, dir), writers, "temporary files left")
}

// Listings leave out a write's temporary files, and only those.
func TestInternal(t *testing.T) {
	assert.True(t, workspace.Internal("._status.md.tmp-123"))
	for _, name := range []string{"_status.md", ".hidden", "notes.tmp-1"} {
		assert.False(t, workspace.Internal(name), name)
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
