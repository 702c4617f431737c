package files_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agiraph/agiraph/tools"
	"github.com/agiraph/agiraph/tools/files"
)

var everything = files.Scope{Read: []string{""}, Write: []string{"."}}

var narrow = files.Scope{Read: []string{"nodes/n1", "workers/w1"}, Write: []string{"nodes/n1/scratch"}}

// setup makes a workspace root and a directory outside it:
//
//	root/top.txt, root/nodes/n1/a.txt, root/nodes/n1/scratch/, root/nodes/n2/secret.txt,
//	root/nodes/n10/x.txt, root/workers/w1/w.txt; outside/secret.txt
func setup(t *testing.T) (root, outside string) {
	t.Helper()
	base := t.TempDir()
	root, outside = filepath.Join(base, "root"), filepath.Join(base, "outside")
	for name, content := range map[string]string{
		"root/top.txt":             "top\n",
		"root/nodes/n1/a.txt":      "hello\nworld\n",
		"root/nodes/n2/secret.txt": "n2 secret\n",
		"root/nodes/n10/x.txt":     "x\n",
		"root/workers/w1/w.txt":    "w\n",
		"outside/secret.txt":       "outside secret\n",
	} {
		p := filepath.Join(base, filepath.FromSlash(name))
		must(t, os.MkdirAll(filepath.Dir(p), 0o755))
		must(t, os.WriteFile(p, []byte(content), 0o644))
	}
	must(t, os.MkdirAll(filepath.Join(root, "nodes/n1/scratch"), 0o755))
	return root, outside
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func registry(t *testing.T, root string, p files.Policy) *tools.Registry {
	t.Helper()
	reg, err := tools.NewRegistry(files.Tools(root, p), tools.WithMaxOutput(0))
	must(t, err)
	return reg
}

// call runs one call through the registry.
func call(t *testing.T, reg *tools.Registry, name string, args any) (string, bool) {
	t.Helper()
	b, err := json.Marshal(args)
	must(t, err)
	res := reg.Run(context.Background(), []tools.Call{{ID: "c", Name: name, Args: b}})
	return res[0].Content, res[0].IsError
}

func ok(t *testing.T, reg *tools.Registry, name string, args any) string {
	t.Helper()
	out, isErr := call(t, reg, name, args)
	if isErr {
		t.Fatalf("%s %v: unexpected error: %s", name, args, out)
	}
	return out
}

func fails(t *testing.T, reg *tools.Registry, name string, args any, wants ...string) string {
	t.Helper()
	out, isErr := call(t, reg, name, args)
	if !isErr {
		t.Fatalf("%s %v: want an error, got %q", name, args, out)
	}
	for _, w := range wants {
		if !strings.Contains(out, w) {
			t.Errorf("%s %v: error %q does not contain %q", name, args, out, w)
		}
	}
	return out
}

func readDisk(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	must(t, err)
	return string(b)
}

type m = map[string]any

func TestToolDefinitions(t *testing.T) {
	t.Parallel()
	root, _ := setup(t)
	got := map[string]tools.Tool{}
	for _, tl := range files.Tools(root, everything) {
		got[tl.Name] = tl
		if tl.Description == "" || strings.Contains(tl.Description, "\n") || tl.Guidance == "" {
			t.Errorf("%s: description %q, guidance %q", tl.Name, tl.Description, tl.Guidance)
		}
	}
	for name, safe := range map[string]bool{"read_file": true, "list_files": true, "view_file": true, "write_file": false, "edit_file": false} {
		tl, found := got[name]
		if !found {
			t.Errorf("missing tool %s", name)
		} else if tl.Safe != safe {
			t.Errorf("%s: Safe = %v, want %v", name, tl.Safe, safe)
		}
	}
	if n := len(files.Scope{Root: root, Read: []string{""}}.Tools()); n != 5 {
		t.Errorf("Scope.Tools returned %d tools", n)
	}
}

func TestHappyPath(t *testing.T) {
	t.Parallel()
	root, _ := setup(t)
	reg := registry(t, root, everything)

	out := ok(t, reg, "write_file", m{"path": "sub/dir/new.txt", "content": "one\ntwo\nthree\n"})
	if out != `wrote 14 bytes to "sub/dir/new.txt" (new file)` {
		t.Errorf("write: %q", out)
	}
	if got := readDisk(t, filepath.Join(root, "sub/dir/new.txt")); got != "one\ntwo\nthree\n" {
		t.Errorf("on disk: %q", got)
	}
	out = ok(t, reg, "read_file", m{"path": "sub/dir/new.txt"})
	if out != "     1\tone\n     2\ttwo\n     3\tthree\n" {
		t.Errorf("read: %q", out)
	}
	out = ok(t, reg, "edit_file", m{"path": "sub/dir/new.txt", "old_string": "two\n", "new_string": "TWO\n2b\n"})
	if !strings.Contains(out, "line 2") {
		t.Errorf("edit: %q", out)
	}
	if got := readDisk(t, filepath.Join(root, "sub/dir/new.txt")); got != "one\nTWO\n2b\nthree\n" {
		t.Errorf("after edit: %q", got)
	}
	out = ok(t, reg, "write_file", m{"path": "./sub/dir/new.txt", "content": "x"})
	if out != `wrote 1 bytes to "sub/dir/new.txt" (replaced 17 bytes)` {
		t.Errorf("overwrite: %q", out)
	}
	must(t, os.WriteFile(filepath.Join(root, ".top.txt.tmp-3QZ7"), []byte("half"), 0o644)) // a write in progress
	out = ok(t, reg, "list_files", m{})
	if out != "nodes/\nsub/\ntop.txt\nworkers/\n" {
		t.Errorf("list root: %q", out)
	}
	out = ok(t, reg, "list_files", m{"path": "nodes", "recursive": true})
	want := "nodes/n1/\nnodes/n1/a.txt\nnodes/n1/scratch/\nnodes/n10/\nnodes/n10/x.txt\nnodes/n2/\nnodes/n2/secret.txt\n"
	if out != want {
		t.Errorf("list nodes recursive:\n%s\nwant:\n%s", out, want)
	}
	out = ok(t, reg, "list_files", m{"path": ".", "recursive": true, "max_depth": 2})
	if !strings.Contains(out, "nodes/n1/\n") || strings.Contains(out, "nodes/n1/a.txt") {
		t.Errorf("max_depth 2: %q", out)
	}
	out = ok(t, reg, "list_files", m{"path": ".", "recursive": true, "max_entries": 3})
	if !strings.HasPrefix(out, "nodes/\nnodes/n1/\nnodes/n1/a.txt\n(listing stopped at 3 entries") {
		t.Errorf("max_entries: %q", out)
	}
	must(t, os.Mkdir(filepath.Join(root, "empty"), 0o755))
	if out := ok(t, reg, "list_files", m{"path": "empty"}); !strings.Contains(out, "no entries") {
		t.Errorf("empty dir: %q", out)
	}
}

func TestReadOffsetLimit(t *testing.T) {
	t.Parallel()
	root, _ := setup(t)
	var b strings.Builder
	for i := 1; i <= 10; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	must(t, os.WriteFile(filepath.Join(root, "ten.txt"), []byte(b.String()), 0o644))
	must(t, os.WriteFile(filepath.Join(root, "empty.txt"), nil, 0o644))
	reg := registry(t, root, everything)

	out := ok(t, reg, "read_file", m{"path": "ten.txt", "offset": 3, "limit": 2})
	want := "     3\tline 3\n     4\tline 4\n(showing lines 3-4 of 10; call read_file with offset=5 to read more)\n"
	if out != want {
		t.Errorf("got %q\nwant %q", out, want)
	}
	if out := ok(t, reg, "read_file", m{"path": "ten.txt", "offset": 9}); out != "     9\tline 9\n    10\tline 10\n" {
		t.Errorf("tail: %q", out)
	}
	fails(t, reg, "read_file", m{"path": "ten.txt", "offset": 11}, "past the end", "10 lines")
	if out := ok(t, reg, "read_file", m{"path": "empty.txt"}); !strings.Contains(out, "empty") {
		t.Errorf("empty file: %q", out)
	}
	fails(t, reg, "read_file", m{"path": "missing.txt"}, `"missing.txt" does not exist`)
	fails(t, reg, "read_file", m{"path": "nodes"}, "is a directory")
	fails(t, reg, "read_file", m{"path": "top.txt/x"}, "through a file")
	fails(t, reg, "list_files", m{"path": "top.txt"}, "is a file")
	fails(t, reg, "write_file", m{"path": "nodes", "content": "x"}, "is a directory")
	fails(t, reg, "write_file", m{"path": "top.txt/x", "content": "x"}, "through a file")
}

func TestEscapesAndAbsolutePaths(t *testing.T) {
	t.Parallel()
	root, outside := setup(t)
	reg := registry(t, root, everything)
	abs := filepath.Join(root, "top.txt")
	for _, p := range []string{"../outside/secret.txt", "nodes/../../outside/secret.txt", "..", "a/../../x"} {
		fails(t, reg, "read_file", m{"path": p}, "outside the workspace", "..")
		fails(t, reg, "write_file", m{"path": p, "content": "x"}, "outside the workspace")
		fails(t, reg, "edit_file", m{"path": p, "old_string": "a", "new_string": "b"}, "outside the workspace")
		fails(t, reg, "list_files", m{"path": p}, "outside the workspace")
	}
	for _, p := range []string{abs, "/etc/passwd", filepath.Join(outside, "secret.txt")} {
		fails(t, reg, "read_file", m{"path": p}, "is absolute", "relative to the workspace root")
		fails(t, reg, "write_file", m{"path": p, "content": "x"}, "is absolute")
		fails(t, reg, "list_files", m{"path": p}, "is absolute")
	}
	if got := readDisk(t, filepath.Join(outside, "secret.txt")); got != "outside secret\n" {
		t.Errorf("outside file changed: %q", got)
	}
	// Lexical ".." that stays inside is fine.
	if out := ok(t, reg, "read_file", m{"path": "nodes/../top.txt"}); out != "     1\ttop\n" {
		t.Errorf("inner ..: %q", out)
	}
	// The refusals wrap ErrDenied for Go callers.
	read := files.Tools(root, everything)[0]
	_, err := read.Handler(context.Background(), json.RawMessage(`{"path":"../x"}`))
	if !errors.Is(err, files.ErrDenied) {
		t.Errorf("escape error %v does not wrap ErrDenied", err)
	}
}

func TestSymlinksOutside(t *testing.T) {
	t.Parallel()
	root, outside := setup(t)
	must(t, os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(root, "link.txt")))
	must(t, os.Symlink(outside, filepath.Join(root, "linkdir")))
	must(t, os.Symlink("../../outside/secret.txt", filepath.Join(root, "nodes/rel-link.txt")))
	must(t, os.Symlink(filepath.Join(outside, "new.txt"), filepath.Join(root, "dangling.txt")))
	reg := registry(t, root, everything)

	for _, p := range []string{"link.txt", "linkdir/secret.txt", "nodes/rel-link.txt"} {
		out := fails(t, reg, "read_file", m{"path": p}, "symbolic link", "outside the workspace")
		if strings.Contains(out, "outside secret") || strings.Contains(out, outside) {
			t.Errorf("read %s leaked: %q", p, out)
		}
		fails(t, reg, "write_file", m{"path": p, "content": "pwned"}, "outside the workspace")
		fails(t, reg, "edit_file", m{"path": p, "old_string": "secret", "new_string": "pwned"}, "outside the workspace")
	}
	// Writing through a symlinked directory, to a file that does not exist yet.
	fails(t, reg, "write_file", m{"path": "linkdir/new.txt", "content": "pwned"}, "outside the workspace")
	fails(t, reg, "write_file", m{"path": "linkdir/deep/new.txt", "content": "pwned"}, "outside the workspace")
	fails(t, reg, "list_files", m{"path": "linkdir"}, "outside the workspace")
	// A broken link pointing outside is refused too.
	fails(t, reg, "write_file", m{"path": "dangling.txt", "content": "pwned"}, "broken symbolic link")
	fails(t, reg, "write_file", m{"path": "dangling.txt/x", "content": "pwned"}, "broken symbolic link")

	if got := readDisk(t, filepath.Join(outside, "secret.txt")); got != "outside secret\n" {
		t.Errorf("outside file changed: %q", got)
	}
	for _, p := range []string{"new.txt", "deep"} {
		if _, err := os.Lstat(filepath.Join(outside, p)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s was created outside the root (err %v)", p, err)
		}
	}
	// Listing hides links that lead outside.
	out := ok(t, reg, "list_files", m{"recursive": true})
	for _, hidden := range []string{"link.txt", "linkdir", "rel-link", "dangling"} {
		if strings.Contains(out, hidden) {
			t.Errorf("list shows %s:\n%s", hidden, out)
		}
	}
}

func TestSymlinksInside(t *testing.T) {
	t.Parallel()
	root, _ := setup(t)
	must(t, os.Symlink("../n2/secret.txt", filepath.Join(root, "nodes/n1/alias.txt")))
	must(t, os.Symlink("../n2", filepath.Join(root, "nodes/n1/n2dir")))
	must(t, os.Symlink("a.txt", filepath.Join(root, "nodes/n1/a-link.txt")))

	// With everything allowed, links inside the root work.
	reg := registry(t, root, everything)
	if out := ok(t, reg, "read_file", m{"path": "nodes/n1/alias.txt"}); out != "     1\tn2 secret\n" {
		t.Errorf("inner link: %q", out)
	}
	out := ok(t, reg, "list_files", m{"path": "nodes/n1", "recursive": true})
	if !strings.Contains(out, "nodes/n1/n2dir/\n") || strings.Contains(out, "nodes/n1/n2dir/secret.txt") {
		t.Errorf("symlinked dirs are shown, not entered: %q", out)
	}
	ok(t, reg, "write_file", m{"path": "nodes/n1/a-link.txt", "content": "via link\n"})
	if got := readDisk(t, filepath.Join(root, "nodes/n1/a.txt")); got != "via link\n" {
		t.Errorf("write through inner link: %q", got)
	}
	if fi, err := os.Lstat(filepath.Join(root, "nodes/n1/a-link.txt")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link itself was replaced: %v %v", fi, err)
	}

	// With a narrow scope, the link's real location is checked too.
	reg = registry(t, root, narrow)
	fails(t, reg, "read_file", m{"path": "nodes/n1/alias.txt"}, `"nodes/n1/alias.txt" is a symbolic link to "nodes/n2/secret.txt"`, `"nodes/n1"`)
	fails(t, reg, "read_file", m{"path": "nodes/n1/n2dir/secret.txt"}, "nodes/n2/secret.txt")
	out = ok(t, reg, "list_files", m{"path": "nodes/n1"})
	if strings.Contains(out, "alias") || strings.Contains(out, "n2dir") {
		t.Errorf("list shows links to unreadable places: %q", out)
	}
}

func TestScopeRead(t *testing.T) {
	t.Parallel()
	root, _ := setup(t)
	reg := registry(t, root, narrow)
	ok(t, reg, "read_file", m{"path": "nodes/n1/a.txt"})
	ok(t, reg, "read_file", m{"path": "workers/w1/w.txt"})
	for _, p := range []string{"nodes/n2/secret.txt", "nodes/n10/x.txt", "top.txt"} {
		fails(t, reg, "read_file", m{"path": p}, fmt.Sprintf("reading %q is not allowed", p), `"nodes/n1", "workers/w1"`)
		fails(t, reg, "edit_file", m{"path": p, "old_string": "x", "new_string": "y"}, "not allowed")
	}
	fails(t, reg, "list_files", m{"path": "nodes/n2"}, `listing "nodes/n2" is not allowed`, `"nodes/n1"`)
}

func TestScopeWrite(t *testing.T) {
	t.Parallel()
	root, _ := setup(t)
	reg := registry(t, root, narrow)
	fails(t, reg, "write_file", m{"path": "nodes/n1/a.txt", "content": "x"},
		`writing "nodes/n1/a.txt" is not allowed`, `you may write only inside "nodes/n1/scratch"`)
	fails(t, reg, "edit_file", m{"path": "nodes/n1/a.txt", "old_string": "hello", "new_string": "bye"}, `writing "nodes/n1/a.txt" is not allowed`)
	fails(t, reg, "write_file", m{"path": "nodes/n1/scratchpad.txt", "content": "x"}, "not allowed")
	if got := readDisk(t, filepath.Join(root, "nodes/n1/a.txt")); got != "hello\nworld\n" {
		t.Errorf("denied write changed the file: %q", got)
	}
	ok(t, reg, "write_file", m{"path": "nodes/n1/scratch/deep/er/out.txt", "content": "ok"})
	if got := readDisk(t, filepath.Join(root, "nodes/n1/scratch/deep/er/out.txt")); got != "ok" {
		t.Errorf("scoped write: %q", got)
	}
	ok(t, reg, "edit_file", m{"path": "nodes/n1/scratch/deep/er/out.txt", "old_string": "ok", "new_string": "fine"})

	// Parent directories are created only inside the scope.
	reg = registry(t, root, files.Scope{Read: []string{""}, Write: []string{"nodes/n3/scratch"}})
	fails(t, reg, "write_file", m{"path": "nodes/n3/scratch/x.txt", "content": "x"},
		`cannot create directory "nodes/n3"`, `writing "nodes/n3" is not allowed`)
	if _, err := os.Stat(filepath.Join(root, "nodes/n3")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("nodes/n3 was created: %v", err)
	}
	// A read-only scope.
	reg = registry(t, root, files.Scope{Read: []string{""}})
	fails(t, reg, "write_file", m{"path": "x.txt", "content": "x"}, "no files may be written")
}

func TestEditErrors(t *testing.T) {
	t.Parallel()
	root, _ := setup(t)
	must(t, os.WriteFile(filepath.Join(root, "dup.txt"), []byte("a\nfoo\nb\nfoo\n"), 0o644))
	reg := registry(t, root, everything)
	fails(t, reg, "edit_file", m{"path": "dup.txt", "old_string": "bar", "new_string": "x"}, "not found", "exact text")
	fails(t, reg, "edit_file", m{"path": "dup.txt", "old_string": "foo", "new_string": "x"}, "occurs 2 times", "lines 2, 4", "surrounding")
	fails(t, reg, "edit_file", m{"path": "dup.txt", "old_string": "", "new_string": "x"})
	fails(t, reg, "edit_file", m{"path": "nope.txt", "old_string": "a", "new_string": "x"}, "does not exist")
	if got := readDisk(t, filepath.Join(root, "dup.txt")); got != "a\nfoo\nb\nfoo\n" {
		t.Errorf("failed edits changed the file: %q", got)
	}
	ok(t, reg, "edit_file", m{"path": "dup.txt", "old_string": "b\nfoo", "new_string": "b\nbar"})
	if got := readDisk(t, filepath.Join(root, "dup.txt")); got != "a\nfoo\nb\nbar\n" {
		t.Errorf("after unique edit: %q", got)
	}
}

func TestAtomicWriteLeavesNoTempFiles(t *testing.T) {
	t.Parallel()
	root, _ := setup(t)
	p := filepath.Join(root, "nodes/n1/scratch/f.txt")
	must(t, os.WriteFile(p, []byte("old"), 0o600))
	reg := registry(t, root, narrow)
	for i := range 5 {
		ok(t, reg, "write_file", m{"path": "nodes/n1/scratch/f.txt", "content": fmt.Sprintf("version %d\n", i)})
	}
	fails(t, reg, "edit_file", m{"path": "nodes/n1/scratch/f.txt", "old_string": "missing", "new_string": "x"})
	entries, err := os.ReadDir(filepath.Dir(p))
	must(t, err)
	if len(entries) != 1 || entries[0].Name() != "f.txt" {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("directory holds %v, want only f.txt", names)
	}
	fi, err := os.Stat(p)
	must(t, err)
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want the original 0600", fi.Mode().Perm())
	}
	if got := readDisk(t, p); got != "version 4\n" {
		t.Errorf("content %q", got)
	}
}

func TestLargeAndBinaryFiles(t *testing.T) {
	t.Parallel()
	root, _ := setup(t)
	must(t, os.WriteFile(filepath.Join(root, "big.txt"), []byte(strings.Repeat("a", files.MaxFileSize+1)), 0o644))
	must(t, os.WriteFile(filepath.Join(root, "limit.txt"), []byte(strings.Repeat("b", files.MaxFileSize)), 0o644))
	must(t, os.WriteFile(filepath.Join(root, "bin.dat"), []byte("ELF\x00\x01\x02abc"), 0o644))
	reg := registry(t, root, everything)
	fails(t, reg, "read_file", m{"path": "big.txt"}, "too large", "1 MiB")
	fails(t, reg, "edit_file", m{"path": "big.txt", "old_string": "a", "new_string": "b"}, "too large")
	out := fails(t, reg, "read_file", m{"path": "bin.dat"}, "binary", "NUL")
	if strings.Contains(out, "ELF") {
		t.Errorf("binary content leaked: %q", out)
	}
	fails(t, reg, "edit_file", m{"path": "bin.dat", "old_string": "abc", "new_string": "x"}, "binary")
	if out := ok(t, reg, "read_file", m{"path": "limit.txt"}); len(out) != files.MaxFileSize+8 {
		t.Errorf("file at the limit: %d bytes of output", len(out))
	}
}

// denySuffix is a Policy without CanList that refuses paths ending in ".secret".
type denySuffix struct{}

func (denySuffix) CanRead(rel string) error {
	if strings.HasSuffix(rel, ".secret") {
		return fmt.Errorf("reading %q is not allowed: .secret files are private", rel)
	}
	return nil
}
func (denySuffix) CanWrite(rel string) error { return denySuffix{}.CanRead(rel) }

func TestListHidesDisallowedEntries(t *testing.T) {
	t.Parallel()
	root, _ := setup(t)
	reg := registry(t, root, narrow)
	out := ok(t, reg, "list_files", m{"recursive": true, "max_depth": 5})
	want := "nodes/\nnodes/n1/\nnodes/n1/a.txt\nnodes/n1/scratch/\nworkers/\nworkers/w1/\nworkers/w1/w.txt\n"
	if out != want {
		t.Errorf("narrow recursive listing:\n%s\nwant:\n%s", out, want)
	}
	if out := ok(t, reg, "list_files", m{"path": "nodes"}); out != "nodes/n1/\n" {
		t.Errorf("list nodes: %q", out)
	}

	must(t, os.WriteFile(filepath.Join(root, "nodes/n1/key.secret"), []byte("k"), 0o644))
	reg = registry(t, root, denySuffix{})
	out = ok(t, reg, "list_files", m{"path": "nodes/n1"})
	if out != "nodes/n1/a.txt\nnodes/n1/scratch/\n" {
		t.Errorf("custom policy listing: %q", out)
	}
	fails(t, reg, "read_file", m{"path": "nodes/n1/key.secret"}, "private")
	fails(t, reg, "write_file", m{"path": "new.secret", "content": "x"}, "private")
}

func TestScopeMethods(t *testing.T) {
	t.Parallel()
	s := files.Scope{Read: []string{"nodes/n1", "/workers/w1/"}, Write: []string{"nodes/n1/scratch"}}
	for _, c := range []struct {
		rel         string
		read, write bool
		list        bool
	}{
		{".", false, false, true},
		{"nodes", false, false, true},
		{"nodes/n1", true, false, true},
		{"nodes/n1/a/b", true, false, true},
		{"nodes/n10", false, false, false},
		{"nodes/n1/scratch", true, true, true},
		{"nodes/n1/scratch/x", true, true, true},
		{"nodes/n1/scratchy", true, false, true},
		{"workers/w1/x", true, false, true},
		{"workers/w2", false, false, false},
		{"nodes/n1/../n2", false, false, false},
		{"../nodes/n1", false, false, false},
	} {
		if got := s.CanRead(c.rel) == nil; got != c.read {
			t.Errorf("CanRead(%q) = %v", c.rel, got)
		}
		if got := s.CanWrite(c.rel) == nil; got != c.write {
			t.Errorf("CanWrite(%q) = %v", c.rel, got)
		}
		if got := s.CanList(c.rel) == nil; got != c.list {
			t.Errorf("CanList(%q) = %v", c.rel, got)
		}
	}
	err := s.CanRead("workers/w2/x")
	if !errors.Is(err, files.ErrDenied) || err.Error() != `reading "workers/w2/x" is not allowed: you may read only inside "nodes/n1", "workers/w1"` {
		t.Errorf("CanRead error: %v", err)
	}
	if err := (files.Scope{}).CanRead("x"); err == nil || !strings.Contains(err.Error(), "no files may be read") {
		t.Errorf("empty scope: %v", err)
	}
}

// A path through a file is refused, whether the rest exists or not; a root that is a symbolic
// link is followed again when it is pointed elsewhere between two calls.
func TestPathsThroughFilesAndMovedRoot(t *testing.T) {
	t.Parallel()
	root, outside := setup(t)
	reg := registry(t, root, everything)
	fails(t, reg, "write_file", m{"path": "top.txt/x", "content": "no"}, `path "top.txt/x" goes through a file as if it were a directory`)
	fails(t, reg, "write_file", m{"path": "nodes/n1/a.txt/deep/x", "content": "no"}, "goes through a file as if it were a directory")
	fails(t, reg, "read_file", m{"path": "top.txt/x"}, "goes through a file as if it were a directory")

	link := filepath.Join(filepath.Dir(root), "link")
	must(t, os.Symlink(root, link))
	reg = registry(t, link, everything)
	if out := ok(t, reg, "read_file", m{"path": "top.txt"}); out != "     1\ttop\n" {
		t.Fatalf("through the root's link: %q", out)
	}
	must(t, os.Remove(link))
	must(t, os.Symlink(outside, link))
	if out := ok(t, reg, "read_file", m{"path": "secret.txt"}); out != "     1\toutside secret\n" {
		t.Fatalf("the root's link, pointed elsewhere: %q", out)
	}
	ok(t, reg, "write_file", m{"path": "new.txt", "content": "here\n"})
	if got := readDisk(t, filepath.Join(outside, "new.txt")); got != "here\n" {
		t.Fatalf("written to %q", got)
	}
}
