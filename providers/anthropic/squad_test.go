package anthropic_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/models"
	"github.com/agiraph/agiraph/nodes"
	"github.com/agiraph/agiraph/providers/providertest"
)

// A whole squad over the Messages API: the coordinator and the worker are anthropic/* models of
// models.New, talking real HTTP to a fake server that speaks the API's wire format (tool_use and
// tool_result blocks, usage).
func TestSquadOverTheWire(t *testing.T) {
	srv := providertest.NewAnthropicFunc(t, providertest.SquadScript)
	s, err := nodes.New(nodes.WithHome(t.TempDir()), nodes.WithModel("anthropic/claude-sonnet-4-5"),
		nodes.WithModelOptions(models.WithAPIKey("test-key"), models.WithBaseURL(srv.URL())), nodes.WithTick(20*time.Millisecond))
	require.NoError(t, err)
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := s.Run(ctx, "Say hello in a file.")
	require.NoError(t, err)
	assert.Equal(t, "hello.md is published", res.Output)
	n1, _ := res.Board.Node("n1")
	assert.Equal(t, nodes.NodeCompleted, n1.Status)
	assert.Len(t, n1.Published, 1)
	assert.Positive(t, res.Usage.InputTokens)
	assert.Positive(t, res.Usage.CostUSD, "a cost from the priced model")
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
