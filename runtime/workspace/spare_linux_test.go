package workspace_test

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/runtime/workspace"
)

func inode(t *testing.T, path string) uint64 {
	t.Helper()
	st, err := os.Stat(path)
	require.NoError(t, err)
	return st.Sys().(*syscall.Stat_t).Ino
}

// A file rewritten again and again alternates between two files: itself and the folder's spare.
func TestSpareIsReused(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "_node.json")
	seen := map[uint64]bool{}
	for i := range 10 {
		want := fmt.Sprintf("version %d %s", i, strings.Repeat("x", 10-i)) // shorter each time
		require.NoError(t, workspace.WriteFile(p, []byte(want)))
		got, err := os.ReadFile(p)
		require.NoError(t, err)
		require.Equal(t, want, string(got))
		seen[inode(t, p)] = true
	}
	assert.Len(t, seen, 2, "the file and the spare take turns")
	names, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, names, 2)
	assert.Equal(t, workspace.SpareName, names[0].Name())

	// A view leaves it alone (not synced, the spare could hold another file's bytes after a
	// crash): it takes turns with a spare of its own. A batch uses the folder's.
	spare := inode(t, filepath.Join(dir, workspace.SpareName))
	status := filepath.Join(dir, "_status.md")
	views := map[uint64]bool{}
	for _, v := range []string{"pending", "running", "done", "failed"} {
		require.NoError(t, workspace.WriteView(status, []byte(v)))
		got, err := os.ReadFile(status)
		require.NoError(t, err)
		require.Equal(t, v, string(got))
		views[inode(t, status)] = true
	}
	assert.Len(t, views, 2, "the view and its spare take turns")
	assert.Equal(t, spare, inode(t, filepath.Join(dir, workspace.SpareName)), "a view took the folder's spare")
	held, err := os.ReadFile(filepath.Join(dir, workspace.SpareName+"-_status.md"))
	require.NoError(t, err)
	assert.Equal(t, "done", string(held), "the view's spare holds its earlier version")
	var b workspace.Batch
	require.NoError(t, b.Add(p, []byte("batched")))
	require.NoError(t, b.Add(status, []byte("batched too"))) // the folder's spare is held: a temporary file
	require.NoError(t, b.Commit())
	got, err := os.ReadFile(status)
	require.NoError(t, err)
	assert.Equal(t, "batched too", string(got))
	assert.Equal(t, []string{"_node.json", "_status.md"}, entries(t, dir), "a temporary file is left")
	for _, name := range []string{workspace.SpareName, workspace.SpareName + "-_status.md", "._status.md.tmp-123"} {
		assert.True(t, workspace.Internal(name), name)
	}
	assert.False(t, workspace.Internal("_status.md"))
}

// A reader that opened a version keeps reading it, whole, however many writes follow: the
// file it holds is not taken as the spare while it is open.
func TestSpareNotTakenWhileOpen(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "state.json")
	first := strings.Repeat("1", 1<<14)
	require.NoError(t, workspace.WriteFile(p, []byte(first)))
	r, err := os.Open(p)
	require.NoError(t, err)
	defer r.Close()
	for i := 2; i < 6; i++ {
		require.NoError(t, workspace.WriteFile(p, []byte(strings.Repeat(fmt.Sprint(i), 1<<13))))
	}
	got, err := io.ReadAll(r)
	require.NoError(t, err)
	assert.Equal(t, first, string(got), "the reader's version was rewritten")
	got, err = os.ReadFile(p)
	require.NoError(t, err)
	assert.Equal(t, strings.Repeat("5", 1<<13), string(got))
	assert.Equal(t, []string{"state.json"}, entries(t, dir))
}

// A spare open elsewhere (another writer, in this process or another), or that is not a plain file of its
// own, is left alone: the write goes through a temporary file.
func TestSpareLeftAloneWhenNotUsable(t *testing.T) {
	t.Run("held", func(t *testing.T) {
		dir := t.TempDir()
		p := filepath.Join(dir, "a.json")
		require.NoError(t, workspace.WriteFile(p, []byte("one")))
		require.NoError(t, workspace.WriteFile(p, []byte("two")))
		spare, err := os.Open(filepath.Join(dir, workspace.SpareName))
		require.NoError(t, err)
		defer spare.Close()
		require.NoError(t, workspace.WriteFile(p, []byte("three")))
		got, err := os.ReadFile(p)
		require.NoError(t, err)
		assert.Equal(t, "three", string(got))
		held, err := io.ReadAll(spare)
		require.NoError(t, err)
		assert.Equal(t, "one", string(held), "the held spare was written")
		assert.Equal(t, []string{"a.json"}, entries(t, dir))
	})
	t.Run("symlink", func(t *testing.T) {
		dir, outside := t.TempDir(), filepath.Join(t.TempDir(), "outside")
		require.NoError(t, os.WriteFile(outside, []byte("keep"), 0o644))
		require.NoError(t, os.Symlink(outside, filepath.Join(dir, workspace.SpareName)))
		p := filepath.Join(dir, "a.json")
		for _, v := range []string{"one", "two", "three"} {
			require.NoError(t, workspace.WriteFile(p, []byte(v)))
		}
		got, err := os.ReadFile(outside)
		require.NoError(t, err)
		assert.Equal(t, "keep", string(got))
		got, err = os.ReadFile(p)
		require.NoError(t, err)
		assert.Equal(t, "three", string(got))
	})
	t.Run("linked", func(t *testing.T) {
		dir := t.TempDir()
		p := filepath.Join(dir, "a.json")
		require.NoError(t, workspace.WriteFile(p, []byte("one")))
		require.NoError(t, workspace.WriteFile(p, []byte("two")))
		other := filepath.Join(t.TempDir(), "link")
		require.NoError(t, os.Link(filepath.Join(dir, workspace.SpareName), other))
		require.NoError(t, workspace.WriteFile(p, []byte("three")))
		got, err := os.ReadFile(other)
		require.NoError(t, err)
		assert.Equal(t, "one", string(got), "a file with another name was written through the spare")
	})
}

// Writers of several files of one folder, at once, and readers of them: every read sees one
// whole version, and every file ends with its last.
func TestSpareConcurrentWriters(t *testing.T) {
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
				if i%3 == 0 {
					assert.NoError(t, workspace.WriteView(p, []byte(version(w, i))))
				} else {
					assert.NoError(t, workspace.WriteFile(p, []byte(version(w, i))))
				}
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
				if assert.NoError(t, err, "%.40q", got) && string(got) != version(w, i) {
					assert.Fail(t, "a read saw a mix", "file %d, version %d: %.80q", w, i, got)
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
	names := entries(t, dir)
	assert.Len(t, names, writers, "temporary files left: %v", names)
}
