package models_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/models"
	"github.com/agiraph/agiraph/providers"
)

// An embedder of one's own is served under its name; a name no provider serves is an error of
// its kind, and registering a name twice panics.
func TestNewEmbedder(t *testing.T) {
	mine := providers.EmbedFunc{Model: "mine/words", Fn: func(_ context.Context, texts []string) ([][]float32, error) {
		out := make([][]float32, len(texts))
		for i, s := range texts {
			out[i] = []float32{float32(len(s))}
		}
		return out, nil
	}}
	e, err := models.NewEmbedder("mine/words", models.WithEmbedders(mine))
	require.NoError(t, err)
	vecs, err := e.Embed(context.Background(), []string{"ab", "abc"})
	require.NoError(t, err)
	assert.Equal(t, [][]float32{{2}, {3}}, vecs)

	_, err = models.NewEmbedder("nosuch/model")
	require.ErrorIs(t, err, providers.ErrUnknownModel)
	assert.Contains(t, err.Error(), `no provider "nosuch" serves embeddings`)
	_, err = models.NewEmbedder("no-slash")
	require.ErrorIs(t, err, providers.ErrUnknownModel)

	// Registering changes what every test sees: a name of its own each time (-count).
	name := fmt.Sprintf("embtest%d", registrations.Add(1))
	provide := func(string, models.Settings) (providers.Embedder, error) { return mine, nil }
	models.RegisterEmbedder(name, provide)
	assert.Panics(t, func() { models.RegisterEmbedder(name, provide) })
	e, err = models.NewEmbedder(name + "/x")
	require.NoError(t, err)
	assert.Equal(t, "mine/words", e.Name())
}
