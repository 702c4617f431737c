//go:build darwin || dragonfly || freebsd || illumos || linux || netbsd || openbsd

package rootlock

import (
	"errors"
	"os"
	"syscall"
)

// noFollow makes an open refuse a symbolic link in the file's place.
const noFollow = syscall.O_NOFOLLOW

// lockFile takes an exclusive flock on f without waiting; errBusy when it is held elsewhere.
func lockFile(f *os.File) error {
	err := flock(f, syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return errBusy
	}
	return err
}

// unlockFile drops the flock on f.
func unlockFile(f *os.File) error { return flock(f, syscall.LOCK_UN) }

func flock(f *os.File, how int) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	err = rc.Control(func(fd uintptr) {
		for {
			ferr = syscall.Flock(int(fd), how)
			if ferr != syscall.EINTR {
				return
			}
		}
	})
	if err != nil {
		return err
	}
	if ferr != nil {
		return &os.SyscallError{Syscall: "flock", Err: ferr}
	}
	return nil
}
