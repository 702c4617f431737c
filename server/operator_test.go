package server_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/nodes"
	"github.com/agiraph/agiraph/nodes/eventlog"
	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/providers/scripted"
	"github.com/agiraph/agiraph/server/host"
)

// twoStepTeam is a team of n1 and n2 after it, whose worker's model fails on n1 until fixed is
// set.
func twoStepTeam(fixed *atomic.Bool) func(string) []nodes.Option {
	plan := []map[string]any{{"task": "First."}, {"task": "Second.", "deps": []string{"n1"}}}
	return stageTeam(plan, func(_ context.Context, req providers.Request) (scripted.Turn, error) {
		if strings.Contains(req.Messages[0].Text(), "First.") && !fixed.Load() {
			return scripted.Turn{}, errors.New("the model is down")
		}
		return turn(req, scripted.Call("publish", map[string]string{"summary": "done"})), nil
	}, nodes.WithMaxAttempts(1))
}

// awaitNode polls the agent's board until node id has status want.
func (c *api) awaitNode(agent, id string, want nodes.NodeStatus) {
	c.t.Helper()
	end := time.Now().Add(deadline)
	for {
		var board struct{ Nodes []nodes.Node }
		c.do("GET", "/agents/"+agent+"/board", nil, &board)
		for _, n := range board.Nodes {
			if n.ID == id && n.Status == want {
				return
			}
		}
		if time.Now().After(end) {
			c.dump(agent)
			c.t.Fatalf("node %s of %s is not %s: %+v", id, agent, want, board.Nodes)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// An operator retries a failed node, or skips it, through the API: the run goes on, and the
// events say what the human did. A node that cannot be retried so, or is not on the board, is
// refused.
func TestOperatorRetryAndSkip(t *testing.T) {
	var fixed atomic.Bool
	c := start(t, t.TempDir(), twoStepTeam(&fixed))

	require.Equal(t, http.StatusCreated, c.do("POST", "/agents", map[string]string{"id": "retried", "goal": "Two steps."}, nil))
	c.awaitNode("retried", "n1", nodes.NodeFailed)
	assert.Contains(t, c.errorOf("POST", "/agents/retried/board/n2/retry", nil, http.StatusConflict), "node n2 is pending")
	assert.Contains(t, c.errorOf("POST", "/agents/retried/board/n9/retry", nil, http.StatusNotFound), `"n9"`)
	fixed.Store(true)
	var got struct{ Node nodes.Node }
	require.Equal(t, http.StatusOK, c.do("POST", "/agents/retried/board/n1/retry", nil, &got))
	assert.Equal(t, nodes.NodePending, got.Node.Status)
	c.await("retried", host.StatusComplete)
	c.awaitNode("retried", "n2", nodes.NodeCompleted)
	assert.Contains(t, types(c.events("retried")), eventlog.NodeRetried)

	fixed.Store(false)
	require.Equal(t, http.StatusCreated, c.do("POST", "/agents", map[string]string{"id": "skipped", "goal": "Two steps."}, nil))
	c.awaitNode("skipped", "n1", nodes.NodeFailed)
	require.Equal(t, http.StatusOK, c.do("POST", "/agents/skipped/board/n1/skip", map[string]string{"note": "not needed"}, &got))
	assert.Equal(t, nodes.NodeSkipped, got.Node.Status)
	c.await("skipped", host.StatusComplete)
	c.awaitNode("skipped", "n2", nodes.NodeCompleted)
	evs := c.events("skipped")
	require.Contains(t, types(evs), eventlog.NodeSkipped)
	for _, e := range evs {
		if e.Type == eventlog.NodeSkipped {
			assert.Equal(t, "n1", e.Node)
			assert.Equal(t, "not needed", e.Text)
		}
	}
	// The run has ended: nothing to skip.
	assert.Contains(t, c.errorOf("POST", "/agents/skipped/board/n2/skip", nil, http.StatusConflict), "no run in progress")
}

func types(evs []eventlog.Event) []eventlog.Type {
	var ts []eventlog.Type
	for _, e := range evs {
		ts = append(ts, e.Type)
	}
	return ts
}
