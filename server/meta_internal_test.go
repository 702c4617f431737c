package server

import (
	"context"
	"encoding/json"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
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

// A create whose agent.json the disk fails to write is refused, as an I/O failure to try again,
// and leaves no folder behind to be listed later.
func TestFailedCreateLeavesNothing(t *testing.T) {
	root := t.TempDir()
	srv, err := New(WithRoot(root), WithoutAuth())
	require.NoError(t, err)
	defer srv.Close()
	do := func(method, path, body string) *httptest.ResponseRecorder { return serveLocal(srv, method, path, body) }
	saved := writeMeta
	writeMeta = func(path string, _ any) error { return &fs.PathError{Op: "write", Path: path, Err: syscall.ENOSPC} }
	rec := do("POST", "/agents", `{"id": "late", "goal": "chips"}`)
	writeMeta = saved
	assert.Equal(t, http.StatusServiceUnavailable, rec.Code)
	assert.Contains(t, rec.Body.String(), "no space left on device")
	assert.Contains(t, rec.Body.String(), "try again")
	assert.NoDirExists(t, filepath.Join(root, "agents", "late"))
	assert.Equal(t, http.StatusNotFound, do("GET", "/agents/late", "").Code)
	assert.JSONEq(t, `{"agents": []}`, do("GET", "/agents", "").Body.String())
}

// A create that fails leaves the folder it did not make as it found it: one made by another
// since the server looked (here as the agent's options are read) is refused as taken, and
// neither removed nor written.
func TestFailedCreateLeavesAnothersFolder(t *testing.T) {
	root := t.TempDir()
	theirs := filepath.Join(root, "agents", "taken", "theirs.txt")
	srv, err := New(WithRoot(root), WithoutAuth(), WithSquadOptions(func(id string) []nodes.Option {
		if id == "taken" {
			require.NoError(t, os.MkdirAll(filepath.Dir(theirs), 0o755))
			require.NoError(t, os.WriteFile(theirs, []byte("theirs"), 0o644))
		}
		return demo.Team()
	}))
	require.NoError(t, err)
	defer srv.Close()
	saved := writeMeta
	writeMeta = func(path string, _ any) error { return &fs.PathError{Op: "write", Path: path, Err: syscall.ENOSPC} }
	rec := serveLocal(srv, "POST", "/agents", `{"id": "taken", "goal": "chips"}`)
	writeMeta = saved
	assert.Equal(t, http.StatusConflict, rec.Code, rec.Body.String())
	assert.Contains(t, rec.Body.String(), "already exists")
	assert.FileExists(t, theirs)
	assert.NoFileExists(t, filepath.Join(root, "agents", "taken", "agent.json"))
	assert.Equal(t, http.StatusNotFound, serveLocal(srv, "GET", "/agents/taken", "").Code)
}

// serveLocal serves a request to srv, as from the same machine, and returns the answer.
func serveLocal(srv *Server, method, path, body string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.Host = "localhost"
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	srv.ServeHTTP(rec, req)
	return rec
}

// Reading the agents does not wait for an agent.json being written — here one whose disk is
// slow, held until the reads are answered.
func TestReadsDoNotWaitForWrites(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	saved := writeMeta
	t.Cleanup(func() { writeMeta = saved }) // after the server closed
	writeMeta = func(path string, v any) error {
		once.Do(func() {
			close(entered)
			<-release
		})
		return workspace.WriteJSON(path, v)
	}
	srv, err := New(WithRoot(t.TempDir()), WithoutAuth(), WithSquadOptions(func(string) []nodes.Option {
		return append(demo.Team(), nodes.WithTick(20*time.Millisecond))
	}))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, srv.Close()) })
	free := sync.OnceFunc(func() { close(release) })
	t.Cleanup(free) // before the server closes, should the test fail
	do := func(method, path, body string) *httptest.ResponseRecorder { return serveLocal(srv, method, path, body) }
	created := make(chan int, 1)
	go func() { created <- do("POST", "/agents", `{"id": "slow", "goal": "AI chips"}`).Code }()
	<-entered // its agent.json is being written

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // a deadlock's bound, not a measure
	defer cancel()
	read := make(chan []*httptest.ResponseRecorder, 1)
	go func() { read <- []*httptest.ResponseRecorder{do("GET", "/agents", ""), do("GET", "/agents/slow", "")} }()
	select {
	case recs := <-read:
		var list struct{ Agents []Summary }
		require.Equal(t, http.StatusOK, recs[0].Code)
		require.NoError(t, json.Unmarshal(recs[0].Body.Bytes(), &list))
		require.Len(t, list.Agents, 1)
		assert.Equal(t, StatusWorking, list.Agents[0].Status)
		assert.Equal(t, http.StatusOK, recs[1].Code)
	case <-ctx.Done():
		t.Fatal("reading the agents waited for an agent.json being written")
	}
	free()
	assert.Equal(t, http.StatusCreated, <-created)
}
