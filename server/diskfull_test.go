package server_test

import (
	"context"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/internal/testenv"
	"github.com/agiraph/agiraph/models"
	"github.com/agiraph/agiraph/nodes"
	"github.com/agiraph/agiraph/nodes/demo"
	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/server/host"
)

// smallDisk mounts a file system of size bytes (tmpfs) for the test and returns its folder;
// the test is skipped, saying why, where it cannot mount one (not root, no mount), but under CI.
func smallDisk(t *testing.T, size int) string {
	dir := t.TempDir()
	out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%d", size), "tmpfs", dir).CombinedOutput()
	if err != nil {
		testenv.Missing(t, fmt.Sprintf("cannot mount a small tmpfs to fill (needs root and mount): %v: %s", err, out)) // CI runs as root
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	return dir
}

// fill writes a file under dir until the disk is full, and returns a func that frees the space.
func fill(t *testing.T, dir string) (free func()) {
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	require.NoError(t, err)
	chunk := make([]byte, 64<<10)
	for {
		if _, err := f.Write(chunk); err != nil {
			require.ErrorIs(t, err, syscall.ENOSPC)
			break
		}
	}
	for { // the last pages
		if _, err := f.Write(chunk[:512]); err != nil {
			break
		}
	}
	require.NoError(t, f.Close())
	return func() { require.NoError(t, os.Remove(path)) }
}

// On a full disk a create is refused and leaves nothing behind, and a run fails saying it met
// an I/O failure, not damage; once space is freed, the run is resumed and completes, and the
// agent refused can be made.
func TestFullDisk(t *testing.T) {
	disk := smallDisk(t, 8<<20)
	root := filepath.Join(disk, "root")
	c := start(t, root, func(id string) []nodes.Option {
		if id == "busy" {
			return goalTeam(id)
		}
		return demoTeam(id)
	})
	require.Equal(t, http.StatusCreated, c.do("POST", "/agents", map[string]string{"id": "early", "goal": "AI chips"}, nil))
	c.await("early", host.StatusComplete)
	require.Equal(t, http.StatusCreated, c.do("POST", "/agents", map[string]string{"id": "busy", "goal": "wait"}, nil))
	require.Equal(t, http.StatusOK, c.do("POST", "/agents/busy/send", map[string]string{"message": "go on"}, nil))

	free := fill(t, disk)
	// A message to the run at work: refused, as the disk is full — or the run met the full disk
	// first, and failed.
	var e struct{ Error string }
	switch code := c.do("POST", "/agents/busy/send", map[string]string{"message": "go on"}, &e); code {
	case http.StatusServiceUnavailable: // the file system's words, or SQLite's for its database
		assert.Regexp(t, "no space left on device|database or disk is full", e.Error)
		assert.Contains(t, e.Error, "an I/O failure")
	case http.StatusConflict:
		assert.Contains(t, e.Error, "failed")
	default:
		t.Errorf("a message on a full disk: %d %s", code, e.Error)
	}
	msg := c.errorOf("POST", "/agents", map[string]string{"id": "late", "goal": "AI chips"}, http.StatusServiceUnavailable)
	assert.Contains(t, msg, "no space left on device")
	assert.NoDirExists(t, filepath.Join(root, "agents", "late"))
	c.errorOf("GET", "/agents/late", nil, http.StatusNotFound)

	require.Equal(t, http.StatusAccepted, c.do("POST", "/agents/early/runs", map[string]string{"goal": "robots"}, nil))
	failed := c.await("early", host.StatusFailed)
	assert.Contains(t, failed.Error, "an I/O failure, not damage")
	assert.Contains(t, failed.Error, "/agents/early/resume")

	free()
	var resumed host.Summary
	require.Equal(t, http.StatusAccepted, c.do("POST", "/agents/early/resume", nil, &resumed))
	assert.Equal(t, failed.Run, resumed.Run)
	assert.Equal(t, "robots", c.await("early", host.StatusComplete).Goal)
	require.Equal(t, http.StatusCreated, c.do("POST", "/agents", map[string]string{"id": "late", "goal": "AI chips"}, nil))
	c.await("late", host.StatusComplete)
	// The run at work when the disk filled: failed by it, or not (it wrote nothing meanwhile).
	if busy := c.summary("busy"); busy.Status == host.StatusFailed {
		assert.Contains(t, busy.Error, "an I/O failure, not damage")
		require.Equal(t, http.StatusAccepted, c.do("POST", "/agents/busy/resume", nil, nil))
	}
	require.Equal(t, http.StatusOK, c.do("POST", "/agents/busy/send", map[string]string{"message": "go on"}, nil))
	assert.Equal(t, host.StatusWorking, c.summary("busy").Status)
}

// diskFull is the error of a write on a full disk.
var diskFull = &fs.PathError{Op: "write", Path: "state.db", Err: syscall.ENOSPC}

// The failures of a full disk, injected, as TestFullDisk meets them where it can mount a small
// one: an agent whose squad could not be made is failed, not damaged, and resumed once the disk
// is fixed; a run that met the failure says it is no damage, and is resumed.
func TestDiskFailureInjected(t *testing.T) {
	var down, turnFails atomic.Bool // the disk fails the squad's making; the coordinator's next turn
	team := func(string) []nodes.Option {
		coord := failingModel{Model: demo.Models()[0], fail: &turnFails}
		all := append([]providers.Model{coord}, demo.Models()[1:]...)
		return []nodes.Option{
			nodes.WithModel(demo.WorkerModel), nodes.WithCoordinatorModel(demo.CoordinatorModel), nodes.WithTick(20 * time.Millisecond),
			nodes.WithModelResolver(func(name string) (providers.Model, error) {
				if down.Load() {
					return nil, fmt.Errorf("open the squad's files: %w", diskFull)
				}
				return models.New(name, models.WithModels(all...), models.WithoutRetry())
			}),
		}
	}
	require.Equal(t, demo.CoordinatorModel, demo.Models()[0].Name())
	c := start(t, t.TempDir(), team)

	down.Store(true)
	require.Equal(t, http.StatusCreated, c.do("POST", "/agents", map[string]string{"id": "setup", "goal": "AI chips"}, nil))
	failed := c.await("setup", host.StatusFailed)
	assert.Contains(t, failed.Error, "could not be set up")
	assert.Contains(t, failed.Error, "an I/O failure, not damage")
	down.Store(false)
	require.Equal(t, http.StatusAccepted, c.do("POST", "/agents/setup/resume", nil, nil))
	assert.Contains(t, c.await("setup", host.StatusComplete).Output, "# Report")

	turnFails.Store(true)
	require.Equal(t, http.StatusCreated, c.do("POST", "/agents", map[string]string{"id": "run", "goal": "AI chips"}, nil))
	failed = c.await("run", host.StatusFailed)
	assert.Contains(t, failed.Error, "no space left on device")
	assert.Contains(t, failed.Error, "an I/O failure, not damage")
	assert.Contains(t, failed.Error, "POST /agents/run/resume")
	require.Equal(t, http.StatusAccepted, c.do("POST", "/agents/run/resume", nil, nil))
	assert.Contains(t, c.await("run", host.StatusComplete).Output, "# Report")
}

// failingModel is a model whose next answer fails as a full disk does, once fail is set.
type failingModel struct {
	providers.Model
	fail *atomic.Bool
}

func (m failingModel) Generate(ctx context.Context, req providers.Request) (providers.Response, error) {
	if m.fail.CompareAndSwap(true, false) {
		return providers.Response{}, fmt.Errorf("save the turn: %w", diskFull)
	}
	return m.Model.Generate(ctx, req)
}
