// Package rootlock keeps two processes from working in the same folder at once — two servers on
// one root, two squads on one agent's home: an exclusive OS lock (flock) on the folder itself,
// held on an open descriptor, so the OS releases it when the holding process ends in any way,
// kill -9 included, and no file removed from the folder lets a second process in. The file
// <dir>/.lock says who holds the lock, so that the process turned away can name it.
package rootlock

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/agiraph/agiraph/internal/osfile"
)

// FileName is the name of the file, inside the locked folder, that says who holds the lock.
const FileName = ".lock"

// ErrLocked is wrapped by the error of Acquire when another process (or another Lock of this
// process) holds the lock of the folder.
var ErrLocked = errors.New("rootlock: the folder is in use")

// errBusy is what lockFile returns when the lock is held elsewhere.
var errBusy = errors.New("lock held elsewhere")

// A Lock is the held lock of a folder, until Release. It is safe for concurrent use.
type Lock struct {
	dir   string
	since string

	mu sync.Mutex
	f  *os.File // the locked folder; nil once released
}

// holder is the content of the lock file: who holds the lock.
type holder struct {
	PID   int    `json:"pid"`
	Addr  string `json:"addr"`
	Since string `json:"since"` // RFC 3339
}

// Acquire takes the lock of dir, creating dir if needed: the folder, locked with
// flock(LOCK_EX|LOCK_NB), and the file <dir>/.lock (mode 0600), into which it writes who holds it
// as JSON — this process's PID, addr and the time, e.g.
// {"pid":123,"addr":"127.0.0.1:8080","since":"2026-11-23T10:00:00Z"}. addr may be empty when
// there is none, or it is not known yet; see SetAddr.
//
// When the lock is held by another process — or by another Lock of this process: two Acquires of
// one folder conflict — Acquire fails at once, without waiting, with an error wrapping ErrLocked
// that names dir and the holder's PID, address and time as read from the file. A lock file left
// behind by a process that is gone is no obstacle: the OS released its lock when the process
// ended. A lock file removed while its holder runs lets no one in: the lock is on the folder.
//
// The descriptor is opened close-on-exec, so child processes do not keep the lock. On a network
// file system (NFS) the lock keeps out the processes of this host only. On systems without
// flock (Windows, Solaris, AIX, …) Acquire returns an error wrapping errors.ErrUnsupported.
func Acquire(dir, addr string) (*Lock, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("rootlock: cannot create %s: %w", dir, err)
	}
	f, err := os.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("rootlock: cannot open %s: %w", dir, err)
	}
	if err := lockFile(f); err != nil {
		_ = f.Close() // a folder opened to lock it; the lock's error is the one to report
		if errors.Is(err, errBusy) {
			return nil, &lockedError{dir: dir, holder: readHolder(dir)}
		}
		return nil, fmt.Errorf("rootlock: cannot lock %s: %w", dir, err)
	}
	l := &Lock{dir: dir, since: time.Now().Format(time.RFC3339), f: f}
	if err := l.write(addr); err != nil {
		return nil, errors.Join(err, l.Release())
	}
	return l, nil
}

// SetAddr rewrites the holder information in the lock file with addr, keeping the PID and the
// time of Acquire: a server may acquire the lock before it listens (on port 0, say) and tell its
// address once it is known. It fails once the lock is released.
func (l *Lock) SetAddr(addr string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return fmt.Errorf("rootlock: the lock of %s is released: %w", l.dir, os.ErrClosed)
	}
	return l.write(addr)
}

// Release unlocks the folder; the lock file stays, and is no obstacle to the next Acquire.
// Releasing a released Lock does nothing.
func (l *Lock) Release() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	f := l.f
	l.f = nil
	if err := errors.Join(unlockFile(f), f.Close()); err != nil {
		return fmt.Errorf("rootlock: release %s: %w", l.dir, err)
	}
	return nil
}

// write puts the holder information into the lock file (made again if it was removed), l.mu
// held or l not yet shared. It overwrites the old content before cutting it to length, so a
// reader never sees an empty file; the reader decodes the first JSON value only, ignoring a tail
// left over from a longer content. What is not a regular file in its place — a link, which the
// write would follow to another file, a FIFO, whose open would wait for a reader — is refused.
func (l *Lock) write(addr string) error {
	b, err := json.Marshal(holder{PID: os.Getpid(), Addr: addr, Since: l.since})
	if err != nil {
		return fmt.Errorf("rootlock: %w", err)
	}
	b = append(b, '\n')
	f, err := osfile.OpenRegular(filepath.Join(l.dir, FileName), os.O_RDWR|os.O_CREATE|noFollow, 0o600)
	if err == nil {
		_, err = f.WriteAt(b, 0)
		if err == nil {
			err = f.Truncate(int64(len(b)))
		}
		err = errors.Join(err, f.Close())
	}
	if err != nil {
		return fmt.Errorf("rootlock: write the holder of %s: %w", l.dir, err)
	}
	return nil
}

// readHolder reads who holds the lock of dir from its lock file; the zero holder when the file
// does not say (yet, or any more), or is not a regular file.
func readHolder(dir string) holder {
	f, err := osfile.Open(filepath.Join(dir, FileName))
	if err != nil {
		return holder{}
	}
	defer func() { _ = f.Close() }() // read only
	var h holder
	if json.NewDecoder(io.LimitReader(f, 4096)).Decode(&h) != nil {
		return holder{}
	}
	return h
}

// lockedError is the error of Acquire when the lock is held elsewhere.
type lockedError struct {
	dir    string
	holder holder
}

func (e *lockedError) Error() string {
	who := "another process"
	if e.holder.PID > 0 {
		who = fmt.Sprintf("process %d", e.holder.PID)
	}
	if e.holder.Addr != "" {
		who += fmt.Sprintf(" (serving %s)", e.holder.Addr)
	}
	if e.holder.Since != "" {
		who += " since " + e.holder.Since
	}
	return fmt.Sprintf("rootlock: %s is in use by %s", e.dir, who)
}

func (e *lockedError) Unwrap() error { return ErrLocked }
