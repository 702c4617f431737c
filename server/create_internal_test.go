package server

import (
	"io/fs"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A create whose agent.json the disk fails to write is refused, as an I/O failure to try again,
// and leaves no folder behind to be listed later.
func TestFailedCreateLeavesNothing(t *testing.T) {
	root := t.TempDir()
	srv, err := New(WithRoot(root), WithoutAuth())
	require.NoError(t, err)
	defer srv.Close()
	do := func(method, path, body string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		req.Host = "localhost"
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, req)
		return rec
	}
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
