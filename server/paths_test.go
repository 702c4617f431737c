package server_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/nodes/eventlog"
	"github.com/agiraph/agiraph/server/host"
)

// No answer of the API holds a path of the server's files: a client sees agents, runs and the
// paths within an agent's folder, not where the server keeps them.
func TestNoServerPaths(t *testing.T) {
	c := start(t, t.TempDir(), demoTeam)
	require.Equal(t, http.StatusCreated, c.do("POST", "/agents", map[string]string{"id": "alpha", "goal": "AI chips"}, nil))
	done := c.await("alpha", host.StatusComplete)
	var evs struct{ Events []eventlog.Event }
	require.Equal(t, http.StatusOK, c.do("GET", "/agents/alpha/events?limit=1", nil, &evs))
	require.NotEmpty(t, evs.Events)
	assert.Equal(t, eventlog.Event{Seq: 1, Time: evs.Events[0].Time, Type: eventlog.AgentCreated, Text: "alpha"}, evs.Events[0],
		"the agent is created under its name")

	for _, path := range []string{
		"/agents", "/agents/alpha", "/agents/alpha/events?limit=100000", "/agents/alpha/conversation",
		"/agents/alpha/board", "/agents/alpha/board/n1", "/agents/alpha/workers",
		"/agents/alpha/workspace", "/agents/alpha/workspace/nodes/n1", "/agents/alpha/workspace/_output.md",
		"/agents/alpha/memory", "/models",
		"/agents/alpha/workspace?run=" + done.Run,
	} {
		resp, err := c.ts.Client().Get(c.ts.URL + path)
		require.NoError(t, err)
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.NoError(t, err)
		assert.Equal(t, http.StatusOK, resp.StatusCode, "GET %s: %s", path, body)
		assert.False(t, strings.Contains(string(body), c.root), "GET %s holds the server's root %s:\n%s", path, c.root, body)
	}
}
