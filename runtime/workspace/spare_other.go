//go:build !linux

package workspace

import (
	"io/fs"
	"os"
)

// takeSpare reports that spares are not used here: atomic writes write a temporary file (see
// spare_linux.go).
func takeSpare(string, []byte, fs.FileMode) (*os.File, bool) { return nil, false }

// exchange is not reached where spares are not used.
func exchange(f *os.File, tmp, path string) error {
	defer f.Close()
	return os.Rename(tmp, path)
}
