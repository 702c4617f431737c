package providertest_test

import (
	"encoding/base64"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/providers/providertest"
)

var (
	png64 = base64.StdEncoding.EncodeToString(providertest.PNG)
	pdf64 = base64.StdEncoding.EncodeToString(providertest.PDF)
)

// Each fake takes its API's images and documents, reads them back with Files, and refuses a
// malformed one with the API's status and words.
func TestFakesTakeAndRefuseFiles(t *testing.T) {
	user := func(content ...any) []any { return []any{map[string]any{"role": "user", "content": content}} }
	anthropicImage := func(mediaType, data string) map[string]any {
		return map[string]any{"type": "image", "source": map[string]any{"type": "base64", "media_type": mediaType, "data": data}}
	}
	cases := []struct {
		name    string
		server  func(providertest.T, ...providertest.Reply) *providertest.Server
		path    string
		headers map[string]string
		body    map[string]any
		files   []providertest.File // accepted: the files read back
		refusal string              // refused: what the error says
	}{
		{"anthropic", providertest.NewAnthropic, "/v1/messages", anthropicHeaders,
			map[string]any{"model": "m", "max_tokens": 10, "messages": user(anthropicImage("image/png", png64),
				map[string]any{"type": "document", "title": "p.pdf", "source": map[string]any{"type": "base64", "media_type": "application/pdf", "data": pdf64}})},
			[]providertest.File{{MediaType: "image/png", Data: providertest.PNG}, {MediaType: "application/pdf", Name: "p.pdf", Data: providertest.PDF}}, ""},
		{"anthropic wrong type", providertest.NewAnthropic, "/v1/messages", anthropicHeaders,
			map[string]any{"model": "m", "max_tokens": 10, "messages": user(anthropicImage("image/jpeg", png64))},
			nil, "Image does not match the provided media type image/jpeg"},
		{"anthropic bad base64", providertest.NewAnthropic, "/v1/messages", anthropicHeaders,
			map[string]any{"model": "m", "max_tokens": 10, "messages": user(anthropicImage("image/png", "not base64!"))},
			nil, "valid base64"},
		{"chat", providertest.NewOpenAI, "/chat/completions", openAIHeaders,
			map[string]any{"model": "m", "messages": user(
				map[string]any{"type": "image_url", "image_url": map[string]any{"url": "data:image/png;base64," + png64}},
				map[string]any{"type": "file", "file": map[string]any{"filename": "p.pdf", "file_data": "data:application/pdf;base64," + pdf64}})},
			[]providertest.File{{MediaType: "image/png", Data: providertest.PNG}, {MediaType: "application/pdf", Name: "p.pdf", Data: providertest.PDF}}, ""},
		{"chat PDF as image", providertest.NewOpenAI, "/chat/completions", openAIHeaders,
			map[string]any{"model": "m", "messages": user(map[string]any{"type": "image_url", "image_url": map[string]any{"url": "data:application/pdf;base64," + pdf64}})},
			nil, "Expected a base64-encoded data URL with an image MIME type"},
		{"chat file without name", providertest.NewOpenAI, "/chat/completions", openAIHeaders,
			map[string]any{"model": "m", "messages": user(map[string]any{"type": "file", "file": map[string]any{"file_data": "data:application/pdf;base64," + pdf64}})},
			nil, "Missing required parameter: 'messages[0].content[0].file.filename'"},
		{"responses", providertest.NewResponses, "/responses", openAIHeaders,
			map[string]any{"model": "m", "input": user(
				map[string]any{"type": "input_image", "image_url": "https://example.com/a.png"},
				map[string]any{"type": "input_file", "filename": "p.pdf", "file_data": "data:application/pdf;base64," + pdf64})},
			[]providertest.File{{URL: "https://example.com/a.png"}, {MediaType: "application/pdf", Name: "p.pdf", Data: providertest.PDF}}, ""},
		{"responses bad file", providertest.NewResponses, "/responses", openAIHeaders,
			map[string]any{"model": "m", "input": user(map[string]any{"type": "input_file", "filename": "p.pdf", "file_data": "data:text/plain;base64,aGk="})},
			nil, "expected a base64-encoded PDF data URL"},
		{"gemini", providertest.NewGemini, "/v1beta/models/m:generateContent", map[string]string{"x-goog-api-key": "k"},
			map[string]any{"contents": []any{map[string]any{"role": "user", "parts": []any{
				map[string]any{"inlineData": map[string]any{"mimeType": "image/png", "data": png64}}}}}},
			[]providertest.File{{MediaType: "image/png", Data: providertest.PNG}}, ""},
		{"gemini unsupported", providertest.NewGemini, "/v1beta/models/m:generateContent", map[string]string{"x-goog-api-key": "k"},
			map[string]any{"contents": []any{map[string]any{"role": "user", "parts": []any{
				map[string]any{"inlineData": map[string]any{"mimeType": "image/tiff", "data": png64}}}}}},
			nil, "Unsupported MIME type: image/tiff"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ft := newFakeT(t)
			s := c.server(ft, providertest.Reply{Text: "seen"})
			resp, body := post(t, s.URL()+c.path, c.headers, c.body)
			if c.refusal != "" {
				assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
				assert.Contains(t, string(body), c.refusal)
				return
			}
			require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
			reqs := s.Requests()
			require.Len(t, reqs, 1)
			assert.Equal(t, c.files, reqs[0].Files())
			assert.Empty(t, ft.Errors())
		})
	}
}
