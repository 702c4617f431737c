package workspace

import (
	"errors"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"

	"github.com/agiraph/agiraph/internal/osfile"
)

// A folder's spare is a file kept in it, under SpareName, that atomic writes reuse: the new
// content is written over the spare's and the spare is exchanged with the file
// (renameat2 RENAME_EXCHANGE), so the old content becomes the spare for the next write. On file
// systems where creating a file and freeing one are costly (ext4 on a virtual disk: 0.1–0.5 ms
// each), a rewrite then costs a write and a rename, not a new file and a freed one. A view
// (WriteView), which is not synced, has a spare of its own beside it (viewSpare), so that what a
// crash of the system may leave in it is an earlier version of itself, never another file's.
//
// A writer takes a spare only when nobody else has it open — the kernel grants a write lease
// only then (it is let go at once) — and, after that, only if it is still the file of that
// name. Whoever else opens it after, a writer or a reader that held it as the file, finds it
// open and leaves it alone; the name moves only by an exchange, made by a writer that has it
// open. So two writers, in this process or others, never share a spare, and a reader keeps the
// content it opened, never a mix. A writer that cannot take the spare uses a temporary file.
//
// The lease cannot see an open that is under way: a reader that looked the name up while the
// file was still under it, and whose open is counted only after a writer exchanged the file out
// and the next took it as the spare, reads what that writer puts in — another file of the
// folder for the folder's spare, a later version of itself for a view's. It takes two exchanges
// within one open; a view, rewritten without syncs and so most often, has a spare of its own to
// keep what such a reader may see to its own versions.

// takeSpare writes data, with permissions perm, into the spare at path and returns it, open
// (and so held); ok is false when the spare cannot be used (held by another writer, not a plain
// file, or a write failed), and the caller writes a temporary file instead.
func takeSpare(path string, data []byte, perm fs.FileMode) (f *os.File, ok bool) {
	f, err := osfile.OpenFile(path, os.O_WRONLY|os.O_CREATE|unix.O_NOFOLLOW, perm)
	if err != nil {
		return nil, false
	}
	fd := int(f.Fd())
	var held, named unix.Stat_t
	if !unshared(fd) || unix.Fstat(fd, &held) != nil || unix.Lstat(path, &named) != nil ||
		held.Dev != named.Dev || held.Ino != named.Ino || held.Nlink != 1 || held.Mode&unix.S_IFMT != unix.S_IFREG {
		_ = f.Close()
		return nil, false
	}
	if _, err := f.WriteAt(data, 0); err != nil || f.Truncate(int64(len(data))) != nil {
		_ = f.Close()
		return nil, false
	}
	if fs.FileMode(held.Mode)&fs.ModePerm != perm && f.Chmod(perm) != nil {
		_ = f.Close()
		return nil, false
	}
	return f, true
}

// exchange puts the spare at tmp, held by f, in place of path, and lets it go: path's old
// content becomes the spare. Where path does not exist, or the file system cannot exchange, the
// spare is renamed over path (the next write makes a new one).
func exchange(f *os.File, tmp, path string) error {
	defer f.Close()
	err := unix.Renameat2(unix.AT_FDCWD, tmp, unix.AT_FDCWD, path, unix.RENAME_EXCHANGE)
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EOPNOTSUPP) {
		err = osfile.Rename(tmp, path)
	}
	return err
}

// unshared reports whether the file open at fd is open nowhere else: whether the kernel grants
// a write lease on it (it is let go at once, so an opener waits at most that long).
func unshared(fd int) bool {
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETLEASE, unix.F_WRLCK); err != nil {
		return false
	}
	_, err := unix.FcntlInt(uintptr(fd), unix.F_SETLEASE, unix.F_UNLCK)
	return err == nil
}
