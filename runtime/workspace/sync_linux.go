package workspace

import (
	"os"
	"slices"
	"sync"

	"golang.org/x/sys/unix"
)

// syncFiles makes the content of files durable: a syncfs of each file system they are on.
func syncFiles(files []*os.File) error {
	var done []uint64
	for _, f := range files {
		var st unix.Stat_t
		if err := unix.Fstat(int(f.Fd()), &st); err != nil {
			return err
		}
		if slices.Contains(done, st.Dev) {
			continue
		}
		if err := syncerOf(st.Dev).sync(int(f.Fd())); err != nil {
			return err
		}
		done = append(done, st.Dev)
	}
	return nil
}

// syncDirs makes renames in dirs durable, where the system supports it: a syncfs of each file
// system they are on.
func syncDirs(dirs []string) {
	var done []uint64
	for _, dir := range dirs {
		d, err := os.Open(dir)
		if err != nil {
			continue
		}
		var st unix.Stat_t
		if unix.Fstat(int(d.Fd()), &st) == nil && !slices.Contains(done, st.Dev) {
			_ = syncerOf(st.Dev).sync(int(d.Fd()))
			done = append(done, st.Dev)
		}
		_ = d.Close()
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

// sync returns once a syncfs of the file system, through fd, that started after the call has
// finished: with that sync's error, or a later one's.
func (s *syncer) sync(fd int) error {
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
		err := syncfs(fd)
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
