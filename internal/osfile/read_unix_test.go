//go:build unix

package osfile

import (
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// What is not a regular file is refused at once, naming the file: a FIFO without a writer (whose
// open would wait for ever), a link to /dev/zero (which never ends), a folder; through a root
// too. A file over MaxSize is refused without reading it all.
func TestReadRefusesWhatIsNotARegularFile(t *testing.T) {
	dir := t.TempDir()
	at := func(name string) string { return filepath.Join(dir, name) }
	require.NoError(t, syscall.Mkfifo(at("fifo"), 0o644))
	require.NoError(t, os.Symlink("/dev/zero", at("zero")))
	require.NoError(t, os.Mkdir(at("folder"), 0o755))
	require.NoError(t, os.WriteFile(at("file"), []byte("hello"), 0o644))
	huge, err := os.Create(at("huge"))
	require.NoError(t, err)
	require.NoError(t, huge.Truncate(MaxSize+1)) // sparse: nothing is written
	require.NoError(t, huge.Close())
	root, err := os.OpenRoot(dir)
	require.NoError(t, err)
	defer root.Close()

	for name, what := range map[string]string{"fifo": "a named pipe", "zero": "a device", "folder": "a folder"} {
		_, err := ReadFile(at(name))
		var pe *fs.PathError
		require.ErrorAs(t, err, &pe, name)
		assert.Equal(t, at(name), pe.Path, "the error names the file")
		assert.ErrorIs(t, err, ErrNotRegular, name)
		assert.Contains(t, err.Error(), what)
		if name != "zero" { // a root refuses the link itself: it leads out of it
			_, err = ReadIn(root, name)
			assert.ErrorIs(t, err, ErrNotRegular, name)
		}
	}
	_, err = ReadFile(at("huge"))
	assert.ErrorIs(t, err, ErrTooLarge)
	assert.Contains(t, err.Error(), at("huge"))
	_, err = ReadIn(root, "huge")
	assert.ErrorIs(t, err, ErrTooLarge)

	data, err := ReadFile(at("file"))
	require.NoError(t, err)
	assert.Equal(t, "hello", string(data))
	data, err = ReadIn(root, "file")
	require.NoError(t, err)
	assert.Equal(t, "hello", string(data))
	_, err = ReadFile(at("missing"))
	assert.ErrorIs(t, err, fs.ErrNotExist)
}
