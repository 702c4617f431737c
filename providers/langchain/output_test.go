package langchain_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms/openai"

	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/providers/langchain"
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

// A langchaingo model given to New, whose API is unknown, is told the schema in its system
// prompt; nothing else in the request asks for structured output.
func TestStructuredOutputThroughThePrompt(t *testing.T) {
	s := providertest.NewOpenAI(t, providertest.Reply{Text: `{"ok": true}`})
	llm, err := openai.New(openai.WithToken("sk-test"), openai.WithBaseURL(s.URL()), openai.WithModel("gpt-4o"))
	require.NoError(t, err)
	type answer struct {
		OK bool `json:"ok"`
	}
	got, _, err := providers.Generate[answer](context.Background(), langchain.New("custom/gpt-4o", llm), providers.Request{
		Messages: []providers.Message{providers.UserText("OK?")},
	})
	require.NoError(t, err)
	assert.True(t, got.OK)
	r := s.Requests()[0]
	assert.Nil(t, r.Format())
	assert.NotContains(t, r.JSON, "response_format")
	assert.Equal(t, "system", r.Messages()[0]["role"])
	assert.Contains(t, r.Messages()[0]["content"], `Answer with only a JSON object, the answer, matching this JSON Schema`)
}
