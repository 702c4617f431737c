package nodes

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/nodes/store"
	"github.com/agiraph/agiraph/nodes/workspace"
)

// A file kept in the store is written back to another home with its bytes and permissions,
// never over a file that is there; a file larger than MaxStoredFile is refused, named.
func TestKeptFiles(t *testing.T) {
	ctx := context.Background()
	from, to := workspace.Home(t.TempDir()), workspace.Home(t.TempDir())
	write := func(home workspace.Home, rel, text string, perm os.FileMode) string {
		p := filepath.Join(string(home), rel)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(text), perm))
		return p
	}
	published := write(from, "runs/r1/nodes/n1/published/a.bin", "\x00\xffbytes", 0o444)
	kept := write(from, "runs/r1/workers/w1/memory.md", "learned", 0o644)
	big := write(from, "runs/r1/nodes/n2/published/big.csv", "", 0o644)
	require.NoError(t, os.Truncate(big, MaxStoredFile+1))

	st := store.NewMemory()
	var ch store.Change
	require.NoError(t, keepFiles(&ch, from, published, kept))
	require.NoError(t, st.Apply(ctx, ch))
	err := keepFiles(&ch, from, big)
	require.Error(t, err)
	assert.Contains(t, err.Error(), filepath.Join("runs", "r1", "nodes", "n2", "published", "big.csv"))

	there := write(to, "runs/r1/workers/w1/memory.md", "newer", 0o644)
	restored, err := restoreFiles(ctx, st, to, string(to.Run("r1")), string(to.Run("r1")))
	require.NoError(t, err)
	assert.Equal(t, []string{filepath.Join(string(to), "runs/r1/nodes/n1/published/a.bin")}, restored)
	got, err := os.ReadFile(restored[0])
	require.NoError(t, err)
	assert.Equal(t, "\x00\xffbytes", string(got))
	fi, err := os.Stat(restored[0])
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o444), fi.Mode().Perm())
	got, err = os.ReadFile(there)
	require.NoError(t, err)
	assert.Equal(t, "newer", string(got), "a file that is there is not written over")

	restored, err = restoreFiles(ctx, st, to, string(to.Run("r")), string(to.Run("r")))
	require.NoError(t, err)
	assert.Empty(t, restored, "runs/r is not runs/r1")
}

// A file is kept as it reads within the home: a symbolic link to a file in the home is kept
// with that file's bytes, one that leads out of the home is refused, named, and nothing of what
// it points to reaches the store.
func TestKeptFilesStayInTheHome(t *testing.T) {
	home := workspace.Home(t.TempDir())
	secret := filepath.Join(t.TempDir(), "secret.txt")
	require.NoError(t, os.WriteFile(secret, []byte("outside"), 0o600))
	published := filepath.Join(string(home), "runs", "r1", "nodes", "n1", "published")
	require.NoError(t, os.MkdirAll(published, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(published, "a.md"), []byte("inside"), 0o444))
	require.NoError(t, os.Symlink("a.md", filepath.Join(published, "b.md")))
	require.NoError(t, os.Symlink(secret, filepath.Join(published, "leak.md")))

	var ch store.Change
	require.NoError(t, keepFiles(&ch, home, filepath.Join(published, "b.md")))
	require.Len(t, ch.Docs, 1)
	assert.Contains(t, string(ch.Docs[0].Value), `"aW5zaWRl"`, "b.md kept with a.md's bytes")

	ch = store.Change{}
	err := keepFiles(&ch, home, filepath.Join(published, "leak.md"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), filepath.Join("runs", "r1", "nodes", "n1", "published", "leak.md"))
	assert.Empty(t, ch.Docs)
}

// Files are written back within the home: not through a folder that is a symbolic link leading
// out of it, and not from a key that leaves the folder restored.
func TestRestoredFilesStayInTheHome(t *testing.T) {
	ctx := context.Background()
	home := workspace.Home(t.TempDir())
	outside := t.TempDir()
	require.NoError(t, os.MkdirAll(home.MemoryDir(), 0o755))
	require.NoError(t, os.Symlink(outside, filepath.Join(home.MemoryDir(), "shared")))
	st := store.NewMemory()
	put := func(key string) {
		var ch store.Change
		require.NoError(t, ch.Put(key, storedFile{Data: []byte("x"), Mode: 0o644}))
		require.NoError(t, st.Apply(ctx, ch))
	}
	put(filePrefix + "memory/shared/note.md")
	restored, err := restoreFiles(ctx, st, home, home.MemoryDir(), home.MemoryDir())
	require.NoError(t, err)
	assert.Empty(t, restored)
	entries, err := os.ReadDir(outside)
	require.NoError(t, err)
	assert.Empty(t, entries, "nothing written through the link")

	put(filePrefix + "memory/../runs/r1/x.md")
	_, err = restoreFiles(ctx, st, home, home.MemoryDir(), home.MemoryDir())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "memory/../runs/r1/x.md")
	assert.NoFileExists(t, filepath.Join(string(home), "runs", "r1", "x.md"))
}
