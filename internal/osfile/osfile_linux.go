package osfile

import (
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// OpenFile is os.OpenFile for a regular file (see the package doc); flag and perm are as there.
func OpenFile(name string, flag int, perm fs.FileMode) (*os.File, error) {
	for {
		fd, err := unix.Open(name, flag|unix.O_CLOEXEC, uint32(perm.Perm()))
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, &fs.PathError{Op: "open", Path: name, Err: err}
		}
		return os.NewFile(uintptr(fd), name), nil
	}
}

// Rename is os.Rename without the look at newpath it takes first, to refuse to put a file in
// place of a directory: the system refuses it too (EISDIR).
func Rename(oldpath, newpath string) error {
	for {
		err := unix.Rename(oldpath, newpath)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return &os.LinkError{Op: "rename", Old: oldpath, New: newpath, Err: err}
		}
		return nil
	}
}
