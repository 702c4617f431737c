package providertest_test

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"math"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/providers/providertest"
)

// postJSON posts body with headers and returns the status and the decoded answer.
func postJSON(t *testing.T, url string, headers map[string]string, body any) (int, map[string]any) {
	t.Helper()
	resp, data := post(t, url, headers, body)
	var out map[string]any
	require.NoError(t, json.Unmarshal(data, &out), "%s", data)
	return resp.StatusCode, out
}

// The embeddings endpoints answer as the APIs do: OpenAI's in base64 when asked, Gemini's
// refusing a batch request of another model than the path's, Ollama's refusing a request
// without a model.
func TestEmbeddingsWire(t *testing.T) {
	srv := providertest.NewOpenAI(t, providertest.Reply{})
	status, out := postJSON(t, srv.URL()+"/embeddings", openAIHeaders,
		map[string]any{"model": "text-embedding-3-small", "input": "a car", "encoding_format": "base64"})
	require.Equal(t, http.StatusOK, status, out)
	data := out["data"].([]any)[0].(map[string]any)
	raw, err := base64.StdEncoding.DecodeString(data["embedding"].(string))
	require.NoError(t, err)
	vec := make([]float32, len(raw)/4)
	for i := range vec {
		vec[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
	}
	assert.Equal(t, providertest.Vector("a car"), vec)
	assert.Equal(t, map[string]any{"prompt_tokens": 2.0, "total_tokens": 2.0}, out["usage"])

	gem := providertest.NewGemini(t)
	status, out = postJSON(t, gem.URL()+"/v1beta/models/text-embedding-004:batchEmbedContents", map[string]string{"X-Goog-Api-Key": "k"},
		map[string]any{"requests": []any{map[string]any{"model": "models/other", "content": map[string]any{"parts": []any{map[string]any{"text": "x"}}}}}})
	assert.Equal(t, http.StatusBadRequest, status)
	assert.Equal(t, "INVALID_ARGUMENT", out["error"].(map[string]any)["status"])

	ollama := providertest.NewOllama(t)
	status, out = postJSON(t, strings.TrimSuffix(ollama.URL(), "/v1")+"/api/embed", nil, map[string]any{"input": []string{"x"}})
	assert.Equal(t, http.StatusBadRequest, status)
	assert.Equal(t, map[string]any{"error": "model is required"}, out)
}
