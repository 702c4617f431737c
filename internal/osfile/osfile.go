// Package osfile opens regular files without the runtime's poller. os.OpenFile offers every
// descriptor it opens to the network poller, which refuses a regular file on Linux, switching it
// to non-blocking mode and back on the way: five system calls besides the open. A squad opens
// thousands of small files (records, logs, messages) and spent about a sixth of its system
// calls there; OpenFile opens the file and wraps its descriptor as it is (os.NewFile), and
// CreateTemp and Open are built on it. Rename leaves out os.Rename's look at the new path.
// Elsewhere OpenFile and Rename are the os package's. Open and the reads built on it refuse
// what is not a regular file and bound what they read (read.go).
package osfile

import (
	"errors"
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
