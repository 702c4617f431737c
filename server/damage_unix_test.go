//go:build unix

package server_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/nodes/store"
	"github.com/agiraph/agiraph/nodes/store/sqlitestore"
	"github.com/agiraph/agiraph/server/host"
)

// What is not a regular file where an agent's file should be — a FIFO (whose open would wait
// for ever), a link to /dev/zero (which never ends), a folder — and a runs/ that cannot be
// looked into (a file in its place, which stops root too, unlike mode 000) each give a clear
// error naming the file, at start-up and on every request; the server keeps answering for the
// other agents, and closes. The same holds for such a file a model made in its run's folder or
// its memory.
func TestAgentFilesThatAreNotFilesAreRefused(t *testing.T) {
	root := t.TempDir()
	c := start(t, root, demoTeam)
	ids := []string{"good", "fifo", "zero", "folder", "runs", "model"}
	for _, id := range ids {
		require.Equal(t, http.StatusCreated, c.do("POST", "/agents", map[string]string{"id": id, "goal": "chips"}, nil))
		c.await(id, host.StatusComplete)
	}
	run := c.summary("model").Run
	require.NoError(t, c.srv.Close())
	at := func(id, file string) string { return filepath.Join(root, "agents", id, file) }
	replace := func(path string, make func(string) error) {
		require.NoError(t, os.RemoveAll(path))
		require.NoError(t, make(path))
	}
	replace(at("fifo", "agent.json"), func(p string) error { return syscall.Mkfifo(p, 0o644) })
	replace(at("zero", "events.jsonl"), func(p string) error { return os.Symlink("/dev/zero", p) })
	replace(at("folder", "conversation.jsonl"), func(p string) error { return os.Mkdir(p, 0o755) })
	replace(at("runs", "runs"), func(p string) error { return os.WriteFile(p, []byte("not a folder"), 0o644) })
	model := filepath.Join(root, "agents", "model", "runs", run)
	require.NoError(t, syscall.Mkfifo(filepath.Join(model, "pipe.md"), 0o644))
	replace(filepath.Join(model, "nodes", "n1", "_status.md"), func(p string) error { return syscall.Mkfifo(p, 0o644) })
	require.NoError(t, os.MkdirAll(at("model", "memory"), 0o755))
	require.NoError(t, syscall.Mkfifo(at("model", "memory/pipe.md"), 0o644))
	// The model's run was in progress when the server stopped, as if it crashed (before its end
	// noted its views as written): the next server resumes it, and reads the run's files.
	st, err := sqlitestore.Open(at("model", "state.db"))
	require.NoError(t, err)
	var forget store.Change
	forget.Delete("views/" + run)
	require.NoError(t, st.Apply(t.Context(), forget))
	require.NoError(t, st.Close())
	var meta map[string]any
	data, err := os.ReadFile(at("model", "agent.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &meta))
	meta["status"] = host.StatusWorking
	data, err = json.Marshal(meta)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(at("model", "agent.json"), data, 0o644))

	c = start(t, root, demoTeam)
	byID := c.listed()
	require.Len(t, byID, len(ids))
	for id, file := range map[string]string{"fifo": "agent.json", "zero": "events.jsonl", "folder": "conversation.jsonl"} {
		assert.Equal(t, host.StatusDamaged, byID[id].Status, id)
		assert.Contains(t, byID[id].Error, at(id, file), id)
		assert.Contains(t, byID[id].Error, "not a regular file", id)
		c.errorOf("POST", "/agents/"+id+"/runs", map[string]string{"goal": "more"}, http.StatusConflict)
	}
	msg := c.errorOf("POST", "/agents/runs/runs", map[string]string{"goal": "more"}, http.StatusInternalServerError)
	assert.Contains(t, msg, at("runs", "runs"))
	assert.Contains(t, msg, "not a directory")
	assert.Equal(t, host.StatusComplete, c.summary("runs").Status, "the agent's last run is as it was")

	msg = c.errorOf("GET", "/agents/model/workspace/pipe.md", nil, http.StatusForbidden)
	assert.Contains(t, msg, "pipe.md")
	assert.Contains(t, msg, "not a regular file")
	msg = c.errorOf("GET", "/agents/model/memory/pipe.md", nil, http.StatusBadRequest)
	assert.Contains(t, msg, "pipe.md")
	require.Equal(t, http.StatusOK, c.do("POST", "/agents/model/memory/search", map[string]string{"query": "chips"}, nil))

	require.Equal(t, http.StatusAccepted, c.do("POST", "/agents/good/runs", map[string]string{"goal": "more chips"}, nil))
	c.await("good", host.StatusComplete)
	failed := c.await("model", host.StatusFailed)
	assert.Contains(t, failed.Error, filepath.Join(model, "nodes", "n1", "_status.md"))
	assert.Contains(t, failed.Error, "not a regular file")
	require.Equal(t, http.StatusAccepted, c.do("POST", "/agents/model/runs", map[string]string{"goal": "more chips"}, nil))
	c.await("model", host.StatusComplete)
}
