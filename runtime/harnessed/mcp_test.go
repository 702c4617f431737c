package harnessed_test

import (
	"context"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/providers/scripted"
	"github.com/agiraph/agiraph/runtime"
	"github.com/agiraph/agiraph/runtime/adapter"
	"github.com/agiraph/agiraph/runtime/harnessed"
	"github.com/agiraph/agiraph/tools"
	"github.com/agiraph/agiraph/tools/mcp"
	"github.com/agiraph/agiraph/tools/mcp/mcptest"
)

func TestMCPToolsReachTheModel(t *testing.T) {
	kb := mcptest.NewFacts(t)
	a := assignment(t, "mcp1", "Find the fact about towels, then publish it.")
	model := scripted.NewFunc("w", func(_ context.Context, req providers.Request) (scripted.Turn, error) {
		if _, results := scripted.Last(req); len(results) > 0 && results[0].Name == "kb__lookup" {
			return scripted.Turn{Calls: []tools.Call{scripted.Call("publish", adapter.PublishArgs{Summary: results[0].Content})}}, nil
		}
		return scripted.Turn{Calls: []tools.Call{scripted.Call("kb__lookup", mcptest.LookupArgs{Key: "towels"})}}, nil
	}).KeepRequests()

	rt := harnessed.New(model, harnessed.WithMCP(mcp.Server{Name: "kb", URL: kb.URL}))
	o, err := rt.Run(context.Background(), a, nil)
	require.NoError(t, err)
	assert.Equal(t, runtime.Published, o.Status)
	assert.Equal(t, "the fact about towels is 42", o.Summary, "the model saw the MCP tool's result")

	specs := model.Requests()[0].Tools
	i := slices.IndexFunc(specs, func(s providers.ToolSpec) bool { return s.Name == "kb__lookup" })
	require.GreaterOrEqual(t, i, 0, "the MCP tool is offered to the model")
	assert.Equal(t, "Look a fact up.", specs[i].Description)
	assert.Contains(t, string(specs[i].Schema), `"key"`)
	assert.Equal(t, 1, kb.Closed(), "the session is closed when the run ends")

	again, err := rt.Run(context.Background(), a, nil)
	require.NoError(t, err)
	assert.Equal(t, o.Summary, again.Summary)
	assert.Equal(t, 1, kb.Closed(), "an assignment that ended is not run again, and connects to no server")
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
