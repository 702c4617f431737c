package nodes

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// A worker's line is appended once: an outcome recorded again after a crash finds it among the
// file's latest lines, however many other lines came after.
func TestAppendOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "memory.md")
	require.NoError(t, appendOnce(path, []byte("n1"), []byte("- n1: done\n")))
	require.NoError(t, appendOnce(path, []byte("n2"), []byte("- n2: done\n")))
	require.NoError(t, appendOnce(path, []byte("n1"), []byte("- n1: done\n")))
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, "- n1: done\n- n2: done\n", string(got))

	require.NoError(t, os.Mkdir(filepath.Join(t.TempDir(), "d"), 0o755))
	require.Error(t, appendOnce(filepath.Dir(path), []byte("x"), []byte("x\n")), "a folder is not a worker's file")
}
