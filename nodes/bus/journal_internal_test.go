package bus

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// An Append whose write fails and whose cut of that write fails too says both: the log may
// now end in a torn record.
func TestAppendReportsAFailedCut(t *testing.T) {
	path := filepath.Join(t.TempDir(), LogFile)
	require.NoError(t, os.WriteFile(path, []byte("{\"a\":1}\n"), 0o644))
	f, err := os.Open(path) // read only: both the write and the truncate fail
	require.NoError(t, err)
	defer f.Close()
	j := &fileJournal{path: path, f: f, size: 8}

	err = j.Append([][]byte{[]byte(`{"b":2}`)})
	require.ErrorContains(t, err, "writing the log")
	require.ErrorContains(t, err, "cutting off the failed write of "+path)
}
