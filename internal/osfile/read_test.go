package osfile

import (
	"bufio"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
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

// ReadLine reads lines of any length up to MaxSize, longer than the reader's buffer too, and
// refuses a longer one.
func TestReadLine(t *testing.T) {
	long := strings.Repeat("x", 100<<10)
	r := bufio.NewReaderSize(strings.NewReader("one\n"+long+"\nlast"), 16)
	for _, want := range []string{"one\n", long + "\n", "last"} {
		line, err := ReadLine(r)
		if want == "last" {
			require.Error(t, err)
		} else {
			require.NoError(t, err)
		}
		assert.Equal(t, want, string(line))
	}
	_, err := ReadLine(bufio.NewReader(&zeros{}))
	assert.ErrorIs(t, err, ErrTooLarge)
}

// zeros reads as /dev/zero does.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}
