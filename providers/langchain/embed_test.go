package langchain_test

import (
	"context"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/models"
	"github.com/agiraph/agiraph/nodes/memory"
	"github.com/agiraph/agiraph/nodes/memory/index"
	"github.com/agiraph/agiraph/nodes/workspace"
	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/providers/providertest"
)

// embedAPIs are the services' embeddings APIs: the fake that speaks each, and where its
// requests go.
var embedAPIs = []struct {
	provider string
	start    func(providertest.T, ...providertest.Reply) *providertest.Server
	path     string
	keyEnv   []string
}{
	{"openai", providertest.NewOpenAI, "/v1/embeddings", []string{"OPENAI_API_KEY"}},
	{"openrouter", providertest.NewOpenAI, "/v1/embeddings", []string{"OPENROUTER_API_KEY"}},
	{"gemini", providertest.NewGemini, "/v1beta/models/some-embedder:batchEmbedContents", []string{"GEMINI_API_KEY", "GOOGLE_API_KEY"}},
	{"ollama", providertest.NewOllama, "/api/embed", nil},
}

// An embedder named "provider/model" calls the provider's embeddings API with the key and the
// texts, and returns the vectors in the texts' order.
func TestEmbedderByName(t *testing.T) {
	for _, api := range embedAPIs {
		t.Run(api.provider, func(t *testing.T) {
			srv := api.start(t, providertest.Reply{})
			e, err := models.NewEmbedder(api.provider+"/some-embedder", models.WithAPIKey("k"), models.WithBaseURL(srv.URL()))
			require.NoError(t, err)
			assert.Equal(t, api.provider+"/some-embedder", e.Name())
			texts := []string{"the car needs brakes", "a puppy on a leash"}
			vecs, err := e.Embed(context.Background(), texts)
			require.NoError(t, err)
			assert.Equal(t, [][]float32{providertest.Vector(texts[0]), providertest.Vector(texts[1])}, vecs)

			req := srv.Requests()[0]
			assert.Equal(t, api.path, req.Path)
			assert.Equal(t, texts, req.Inputs())
			if api.keyEnv != nil {
				key := req.Header.Get("X-Goog-Api-Key")
				if key == "" {
					key = strings.TrimPrefix(req.Header.Get("Authorization"), "Bearer ")
				}
				assert.Equal(t, "k", key, "the key on the wire")
			}
		})
	}
}

// A failed call is a *providers.Error of the kind the chat models' would be, naming the
// provider's model, with the status, the provider's message and its wait.
func TestEmbedderErrors(t *testing.T) {
	for _, api := range embedAPIs {
		t.Run(api.provider, func(t *testing.T) {
			for _, tc := range []struct {
				reply providertest.Reply
				kind  error
			}{
				{providertest.Reply{Err: providers.ErrRateLimit, RetryAfter: 7 * time.Second}, providers.ErrRateLimit},
				{providertest.Reply{Err: providers.ErrServer}, providers.ErrServer},
				{providertest.Reply{Err: providers.ErrAuth}, providers.ErrAuth},
				{providertest.Reply{Err: providers.ErrBadRequest}, providers.ErrBadRequest},
			} {
				srv := api.start(t, tc.reply)
				e, err := models.NewEmbedder(api.provider+"/some-embedder", models.WithAPIKey("k"), models.WithBaseURL(srv.URL()))
				require.NoError(t, err)
				_, err = e.Embed(context.Background(), []string{"hello"})
				require.ErrorIs(t, err, tc.kind)
				var pe *providers.Error
				require.ErrorAs(t, err, &pe)
				assert.True(t, strings.HasPrefix(err.Error(), api.provider+"/some-embedder: "), "error %q names the model", err)
				assert.GreaterOrEqual(t, pe.Status, 400)
				assert.NotEmpty(t, pe.Message)
				if tc.reply.RetryAfter > 0 && api.provider != "ollama" { // Ollama sends no wait
					assert.Equal(t, tc.reply.RetryAfter, pe.RetryAfter)
				}
			}
		})
	}
}

// Without a key, the error names the provider's key variable and models.WithAPIKey; a provider
// that serves no embeddings is an error naming it.
func TestEmbedderNames(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	_, err := models.NewEmbedder("openai/text-embedding-3-small")
	require.ErrorIs(t, err, providers.ErrMissingKey)
	assert.Contains(t, err.Error(), "set OPENAI_API_KEY or pass models.WithAPIKey")

	_, err = models.NewEmbedder("anthropic/claude-sonnet-4-5")
	require.ErrorIs(t, err, providers.ErrUnknownModel)
	assert.Contains(t, err.Error(), `provider "anthropic" serves no embeddings`)
}

// Memory search with an embedder of a provider: a section is found by meaning through the
// provider's API, and when the API fails the search is ranked by full text and says so.
func TestMemorySearchWithEmbedder(t *testing.T) {
	meaning := providertest.Concepts([]string{"car", "automobile", "brakes"}, []string{"puppy", "dog", "leash"})
	var fail atomic.Bool
	srv := providertest.NewOpenAIFunc(t, func(providertest.Request) providertest.Reply {
		if fail.Load() {
			return providertest.Reply{Err: providers.ErrServer}
		}
		return providertest.Reply{Vectors: meaning}
	})
	e, err := models.NewEmbedder("openai/text-embedding-3-small", models.WithAPIKey("k"), models.WithBaseURL(srv.URL()))
	require.NoError(t, err)
	home := workspace.Home(filepath.Join(t.TempDir(), "agent"))
	ix, err := index.Open(home, index.WithEmbedder(e))
	require.NoError(t, err)
	defer ix.Close()
	mem, err := memory.Open(home, memory.WithBudget(150), memory.WithIndex(ix))
	require.NoError(t, err)
	require.NoError(t, mem.Write("me", "knowledge/garage.md", "## Garage\n\nThe car needs new brakes before winter.\n", false))
	require.NoError(t, mem.Write("me", "knowledge/pets.md", "## Pets\n\nThe puppy walks on a short leash.\n", false))

	found, err := mem.Search("automobile", 1)
	require.NoError(t, err)
	assert.Contains(t, found, "meaning (openai/text-embedding-3-small)")
	assert.Contains(t, found, "## Garage")

	fail.Store(true)
	found, err = mem.Search("automobile", 1)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(found, `no memory matches "automobile"`), found)
	assert.Contains(t, found, "since the embedder failed")
	found, err = mem.Search("walks", 1)
	require.NoError(t, err)
	assert.Contains(t, found, "## Pets")
	assert.Contains(t, found, "Ranked by full text only, since the embedder failed: openai/text-embedding-3-small: server error (HTTP 500)")
}
