package osfile

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	for _, size := range []int{0, 1, 511, 512, 513, 100_000} {
		path := filepath.Join(dir, "f")
		want := []byte(strings.Repeat("x", size))
		require.NoError(t, os.WriteFile(path, want, 0o644))
		got, err := ReadFile(path)
		require.NoError(t, err)
		assert.Equal(t, want, got, "size %d", size)
	}
	_, err := ReadFile(filepath.Join(dir, "missing"))
	assert.ErrorIs(t, err, fs.ErrNotExist)
	if _, err := os.Stat("/proc/self/stat"); err == nil { // a size of 0 that is not the content's
		got, err := ReadFile("/proc/self/stat")
		require.NoError(t, err)
		assert.NotEmpty(t, got)
	}
}
