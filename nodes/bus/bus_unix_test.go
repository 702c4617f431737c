//go:build unix

package bus_test

import (
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/internal/osfile"
	"github.com/agiraph/agiraph/nodes/bus"
)

// A message log that is not a regular file — a FIFO, whose read would wait for a writer for
// ever — is refused as the bus opens, naming the file.
func TestLogThatIsNotAFile(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, bus.LogFile)
	require.NoError(t, syscall.Mkfifo(log, 0o644))
	_, err := bus.Open(dir)
	require.ErrorIs(t, err, osfile.ErrNotRegular)
	assert.Contains(t, err.Error(), log)
}
