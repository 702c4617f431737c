package server_test

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/nodes/replay"
	"github.com/agiraph/agiraph/server"
	"github.com/agiraph/agiraph/server/host"
)

// cassette downloads the cassette of the agent's run into a file, and loads it.
func (c *api) cassette(id, run string) (string, *replay.Cassette) {
	c.t.Helper()
	resp, err := c.ts.Client().Get(c.ts.URL + "/agents/" + id + "/runs/" + run + "/cassette")
	require.NoError(c.t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(c.t, err)
	require.Equal(c.t, http.StatusOK, resp.StatusCode, string(body))
	path := filepath.Join(c.t.TempDir(), run+".cassette")
	require.NoError(c.t, os.WriteFile(path, body, 0o644))
	cas, err := replay.Load(path)
	require.NoError(c.t, err)
	return path, cas
}

// A run started with "record" is recorded into a cassette, which GET …/runs/{run}/cassette
// downloads once the run has ended; a run started without it is not recorded.
func TestRecordARun(t *testing.T) {
	c := start(t, t.TempDir(), goalTeam)
	require.Equal(t, http.StatusCreated, c.do("POST", "/agents", map[string]string{"id": "rec", "goal": "zero"}, nil))
	zero := c.await("rec", host.StatusComplete).Run
	var started host.Summary
	require.Equal(t, http.StatusAccepted, c.do("POST", "/agents/rec/runs", map[string]any{"goal": "first", "record": true}, &started))
	first := c.await("rec", host.StatusComplete).Run
	require.Equal(t, started.Run, first)
	_, cas := c.cassette("rec", first)
	assert.Equal(t, "first", cas.Header.Run.Goal)
	assert.Equal(t, "done: first", cas.Facts.Output)
	assert.Equal(t, "{home}", cas.Header.Run.Home)

	require.Equal(t, http.StatusAccepted, c.do("POST", "/agents/rec/runs", map[string]any{"goal": "second"}, nil))
	second := c.await("rec", host.StatusComplete).Run
	assert.Contains(t, c.errorOf("GET", "/agents/rec/runs/"+second+"/cassette", nil, http.StatusNotFound),
		`agent "rec" has no recording of a run "`+second+`"`)
	assert.Equal(t, http.StatusNotFound, c.do("GET", "/agents/rec/runs/"+zero+"/cassette", nil, nil))
	assert.Equal(t, http.StatusNotFound, c.do("GET", "/agents/rec/runs/..%2Fx/cassette", nil, nil))
}

// Under host.WithRecordRuns every new run is recorded, the one that creates the agent too;
// the agent's first run replays offline.
func TestRecordEveryRun(t *testing.T) {
	c := start(t, t.TempDir(), goalTeam, server.WithHost(host.WithRecordRuns()))
	require.Equal(t, http.StatusCreated, c.do("POST", "/agents", map[string]string{"id": "all", "goal": "one"}, nil))
	one := c.await("all", host.StatusComplete).Run
	require.Equal(t, http.StatusAccepted, c.do("POST", "/agents/all/runs", map[string]any{"goal": "two"}, nil))
	two := c.await("all", host.StatusComplete).Run
	path, cas := c.cassette("all", one)
	assert.Equal(t, "done: one", cas.Facts.Output)
	_, cas = c.cassette("all", two)
	assert.Equal(t, "done: two", cas.Facts.Output)
	assert.Equal(t, "done: one", replay.Run(t, path, goalTeam("")...).Output)
}
