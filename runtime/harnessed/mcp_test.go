package harnessed_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync/atomic"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/providers/scripted"
	"github.com/agiraph/agiraph/runtime"
	"github.com/agiraph/agiraph/runtime/harnessed"
	"github.com/agiraph/agiraph/tools"
	"github.com/agiraph/agiraph/tools/mcp"
)

// LookupArgs are the arguments of the knowledge-base server's lookup tool.
type LookupArgs struct {
	Key string `json:"key" jsonschema:"what to look up"`
}

// knowledgeBase serves an MCP server with one tool, lookup, over streamable HTTP, and counts
// the sessions closed (the DELETE a client sends when it closes one).
func knowledgeBase(t *testing.T) (url string, closed *atomic.Int32) {
	t.Helper()
	s := sdk.NewServer(&sdk.Implementation{Name: "kb", Version: "1"}, nil)
	sdk.AddTool(s, &sdk.Tool{Name: "lookup", Description: "Look a fact up."},
		func(_ context.Context, _ *sdk.CallToolRequest, a LookupArgs) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "the fact about " + a.Key + " is 42"}}}, nil, nil
		})
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil)
	closed = new(atomic.Int32)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodDelete {
			closed.Add(1)
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		srv.CloseClientConnections() // a session left open fails the test rather than hang it
		srv.Close()
	})
	return srv.URL, closed
}

func TestMCPToolsReachTheModel(t *testing.T) {
	url, closed := knowledgeBase(t)
	a := assignment(t, "mcp1", "Find the fact about towels, then publish it.")
	model := scripted.NewFunc("w", func(_ context.Context, req providers.Request) (scripted.Turn, error) {
		if _, results := scripted.Last(req); len(results) > 0 && results[0].Name == "kb__lookup" {
			return scripted.Turn{Calls: []tools.Call{scripted.Call("publish", runtime.PublishArgs{Summary: results[0].Content})}}, nil
		}
		return scripted.Turn{Calls: []tools.Call{scripted.Call("kb__lookup", LookupArgs{Key: "towels"})}}, nil
	}).KeepRequests()

	rt := harnessed.New(model, harnessed.WithMCP(mcp.Server{Name: "kb", URL: url}))
	o, err := rt.Run(context.Background(), a, nil)
	require.NoError(t, err)
	assert.Equal(t, runtime.Published, o.Status)
	assert.Equal(t, "the fact about towels is 42", o.Summary, "the model saw the MCP tool's result")

	specs := model.Requests()[0].Tools
	i := slices.IndexFunc(specs, func(s providers.ToolSpec) bool { return s.Name == "kb__lookup" })
	require.GreaterOrEqual(t, i, 0, "the MCP tool is offered to the model")
	assert.Equal(t, "Look a fact up.", specs[i].Description)
	assert.Contains(t, string(specs[i].Schema), `"key"`)
	assert.Equal(t, int32(1), closed.Load(), "the session is closed when the run ends")

	again, err := rt.Run(context.Background(), a, nil)
	require.NoError(t, err)
	assert.Equal(t, o.Summary, again.Summary)
	assert.Equal(t, int32(1), closed.Load(), "an assignment that ended is not run again, and connects to no server")
}

func TestMCPServerThatCannotConnectFailsTheRun(t *testing.T) {
	a := assignment(t, "mcp2", "Anything.")
	model := scripted.New("w").KeepRequests()
	o, err := harnessed.New(model, harnessed.WithMCP(mcp.Server{Name: "gone", Command: []string{"agiraph-no-such-mcp-server"}})).Run(context.Background(), a, nil)
	require.Error(t, err)
	assert.Equal(t, runtime.Failed, o.Status)
	assert.Contains(t, o.Summary, `mcp: server "gone"`)
	assert.Empty(t, model.Requests(), "the model is not asked")
}
