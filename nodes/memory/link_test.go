package memory_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/nodes/memory"
	"github.com/agiraph/agiraph/nodes/workspace"
)

// outsideDir returns a folder next to home holding secret.md and today's daily log, each
// with secret content, and a function that fails the test if anything in it changed.
func outsideDir(t *testing.T, home workspace.Home, today time.Time) (string, func()) {
	t.Helper()
	dir := filepath.Join(filepath.Dir(string(home)), "outside")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	want := map[string]string{"secret.md": "## Secret\nsecret quokka plans\n", memory.DailyLog(today): "- 09:00 secret quokka log\n"}
	for name, content := range want {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644))
	}
	return dir, func() {
		t.Helper()
		entries, err := os.ReadDir(dir)
		require.NoError(t, err)
		got := map[string]string{}
		for _, e := range entries {
			data, _ := os.ReadFile(filepath.Join(dir, e.Name()))
			got[e.Name()] = string(data)
		}
		assert.Equal(t, want, got, "the folder outside the home changed")
	}
}

func TestMemoryFolderLinkRefused(t *testing.T) {
	today := time.Date(2026, 2, 11, 10, 0, 0, 0, time.UTC)
	s, home := open(t, memory.WithClock(func() time.Time { return today }))
	mustWrite(t, s, "knowledge/go.md", "## Go\ninside notes", false)
	outside, unchanged := outsideDir(t, home, today)
	// memory/ is replaced by a link to the outside folder while the store is open.
	require.NoError(t, os.RemoveAll(home.MemoryDir()))
	require.NoError(t, os.Symlink(outside, home.MemoryDir()))

	isLinkError := func(t *testing.T, err error) {
		t.Helper()
		require.Error(t, err)
		assert.Contains(t, err.Error(), home.MemoryDir())
		assert.Contains(t, err.Error(), "is a symbolic link")
		assert.NotContains(t, err.Error(), "quokka")
	}
	got, err := s.Read("secret.md")
	isLinkError(t, err)
	assert.Empty(t, got)
	_, err = s.Read(memory.DailyLog(today))
	isLinkError(t, err)
	isLinkError(t, s.Write("tester", "secret.md", "overwritten", false))
	isLinkError(t, s.Write("tester", "knowledge/new.md", "new", true))
	isLinkError(t, s.Log("tester", "a new day"))
	isLinkError(t, s.LogOnce("tester", "a new day"))
	out, err := s.Search("secret quokka", 0)
	isLinkError(t, err)
	assert.Empty(t, out)
	list, err := s.List()
	isLinkError(t, err)
	assert.Empty(t, list)
	assert.NotContains(t, s.Prompt(), "quokka")
	assert.Empty(t, s.Recent(2))
	_, err = memory.Open(home)
	isLinkError(t, err)
	unchanged()
}

func TestCuratedLinkRefused(t *testing.T) {
	today := time.Date(2026, 2, 11, 10, 0, 0, 0, time.UTC)
	s, home := open(t, memory.WithClock(func() time.Time { return today }))
	outside, unchanged := outsideDir(t, home, today)
	require.NoError(t, os.Symlink(filepath.Join(outside, "secret.md"), home.Memory()))

	isLinkError := func(t *testing.T, err error) {
		t.Helper()
		require.Error(t, err)
		assert.Contains(t, err.Error(), home.Memory())
		assert.Contains(t, err.Error(), "is a symbolic link")
		assert.NotContains(t, err.Error(), "quokka")
	}
	_, err := s.Read(memory.CuratedFile)
	isLinkError(t, err)
	isLinkError(t, s.Write("tester", memory.CuratedFile, "overwritten", false))
	isLinkError(t, s.Write("tester", memory.CuratedFile, "appended", true))
	out, err := s.Search("secret quokka", 0)
	isLinkError(t, err)
	assert.Empty(t, out)
	_, err = s.List()
	isLinkError(t, err)
	assert.NotContains(t, s.Prompt(), "quokka")
	_, err = memory.Open(home)
	isLinkError(t, err)
	unchanged()

	// The rest of memory still works.
	mustWrite(t, s, "knowledge/go.md", "## Go\nnotes", false)
	assert.Equal(t, "## Go\nnotes", mustRead(t, s, "knowledge/go.md"))
}

func TestOpenRefusesMemoryFolderLink(t *testing.T) {
	home := workspace.Home(filepath.Join(t.TempDir(), "agent"))
	require.NoError(t, os.MkdirAll(string(home), 0o755))
	outside := filepath.Join(filepath.Dir(string(home)), "outside")
	require.NoError(t, os.Mkdir(outside, 0o755))
	require.NoError(t, os.Symlink(outside, home.MemoryDir()))

	_, err := memory.Open(home)
	require.Error(t, err)
	assert.Contains(t, err.Error(), home.MemoryDir()+" is a symbolic link")
	entries, err := os.ReadDir(outside)
	require.NoError(t, err)
	assert.Empty(t, entries, "Open created files outside the home")
}

func TestList(t *testing.T) {
	s, home := open(t)
	names, err := s.List()
	require.NoError(t, err)
	assert.Equal(t, []string{"index.md"}, names)

	mustWrite(t, s, "MEMORY.md", "# Essentials", false)
	mustWrite(t, s, "knowledge/go.md", "## Go", false)
	require.NoError(t, os.WriteFile(filepath.Join(home.MemoryDir(), ".hidden.md"), []byte("x"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(home.MemoryDir(), "notes.txt"), []byte("x"), 0o644))
	require.NoError(t, os.Symlink(filepath.Join(home.MemoryDir(), "knowledge", "go.md"), filepath.Join(home.MemoryDir(), "link.md")))
	names, err = s.List()
	require.NoError(t, err)
	assert.Equal(t, []string{"MEMORY.md", "index.md", "knowledge/go.md"}, names)
}
