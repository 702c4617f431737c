package fsync

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Writers that sync at once share syncs, and each returns only after a sync that started after
// it was called has finished (so it covers its writes); a failed sync fails those it covers.
func TestSyncerGroupsSyncs(t *testing.T) {
	var (
		mu      sync.Mutex
		ran     [][2]time.Time // each sync's start and end
		calls   atomic.Int32
		failing atomic.Bool
	)
	saved := syncfs
	defer func() { syncfs = saved }()
	syncfs = func(int) error {
		calls.Add(1)
		start := time.Now()
		time.Sleep(2 * time.Millisecond)
		mu.Lock()
		ran = append(ran, [2]time.Time{start, time.Now()})
		mu.Unlock()
		if failing.Load() {
			return errors.New("disk gone")
		}
		return nil
	}
	s := &syncer{}
	s.cond.L = &s.mu
	var opened, released atomic.Int32
	fd := func() (int, func()) {
		opened.Add(1)
		return 0, func() { released.Add(1) }
	}

	const writers = 50
	var wg sync.WaitGroup
	for range writers {
		wg.Go(func() {
			for range 4 {
				called := time.Now()
				require.NoError(t, s.sync(fd))
				returned := time.Now()
				mu.Lock()
				covered := false
				for _, r := range ran {
					covered = covered || (!r[0].Before(called) && !r[1].After(returned))
				}
				mu.Unlock()
				assert.True(t, covered, "no sync started after the call and ended before it returned")
			}
		})
	}
	wg.Wait()
	t.Logf("%d syncs for %d calls", calls.Load(), 4*writers)
	assert.Less(t, int(calls.Load()), 4*writers/2, "the syncs are shared")
	assert.Equal(t, calls.Load(), opened.Load(), "a descriptor is had only for a sync that runs")
	assert.Equal(t, opened.Load(), released.Load())

	failing.Store(true)
	require.ErrorContains(t, s.sync(fd), "disk gone")
	failing.Store(false)
	require.NoError(t, s.sync(fd), "a later sync that succeeds")
}

// Renames told of by later are made durable by the next sync anyone starts, without one of
// their own; when nobody syncs, a timer does, once for all the renames told of meanwhile.
func TestLaterIsCoveredByTheNextSync(t *testing.T) {
	var calls atomic.Int32
	savedSync, savedSoon := syncfs, soon
	defer func() { syncfs, soon = savedSync, savedSoon }()
	syncfs = func(int) error { calls.Add(1); return nil }
	soon = 20 * time.Millisecond
	s := &syncer{}
	s.cond.L = &s.mu
	dir := t.TempDir()

	s.later(dir)
	assert.Zero(t, calls.Load(), "later waited for a sync")
	require.NoError(t, s.sync(openDir(dir)))
	time.Sleep(5 * soon)
	assert.EqualValues(t, 1, calls.Load(), "the timer synced what a sync had covered")

	s.later(dir)
	s.later(dir)
	assert.Eventually(t, func() bool { return calls.Load() == 2 }, time.Second, soon/4, "nobody synced the renames")
	time.Sleep(5 * soon)
	assert.EqualValues(t, 2, calls.Load(), "one sync stands for the renames told of together")

	// A sync that was running when the renames were told of does not cover them.
	s.mu.Lock()
	s.running, s.started = true, s.started+1
	s.mu.Unlock()
	s.later(dir)
	s.mu.Lock()
	s.running, s.done = false, s.started
	s.cond.Broadcast()
	s.mu.Unlock()
	assert.Eventually(t, func() bool { return calls.Load() == 3 }, time.Second, soon/4, "a sync that started before covered the renames")

	// A folder removed before the timer runs has nothing left to sync.
	gone := filepath.Join(t.TempDir(), "gone")
	require.NoError(t, os.Mkdir(gone, 0o755))
	s.mu.Lock()
	started := s.started
	s.mu.Unlock()
	s.later(gone)
	require.NoError(t, os.Remove(gone))
	time.Sleep(5 * soon)
	s.mu.Lock()
	defer s.mu.Unlock()
	assert.Equal(t, started, s.started, "a sync ran for a removed folder")
}
