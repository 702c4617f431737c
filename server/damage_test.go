package server_test

import (
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/server"
	"github.com/agiraph/agiraph/server/host"
)

// A second server on a root in use is refused at once, naming the holder; once the first is
// closed, it starts.
func TestSecondServerOnARootIsRefused(t *testing.T) {
	root := t.TempDir()
	first, err := server.New(server.WithHost(host.WithRoot(root), host.WithSquadOptions(demoTeam)), server.WithAddr("127.0.0.1:8123"))
	require.NoError(t, err)
	_, err = server.New(server.WithHost(host.WithRoot(root), host.WithSquadOptions(demoTeam)))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "in use by process "+strconv.Itoa(os.Getpid()))
	assert.Contains(t, err.Error(), "127.0.0.1:8123")
	assert.Contains(t, err.Error(), "stop it, or use another root")
	require.NoError(t, first.Close())
	again, err := server.New(server.WithHost(host.WithRoot(root), host.WithSquadOptions(demoTeam)))
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
		c.await(id, host.StatusComplete)
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
	assert.Equal(t, host.StatusComplete, byID["good"].Status)
	assert.Equal(t, host.StatusComplete, byID["torn"].Status, byID["torn"].Error)
	for id, file := range map[string]string{"meta": "agent.json", "conv": "conversation.jsonl", "db": "state.db"} {
		assert.Equal(t, host.StatusDamaged, byID[id].Status, id)
		assert.Contains(t, byID[id].Error, agent(id, file), id)
		assert.Equal(t, byID[id], c.summary(id))
		msg := c.errorOf("POST", "/agents/"+id+"/send", map[string]string{"message": "hi"}, http.StatusConflict)
		assert.Contains(t, msg, "damaged")
	}
	require.Equal(t, http.StatusAccepted, c.do("POST", "/agents/good/runs", map[string]string{"goal": "more chips"}, nil))
	c.await("good", host.StatusComplete)
	require.Equal(t, http.StatusAccepted, c.do("POST", "/agents/torn/runs", map[string]string{"goal": "more chips"}, nil), "a torn line is no damage")
	c.await("torn", host.StatusComplete)
	require.Equal(t, http.StatusOK, c.do("DELETE", "/agents/db", nil, nil))
	assert.Equal(t, http.StatusNotFound, c.do("GET", "/agents/db", nil, nil))
}

// A run whose nodes/ folder was removed while it was paused is not taken up as a run with no
// work, waiting for ever: its resume fails, and the agent says why.
func TestRunWithoutItsNodesFails(t *testing.T) {
	root := t.TempDir()
	sum := interrupted(t, root, "a", "chips")
	require.NoError(t, os.RemoveAll(filepath.Join(root, "agents", "a", "runs", sum.Run, "nodes")))
	c := start(t, root, demoTeam)
	failed := c.await("a", host.StatusFailed)
	assert.Contains(t, failed.Error, "damaged")
	assert.Contains(t, failed.Error, filepath.Join(root, "agents", "a", "runs", sum.Run, "nodes"))
	require.Equal(t, http.StatusAccepted, c.do("POST", "/agents/a/resume", nil, nil))
	assert.Contains(t, c.await("a", host.StatusFailed).Error, "damaged", "resumed again, it fails again")
}

// listed returns the agents GET /agents lists, by id.
func (c *api) listed() map[string]host.Summary {
	c.t.Helper()
	var list struct{ Agents []host.Summary }
	require.Equal(c.t, http.StatusOK, c.do("GET", "/agents", nil, &list))
	byID := map[string]host.Summary{}
	for _, a := range list.Agents {
		byID[a.ID] = a
	}
	return byID
}
