package langchain_test

import (
	"testing"

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
