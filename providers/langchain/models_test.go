package langchain_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/models"
	"github.com/agiraph/agiraph/providers"
	_ "github.com/agiraph/agiraph/providers/langchain" // serves openai/, openrouter/, ollama/ and gemini/ names
	"github.com/agiraph/agiraph/providers/providertest"
)

func TestByName(t *testing.T) {
	for provider, keyEnv := range map[string][]string{
		"openai": {"OPENAI_API_KEY"}, "openrouter": {"OPENROUTER_API_KEY"},
		"ollama": nil, "gemini": {"GEMINI_API_KEY", "GOOGLE_API_KEY"},
	} {
		t.Run(provider, func(t *testing.T) { providertest.ByName(t, provider, providertest.NewOpenAI, keyEnv...) })
	}
}

// A chain across providers: OpenAI fails with a lasting server error, and Ollama, another
// server, answers.
func TestFallbackAcrossProviders(t *testing.T) {
	openai := providertest.NewOpenAI(t, providertest.Reply{Err: providers.ErrServer})
	ollama := providertest.NewOpenAI(t, providertest.Reply{Text: "from ollama"})
	t.Setenv("OPENAI_API_KEY", "k")
	t.Setenv("OPENAI_BASE_URL", openai.URL())
	t.Setenv("OLLAMA_HOST", ollama.URL())
	m, err := models.New("openai/gpt-4o, ollama/qwen2.5", models.WithoutRetry())
	require.NoError(t, err)
	resp, err := m.Generate(context.Background(), providers.Request{Messages: []providers.Message{providers.UserText("hi")}})
	require.NoError(t, err)
	assert.Equal(t, "from ollama", resp.Message.Text())
	assert.Equal(t, "ollama/qwen2.5", resp.Model)
	assert.Len(t, openai.Requests(), 1)
	assert.Len(t, ollama.Requests(), 1)
}
