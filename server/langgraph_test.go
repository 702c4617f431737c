package server_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/graph"
	"github.com/agiraph/agiraph/nodes/store"
	"github.com/agiraph/agiraph/server"
	"github.com/agiraph/agiraph/server/host"
	"github.com/agiraph/agiraph/server/langgraphapi"
)

type greeting struct {
	Name  string   `json:"name,omitempty"`
	Lines []string `json:"lines,omitempty" graph:"append"`
}

// The LangGraph API is served under /langgraph behind the server's guard: without the token it
// answers 401; the token is taken as a bearer token or as X-Api-Key, which the LangGraph SDKs
// send their apiKey as; the server's agents are an assistant there, under its model policy; a
// cross-origin client of an allowed origin may send the key and read where a run streams.
func TestLangGraphAPIBehindTheGuard(t *testing.T) {
	st := store.NewMemory()
	lg := langgraphapi.New(st)
	b := graph.New[greeting]()
	b.AddNode("greet", func(_ context.Context, s greeting) (greeting, error) {
		return greeting{Lines: []string{"hello " + s.Name}}, nil
	})
	b.AddEdge(graph.START, "greet")
	b.AddEdge("greet", graph.END)
	g, err := b.Compile(graph.WithCheckpointer(st.Saver()))
	require.NoError(t, err)
	require.NoError(t, langgraphapi.Register(lg, "greeter", g, st.Saver()))

	srv, err := server.New(server.WithHost(host.WithRoot(t.TempDir())), server.WithLangGraph(lg),
		server.WithAllowedOrigins("https://chat.example"))
	require.NoError(t, err)
	ts := httptest.NewServer(srv)
	t.Cleanup(func() {
		ts.Close()
		assert.NoError(t, srv.Close())
		assert.NoError(t, lg.Close())
	})

	send := func(method, path, body string, header map[string]string) (int, http.Header, string) {
		t.Helper()
		req, err := http.NewRequest(method, ts.URL+path, strings.NewReader(body))
		require.NoError(t, err)
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		data, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, resp.Header, string(data)
	}

	status, _, _ := send("POST", "/langgraph/assistants/search", `{}`, nil)
	assert.Equal(t, http.StatusUnauthorized, status, "no token")
	status, _, _ = send("POST", "/langgraph/assistants/search", `{}`, map[string]string{"X-Api-Key": "wrong"})
	assert.Equal(t, http.StatusUnauthorized, status, "a wrong key")

	status, _, body := send("POST", "/langgraph/assistants/search", `{}`, map[string]string{"X-Api-Key": srv.Token()})
	require.Equal(t, http.StatusOK, status, body)
	var assistants []struct {
		GraphID string `json:"graph_id"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &assistants))
	var graphs []string
	for _, a := range assistants {
		graphs = append(graphs, a.GraphID)
	}
	assert.ElementsMatch(t, []string{"greeter", server.SquadAssistant}, graphs, "the registered graph, and the server's agents")

	// The server's model policy holds there too: by default a run names no model.
	status, _, body = send("POST", "/langgraph/runs/wait", `{"assistant_id":"squad","input":{"goal":"x"},"config":{"configurable":{"model":"anthropic/claude-opus-4"}}}`,
		map[string]string{"X-Api-Key": srv.Token()})
	assert.Equal(t, http.StatusUnprocessableEntity, status, body)

	status, _, body = send("POST", "/langgraph/runs/wait", `{"assistant_id":"greeter","input":{"name":"Ada"}}`,
		map[string]string{"Authorization": "Bearer " + srv.Token()})
	require.Equal(t, http.StatusOK, status, body)
	assert.JSONEq(t, `{"name":"Ada","lines":["hello Ada"]}`, body)

	status, header, _ := send("OPTIONS", "/langgraph/threads/t1", "", map[string]string{
		"Origin": "https://chat.example", "Access-Control-Request-Method": "PATCH",
		"Access-Control-Request-Headers": "x-api-key, content-type"})
	assert.Equal(t, http.StatusNoContent, status)
	assert.Contains(t, header.Get("Access-Control-Allow-Methods"), "PATCH")
	assert.Contains(t, header.Get("Access-Control-Allow-Headers"), "X-Api-Key")
	status, header, _ = send("POST", "/langgraph/assistants/search", `{}`, map[string]string{"Origin": "https://chat.example", "X-Api-Key": srv.Token()})
	assert.Equal(t, http.StatusOK, status)
	assert.Contains(t, header.Get("Access-Control-Expose-Headers"), "Content-Location")
}
