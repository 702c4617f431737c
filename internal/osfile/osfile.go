// Package osfile opens regular files without the runtime's poller. os.OpenFile offers every
// descriptor it opens to the network poller, which refuses a regular file on Linux, switching it
// to non-blocking mode and back on the way: five system calls besides the open. A squad opens
// thousands of small files (records, logs, messages) and spent about a sixth of its system
// calls there; OpenFile opens the file and wraps its descriptor as it is (os.NewFile), and
// CreateTemp and ReadFile are built on it. Rename leaves out os.Rename's look at the new path.
// Elsewhere OpenFile and Rename are the os package's.
package osfile

import (
	"errors"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// CreateTemp is os.CreateTemp: it creates a new file in dir (not ""), named by pattern with its
// last "*" replaced by a random string (or the string appended), opened for reading and writing,
// with permissions 0600.
func CreateTemp(dir, pattern string) (*os.File, error) {
	prefix, suffix := pattern, ""
	if i := strings.LastIndex(pattern, "*"); i >= 0 {
		prefix, suffix = pattern[:i], pattern[i+1:]
	}
	for try := 0; ; try++ {
		name := filepath.Join(dir, prefix+strconv.FormatUint(uint64(rand.Uint32()), 10)+suffix)
		f, err := OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, fs.ErrExist) && try < 10000 {
			continue
		}
		return f, err
	}
}

// ReadFile is os.ReadFile.
func ReadFile(name string) ([]byte, error) {
	f, err := OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	size := 512
	if st, err := f.Stat(); err == nil && st.Size() > 0 && int64(int(st.Size())) == st.Size() {
		size = int(st.Size()) + 1 // one more, to see the end without growing
	}
	data := make([]byte, 0, size)
	for {
		n, err := f.Read(data[len(data):cap(data)])
		data = data[:len(data)+n]
		if errors.Is(err, io.EOF) {
			return data, nil
		}
		if err != nil {
			return data, err
		}
		if len(data) == cap(data) {
			data = append(data, 0)[:len(data)]
		}
	}
}
