package providertest_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/providers/providertest"
	"github.com/agiraph/agiraph/tools"
)

var geminiHeaders = map[string]string{"x-goog-api-key": "test-key"}

// geminiBody is a request as Gemini CLI sends it (trimmed).
func geminiBody() map[string]any {
	return map[string]any{
		"contents":          []any{map[string]any{"role": "user", "parts": []any{map[string]any{"text": "Weather in Paris?"}}}},
		"systemInstruction": map[string]any{"parts": []any{map[string]any{"text": "You are Gemini CLI."}}},
		"tools": []any{map[string]any{"functionDeclarations": []any{map[string]any{"name": "get_weather",
			"parametersJsonSchema": map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}}}}}},
		"generationConfig": map[string]any{"temperature": 1},
	}
}

func TestGeminiGenerateContent(t *testing.T) {
	t.Parallel()
	s := providertest.NewGemini(t, providertest.Reply{
		Text: "Checking the weather.", Calls: []tools.Call{weatherCall, {Name: "noargs"}},
		Usage: providers.Usage{InputTokens: 10, CacheReadTokens: 4, OutputTokens: 7},
	})
	assert.False(t, strings.Contains(s.URL(), "/v1"), "the URL is the server root: %s", s.URL())
	resp, data := post(t, s.URL()+"/v1beta/models/gemini-2.5-pro:generateContent", geminiHeaders, geminiBody())
	require.Equal(t, 200, resp.StatusCode, string(data))
	assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
	m := decode(t, data)
	assert.Equal(t, "candidates,modelVersion,responseId,usageMetadata", keys(m))
	assert.Equal(t, "gemini-2.5-pro", m["modelVersion"])
	assert.Equal(t, "resp_test_0001", m["responseId"])
	candidate := get(m, "candidates", 0)
	assert.Equal(t, "content,finishReason,index", keys(candidate))
	assert.Equal(t, "STOP", get(candidate, "finishReason"))
	assert.Equal(t, "model", get(candidate, "content", "role"))
	// The text in one part, then the calls, sent without ids but the scripted one.
	assert.Equal(t, []any{
		map[string]any{"text": "Checking the weather."},
		map[string]any{"functionCall": map[string]any{"id": "toolu_01A", "name": "get_weather", "args": map[string]any{"city": "Paris", "unit": "celsius"}}},
		map[string]any{"functionCall": map[string]any{"name": "noargs", "args": map[string]any{}}},
	}, get(candidate, "content", "parts"))
	// promptTokenCount counts the cached tokens, as the API does.
	assert.Equal(t, map[string]any{"promptTokenCount": 14.0, "candidatesTokenCount": 7.0, "totalTokenCount": 21.0, "cachedContentTokenCount": 4.0,
		"promptTokensDetails": []any{map[string]any{"modality": "TEXT", "tokenCount": 14.0}},
		"cacheTokensDetails":  []any{map[string]any{"modality": "TEXT", "tokenCount": 4.0}}}, m["usageMetadata"])

	reqs := s.Requests()
	require.Len(t, reqs, 1)
	assert.Equal(t, "gemini-2.5-pro", reqs[0].Model, "the model is recorded from the path")
	assert.False(t, reqs[0].Stream)
	require.Len(t, reqs[0].Contents(), 1)
	assert.Equal(t, "user", reqs[0].Contents()[0]["role"])
}

// readGeminiStream reads a Gemini server-sent event stream strictly: bare data lines, each
// event ended by CRLF CRLF, as the API sends them.
func readGeminiStream(t *testing.T, data []byte) []map[string]any {
	t.Helper()
	var chunks []map[string]any
	for rest := data; len(rest) > 0; {
		event, after, ok := bytes.Cut(rest, []byte("\r\n\r\n"))
		require.True(t, ok, "an event not ended by CRLF CRLF: %q", rest)
		payload, found := bytes.CutPrefix(event, []byte("data: "))
		require.True(t, found, "not a data line: %q", event)
		chunks = append(chunks, decode(t, payload))
		rest = after
	}
	return chunks
}

func TestGeminiStream(t *testing.T) {
	t.Parallel()
	reply := providertest.Reply{Text: "Let me look: Paris.", Calls: []tools.Call{weatherCall}, Usage: providers.Usage{InputTokens: 20, OutputTokens: 9}}
	s := providertest.NewGemini(t, reply, reply)
	resp, data := post(t, s.URL()+"/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse", geminiHeaders, geminiBody())
	require.Equal(t, 200, resp.StatusCode)
	assert.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	chunks := readGeminiStream(t, data)
	words := strings.Count(reply.Text, " ") + 1
	require.Len(t, chunks, words+1, "a chunk a word, then the calls")
	var text strings.Builder
	for i, c := range chunks {
		assert.Equal(t, "candidates,modelVersion,responseId,usageMetadata", keys(c))
		assert.Equal(t, "gemini-2.5-flash", c["modelVersion"])
		assert.Equal(t, 20.0, get(c, "usageMetadata", "promptTokenCount"))
		if i < words {
			assert.Nil(t, get(c, "candidates", 0, "finishReason"))
			assert.Nil(t, get(c, "usageMetadata", "candidatesTokenCount"))
			text.WriteString(get(c, "candidates", 0, "content", "parts", 0, "text").(string))
		}
	}
	assert.Equal(t, reply.Text, text.String())
	last := chunks[words]
	assert.Equal(t, "STOP", get(last, "candidates", 0, "finishReason"))
	assert.Equal(t, map[string]any{"id": "toolu_01A", "name": "get_weather", "args": map[string]any{"city": "Paris", "unit": "celsius"}},
		get(last, "candidates", 0, "content", "parts", 0, "functionCall"))
	assert.Equal(t, 9.0, get(last, "usageMetadata", "candidatesTokenCount"))
	assert.Equal(t, 29.0, get(last, "usageMetadata", "totalTokenCount"))
	assert.True(t, s.Requests()[0].Stream)

	// Without alt=sse, the chunks come as one JSON array.
	resp, data = post(t, s.URL()+"/v1beta/models/gemini-2.5-flash:streamGenerateContent", geminiHeaders, geminiBody())
	require.Equal(t, 200, resp.StatusCode)
	var arr []map[string]any
	require.NoError(t, json.Unmarshal(data, &arr))
	assert.Len(t, arr, words+1)
}

func TestGeminiStopAndEmptyReply(t *testing.T) {
	t.Parallel()
	s := providertest.NewGemini(t, providertest.Reply{Text: "cut", Stop: "MAX_TOKENS"}, providertest.Reply{})
	_, data := post(t, s.URL()+"/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse", geminiHeaders, geminiBody())
	chunks := readGeminiStream(t, data)
	assert.Equal(t, "MAX_TOKENS", get(chunks[len(chunks)-1], "candidates", 0, "finishReason"))
	_, data = post(t, s.URL()+"/v1/models/gemini-2.5-flash:generateContent", geminiHeaders, geminiBody())
	m := decode(t, data)
	assert.Equal(t, []any{map[string]any{"text": ""}}, get(m, "candidates", 0, "content", "parts"))
	assert.Equal(t, "STOP", get(m, "candidates", 0, "finishReason"))
}

func TestGeminiErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		reply  providertest.Reply
		status int
		rpc    string
		msg    string
		detail string
	}{
		{providertest.Reply{Err: providers.ErrRateLimit, RetryAfter: 1500 * time.Millisecond}, 429, "RESOURCE_EXHAUSTED", "You exceeded your current quota", `"retryDelay":"2s"`},
		{providertest.Reply{Err: providers.ErrOverloaded}, 503, "UNAVAILABLE", "The model is overloaded", ""},
		{providertest.Reply{Err: providers.ErrServer}, 500, "INTERNAL", "An internal error has occurred", ""},
		{providertest.Reply{Err: providers.ErrAuth}, 400, "INVALID_ARGUMENT", "API key not valid", `"reason":"API_KEY_INVALID"`},
		{providertest.Reply{Err: providers.ErrContextWindow}, 400, "INVALID_ARGUMENT", "exceeds the maximum number of tokens", ""},
		{providertest.Reply{Status: 404}, 404, "NOT_FOUND", "Requested entity was not found.", ""},
		{providertest.Reply{Status: 429, ErrorType: "RESOURCE_EXHAUSTED", ErrorMessage: "Quota exceeded for quota metric"}, 429, "RESOURCE_EXHAUSTED", "Quota exceeded", ""},
	}
	for _, path := range []string{":generateContent", ":streamGenerateContent?alt=sse"} {
		for _, c := range cases {
			s := providertest.NewGemini(t, c.reply)
			resp, data := post(t, s.URL()+"/v1beta/models/gemini-2.5-pro"+path, geminiHeaders, geminiBody())
			assert.Equal(t, c.status, resp.StatusCode)
			assert.Empty(t, resp.Header.Get("Retry-After"), "the API gives the delay in a RetryInfo detail")
			m := decode(t, data)
			assert.Equal(t, "error", keys(m))
			assert.Equal(t, float64(c.status), get(m, "error", "code"))
			assert.Equal(t, c.rpc, get(m, "error", "status"))
			assert.Contains(t, get(m, "error", "message"), c.msg)
			if c.detail != "" {
				details, _ := json.Marshal(get(m, "error", "details"))
				assert.Contains(t, string(details), c.detail)
			}
		}
	}
}

func TestGeminiMidStreamError(t *testing.T) {
	t.Parallel()
	s := providertest.NewGemini(t,
		providertest.Reply{Err: providers.ErrOverloaded, MidStream: true},
		providertest.Reply{Err: providers.ErrConnection, MidStream: true},
	)
	resp, data := post(t, s.URL()+"/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse", geminiHeaders, geminiBody())
	require.Equal(t, 200, resp.StatusCode)
	chunks := readGeminiStream(t, data)
	require.Len(t, chunks, 2)
	assert.Equal(t, "candidates,modelVersion,responseId,usageMetadata", keys(chunks[0]))
	assert.Equal(t, "UNAVAILABLE", get(chunks[1], "error", "status"))

	req, err := http.NewRequest(http.MethodPost, s.URL()+"/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse", strings.NewReader(`{"contents":[]}`))
	require.NoError(t, err)
	req.Header.Set("x-goog-api-key", "test-key")
	resp, err = http.DefaultClient.Do(req)
	if err == nil {
		_, err = readAllErr(resp)
	}
	assert.Error(t, err, "the connection drops mid-stream")
}

func TestGeminiRefusesBadRequests(t *testing.T) {
	t.Parallel()
	ft := newFakeT(t)
	s := providertest.NewGemini(ft, providertest.Reply{Text: "by query key"})
	noContents := geminiBody()
	delete(noContents, "contents")
	cases := []struct {
		path    string
		headers map[string]string
		body    any
		status  int
		msg     string
	}{
		{"/v1beta/models/gemini-2.5-pro:generateContent", nil, geminiBody(), 403, "Method doesn't allow unregistered callers"},
		{"/v1beta/models/gemini-2.5-pro:generateContent", geminiHeaders, noContents, 400, "* GenerateContentRequest.contents: contents is not specified"},
		{"/v1beta/models/gemini-2.5-pro:generateContent", geminiHeaders, "nope", 400, "Invalid JSON payload received."},
		{"/v1beta/models/gemini-2.5-pro:countTokens", geminiHeaders, geminiBody(), 404, "The requested URL"},
		{"/v1beta/models/gemini-2.5-pro:generateContent?key=test-key", nil, geminiBody(), 200, ""},
		{"/v1beta/models/gemini-2.5-pro:generateContent", geminiHeaders, geminiBody(), 500, "providertest: request 6 is past the end of the script"},
	}
	for _, c := range cases {
		resp, data := post(t, s.URL()+c.path, c.headers, c.body)
		assert.Equal(t, c.status, resp.StatusCode, string(data))
		if c.msg != "" {
			assert.True(t, strings.HasPrefix(get(decode(t, data), "error", "message").(string), c.msg), string(data))
		}
	}
	assert.Len(t, s.Requests(), 6)
	errs := ft.Errors()
	require.Len(t, errs, 2, "the wrong path and the request past the script fail the test")
	assert.Contains(t, errs[0], "it serves POST /v1beta/models/{model}:generateContent")
	assert.Contains(t, errs[1], "its script has only 1 replies")
}
