package server_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/nodes"
	"github.com/agiraph/agiraph/server/host"
)

// The run's stages and its current stage are in the agent's summary and on its board: the demo
// team researches in stage 1, reconvenes, and writes the report in stage 2.
func TestStagesInTheAPI(t *testing.T) {
	c := start(t, t.TempDir(), demoTeam)
	require.Equal(t, http.StatusCreated, c.do("POST", "/agents", map[string]string{"id": "staged", "goal": "AI chips"}, nil))
	done := c.await("staged", host.StatusComplete)
	assert.Equal(t, 2, done.Stage)

	var board struct {
		Stage  int
		Stages []nodes.Stage
	}
	require.Equal(t, http.StatusOK, c.do("GET", "/agents/staged/board", nil, &board))
	assert.Equal(t, 2, board.Stage)
	assert.Equal(t, []nodes.Stage{
		{Number: 1, Status: nodes.StageCompleted, Nodes: []string{"n1", "n2", "n3"}},
		{Number: 2, Status: nodes.StageCompleted, Nodes: []string{"n4"}},
	}, board.Stages)

	// A server started again on the root reads the stage of the agent at rest from its record.
	require.NoError(t, c.srv.Close())
	c2 := start(t, c.root, demoTeam)
	assert.Equal(t, 2, c2.summary("staged").Stage)
}
