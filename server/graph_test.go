package server_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/checkpoint"
	"github.com/agiraph/agiraph/graph"
	"github.com/agiraph/agiraph/server"
	"github.com/agiraph/agiraph/server/a2a"
	"github.com/agiraph/agiraph/server/host"
)

// echo is the state of an echoing graph.
type echo struct{ Text string }

func echoGraph(t *testing.T, name string) a2a.Graph[echo] {
	g := graph.New[echo]()
	g.AddNode("echo", func(_ context.Context, s echo) (echo, error) { return echo{Text: "echo: " + s.Text}, nil })
	g.AddEdge(graph.START, "echo")
	g.AddEdge("echo", graph.END)
	saver := checkpoint.NewMemory()
	c, err := g.Compile(graph.WithCheckpointer(saver))
	require.NoError(t, err)
	return a2a.Graph[echo]{Name: name, Graph: c, Saver: saver,
		In: func(text string) echo { return echo{Text: text} }, Out: func(s echo) string { return s.Text }}
}

// A graph of WithGraph is an assistant of the LangGraph API and an agent over A2A, behind the
// token, beside the server's own agents.
func TestWithGraph(t *testing.T) {
	c := start(t, t.TempDir(), nil, server.WithGraph(echoGraph(t, "echo")), server.WithA2AAgent("echo"))

	var card a2a.AgentCard
	require.Equal(t, http.StatusOK, c.do("GET", "/.well-known/agent-card.json", nil, &card))
	assert.Equal(t, "echo", card.Name)
	require.Equal(t, http.StatusOK, c.do("GET", "/a2a/echo/.well-known/agent-card.json", nil, &card))

	var task struct {
		Result a2a.Task `json:"result"`
	}
	send := map[string]any{"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": map[string]any{
		"message": map[string]any{"kind": "message", "messageId": "m1", "role": "user", "parts": []any{map[string]any{"kind": "text", "text": "hi"}}}}}
	require.Equal(t, http.StatusOK, c.do("POST", "/a2a/echo/", send, &task))
	assert.Equal(t, a2a.StateCompleted, task.Result.Status.State)
	require.Len(t, task.Result.Artifacts, 1)
	assert.Equal(t, "echo: hi", task.Result.Artifacts[0].Parts[0].Text)

	var out map[string]any
	require.Equal(t, http.StatusOK, c.do("POST", "/langgraph/runs/wait", map[string]any{"assistant_id": "echo", "input": map[string]any{"Text": "yo"}}, &out))
	assert.Equal(t, "echo: yo", out["Text"])

	// The server's agents are still served, over both protocols.
	var assistants []map[string]any
	require.Equal(t, http.StatusOK, c.do("POST", "/langgraph/assistants/search", map[string]any{}, &assistants))
	var ids []any
	for _, a := range assistants {
		ids = append(ids, a["graph_id"])
	}
	assert.ElementsMatch(t, []any{"echo", server.SquadAssistant}, ids)

	// Without the token, nothing but the card.
	req, err := http.NewRequest("POST", c.ts.URL+"/a2a/echo/", nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
}

func TestWithGraphNamedTwice(t *testing.T) {
	_, err := server.New(server.WithHost(host.WithRoot(t.TempDir())),
		server.WithGraph(echoGraph(t, "echo")), server.WithGraph(echoGraph(t, "echo")))
	require.ErrorContains(t, err, `graph "echo"`)
	require.ErrorContains(t, err, "registered already")
}
