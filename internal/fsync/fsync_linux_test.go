package fsync

import (
	"errors"
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
