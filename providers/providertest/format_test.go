package providertest_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/providers/providertest"
)

// cityJSON is a schema each API's strict mode takes: every object closed, every property
// required.
func cityJSON() map[string]any {
	return map[string]any{
		"type": "object", "additionalProperties": false, "required": []any{"city"},
		"properties": map[string]any{"city": map[string]any{"type": "string"}},
	}
}

// openSchema leaves its object open and its property optional, which strict modes refuse.
func openSchema() map[string]any {
	return map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}}
}

// formatCase is one API's spelling of structured output.
type formatCase struct {
	name    string
	start   func(t providertest.T, replies ...providertest.Reply) *providertest.Server
	path    string
	headers map[string]string
	body    func(format map[string]any) map[string]any // the request asking for format (nil: a bad one)
	errPath []any                                      // where the error message is in an error body
}

func formatCases() []formatCase {
	return []formatCase{
		{name: "anthropic", start: providertest.NewAnthropic, path: "/v1/messages", headers: anthropicHeaders,
			body: func(schema map[string]any) map[string]any {
				return map[string]any{"model": "claude-sonnet-4-5", "max_tokens": 100, "messages": []any{map[string]any{"role": "user", "content": "Where?"}},
					"output_config": map[string]any{"format": map[string]any{"type": "json_schema", "schema": schema}}}
			}, errPath: []any{"error", "message"}},
		{name: "chat completions", start: providertest.NewOpenAI, path: "/chat/completions", headers: openAIHeaders,
			body: func(schema map[string]any) map[string]any {
				b := openAIBody(false, false)
				b["response_format"] = map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "place", "strict": true, "schema": schema}}
				return b
			}, errPath: []any{"error", "message"}},
		{name: "responses", start: providertest.NewResponses, path: "/responses", headers: openAIHeaders,
			body: func(schema map[string]any) map[string]any {
				return map[string]any{"model": "gpt-5", "input": "Where?",
					"text": map[string]any{"format": map[string]any{"type": "json_schema", "name": "place", "strict": true, "schema": schema}}}
			}, errPath: []any{"error", "message"}},
		{name: "gemini", start: providertest.NewGemini, path: "/v1beta/models/gemini-2.5-flash:generateContent", headers: geminiHeaders,
			body: func(schema map[string]any) map[string]any {
				b := geminiBody()
				gc := map[string]any{"responseMimeType": "application/json", "responseJsonSchema": schema}
				if schema["additionalProperties"] == nil { // the API's own mistake to make: no JSON mime type
					delete(gc, "responseMimeType")
				}
				b["generationConfig"] = gc
				return b
			}, errPath: []any{"error", "message"}},
	}
}

// Each fake takes its API's structured-output field, which Format reads back, and answers with
// the scripted JSON as the answer's text.
func TestFakesTakeStructuredOutput(t *testing.T) {
	for _, c := range formatCases() {
		t.Run(c.name, func(t *testing.T) {
			s := c.start(t, providertest.Reply{Text: `{"city":"Paris"}`})
			resp, data := post(t, s.URL()+c.path, c.headers, c.body(cityJSON()))
			require.Equal(t, 200, resp.StatusCode, "%s", data)
			assert.Contains(t, string(data), `{\"city\":\"Paris\"}`)
			f := s.Requests()[0].Format()
			require.NotNil(t, f)
			assert.Equal(t, cityJSON(), f.Schema)
			if c.name == "chat completions" || c.name == "responses" {
				assert.Equal(t, "place", f.Name)
				assert.True(t, f.Strict)
			}
		})
	}
}

// Each fake refuses what its API refuses: a strict (or Anthropic's) schema with an open object,
// a Gemini schema without the JSON mime type.
func TestFakesRefuseBadStructuredOutput(t *testing.T) {
	want := map[string]string{
		"anthropic":        "output_config.format.schema: For 'object' type, 'additionalProperties' must be explicitly set to false",
		"chat completions": "Invalid schema for response_format 'place': In context=(), 'additionalProperties' is required to be supplied and to be false.",
		"responses":        "Invalid schema for response_format 'place': In context=(), 'additionalProperties' is required to be supplied and to be false.",
		"gemini":           "response_mime_type",
	}
	for _, c := range formatCases() {
		t.Run(c.name, func(t *testing.T) {
			s := c.start(t) // no reply is played: the request is refused before
			resp, data := post(t, s.URL()+c.path, c.headers, c.body(openSchema()))
			require.Equal(t, 400, resp.StatusCode, "%s", data)
			assert.Contains(t, get(decode(t, data), c.errPath...), want[c.name])
		})
	}
}

// A strict OpenAI schema must require every property.
func TestOpenAIStrictRequiresEveryProperty(t *testing.T) {
	s := providertest.NewOpenAI(t)
	schema := cityJSON()
	schema["properties"].(map[string]any)["country"] = map[string]any{"type": "string"}
	b := openAIBody(false, false)
	b["response_format"] = map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "place", "strict": true, "schema": schema}}
	resp, data := post(t, s.URL()+"/chat/completions", openAIHeaders, b)
	require.Equal(t, 400, resp.StatusCode)
	m := decode(t, data)
	assert.Equal(t, "response_format", get(m, "error", "param"))
	assert.Contains(t, get(m, "error", "message"), "Missing 'country'")
}
