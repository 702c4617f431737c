package langchain_test

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

// A whole squad over Chat Completions (langchaingo's client behind the bridge): the coordinator
// and the worker are openai/* models of models.New, talking real HTTP to a fake server.
func TestSquadOverTheWire(t *testing.T) {
	srv := providertest.NewOpenAIFunc(t, providertest.SquadScript)
	s, err := nodes.New(nodes.WithHome(t.TempDir()), nodes.WithModel("openai/gpt-4o"),
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
		assert.Equal(t, "Bearer test-key", r.Header.Get("Authorization"), "request %d", r.Index)
		assert.Equal(t, "gpt-4o", r.Model, "request %d", r.Index)
	}
}
