//go:build unix

package rootlock_test

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/internal/osfile"
	"github.com/agiraph/agiraph/internal/rootlock"
)

// acquireAtOnce is rootlock.Acquire, failing the test if it does not return at once.
func acquireAtOnce(t *testing.T, dir string) (*rootlock.Lock, error) {
	t.Helper()
	type result struct {
		l   *rootlock.Lock
		err error
	}
	done := make(chan result, 1)
	go func() {
		l, err := rootlock.Acquire(dir, "127.0.0.1:8080")
		done <- result{l, err}
	}()
	select {
	case r := <-done:
		return r.l, r.err
	case <-time.After(deadline):
		t.Fatal("Acquire waits on what is in place of the lock file")
		return nil, nil
	}
}

// What is in place of the lock file but a regular file — a FIFO, a link — is refused at once,
// naming it: the write would wait for ever on a FIFO, and follow a link to overwrite the file it
// leads to. The process turned away by the lock does not wait on it either.
func TestLockFileNotRegular(t *testing.T) {
	dir := t.TempDir()
	lockFile := filepath.Join(dir, rootlock.FileName)
	require.NoError(t, syscall.Mkfifo(lockFile, 0o600))
	_, err := acquireAtOnce(t, dir)
	require.ErrorIs(t, err, osfile.ErrNotRegular)
	assert.Contains(t, err.Error(), lockFile)
	assert.Contains(t, err.Error(), "a named pipe")

	target := filepath.Join(t.TempDir(), "precious")
	require.NoError(t, os.WriteFile(target, []byte("precious"), 0o600))
	require.NoError(t, os.Remove(lockFile))
	require.NoError(t, os.Symlink(target, lockFile))
	_, err = acquireAtOnce(t, dir)
	require.Error(t, err)
	got, err := os.ReadFile(target)
	require.NoError(t, err)
	assert.Equal(t, "precious", string(got), "the write followed the link")

	require.NoError(t, os.Remove(lockFile))
	l, err := acquireAtOnce(t, dir)
	require.NoError(t, err)
	defer l.Release()
	require.NoError(t, os.Remove(lockFile))
	require.NoError(t, syscall.Mkfifo(lockFile, 0o600))
	_, err = acquireAtOnce(t, dir)
	require.ErrorIs(t, err, rootlock.ErrLocked)
}
