package langchain_test

import (
	"testing"

	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/providers/providertest"
)

// Each service asks for structured output with response_format (json_schema), which OpenAI,
// OpenRouter, Ollama and Gemini's OpenAI-compatible endpoint take.
func TestStructuredOutput(t *testing.T) {
	for _, svc := range []struct{ provider, model string }{
		{"openai", "gpt-4o"}, {"openrouter", "openai/gpt-4o"}, {"ollama", "llama3.2"}, {"gemini", "gemini-2.5-flash"},
	} {
		t.Run(svc.provider, func(t *testing.T) {
			providertest.TestStructuredOutput(t, providertest.NewOpenAI, func(t *testing.T, s *providertest.Server) providers.Model {
				return service(t, s, svc.provider, svc.model)
			})
		})
	}
}
