package anthropic_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/nodes"
	"github.com/agiraph/agiraph/nodes/nodestest"
	"github.com/agiraph/agiraph/providers/providertest"
)

// A whole squad over the Messages API: the coordinator and the worker are anthropic/* models of
// models.New, talking real HTTP to a fake server that speaks the API's wire format (tool_use and
// tool_result blocks, usage).
func TestSquadOverTheWire(t *testing.T) {
	srv := providertest.NewAnthropicFunc(t, providertest.SquadScript)
	nodestest.OverTheWire(t, "anthropic/claude-sonnet-4-5", srv.URL())
	for _, r := range srv.Requests() {
		assert.Equal(t, "test-key", r.Header.Get("x-api-key"), "request %d", r.Index)
		assert.Equal(t, "claude-sonnet-4-5", r.Model, "request %d", r.Index)
		assert.Contains(t, r.JSON, "tools", "request %d", r.Index)
	}
}

// Without a key, a squad of anthropic/* models is refused at once, naming what to set.
func TestSquadWithoutAKey(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "")
	_, err := nodes.New(nodes.WithHome(t.TempDir()), nodes.WithModel("anthropic/claude-sonnet-4-5"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "ANTHROPIC_API_KEY")
}
