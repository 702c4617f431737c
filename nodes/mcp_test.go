package nodes_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/nodes"
	"github.com/agiraph/agiraph/nodes/eventlog"
	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/providers/scripted"
	"github.com/agiraph/agiraph/tools/mcp"
	"github.com/agiraph/agiraph/tools/mcp/mcptest"
)

// The coordinator gives a worker an MCP server the run offers, by name, in spawn_worker; the
// worker's model calls the server's tool and publishes what it said. A server the run does not
// offer is refused, naming those it does.
func TestWorkerGetsMCPServerFromSpawnWorker(t *testing.T) {
	var refusal string
	coord := scripted.NewFunc("mcp-coordinator", func(_ context.Context, req providers.Request) (scripted.Turn, error) {
		text, results := scripted.Last(req)
		switch {
		case len(req.Messages) == 1:
			return scTurn(req, scripted.Call("spawn_worker", map[string]any{"name": "Quinn", "mcp_servers": []string{"nowhere"}})), nil
		case len(results) == 1 && results[0].Name == "spawn_worker" && results[0].IsError:
			refusal = results[0].Content
			return scTurn(req,
				scripted.Call("spawn_worker", map[string]any{"name": "Kim", "mcp_servers": []string{"facts"}}),
				scripted.Call("create_work_node", map[string]any{"task": "Look up the fact about towels, then publish it.", "worker": "Kim"})), nil
		case strings.Contains(text, "Stage 1 is complete"):
			return scTurn(req, scripted.Call("finish", map[string]string{"output": "done"})), nil
		}
		return scTurn(req, scripted.Call("wait", map[string]string{})), nil
	})
	worker := scripted.NewFunc("mcp-worker", func(_ context.Context, req providers.Request) (scripted.Turn, error) {
		if _, results := scripted.Last(req); len(results) == 1 && results[0].Name == "facts__lookup" {
			return scTurn(req, scripted.Call("publish", map[string]string{"summary": results[0].Content})), nil
		}
		return scTurn(req, scripted.Call("facts__lookup", mcptest.LookupArgs{Key: "towels"})), nil
	})
	s := scSquad(t, coord, []providers.Model{worker}, nodes.WithMCPServers(mcp.Server{Name: "facts", URL: mcptest.NewFacts(t).URL}))
	res := scRun(t, s, "Find the fact.")
	require.True(t, res.Finished)
	assert.Contains(t, refusal, `no MCP server "nowhere"`)
	assert.Contains(t, refusal, "facts")
	var summary string
	for _, n := range res.Board.Nodes {
		if n.Worker == "kim" {
			summary = n.Summary
		}
	}
	assert.Equal(t, "the fact about towels is 42", summary)
}

// The coordinator given MCP servers by WithCoordinatorMCP calls their tools itself, and their
// sessions end when the run returns; a server that cannot be reached fails the run, naming it.
func TestCoordinatorGetsMCPServers(t *testing.T) {
	coord := scripted.NewFunc("mcp-coordinator", func(_ context.Context, req providers.Request) (scripted.Turn, error) {
		if _, results := scripted.Last(req); len(results) == 1 && results[0].Name == "facts__lookup" {
			return scTurn(req, scripted.Call("finish", map[string]string{"output": results[0].Content})), nil
		}
		return scTurn(req, scripted.Call("facts__lookup", mcptest.LookupArgs{Key: "towels"})), nil
	})
	facts := mcptest.NewFacts(t)
	s := scSquad(t, coord, []providers.Model{scripted.New("unused")}, nodes.WithCoordinatorMCP(mcp.Server{Name: "facts", URL: facts.URL}))
	res := scRun(t, s, "Find the fact.")
	require.True(t, res.Finished)
	assert.Equal(t, "the fact about towels is 42", res.Output)
	assert.Zero(t, facts.Open(), "the coordinator's MCP session is closed when the run returns")

	t.Run("unreachable", func(t *testing.T) {
		dead := httptest.NewServer(http.NotFoundHandler())
		dead.Close()
		s := scSquad(t, coord, []providers.Model{scripted.New("unused")}, nodes.WithCoordinatorMCP(mcp.Server{Name: "gone", URL: dead.URL}))
		ctx, cancel := context.WithTimeout(context.Background(), scTimeout)
		defer cancel()
		_, err := s.Run(ctx, "Find the fact.")
		require.Error(t, err)
		assert.Contains(t, err.Error(), `"gone"`)
		evs, err := s.Events(0, 0)
		require.NoError(t, err)
		require.NotEmpty(t, evs)
		last := evs[len(evs)-1]
		assert.Equal(t, eventlog.AgentFailed, last.Type, "the failure is an event")
		assert.Contains(t, last.Text, `"gone"`)
	})
}
