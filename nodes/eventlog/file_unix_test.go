//go:build unix

package eventlog_test

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/internal/osfile"
	"github.com/agiraph/agiraph/nodes/eventlog"
)

// A log file that is not a regular file — a FIFO, whose open would wait for a writer; a link
// to /dev/zero, which never ends — is refused by every reader, naming the file; a last line
// longer than the limit is refused too, not read whole.
func TestReadersRefuseWhatIsNotALogFile(t *testing.T) {
	dir := t.TempDir()
	fifo, zero, long := filepath.Join(dir, "fifo.jsonl"), filepath.Join(dir, "zero.jsonl"), filepath.Join(dir, "long.jsonl")
	require.NoError(t, syscall.Mkfifo(fifo, 0o644))
	require.NoError(t, os.Symlink("/dev/zero", zero))
	for _, path := range []string{fifo, zero} {
		_, err := eventlog.ReadFile(path, 0, 0)
		assert.ErrorIs(t, err, osfile.ErrNotRegular, path)
		assert.ErrorContains(t, err, path)
		_, err = eventlog.Scan(path, 0, func(eventlog.Event) bool { return true })
		assert.ErrorIs(t, err, osfile.ErrNotRegular, path)
		_, _, err = eventlog.Last(path)
		assert.ErrorIs(t, err, osfile.ErrNotRegular, path)
		_, err = eventlog.Open(path)
		assert.ErrorIs(t, err, osfile.ErrNotRegular, path)
	}
	f, err := os.Create(long)
	require.NoError(t, err)
	require.NoError(t, f.Truncate(osfile.MaxSize+1)) // one line of zeros, sparse
	require.NoError(t, f.Close())
	_, _, err = eventlog.Last(long)
	assert.ErrorIs(t, err, osfile.ErrTooLarge)
	_, err = eventlog.ReadFile(long, 0, 0)
	assert.ErrorIs(t, err, osfile.ErrTooLarge)
}
