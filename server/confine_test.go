package server_test

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/server/host"
)

// A run folder or a memory folder that is a symbolic link is not followed: whatever it points
// to, the server answers 403 and never the content outside the agent's home.
func TestSymlinkedFoldersAreRefused(t *testing.T) {
	root := t.TempDir()
	c := start(t, root, demoTeam)
	require.Equal(t, http.StatusCreated, c.do("POST", "/agents", map[string]string{"id": "a", "goal": "chips"}, nil))
	sum := c.await("a", host.StatusComplete)
	home := filepath.Join(root, "agents", "a")

	// The run folder moves outside, with a secret beside its files; a link takes its place.
	outside := filepath.Join(t.TempDir(), "run")
	run := filepath.Join(home, "runs", sum.Run)
	require.NoError(t, exec.Command("cp", "-a", run, outside).Run())
	require.NoError(t, os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("the secret"), 0o644))
	require.NoError(t, os.RemoveAll(run))
	require.NoError(t, os.Symlink(outside, run))

	for _, path := range []string{"/agents/a/workspace/secret.txt", "/agents/a/workspace", "/agents/a/workspace/secret.txt?raw=1", "/agents/a/board", "/agents/a/board/n1", "/agents/a/workers"} {
		status, body := c.raw("GET", path, "", map[string]string{"Authorization": "Bearer " + c.srv.Token()})
		assert.Equal(t, http.StatusForbidden, status, path)
		assert.NotContains(t, body, "the secret", path)
		assert.Contains(t, body, "symbolic link", path)
		assert.NotContains(t, body, root, "%s names the server's path", path)
	}

	// The memory folder likewise.
	mem := filepath.Join(home, "memory")
	elsewhere := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(elsewhere, "secret.md"), []byte("the secret"), 0o644))
	require.NoError(t, os.RemoveAll(mem))
	require.NoError(t, os.Symlink(elsewhere, mem))
	for _, path := range []string{"/agents/a/memory", "/agents/a/memory/secret.md"} {
		status, body := c.raw("GET", path, "", map[string]string{"Authorization": "Bearer " + c.srv.Token()})
		assert.NotEqual(t, http.StatusOK, status, path)
		assert.NotContains(t, body, "the secret", path)
	}
	status, body := c.raw("POST", "/agents/a/memory/search", `{"query": "secret"}`, map[string]string{"Authorization": "Bearer " + c.srv.Token(), "Content-Type": "application/json"})
	assert.NotContains(t, body, "the secret", "search: %d", status)
}
