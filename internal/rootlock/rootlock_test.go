package rootlock_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/internal/leaktest"
	"github.com/agiraph/agiraph/internal/rootlock"
)

// holderDirEnv, when set, makes this test binary the holder child of TestKilledHolderReleases:
// it locks that folder, prints "locked" and sleeps until it is killed.
const holderDirEnv = "AGIRAPH_ROOTLOCK_HOLDER_DIR"

// childAddr is the address the holder child says it serves.
const childAddr = "127.0.0.1:8080"

func TestMain(m *testing.M) {
	if dir := os.Getenv(holderDirEnv); dir != "" {
		if err := hold(dir); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	leaktest.VerifyTestMain(m)
}

// hold locks dir, telling its address once "listening" as a server on port 0 would, and keeps
// the lock until the process is killed.
func hold(dir string) error {
	l, err := rootlock.Acquire(dir, "127.0.0.1:0")
	if err != nil {
		return err
	}
	if err := l.SetAddr(childAddr); err != nil {
		return err
	}
	fmt.Println("locked")
	time.Sleep(time.Hour)
	return nil
}

// deadline bounds the wait for the child to lock: generous, never a timed assertion.
const deadline = 60 * time.Second

// startHolder starts this test binary as a process that holds the lock of dir, and returns once
// it does; the process is killed when the test ends.
func startHolder(t *testing.T, dir string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), holderDirEnv+"="+dir)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})

	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(out).ReadString('\n')
		line <- s
	}()
	select {
	case s := <-line:
		require.Equal(t, "locked\n", s, "the child did not lock")
	case <-time.After(deadline):
		t.Fatal("the child did not lock in time")
	}
	return cmd
}

func TestKilledHolderReleases(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "root")
	cmd := startHolder(t, dir)

	_, err := rootlock.Acquire(dir, "127.0.0.1:9090")
	require.ErrorIs(t, err, rootlock.ErrLocked)
	msg := err.Error()
	assert.Contains(t, msg, dir)
	assert.Contains(t, msg, "process "+strconv.Itoa(cmd.Process.Pid))
	assert.Contains(t, msg, "(serving "+childAddr+") since ")

	require.NoError(t, cmd.Process.Kill()) // SIGKILL: the child cannot release anything itself
	require.Error(t, cmd.Wait())

	l, err := rootlock.Acquire(dir, "127.0.0.1:9090")
	require.NoError(t, err, "the lock of a killed process is not released")
	h := holderOf(t, dir)
	assert.Equal(t, os.Getpid(), h.PID)
	assert.Equal(t, "127.0.0.1:9090", h.Addr)
	require.NoError(t, l.Release())
}

// The lock file removed while another process holds the lock lets no one in: the lock is on the
// folder, not on the file. The refusal then cannot name the holder.
func TestRemovedLockFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "root")
	cmd := startHolder(t, dir)
	require.NoError(t, os.Remove(filepath.Join(dir, rootlock.FileName)))

	_, err := rootlock.Acquire(dir, "127.0.0.1:9090")
	require.ErrorIs(t, err, rootlock.ErrLocked, "a second process took the lock once its file was removed")
	assert.Equal(t, fmt.Sprintf("rootlock: %s is in use by another process", dir), err.Error())

	require.NoError(t, cmd.Process.Kill())
	require.Error(t, cmd.Wait())
	l, err := rootlock.Acquire(dir, "127.0.0.1:9090")
	require.NoError(t, err, "the lock of a killed process is not released")
	assert.Equal(t, os.Getpid(), holderOf(t, dir).PID, "the lock file is made again")
	require.NoError(t, l.Release())
}

func TestSecondAcquireInProcess(t *testing.T) {
	dir := t.TempDir()
	l, err := rootlock.Acquire(dir, "127.0.0.1:8080")
	require.NoError(t, err)

	_, err = rootlock.Acquire(dir, "127.0.0.1:8081")
	require.ErrorIs(t, err, rootlock.ErrLocked)
	assert.Contains(t, err.Error(), fmt.Sprintf("rootlock: %s is in use by process %d (serving 127.0.0.1:8080) since ", dir, os.Getpid()))
	assert.Equal(t, "127.0.0.1:8080", holderOf(t, dir).Addr, "the failed Acquire changed the holder")

	require.NoError(t, l.Release())
	l, err = rootlock.Acquire(dir, "127.0.0.1:8081")
	require.NoError(t, err, "Acquire after Release")
	assert.Equal(t, "127.0.0.1:8081", holderOf(t, dir).Addr)
	require.NoError(t, l.Release())
}

func TestHolderFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "b")
	before := time.Now().Add(-time.Second)
	l, err := rootlock.Acquire(dir, "127.0.0.1:8080")
	require.NoError(t, err)
	defer l.Release()

	fi, err := os.Stat(filepath.Join(dir, rootlock.FileName))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())

	h := holderOf(t, dir)
	assert.Equal(t, os.Getpid(), h.PID)
	assert.Equal(t, "127.0.0.1:8080", h.Addr)
	since, err := time.Parse(time.RFC3339, h.Since)
	require.NoError(t, err)
	assert.True(t, !since.Before(before.Truncate(time.Second)) && !since.After(time.Now()), "since %s", h.Since)

	// A shorter address leaves no tail of the longer one; the time of Acquire stays.
	require.NoError(t, l.SetAddr("[::1]:80"))
	assert.Equal(t, holderInfo{PID: os.Getpid(), Addr: "[::1]:80", Since: h.Since}, holderOf(t, dir))
	_, err = rootlock.Acquire(dir, "")
	require.ErrorIs(t, err, rootlock.ErrLocked)
	assert.Contains(t, err.Error(), "(serving [::1]:80)")
}

func TestStaleFileIsNoObstacle(t *testing.T) {
	dir := t.TempDir()
	stale := `{"pid":999999,"addr":"127.0.0.1:1234","since":"2020-01-01T00:00:00Z","extra":"a long leftover"}`
	require.NoError(t, os.WriteFile(filepath.Join(dir, rootlock.FileName), []byte(stale), 0o600))

	l, err := rootlock.Acquire(dir, "127.0.0.1:8080")
	require.NoError(t, err)
	h := holderOf(t, dir)
	assert.Equal(t, os.Getpid(), h.PID)
	assert.Equal(t, "127.0.0.1:8080", h.Addr)
	require.NoError(t, l.Release())

	_, err = os.Stat(filepath.Join(dir, rootlock.FileName))
	assert.NoError(t, err, "Release removed the lock file")
}

func TestUnknownHolder(t *testing.T) {
	dir := t.TempDir()
	l, err := rootlock.Acquire(dir, "")
	require.NoError(t, err)
	defer l.Release()
	// The holder has not written its information yet, or it is unreadable.
	require.NoError(t, os.WriteFile(filepath.Join(dir, rootlock.FileName), []byte("garbage"), 0o600))

	_, err = rootlock.Acquire(dir, "")
	require.ErrorIs(t, err, rootlock.ErrLocked)
	assert.Equal(t, fmt.Sprintf("rootlock: %s is in use by another process", dir), err.Error())
}

func TestUncreatableDir(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(file, nil, 0o600))
	dir := filepath.Join(file, "root")

	_, err := rootlock.Acquire(dir, "")
	require.Error(t, err)
	assert.NotErrorIs(t, err, rootlock.ErrLocked)
	assert.Contains(t, err.Error(), "rootlock: cannot create "+dir+": ")
}

func TestReleasedLock(t *testing.T) {
	l, err := rootlock.Acquire(t.TempDir(), "")
	require.NoError(t, err)
	require.NoError(t, l.Release())
	require.NoError(t, l.Release(), "a second Release")
	assert.ErrorIs(t, l.SetAddr("127.0.0.1:8080"), os.ErrClosed)
}

func ExampleAcquire() {
	dir, err := os.MkdirTemp("", "root")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)

	l, err := rootlock.Acquire(dir, "127.0.0.1:0")
	if err != nil {
		panic(err) // another server runs on dir, or dir cannot be created
	}
	defer l.Release()
	if err := l.SetAddr("127.0.0.1:8080"); err != nil { // once listening
		panic(err)
	}

	_, err = rootlock.Acquire(dir, "127.0.0.1:8081") // a second server on the same root
	fmt.Println(errors.Is(err, rootlock.ErrLocked))
	// Output: true
}

// holderInfo is the content of a lock file.
type holderInfo struct {
	PID   int    `json:"pid"`
	Addr  string `json:"addr"`
	Since string `json:"since"`
}

// holderOf reads the lock file of dir, which must hold one JSON object and nothing more.
func holderOf(t *testing.T, dir string) holderInfo {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, rootlock.FileName))
	require.NoError(t, err)
	var h holderInfo
	require.NoError(t, json.Unmarshal(b, &h), "lock file %q", b)
	return h
}
