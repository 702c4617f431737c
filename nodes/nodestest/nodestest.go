// Package nodestest runs squads for the tests of what a squad is built on: a provider's adapter
// over its wire, say. It imports the squad; nothing but tests should import it.
package nodestest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/models"
	"github.com/agiraph/agiraph/nodes"
)

// OverTheWire runs, as coordinator and worker, the model named model against a fake provider at
// baseURL that plays providertest.SquadScript, with the key "test-key". It checks what the
// script leads to — the output "hello.md is published", n1 completed with one published file,
// tokens counted and priced — and returns the run's result.
func OverTheWire(t *testing.T, model, baseURL string) nodes.Result {
	t.Helper()
	s, err := nodes.New(nodes.WithHome(t.TempDir()), nodes.WithModel(model),
		nodes.WithModelOptions(models.WithAPIKey("test-key"), models.WithBaseURL(baseURL)), nodes.WithTick(20*time.Millisecond))
	require.NoError(t, err)
	defer func() { assert.NoError(t, s.Close()) }()
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
	return res
}
