package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/checkpoint"
)

// holdGroup makes the callers that come next queue as one group, as they do while another group
// commits; release commits the group, returning once every caller has its result.
func holdGroup(t *testing.T, s *Saver, callers int) (queued func(), release func()) {
	t.Helper()
	s.c.mu.Lock()
	s.c.busy = true
	s.c.mu.Unlock()
	return func() { waitQueued(t, s, callers) }, s.c.lead
}

// waitQueued waits until n callers queue for the next group.
func waitQueued(t *testing.T, s *Saver, n int) {
	t.Helper()
	require.Eventually(t, func() bool {
		s.c.mu.Lock()
		defer s.c.mu.Unlock()
		return len(s.c.queue) == n
	}, 10*time.Second, time.Millisecond, "%d callers queued", n)
}

func openSaver(t *testing.T, opts ...Option) *Saver {
	t.Helper()
	s, err := Open(filepath.Join(t.TempDir(), "c.db"), opts...)
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

func testCheckpoint(id string) checkpoint.Checkpoint {
	return checkpoint.Checkpoint{ID: id, Source: checkpoint.SourceLoop, Format: 1, CreatedAt: time.Now()}
}

// TestGroupCommitsTogether: writes that queue while a group commits are one transaction, and a
// write of the group that fails is undone alone, reported to its caller only.
func TestGroupCommitsTogether(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openSaver(t)
	thread := checkpoint.Config{ThreadID: "t"}
	_, err := s.Put(ctx, thread, testCheckpoint("c0"))
	require.NoError(t, err)

	queued, release := holdGroup(t, s, 5)
	errs := make([]error, 5)
	var wg sync.WaitGroup
	wg.Go(func() { _, errs[0] = s.Put(ctx, thread, testCheckpoint("c1")) })
	wg.Go(func() {
		errs[1] = s.PutWrites(ctx, checkpoint.Config{ThreadID: "t", CheckpointID: "missing"}, []checkpoint.Write{{TaskID: "a", Node: "n", Kind: checkpoint.WriteUpdate}})
	})
	wg.Go(func() {
		errs[2] = s.PutWrites(ctx, checkpoint.Config{ThreadID: "t", CheckpointID: "c0"}, []checkpoint.Write{
			{TaskID: "b", Node: "n", Kind: checkpoint.WriteUpdate, Value: []byte("1")},
			{TaskID: "c", Node: "n", Kind: checkpoint.WriteUpdate, Value: []byte("2")},
		})
	})
	wg.Go(func() {
		_, errs[3] = s.PutStep(ctx, checkpoint.Config{ThreadID: "t", CheckpointID: "missing"}, []checkpoint.Write{{TaskID: "d", Node: "n", Kind: checkpoint.WriteUpdate}},
			thread, testCheckpoint("c2"))
	})
	wg.Go(func() { // a write that fails after it changed something
		errs[4] = s.c.do(ctx, false, func(ctx context.Context, tx *sql.Tx) error {
			if err := s.put(ctx, tx, thread, testCheckpoint("c3")); err != nil {
				return err
			}
			return errors.New("half done")
		})
	})
	queued()
	release()
	wg.Wait()

	require.NoError(t, errs[0])
	require.ErrorIs(t, errs[1], checkpoint.ErrNotFound)
	require.NoError(t, errs[2])
	require.ErrorIs(t, errs[3], checkpoint.ErrNotFound)
	assert.Contains(t, errs[3].Error(), `checkpoint "missing"`)
	require.EqualError(t, errs[4], "half done")

	got, err := s.List(ctx, thread, checkpoint.ListOptions{})
	require.NoError(t, err)
	var ids []string
	for _, tu := range got {
		ids = append(ids, tu.Checkpoint.ID)
	}
	assert.Equal(t, []string{"c1", "c0"}, ids, "neither the failed step's checkpoint nor the half-done write's")
	c0, err := s.Get(ctx, checkpoint.Config{ThreadID: "t", CheckpointID: "c0"})
	require.NoError(t, err)
	require.Len(t, c0.Writes, 2)
	assert.Equal(t, "b", c0.Writes[0].TaskID)

	s.c.mu.Lock()
	defer s.c.mu.Unlock()
	assert.False(t, s.c.busy, "the last group hands the lead to no one")
}

// TestGroupLosesAllWhenTheTransactionIsGone: when SQLite rolls the whole transaction back (a full
// disk, an I/O error), every write of the group that ran fails, and those after are not tried.
func TestGroupLosesAllWhenTheTransactionIsGone(t *testing.T) {
	t.Parallel()
	s := openSaver(t)
	rollback, err := s.wdb.Prepare("ROLLBACK") // what SQLite does on SQLITE_FULL
	require.NoError(t, err)
	defer rollback.Close()
	_, release := holdGroup(t, s, 3)
	errs := make([]error, 3)
	ran := make([]bool, 3)
	var wg sync.WaitGroup
	for i, fn := range []writeFunc{
		func(ctx context.Context, tx *sql.Tx) error {
			return s.put(ctx, tx, checkpoint.Config{ThreadID: "t"}, testCheckpoint("c1"))
		},
		func(ctx context.Context, tx *sql.Tx) error {
			_, err := bind(ctx, tx, rollback).ExecContext(ctx)
			require.NoError(t, err)
			return errors.New("disk full")
		},
		func(context.Context, *sql.Tx) error { return nil },
	} {
		wg.Go(func() {
			errs[i] = s.c.do(context.Background(), true, func(ctx context.Context, tx *sql.Tx) error {
				ran[i] = true
				return fn(ctx, tx)
			})
		})
		waitQueued(t, s, i+1) // in this order
	}
	release()
	wg.Wait()
	assert.EqualError(t, errs[0], "disk full")
	assert.EqualError(t, errs[1], "disk full")
	assert.EqualError(t, errs[2], "disk full")
	assert.Equal(t, []bool{true, true, false}, ran)
	_, err = s.Get(context.Background(), checkpoint.Config{ThreadID: "t", CheckpointID: "c1"})
	require.ErrorIs(t, err, checkpoint.ErrNotFound)
}

// TestQueuedWriteCancelled: a caller whose context ends while it waits for its group leaves the
// queue; its write does not happen.
func TestQueuedWriteCancelled(t *testing.T) {
	t.Parallel()
	s := openSaver(t)
	queued, release := holdGroup(t, s, 1)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() {
		_, err := s.Put(ctx, checkpoint.Config{ThreadID: "t"}, testCheckpoint("c1"))
		done <- err
	}()
	queued()
	cancel()
	require.ErrorIs(t, <-done, context.Canceled)
	release() // an empty group
	_, err := s.Get(context.Background(), checkpoint.Config{ThreadID: "t", CheckpointID: "c1"})
	require.ErrorIs(t, err, checkpoint.ErrNotFound)
	_, err = s.Put(context.Background(), checkpoint.Config{ThreadID: "t"}, testCheckpoint("c2"))
	require.NoError(t, err, "the saver writes on")
}

// TestManyWritersGrouped: concurrent writers of many threads all land, each step whole.
func TestManyWritersGrouped(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openSaver(t)
	const threads, steps = 16, 40
	var wg sync.WaitGroup
	for th := range threads {
		wg.Go(func() {
			cfg := checkpoint.Config{ThreadID: fmt.Sprint("t", th)}
			prev, err := s.Put(ctx, cfg, testCheckpoint("c000"))
			if !assert.NoError(t, err) {
				return
			}
			for i := 1; i <= steps; i++ {
				w := []checkpoint.Write{{TaskID: fmt.Sprint(i), Node: "n", Kind: checkpoint.WriteUpdate, Value: []byte("v")}}
				if i%2 == 0 {
					prev, err = s.PutStep(ctx, prev, w, cfg, testCheckpoint(fmt.Sprintf("c%03d", i)))
				} else {
					err = s.PutWrites(ctx, prev, w)
				}
				if !assert.NoError(t, err) {
					return
				}
			}
		})
	}
	wg.Wait()
	for th := range threads {
		got, err := s.List(ctx, checkpoint.Config{ThreadID: fmt.Sprint("t", th)}, checkpoint.ListOptions{})
		require.NoError(t, err)
		require.Len(t, got, steps/2+1)
		for _, tu := range got[1:] { // each but the newest has its two writes
			assert.Len(t, tu.Writes, 2, tu.Checkpoint.ID)
		}
	}
}

// TestPanickingWriteFailsItsGroup: a write that panics fails every write of its group, which
// is rolled back, and the saver writes on.
func TestPanickingWriteFailsItsGroup(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openSaver(t)
	thread := checkpoint.Config{ThreadID: "t"}
	queued, release := holdGroup(t, s, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	wg.Go(func() { _, errs[0] = s.Put(ctx, thread, testCheckpoint("c1")) })
	waitQueued(t, s, 1)
	wg.Go(func() {
		errs[1] = s.c.do(ctx, true, func(context.Context, *sql.Tx) error { panic("boom") })
	})
	queued()
	release()
	wg.Wait()
	for _, err := range errs {
		require.ErrorContains(t, err, "a write panicked: boom")
	}
	_, err := s.Get(ctx, checkpoint.Config{ThreadID: "t", CheckpointID: "c1"})
	require.ErrorIs(t, err, checkpoint.ErrNotFound, "the group was rolled back")
	_, err = s.Put(ctx, thread, testCheckpoint("c2"))
	require.NoError(t, err)
	err = s.c.do(ctx, true, func(context.Context, *sql.Tx) error { panic("alone") })
	require.ErrorContains(t, err, "a write panicked: alone")
	_, err = s.Put(ctx, thread, testCheckpoint("c3"))
	require.NoError(t, err, "the saver writes on after a lone write panicked")
}
