package server_test

import (
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/server"
)

// A second server on a root in use is refused at once, naming the holder; once the first is
// closed, it starts.
func TestSecondServerOnARootIsRefused(t *testing.T) {
	root := t.TempDir()
	first, err := server.New(server.WithRoot(root), server.WithSquadOptions(demoTeam), server.WithAddr("127.0.0.1:8123"))
	require.NoError(t, err)
	_, err = server.New(server.WithRoot(root), server.WithSquadOptions(demoTeam))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "in use by process "+strconv.Itoa(os.Getpid()))
	assert.Contains(t, err.Error(), "127.0.0.1:8123")
	assert.Contains(t, err.Error(), "stop it, or use another root")
	require.NoError(t, first.Close())
	again, err := server.New(server.WithRoot(root), server.WithSquadOptions(demoTeam))
	require.NoError(t, err)
	require.NoError(t, again.Close())
}

// One agent's damaged files do not take the server down: that agent is listed as damaged with
// an error naming the file, answers 409 naming it, and can be deleted; the others work. A
// conversation.jsonl cut off in mid-line (a crash) is no damage.
func TestDamagedAgentIsListedWhileOthersWork(t *testing.T) {
	root := t.TempDir()
	c := start(t, root, demoTeam)
	for _, id := range []string{"good", "torn", "meta", "conv", "db"} {
		require.Equal(t, http.StatusCreated, c.do("POST", "/agents", map[string]string{"id": id, "goal": "chips"}, nil))
		c.await(id, server.StatusComplete)
	}
	require.NoError(t, c.srv.Close())
	agent := func(id, file string) string { return filepath.Join(root, "agents", id, file) }
	appendTo := func(path, text string) {
		f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
		require.NoError(t, err)
		_, err = f.WriteString(text)
		require.NoError(t, err)
		require.NoError(t, f.Close())
	}
	appendTo(agent("torn", "conversation.jsonl"), `{"run": "x", "from": "hu`)
	require.NoError(t, os.WriteFile(agent("meta", "agent.json"), []byte(`{"id": "meta", "status": `), 0o644))
	appendTo(agent("conv", "conversation.jsonl"), "garbage\n"+`{"run": "x", "from": "human", "to": "coordinator", "content": "hi"}`+"\n")
	db, err := os.OpenFile(agent("db", "state.db"), os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = db.WriteAt([]byte(strings.Repeat("x", 100)), 0)
	require.NoError(t, err)
	require.NoError(t, db.Close())

	c = start(t, root, demoTeam)
	byID := c.listed()
	require.Len(t, byID, 5)
	assert.Equal(t, server.StatusComplete, byID["good"].Status)
	assert.Equal(t, server.StatusComplete, byID["torn"].Status, byID["torn"].Error)
	for id, file := range map[string]string{"meta": "agent.json", "conv": "conversation.jsonl", "db": "state.db"} {
		assert.Equal(t, server.StatusDamaged, byID[id].Status, id)
		assert.Contains(t, byID[id].Error, agent(id, file), id)
		assert.Equal(t, byID[id], c.summary(id))
		msg := c.errorOf("POST", "/agents/"+id+"/send", map[string]string{"message": "hi"}, http.StatusConflict)
		assert.Contains(t, msg, "damaged")
	}
	require.Equal(t, http.StatusAccepted, c.do("POST", "/agents/good/runs", map[string]string{"goal": "more chips"}, nil))
	c.await("good", server.StatusComplete)
	require.Equal(t, http.StatusAccepted, c.do("POST", "/agents/torn/runs", map[string]string{"goal": "more chips"}, nil), "a torn line is no damage")
	c.await("torn", server.StatusComplete)
	require.Equal(t, http.StatusOK, c.do("DELETE", "/agents/db", nil, nil))
	assert.Equal(t, http.StatusNotFound, c.do("GET", "/agents/db", nil, nil))
}

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
		c.await(id, server.StatusComplete)
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

	c = start(t, root, demoTeam)
	byID := c.listed()
	require.Len(t, byID, len(ids))
	for id, file := range map[string]string{"fifo": "agent.json", "zero": "events.jsonl", "folder": "conversation.jsonl"} {
		assert.Equal(t, server.StatusDamaged, byID[id].Status, id)
		assert.Contains(t, byID[id].Error, at(id, file), id)
		assert.Contains(t, byID[id].Error, "not a regular file", id)
		c.errorOf("POST", "/agents/"+id+"/runs", map[string]string{"goal": "more"}, http.StatusConflict)
	}
	msg := c.errorOf("POST", "/agents/runs/runs", map[string]string{"goal": "more"}, http.StatusInternalServerError)
	assert.Contains(t, msg, at("runs", "runs"))
	assert.Contains(t, msg, "not a directory")
	assert.Equal(t, server.StatusComplete, c.summary("runs").Status, "the agent's last run is as it was")

	msg = c.errorOf("GET", "/agents/model/workspace/pipe.md", nil, http.StatusForbidden)
	assert.Contains(t, msg, "pipe.md")
	assert.Contains(t, msg, "not a regular file")
	msg = c.errorOf("GET", "/agents/model/memory/pipe.md", nil, http.StatusBadRequest)
	assert.Contains(t, msg, "pipe.md")
	require.Equal(t, http.StatusOK, c.do("POST", "/agents/model/memory/search", map[string]string{"query": "chips"}, nil))

	require.Equal(t, http.StatusAccepted, c.do("POST", "/agents/good/runs", map[string]string{"goal": "more chips"}, nil))
	c.await("good", server.StatusComplete)
	require.Equal(t, http.StatusAccepted, c.do("POST", "/agents/model/resume", nil, nil))
	failed := c.await("model", server.StatusFailed)
	assert.Contains(t, failed.Error, filepath.Join(model, "nodes", "n1", "_status.md"))
	assert.Contains(t, failed.Error, "not a regular file")
	require.Equal(t, http.StatusAccepted, c.do("POST", "/agents/model/runs", map[string]string{"goal": "more chips"}, nil))
	c.await("model", server.StatusComplete)
}

// A run whose nodes/ folder was removed while it was paused is not taken up as a run with no
// work, waiting for ever: its resume fails, and the agent says why.
func TestRunWithoutItsNodesFails(t *testing.T) {
	root := t.TempDir()
	sum := interrupted(t, root, "a", "chips")
	require.NoError(t, os.RemoveAll(filepath.Join(root, "agents", "a", "runs", sum.Run, "nodes")))
	c := start(t, root, demoTeam)
	failed := c.await("a", server.StatusFailed)
	assert.Contains(t, failed.Error, "damaged")
	assert.Contains(t, failed.Error, filepath.Join(root, "agents", "a", "runs", sum.Run, "nodes"))
	require.Equal(t, http.StatusAccepted, c.do("POST", "/agents/a/resume", nil, nil))
	assert.Contains(t, c.await("a", server.StatusFailed).Error, "damaged", "resumed again, it fails again")
}

// listed returns the agents GET /agents lists, by id.
func (c *api) listed() map[string]server.Summary {
	c.t.Helper()
	var list struct{ Agents []server.Summary }
	require.Equal(c.t, http.StatusOK, c.do("GET", "/agents", nil, &list))
	byID := map[string]server.Summary{}
	for _, a := range list.Agents {
		byID[a.ID] = a
	}
	return byID
}
