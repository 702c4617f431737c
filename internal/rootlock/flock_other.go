//go:build !(darwin || dragonfly || freebsd || illumos || linux || netbsd || openbsd)

package rootlock

import (
	"errors"
	"fmt"
	"os"
	"runtime"
)

// noFollow is no flag here: Acquire fails before it writes the lock file.
const noFollow = 0

// lockFile fails: there is no flock here.
func lockFile(*os.File) error {
	return fmt.Errorf("locking a folder is not supported on %s: %w", runtime.GOOS, errors.ErrUnsupported)
}

// unlockFile does nothing: lockFile never locks here.
func unlockFile(*os.File) error { return nil }
