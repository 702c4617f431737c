package fsync

import (
	"os"
	"slices"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Files makes the content of files durable: a syncfs of each file system they are on.
func Files(files []*os.File) error {
	var done []uint64
	for _, f := range files {
		var st unix.Stat_t
		if err := unix.Fstat(int(f.Fd()), &st); err != nil {
			return err
		}
		if slices.Contains(done, st.Dev) {
			continue
		}
		fd := int(f.Fd())
		if err := syncerOf(st.Dev).sync(func() (int, func()) { return fd, func() {} }); err != nil {
			return err
		}
		done = append(done, st.Dev)
	}
	return nil
}

// Dirs makes renames in dirs durable, where the system supports it: a syncfs of each file
// system they are on. A folder is opened only when its syncfs runs, not when it shares
// another's.
func Dirs(dirs []string) {
	eachFileSystem(dirs, func(s *syncer, dir string) { _ = s.sync(openDir(dir)) })
}

// eachFileSystem calls fn with the syncer of each file system dirs are on, and the first of
// dirs on it; a folder that is gone is left out.
func eachFileSystem(dirs []string, fn func(s *syncer, dir string)) {
	var done []uint64
	for _, dir := range dirs {
		var st unix.Stat_t
		if unix.Stat(dir, &st) != nil || slices.Contains(done, st.Dev) {
			continue
		}
		fn(syncerOf(st.Dev), dir)
		done = append(done, st.Dev)
	}
}

// soon is how long renames that DirsSoon was told of may wait for a sync of their file system.
var soon = time.Second

// DirsSoon makes renames in dirs durable soon, without waiting: with the next syncfs of their
// file system, whoever starts it (a call of Files or Dirs), and at the latest after a second.
// It is for a writer whose renames need be durable no later than what it writes next, which
// syncs first: a crash of the system then keeps a prefix of what it wrote (the journal commits
// renames in the order they were made), each file whole if its content was synced before.
func DirsSoon(dirs []string) {
	eachFileSystem(dirs, (*syncer).later)
}

// openDir gives a syncer the descriptor of dir to sync through (-1 when it cannot be opened).
func openDir(dir string) func() (int, func()) {
	return func() (int, func()) {
		d, err := os.Open(dir)
		if err != nil {
			return -1, func() {}
		}
		return int(d.Fd()), func() { _ = d.Close() }
	}
}

// A syncer groups the syncs of one file system: a caller needs a syncfs that starts after its
// writes, so callers that come while one runs share the next. However many goroutines write
// at once (a squad's workers finishing together), at most one syncfs runs and one is waited
// for.
type syncer struct {
	mu      sync.Mutex
	cond    sync.Cond
	running bool
	started uint64 // syncs started, the running one included
	done    uint64 // syncs finished
	failed  uint64 // the latest sync that failed, and its error
	err     error
	due     uint64 // the sync that renames told of by later need (started after them)
	timer   bool   // a timer runs it, unless a sync covers it first
}

// syncfs is unix.Syncfs; tests count its calls.
var syncfs = unix.Syncfs

// syncThrough runs a syncfs through the file descriptor fd gives; when it gives none (-1: a
// folder removed meanwhile), a sync of every file system stands for it.
func syncThrough(fd func() (int, func())) error {
	n, release := fd()
	defer release()
	if n < 0 {
		unix.Sync()
		return nil
	}
	return syncfs(n)
}

var (
	syncersMu sync.Mutex
	syncers   = map[uint64]*syncer{}
)

// syncerOf returns the syncer of the file system dev.
func syncerOf(dev uint64) *syncer {
	syncersMu.Lock()
	defer syncersMu.Unlock()
	s, ok := syncers[dev]
	if !ok {
		s = &syncer{}
		s.cond.L = &s.mu
		syncers[dev] = s
	}
	return s
}

// later asks for a syncfs of the file system that starts after the call, within soon, and
// returns at once: a sync that any caller starts covers it; when none has by then, a timer
// runs one, through dir (none if dir is gone).
func (s *syncer) later(dir string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.due = s.started + 1
	if s.timer {
		return
	}
	s.timer = true
	time.AfterFunc(soon, func() {
		s.mu.Lock()
		s.timer = false
		covered := s.done >= s.due
		s.mu.Unlock()
		if _, err := os.Stat(dir); !covered && err == nil { // a folder removed since holds nothing to sync
			_ = s.sync(openDir(dir)) // as Dirs: the renames themselves have happened
		}
	})
}

// sync returns once a syncfs of the file system that started after the call has finished:
// with that sync's error, or a later one's. When the call runs the syncfs itself, it goes
// through the file descriptor fd gives, which it releases after.
func (s *syncer) sync(fd func() (int, func())) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	need := s.started + 1 // the running sync, if any, may have started before our writes
	for s.done < need {
		if s.running {
			s.cond.Wait()
			continue
		}
		s.running = true
		s.started++
		gen := s.started
		s.mu.Unlock()
		err := syncThrough(fd)
		s.mu.Lock()
		s.running, s.done = false, gen
		if err != nil {
			s.failed, s.err = gen, err
		}
		s.cond.Broadcast()
	}
	if s.failed >= need {
		return s.err
	}
	return nil
}
