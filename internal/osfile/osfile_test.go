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

func TestOpenFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a.txt")
	f, err := OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o640)
	require.NoError(t, err)
	_, err = f.WriteString("one\n")
	require.NoError(t, err)
	require.NoError(t, f.Sync())
	require.NoError(t, f.Close())
	f, err = OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	_, err = f.WriteString("two\n")
	require.NoError(t, err)
	require.NoError(t, f.Close())
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "one\ntwo\n", string(got))
	st, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, fs.FileMode(0o640)&^umask(t), st.Mode().Perm(), "the permissions asked for, less the umask")

	_, err = OpenFile(filepath.Join(dir, "missing"), os.O_RDONLY, 0)
	var pe *fs.PathError
	require.ErrorAs(t, err, &pe, "the error names the file")
	assert.Equal(t, filepath.Join(dir, "missing"), pe.Path)
	assert.ErrorIs(t, err, fs.ErrNotExist)
	_, err = OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	assert.ErrorIs(t, err, fs.ErrExist)
}

// umask returns the process's umask, which the permissions of a new file lose.
func umask(t *testing.T) fs.FileMode {
	path := filepath.Join(t.TempDir(), "probe")
	require.NoError(t, os.WriteFile(path, nil, 0o777))
	st, err := os.Stat(path)
	require.NoError(t, err)
	return 0o777 &^ st.Mode().Perm()
}

func TestCreateTemp(t *testing.T) {
	dir := t.TempDir()
	seen := map[string]bool{}
	for range 100 {
		f, err := CreateTemp(dir, ".rec.json.tmp-*")
		require.NoError(t, err)
		name := filepath.Base(f.Name())
		assert.True(t, strings.HasPrefix(name, ".rec.json.tmp-"), name)
		assert.False(t, seen[name], "a name given twice")
		seen[name] = true
		st, err := f.Stat()
		require.NoError(t, err)
		assert.Equal(t, fs.FileMode(0o600), st.Mode().Perm())
		require.NoError(t, f.Close())
	}
	f, err := CreateTemp(dir, "x-*.md")
	require.NoError(t, err)
	assert.True(t, strings.HasSuffix(f.Name(), ".md"))
	require.NoError(t, f.Close())
	_, err = CreateTemp(filepath.Join(dir, "missing"), "x-*")
	assert.ErrorIs(t, err, fs.ErrNotExist)
}

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

func TestRename(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	require.NoError(t, os.WriteFile(a, []byte("new"), 0o644))
	require.NoError(t, os.WriteFile(b, []byte("old"), 0o644))
	require.NoError(t, Rename(a, b))
	got, err := os.ReadFile(b)
	require.NoError(t, err)
	assert.Equal(t, "new", string(got))
	assert.NoFileExists(t, a)

	err = Rename(a, b)
	var le *os.LinkError
	require.ErrorAs(t, err, &le, "the error names both paths")
	assert.Equal(t, a, le.Old)
	assert.ErrorIs(t, err, fs.ErrNotExist)
	sub := filepath.Join(dir, "sub")
	require.NoError(t, os.Mkdir(sub, 0o755))
	assert.Error(t, Rename(b, sub), "a file does not replace a folder")
	assert.FileExists(t, b)
}
