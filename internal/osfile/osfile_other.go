//go:build !linux

package osfile

import (
	"io/fs"
	"os"
)

// OpenFile is os.OpenFile.
func OpenFile(name string, flag int, perm fs.FileMode) (*os.File, error) {
	return os.OpenFile(name, flag, perm)
}

// Rename is os.Rename.
func Rename(oldpath, newpath string) error { return os.Rename(oldpath, newpath) }
