package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/models"
	"github.com/agiraph/agiraph/nodes"
	"github.com/agiraph/agiraph/nodes/demo"
	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/providers/scripted"
	"github.com/agiraph/agiraph/server/host"
	"github.com/agiraph/agiraph/tools"
)

// mcpSession connects an MCP client, the go-sdk's, to the server's /mcp with hc.
func mcpSession(t *testing.T, c *api, hc *http.Client) (*mcp.ClientSession, error) {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	return client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: c.ts.URL + "/mcp", HTTPClient: hc, MaxRetries: -1}, nil)
}

// mcpCall calls a tool and returns its text and whether it is an error.
func mcpCall(t *testing.T, cs *mcp.ClientSession, name string, args any) (string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	require.NoError(t, err, name)
	require.Len(t, res.Content, 1, name)
	text, ok := res.Content[0].(*mcp.TextContent)
	require.True(t, ok, "%s answered %T", name, res.Content[0])
	return text.Text, res.IsError
}

// A person's own MCP client drives a squad through the server: it lists the tools, creates an
// agent, follows it to the end, reads its board, output and files, and gets the API's errors as
// tool errors. Without the token it gets nothing.
func TestSquadOverMCP(t *testing.T) {
	asking := scripted.NewFunc("mcp-asker", func(_ context.Context, req providers.Request) (scripted.Turn, error) {
		if _, results := scripted.Last(req); len(results) == 1 && results[0].Name == "ask_human" {
			return scripted.Turn{Calls: []tools.Call{scripted.Call("finish", map[string]string{"output": "Chose " + results[0].Content})}}, nil
		}
		return scripted.Turn{Calls: []tools.Call{scripted.Call("ask_human", map[string]string{"question": "Which market?"})}}, nil
	})
	team := func(id string) []nodes.Option {
		if !strings.HasPrefix(id, "asker") {
			return demoTeam(id)
		}
		return []nodes.Option{
			nodes.WithCoordinatorModel(asking.Name()), nodes.WithModel(demo.WorkerModel),
			nodes.WithModelOptions(models.WithModels(append(demo.Models(), asking)...), models.WithoutRetry()),
			nodes.WithTick(20 * time.Millisecond),
		}
	}
	c := start(t, t.TempDir(), team)
	_, err := mcpSession(t, c, http.DefaultClient)
	require.Error(t, err, "a client without the token connected")

	cs, err := mcpSession(t, c, c.ts.Client())
	require.NoError(t, err)
	defer cs.Close()
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	tools, err := cs.ListTools(ctx, nil)
	require.NoError(t, err)
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
		assert.NotEmpty(t, tool.Description, tool.Name)
		assert.NotNil(t, tool.InputSchema, tool.Name)
	}
	assert.Subset(t, names, []string{"list_agents", "create_agent", "get_agent", "start_run", "send_message", "answer_question",
		"stop_agent", "resume_agent", "set_budget", "get_board", "get_node", "retry_node", "skip_node", "read_file", "get_conversation", "get_events", "get_steps", "fork_run"})

	text, isErr := mcpCall(t, cs, "create_agent", map[string]any{"id": "picky", "goal": "x", "tools": []string{"teleport"}})
	assert.True(t, isErr)
	assert.Contains(t, text, `no tool \"teleport\"`)
	text, isErr = mcpCall(t, cs, "create_agent", map[string]any{"id": "careful", "goal": "x", "approvals": map[string]any{"tools": []string{"send_["}}})
	assert.True(t, isErr)
	assert.Contains(t, text, `pattern \"send_[\"`, "the policy reaches the API")
	text, isErr = mcpCall(t, cs, "create_agent", map[string]any{"id": "thrifty", "goal": "x", "budget": map[string]any{"usd": -1}})
	assert.True(t, isErr)
	assert.Contains(t, text, "budget", "the budget reaches the API")

	text, isErr = mcpCall(t, cs, "create_agent", map[string]any{"id": "tea", "goal": "the history of tea"})
	require.False(t, isErr, text)
	var sum host.Summary
	require.NoError(t, json.Unmarshal([]byte(text), &sum))
	assert.Equal(t, "tea", sum.ID)
	end := time.Now().Add(deadline)
	for sum.Status != host.StatusComplete {
		require.NotEqual(t, host.StatusFailed, sum.Status, sum.Error)
		require.False(t, time.Now().After(end), "the agent is %s", sum.Status)
		time.Sleep(20 * time.Millisecond)
		text, isErr = mcpCall(t, cs, "get_agent", map[string]any{"agent": "tea"})
		require.False(t, isErr, text)
		require.NoError(t, json.Unmarshal([]byte(text), &sum))
	}
	assert.Contains(t, sum.Output, "Findings")

	text, isErr = mcpCall(t, cs, "get_board", map[string]any{"agent": "tea"})
	require.False(t, isErr, text)
	var board struct{ Nodes []struct{ ID, Status string } }
	require.NoError(t, json.Unmarshal([]byte(text), &board))
	require.NotEmpty(t, board.Nodes)
	for _, n := range board.Nodes {
		assert.Equal(t, "completed", n.Status, n.ID)
	}
	text, isErr = mcpCall(t, cs, "read_file", map[string]any{"agent": "tea", "path": "nodes/n1/published/findings.md"})
	require.False(t, isErr, text)
	assert.Contains(t, text, "finding")
	text, isErr = mcpCall(t, cs, "get_events", map[string]any{"agent": "tea", "limit": 3})
	require.False(t, isErr, text)
	var evs struct{ Events []json.RawMessage }
	require.NoError(t, json.Unmarshal([]byte(text), &evs))
	assert.Len(t, evs.Events, 3)
	text, isErr = mcpCall(t, cs, "list_agents", map[string]any{})
	require.False(t, isErr, text)
	assert.Contains(t, text, `"tea"`)
	text, isErr = mcpCall(t, cs, "set_budget", map[string]any{"agent": "tea", "tokens": 1000})
	require.False(t, isErr, text)
	var set struct {
		Run    string
		Budget nodes.Budget
	}
	require.NoError(t, json.Unmarshal([]byte(text), &set))
	assert.Equal(t, nodes.Budget{Tokens: 1000}, set.Budget)
	assert.Equal(t, sum.Run, set.Run)

	// The API's refusals come back as tool errors, with its message.
	text, isErr = mcpCall(t, cs, "get_agent", map[string]any{"agent": "nobody"})
	assert.True(t, isErr)
	assert.Contains(t, text, "nobody")
	text, isErr = mcpCall(t, cs, "read_file", map[string]any{"agent": "tea", "path": "../../token"})
	assert.True(t, isErr, "a path outside the run's folder was read: %s", text)
	text, isErr = mcpCall(t, cs, "create_agent", map[string]any{"goal": ""})
	assert.True(t, isErr, text)
	text, isErr = mcpCall(t, cs, "send_message", map[string]any{"agent": "tea", "to": "*", "message": "and more"})
	assert.True(t, isErr, "a message to the workers of a finished run: %s", text)
	text, isErr = mcpCall(t, cs, "skip_node", map[string]any{"agent": "tea", "node": "n1", "note": "late"})
	assert.True(t, isErr, "a node of a finished run was skipped: %s", text)
	assert.Contains(t, text, "no run in progress")

	// A question, answered over MCP.
	text, isErr = mcpCall(t, cs, "create_agent", map[string]any{"id": "asker", "goal": "Study a market."})
	require.False(t, isErr, text)
	waiting := c.await("asker", host.StatusWaiting)
	assert.Equal(t, "Which market?", waiting.Question)
	text, isErr = mcpCall(t, cs, "answer_question", map[string]any{"agent": "asker", "response": "the European one"})
	require.False(t, isErr, text)
	asked := c.await("asker", host.StatusComplete)
	assert.Contains(t, asked.Output, "the European one")

	// Its steps, and a fork from the tick where the question was pending, with another answer.
	text, isErr = mcpCall(t, cs, "get_steps", map[string]any{"agent": "asker", "run": asked.Run})
	require.False(t, isErr, text)
	var steps struct{ Steps []struct{ Tick int } }
	require.NoError(t, json.Unmarshal([]byte(text), &steps))
	require.NotEmpty(t, steps.Steps)
	text, isErr = mcpCall(t, cs, "get_steps", map[string]any{"agent": "asker", "run": asked.Run, "tick": 1})
	require.False(t, isErr, text)
	assert.Contains(t, text, "Which market?")
	text, isErr = mcpCall(t, cs, "fork_run", map[string]any{"agent": "asker", "run": asked.Run, "tick": 1, "answer": "the Asian one"})
	require.False(t, isErr, text)
	forked := c.await("asker", host.StatusComplete)
	assert.NotEqual(t, asked.Run, forked.Run)
	assert.Contains(t, forked.Output, "the Asian one")
	// And into a new agent.
	text, isErr = mcpCall(t, cs, "fork_run", map[string]any{"agent": "asker", "run": asked.Run, "tick": 1, "answer": "the African one", "new_agent": "asker-2"})
	require.False(t, isErr, text)
	other := c.await("asker-2", host.StatusComplete)
	assert.Contains(t, other.Output, "the African one")
	assert.Equal(t, forked.Output, c.await("asker", host.StatusComplete).Output, "the agent forked changed")

	// A new run, started and followed over MCP.
	text, isErr = mcpCall(t, cs, "start_run", map[string]any{"agent": "tea", "goal": "the future of tea"})
	require.False(t, isErr, text)
	require.Equal(t, host.StatusComplete, c.await("tea", host.StatusComplete).Status)
}

// The MCP tools take what the HTTP API takes: a negative limit or after is the API's 400, as a
// tool error.
func TestMCPPagesAreChecked(t *testing.T) {
	c := start(t, t.TempDir(), demoTeam)
	require.Equal(t, http.StatusCreated, c.do("POST", "/agents", map[string]string{"id": "a", "goal": "chips"}, nil))
	c.await("a", host.StatusComplete)
	cs, err := mcpSession(t, c, c.ts.Client())
	require.NoError(t, err)
	defer cs.Close()
	for _, tool := range []string{"get_events", "get_conversation"} {
		for _, args := range []map[string]any{{"agent": "a", "limit": -1}, {"agent": "a", "after": -5}} {
			text, isErr := mcpCall(t, cs, tool, args)
			assert.True(t, isErr, "%s %v: %s", tool, args, text)
			assert.Contains(t, text, "want a whole number", tool)
		}
		text, isErr := mcpCall(t, cs, tool, map[string]any{"agent": "a", "limit": 1})
		assert.False(t, isErr, text)
	}
}
