package workspace_test

import (
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/nodes/workspace"
)

// viewsRun returns a new run's folder with one node, and the path of its status view.
func viewsRun(t *testing.T) (workspace.Run, string) {
	run := workspace.Home(t.TempDir()).Run("r1")
	require.NoError(t, run.Create())
	dir := run.Node("n1")
	require.NoError(t, dir.Create())
	return run, workspace.Status(dir)
}

func TestViewsWriteAndRewrite(t *testing.T) {
	run, path := viewsRun(t)
	views := run.Views()
	for _, text := range []string{"PENDING\n", "RUNNING (worker w1)\n", "DONE\n", "COMPLETED (worker w1)\n\nall written\n"} {
		require.NoError(t, views.Write(path, []byte(text)))
		got, err := os.ReadFile(path)
		require.NoError(t, err)
		assert.Equal(t, text, string(got))
	}
	require.NoError(t, os.Chmod(path, 0o600))
	require.NoError(t, views.Write(path, []byte("FAILED\n")))
	st, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm(), "a rewritten view keeps its permissions")
	for _, e := range entries(t, filepath.Dir(path)) {
		assert.NotContains(t, e, ".tmp-", "no temporary file is left")
	}
	es, err := os.ReadDir(string(run))
	require.NoError(t, err)
	for _, e := range es {
		if e.Name()[0] == '.' {
			assert.True(t, workspace.Internal(e.Name()), "%s is listed as the run's own", e.Name())
		}
	}
}

func TestViewsKeepWhatAReaderOpened(t *testing.T) {
	run, path := viewsRun(t)
	views := run.Views()
	require.NoError(t, views.Write(path, []byte("one\n")))
	require.NoError(t, views.Write(path, []byte("two\n")))
	held, err := os.Open(path) // a reader of "two", slow to read it
	require.NoError(t, err)
	defer held.Close()
	// "three" is written over the spare ("one"), which takes the view's name: the file held,
	// "two", becomes the spare. "four" must then not be written over it.
	require.NoError(t, views.Write(path, []byte("three\n")))
	require.NoError(t, views.Write(path, []byte("four\n")))
	read, err := io.ReadAll(held)
	require.NoError(t, err)
	assert.Equal(t, "two\n", string(read), "the reader reads what it opened")
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "four\n", string(got))
}
