package fsync

import (
	"os"
	"slices"
	"sync"

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
	var done []uint64
	for _, dir := range dirs {
		var st unix.Stat_t
		if unix.Stat(dir, &st) != nil || slices.Contains(done, st.Dev) {
			continue
		}
		_ = syncerOf(st.Dev).sync(func() (int, func()) {
			d, err := os.Open(dir)
			if err != nil {
				return -1, func() {}
			}
			return int(d.Fd()), func() { _ = d.Close() }
		})
		done = append(done, st.Dev)
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
