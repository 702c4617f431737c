package files

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/tools"
)

// countSyncs counts, for the test, the files and folders the tools sync, by path.
func countSyncs(t *testing.T) func() map[string]int {
	var mu sync.Mutex
	synced := map[string]int{}
	saved := syncFile
	syncFile = func(f *os.File) error {
		mu.Lock()
		synced[f.Name()]++
		mu.Unlock()
		return saved(f)
	}
	t.Cleanup(func() { syncFile = saved })
	return func() map[string]int {
		mu.Lock()
		defer mu.Unlock()
		return synced
	}
}

// call runs the tool name of ts with args and fails the test on an error.
func call(t *testing.T, ts []tools.Tool, name string, args map[string]string) {
	t.Helper()
	raw, err := json.Marshal(args)
	require.NoError(t, err)
	reg, err := tools.NewRegistry(ts)
	require.NoError(t, err)
	res := reg.Run(context.Background(), []tools.Call{{ID: "1", Name: name, Args: raw}})
	require.False(t, res[0].IsError, res[0].Content)
}

// With Synced, write_file and edit_file sync the file they wrote, its folder, and the parents of
// the folders they made for it; without it they sync nothing.
func TestSyncedWritesSyncTheFileAndTheFoldersNamingIt(t *testing.T) {
	root := t.TempDir()
	synced := countSyncs(t)
	p := Scope{Read: []string{""}, Write: []string{""}}
	call(t, Tools(root, p), "write_file", map[string]string{"path": "a/b/note.md", "content": "one"})
	assert.Empty(t, synced(), "without Synced")

	call(t, Tools(root, p, Synced()), "write_file", map[string]string{"path": "c/d/note.md", "content": "two"})
	call(t, Tools(root, p, Synced()), "edit_file", map[string]string{"path": "a/b/note.md", "old_string": "one", "new_string": "uno"})
	got := map[string]int{}
	for name, n := range synced() {
		rel, err := filepath.Rel(root, name)
		require.NoError(t, err)
		if Temporary(filepath.Base(rel)) { // the temporary file, named at random
			rel = filepath.Join(filepath.Dir(rel), "(temporary)")
		}
		got[filepath.ToSlash(rel)] += n
	}
	assert.Equal(t, map[string]int{
		"c/d/(temporary)": 1, "c/d": 1, // the file, and its folder which names it
		".": 1, "c": 1, // the folders that name the two made for it
		"a/b/(temporary)": 1, "a/b": 1, // the edited file and its folder
	}, got)
}
