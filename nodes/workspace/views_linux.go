package workspace

import (
	"errors"
	"io/fs"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// exchange writes data, with permissions perm, into the spare and exchanges it with the view at
// path; errNoExchange when the spare cannot be used now or the system cannot exchange files.
func exchange(spare, path string, data []byte, perm fs.FileMode) (err error) {
	f, held, err := openSpare(spare, perm)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, f.Close()) }()
	if _, err := f.WriteAt(data, 0); err != nil {
		return errNoExchange // WriteView tries, and says what went wrong
	}
	if err := f.Truncate(int64(len(data))); err != nil {
		return errNoExchange
	}
	if held.Mode().Perm() != perm && f.Chmod(perm) != nil {
		return errNoExchange
	}
	err = unix.Renameat2(unix.AT_FDCWD, spare, unix.AT_FDCWD, path, unix.RENAME_EXCHANGE)
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EOPNOTSUPP) {
		return errNoExchange // the view went meanwhile, or the file system cannot exchange
	}
	return err
}

// links returns how many names the file of fi has.
func links(fi os.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink)
	}
	return 0
}

// unshared reports whether f is open nowhere else: whether the kernel grants a write lease on it
// (let go at once, so that an opener waits at most that long).
func unshared(f *os.File) bool {
	fd := f.Fd()
	if _, err := unix.FcntlInt(fd, unix.F_SETLEASE, unix.F_WRLCK); err != nil {
		return false
	}
	_, err := unix.FcntlInt(fd, unix.F_SETLEASE, unix.F_UNLCK)
	return err == nil
}

// openSpare opens the spare at path for writing, creating it with perm if need be, and returns
// it, with what it is, when it is a plain file of one name that no one else has open (see
// unshared); else errNoExchange.
func openSpare(path string, perm fs.FileMode) (*os.File, os.FileInfo, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|syscall.O_NOFOLLOW, perm)
	if err != nil {
		return nil, nil, errNoExchange
	}
	held, err := f.Stat()
	named, nerr := os.Lstat(path)
	if err != nil || nerr != nil || !held.Mode().IsRegular() || !os.SameFile(held, named) || links(held) != 1 || !unshared(f) {
		_ = f.Close() // not written
		return nil, nil, errNoExchange
	}
	return f, held, nil
}
