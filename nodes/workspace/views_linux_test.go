package workspace_test

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// inode returns the inode number of the file at path.
func inode(t *testing.T, path string) uint64 {
	st, err := os.Lstat(path)
	require.NoError(t, err)
	return st.Sys().(*syscall.Stat_t).Ino
}

func TestViewsRewriteNeitherMakesNorFreesAFile(t *testing.T) {
	run, path := viewsRun(t)
	views := run.Views()
	require.NoError(t, views.Write(path, []byte("PENDING\n")))
	require.NoError(t, views.Write(path, []byte("RUNNING\n")))
	spare := filepath.Join(string(run), ".views.tmp-spare")
	files := map[uint64]bool{inode(t, path): true, inode(t, spare): true}
	for _, text := range []string{"DONE\n", "FAILED\n", "RUNNING\n"} {
		require.NoError(t, views.Write(path, []byte(text)))
		assert.True(t, files[inode(t, path)], "the view is one of the two files, not a new one")
		assert.True(t, files[inode(t, spare)], "the spare is one of the two files")
		got, err := os.ReadFile(path)
		require.NoError(t, err)
		assert.Equal(t, text, string(got))
	}
}
