package host

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/nodes"
	"github.com/agiraph/agiraph/nodes/demo"
	"github.com/agiraph/agiraph/nodes/workspace"
)

// diskFull makes the writes of agent.json fail as on a full disk until the test ends.
func diskFull(t *testing.T) {
	saved := writeMeta
	writeMeta = func(path string, _ any) error { return &fs.PathError{Op: "write", Path: path, Err: syscall.ENOSPC} }
	t.Cleanup(func() { writeMeta = saved })
}

// A create whose agent.json the disk fails to write is refused, as an I/O failure to try again,
// and leaves no folder behind to be listed later.
func TestFailedCreateLeavesNothing(t *testing.T) {
	root := t.TempDir()
	h, err := New(WithRoot(root))
	require.NoError(t, err)
	defer h.Close()
	diskFull(t)
	_, err = h.Create("late", "chips", "", "")
	require.ErrorIs(t, err, ErrUnavailable)
	assert.Contains(t, err.Error(), "no space left on device")
	assert.Contains(t, err.Error(), "try again")
	assert.NoDirExists(t, filepath.Join(root, "agents", "late"))
	_, err = h.Summary("late")
	assert.ErrorIs(t, err, ErrNotFound)
	list, err := h.List()
	require.NoError(t, err)
	assert.Empty(t, list)
}

// A create that fails leaves the folder it did not make as it found it: one made by another
// since the host looked (here as the agent's options are read) is refused as taken, and
// neither removed nor written.
func TestFailedCreateLeavesAnothersFolder(t *testing.T) {
	root := t.TempDir()
	theirs := filepath.Join(root, "agents", "taken", "theirs.txt")
	h, err := New(WithRoot(root), WithSquadOptions(func(id string) []nodes.Option {
		if id == "taken" {
			require.NoError(t, os.MkdirAll(filepath.Dir(theirs), 0o755))
			require.NoError(t, os.WriteFile(theirs, []byte("theirs"), 0o644))
		}
		return demo.Team()
	}))
	require.NoError(t, err)
	defer h.Close()
	diskFull(t)
	_, err = h.Create("taken", "chips", "", "")
	require.ErrorIs(t, err, ErrExists)
	assert.Contains(t, err.Error(), "already exists")
	assert.FileExists(t, theirs)
	assert.NoFileExists(t, filepath.Join(root, "agents", "taken", "agent.json"))
	_, err = h.Summary("taken")
	assert.ErrorIs(t, err, ErrNotFound)
}

// Reading the agents does not wait for an agent.json being written — here one whose disk is
// slow, held until the reads are answered.
func TestReadsDoNotWaitForWrites(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	saved := writeMeta
	t.Cleanup(func() { writeMeta = saved }) // after the host closed
	writeMeta = func(path string, v any) error {
		once.Do(func() {
			close(entered)
			<-release
		})
		return workspace.WriteJSON(path, v)
	}
	h, err := New(WithRoot(t.TempDir()), WithSquadOptions(func(string) []nodes.Option {
		return append(demo.Team(), nodes.WithTick(20*time.Millisecond))
	}))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, h.Close()) })
	free := sync.OnceFunc(func() { close(release) })
	t.Cleanup(free) // before the host closes, should the test fail
	created := make(chan error, 1)
	go func() {
		_, err := h.Create("slow", "AI chips", "", "")
		created <- err
	}()
	<-entered // its agent.json is being written

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // a deadlock's bound, not a measure
	defer cancel()
	type reads struct {
		list []Summary
		one  Summary
		errs []error
	}
	read := make(chan reads, 1)
	go func() {
		list, lerr := h.List()
		one, oerr := h.Summary("slow")
		read <- reads{list, one, []error{lerr, oerr}}
	}()
	select {
	case r := <-read:
		require.NoError(t, r.errs[0])
		require.NoError(t, r.errs[1])
		require.Len(t, r.list, 1)
		assert.Equal(t, StatusWorking, r.list[0].Status)
		assert.Equal(t, "slow", r.one.ID)
	case <-ctx.Done():
		t.Fatal("reading the agents waited for an agent.json being written")
	}
	free()
	assert.NoError(t, <-created)
}
