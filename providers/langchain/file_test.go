package langchain_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/providers/providertest"
	"github.com/agiraph/agiraph/tools"
)

// Images go as image_url parts (data URLs, or URLs) and PDFs as file parts with their name, in
// the user message after the tool results, as Chat Completions takes them.
func TestFilesSentAsParts(t *testing.T) {
	s := providertest.NewOpenAI(t, providertest.Reply{Text: "A grey square and a blank page."})
	m := service(t, s, "openai", "gpt-4o")
	call := tools.Call{ID: "call_1", Name: "view_file", Args: []byte(`{"path":"square.png"}`)}
	resp, err := m.Generate(context.Background(), providers.Request{Messages: []providers.Message{
		providers.UserText("Look at the square."),
		{Role: providers.Assistant, Parts: []providers.Part{{Type: providers.ToolCallPart, ToolCall: &call}}},
		{Role: providers.User, Parts: []providers.Part{
			{Type: providers.ToolResultPart, ToolResult: &tools.Result{CallID: "call_1", Name: "view_file", Content: "Attached square.png."}},
			providers.FileData("image/png", "square.png", providertest.PNG),
			providers.FileData(providers.PDF, "page.pdf", providertest.PDF),
			providers.FileURL("image/webp", "https://example.com/photo.webp"),
		}},
	}})
	require.NoError(t, err)
	assert.Equal(t, "A grey square and a blank page.", resp.Message.Text())

	reqs := s.Requests()
	require.Len(t, reqs, 1)
	assert.Equal(t, []providertest.File{
		{MediaType: "image/png", Data: providertest.PNG},
		{MediaType: "application/pdf", Name: "page.pdf", Data: providertest.PDF},
		{URL: "https://example.com/photo.webp"},
	}, reqs[0].Files())
	msgs := reqs[0].Messages()
	require.Len(t, msgs, 4)
	assert.Equal(t, []any{"user", "assistant", "tool", "user"}, []any{msgs[0]["role"], msgs[1]["role"], msgs[2]["role"], msgs[3]["role"]})
}

// A service refuses, before any request, a file its models cannot take, naming the model and
// the file: Ollama takes no PDFs, Gemini's OpenAI-compatible endpoint no image URLs.
func TestFilesRefusedByService(t *testing.T) {
	cases := []struct {
		provider, model string
		file            providers.Part
		wants           []string
	}{
		{"ollama", "llava", providers.FileData(providers.PDF, "page.pdf", providertest.PDF),
			[]string{"ollama/llava", "cannot take application/pdf files (page.pdf)", "image/png"}},
		{"gemini", "gemini-2.5-flash", providers.FileURL("image/png", "https://example.com/a.png"),
			[]string{"gemini/gemini-2.5-flash", "cannot fetch image/png files from a URL"}},
		{"openai", "gpt-4o", providers.FileData("text/plain", "notes.txt", []byte("notes")),
			[]string{"openai/gpt-4o", "cannot take text/plain files (notes.txt)"}},
	}
	for _, c := range cases {
		t.Run(c.provider, func(t *testing.T) {
			s := providertest.NewOpenAI(t)
			_, err := service(t, s, c.provider, c.model).Generate(context.Background(), providers.Request{Messages: []providers.Message{
				{Role: providers.User, Parts: []providers.Part{providers.Text("Look."), c.file}},
			}})
			require.Error(t, err)
			assert.True(t, errors.Is(err, providers.ErrBadRequest))
			for _, w := range c.wants {
				assert.Contains(t, err.Error(), w)
			}
			assert.Empty(t, s.Requests())
		})
	}
}
