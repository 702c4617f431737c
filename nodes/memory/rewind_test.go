package memory_test

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/nodes/memory"
	"github.com/agiraph/agiraph/nodes/workspace"
)

// snapshot returns the memory files of home (MEMORY.md and memory/**, hidden files left out)
// and their contents.
func snapshot(t *testing.T, home workspace.Home) map[string]string {
	t.Helper()
	out := map[string]string{}
	if b, err := os.ReadFile(home.Memory()); err == nil {
		out[memory.CuratedFile] = string(b)
	}
	require.NoError(t, filepath.WalkDir(home.MemoryDir(), func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name()[0] == '.' {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(home.MemoryDir(), p)
		out[rel] = string(b)
		return err
	}))
	return out
}

func TestRewindUndoesTheWritesMadeSince(t *testing.T) {
	var mu sync.Mutex
	var writes []memory.Write
	home := workspace.Home(t.TempDir())
	m, err := memory.Open(home, memory.WithObserver(func(w memory.Write) { mu.Lock(); writes = append(writes, w); mu.Unlock() }))
	require.NoError(t, err)
	require.NoError(t, m.Write("coordinator", memory.CuratedFile, "# Facts\n\nThe sky is blue.\n", false))
	require.NoError(t, m.Log("Alice", "read the brief"))
	require.NoError(t, m.Write("Alice", "knowledge/go.md", "# Go\n\nGoroutines.", false))
	before, since := snapshot(t, home), len(writes)

	require.NoError(t, m.Write("coordinator", memory.CuratedFile, "# Facts\n\nThe sky is green.\n", false))
	require.NoError(t, m.Log("Bob", "wrote the report\nin two parts"))
	require.NoError(t, m.Write("Alice", "knowledge/go.md", "Channels.", true))
	require.NoError(t, m.Write("Bob", "experiences/search.md", "# Search\n\nQuote the words.", false))
	require.NoError(t, m.Log("Alice", "done"))
	require.NotEqual(t, before, snapshot(t, home))

	// Told out of order, as concurrent writes may be.
	later := writes[since:]
	later[0], later[1] = later[1], later[0]
	require.NoError(t, m.Rewind(later))
	assert.Equal(t, before, snapshot(t, home))
}

func TestRewindNamesTheFileItCannotUndo(t *testing.T) {
	home := workspace.Home(t.TempDir())
	m, err := memory.Open(home)
	require.NoError(t, err)
	require.NoError(t, m.Log("Alice", "first"))
	err = m.Rewind([]memory.Write{{Path: "2026-01-02.md", Append: true, Bytes: 5}})
	require.ErrorContains(t, err, "2026-01-02.md")
	require.ErrorContains(t, err, "without its text")
	err = m.Rewind([]memory.Write{{Path: memory.CuratedFile, Bytes: 5}})
	require.ErrorContains(t, err, "MEMORY.md")
	require.ErrorContains(t, err, "without the content it replaced")
}
