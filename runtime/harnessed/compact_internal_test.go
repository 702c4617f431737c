//go:build unix

package harnessed

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The listing of a worker's files for a compaction reads the first line of the regular files
// only: a FIFO among them (whose open would wait for a writer) is listed, not read.
func TestFileSummariesSkipWhatIsNotAFile(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "notes.md"), []byte("# Notes\nmore\n"), 0o644))
	require.NoError(t, syscall.Mkfifo(filepath.Join(dir, "pipe.md"), 0o644))
	got := fileSummaries(dir)
	assert.Contains(t, got, "- notes.md (13 bytes): # Notes\n")
	assert.Contains(t, got, "- pipe.md (0 bytes)\n")
}
