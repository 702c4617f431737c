package providertest_test

import (
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

// responsesBody is a request as Codex sends it (trimmed): instructions in a developer message,
// function tools, a stream.
func responsesBody(stream bool) map[string]any {
	return map[string]any{
		"model": "gpt-5.5",
		"input": []any{
			map[string]any{"type": "message", "role": "developer", "content": []any{map[string]any{"type": "input_text", "text": "You are a coding agent."}}},
			map[string]any{"type": "message", "role": "user", "content": []any{map[string]any{"type": "input_text", "text": "Weather in Paris?"}}},
		},
		"tools": []any{map[string]any{"type": "function", "name": "get_weather", "strict": false,
			"parameters": map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}}}},
		"tool_choice": "auto", "parallel_tool_calls": true, "store": false, "stream": stream,
		"reasoning": map[string]any{"summary": "auto"}, "include": []any{"reasoning.encrypted_content"},
		"prompt_cache_key": "thread-1",
	}
}

func TestResponsesJSON(t *testing.T) {
	t.Parallel()
	s := providertest.NewResponses(t, providertest.Reply{
		Text: "Checking.", Calls: []tools.Call{weatherCall, {Name: "noargs"}},
		Usage: providers.Usage{InputTokens: 10, CacheReadTokens: 4, OutputTokens: 7},
	})
	require.True(t, strings.HasSuffix(s.URL(), "/v1"), s.URL())
	resp, data := post(t, s.URL()+"/responses", openAIHeaders, responsesBody(false))
	require.Equal(t, 200, resp.StatusCode, string(data))
	assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
	assert.Equal(t, "req_test_0001", resp.Header.Get("X-Request-Id"))
	m := decode(t, data)
	assert.Equal(t, "background,created_at,error,id,incomplete_details,instructions,max_output_tokens,metadata,model,object,output,"+
		"parallel_tool_calls,previous_response_id,prompt_cache_key,reasoning,service_tier,status,store,temperature,text,tool_choice,tools,top_p,truncation,usage,user", keys(m))
	assert.Equal(t, "resp_test_0001", m["id"])
	assert.Equal(t, "response", m["object"])
	assert.Equal(t, "completed", m["status"])
	assert.Equal(t, "gpt-5.5", m["model"])
	assert.Nil(t, m["error"])
	assert.Nil(t, m["incomplete_details"])
	assert.WithinDuration(t, time.Now(), time.Unix(int64(m["created_at"].(float64)), 0), time.Minute)
	// The request's settings are echoed.
	assert.Equal(t, false, m["store"])
	assert.Equal(t, "thread-1", m["prompt_cache_key"])
	assert.Equal(t, map[string]any{"summary": "auto"}, m["reasoning"])
	assert.Equal(t, "get_weather", get(m, "tools", 0, "name"))

	msg := get(m, "output", 0)
	assert.Equal(t, "content,id,role,status,type", keys(msg))
	assert.Equal(t, map[string]any{"id": "msg_test_0001", "type": "message", "status": "completed", "role": "assistant",
		"content": []any{map[string]any{"type": "output_text", "annotations": []any{}, "logprobs": []any{}, "text": "Checking."}}}, msg)
	assert.Equal(t, map[string]any{"id": "fc_test_0001_0", "type": "function_call", "status": "completed",
		"arguments": `{"city":"Paris","unit":"celsius"}`, "call_id": "toolu_01A", "name": "get_weather"}, get(m, "output", 1))
	assert.Equal(t, "call_test_0001_1", get(m, "output", 2, "call_id"))
	assert.Equal(t, "{}", get(m, "output", 2, "arguments"))
	// input_tokens counts the cached tokens, as the API does.
	assert.Equal(t, map[string]any{"input_tokens": 14.0, "input_tokens_details": map[string]any{"cached_tokens": 4.0},
		"output_tokens": 7.0, "output_tokens_details": map[string]any{"reasoning_tokens": 0.0}, "total_tokens": 21.0}, m["usage"])

	reqs := s.Requests()
	require.Len(t, reqs, 1)
	assert.Equal(t, "gpt-5.5", reqs[0].Model)
	assert.False(t, reqs[0].Stream)
	require.Len(t, reqs[0].Input(), 2)
	assert.Equal(t, "developer", reqs[0].Input()[0]["role"])
}

// readResponsesStream checks a Responses stream's framing and returns its events' types and
// data.
func readResponsesStream(t *testing.T, data []byte) ([]string, []map[string]any) {
	t.Helper()
	var types []string
	var events []map[string]any
	for i, e := range parseSSE(t, data) {
		m := e.JSON(t)
		require.Equal(t, e.Name, m["type"], "the event line names the data's type")
		require.Equal(t, float64(i), m["sequence_number"])
		types = append(types, e.Name)
		events = append(events, m)
	}
	return types, events
}

func TestResponsesStream(t *testing.T) {
	t.Parallel()
	reply := providertest.Reply{Text: "Let me look: Paris.", Calls: []tools.Call{weatherCall}, Usage: providers.Usage{InputTokens: 20, OutputTokens: 9}}
	s := providertest.NewResponses(t, reply)
	resp, data := post(t, s.URL()+"/responses", openAIHeaders, responsesBody(true))
	require.Equal(t, 200, resp.StatusCode)
	assert.True(t, strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream"))
	types, events := readResponsesStream(t, data)
	words := strings.Count(reply.Text, " ") + 1
	want := []string{"response.created", "response.in_progress",
		"response.output_item.added", "response.content_part.added"}
	for range words {
		want = append(want, "response.output_text.delta")
	}
	want = append(want, "response.output_text.done", "response.content_part.done", "response.output_item.done",
		"response.output_item.added", "response.function_call_arguments.delta", "response.function_call_arguments.delta",
		"response.function_call_arguments.delta", "response.function_call_arguments.done", "response.output_item.done",
		"response.completed")
	require.Equal(t, want, types)

	created := events[0]["response"].(map[string]any)
	assert.Equal(t, "in_progress", created["status"])
	assert.Equal(t, []any{}, created["output"])
	assert.Nil(t, created["usage"])

	added := events[2]["item"].(map[string]any)
	assert.Equal(t, map[string]any{"id": "msg_test_0001", "type": "message", "status": "in_progress", "role": "assistant", "content": []any{}}, added)
	var text, args strings.Builder
	for _, e := range events {
		switch e["type"] {
		case "response.output_text.delta":
			assert.Equal(t, "msg_test_0001", e["item_id"])
			assert.Equal(t, 0.0, e["output_index"])
			text.WriteString(e["delta"].(string))
		case "response.function_call_arguments.delta":
			assert.Equal(t, "fc_test_0001_0", e["item_id"])
			assert.Equal(t, 1.0, e["output_index"])
			args.WriteString(e["delta"].(string))
		}
	}
	assert.Equal(t, reply.Text, text.String())
	assert.Equal(t, `{"city":"Paris","unit":"celsius"}`, args.String())
	call := events[words+7]["item"].(map[string]any)
	assert.Equal(t, map[string]any{"id": "fc_test_0001_0", "type": "function_call", "status": "in_progress", "arguments": "",
		"call_id": "toolu_01A", "name": "get_weather"}, call)
	assert.Equal(t, "completed", get(events[len(events)-2], "item", "status"))

	done := events[len(events)-1]["response"].(map[string]any)
	assert.Equal(t, "completed", done["status"])
	assert.Len(t, done["output"], 2)
	assert.Equal(t, 29.0, get(done, "usage", "total_tokens"))
	assert.True(t, s.Requests()[0].Stream)
}

func TestResponsesIncomplete(t *testing.T) {
	t.Parallel()
	s := providertest.NewResponses(t, providertest.Reply{Text: "cut", Stop: "max_output_tokens"}, providertest.Reply{Text: "cut", Stop: "max_output_tokens"})
	_, data := post(t, s.URL()+"/responses", openAIHeaders, responsesBody(false))
	m := decode(t, data)
	assert.Equal(t, "incomplete", m["status"])
	assert.Equal(t, map[string]any{"reason": "max_output_tokens"}, m["incomplete_details"])
	_, data = post(t, s.URL()+"/responses", openAIHeaders, responsesBody(true))
	types, events := readResponsesStream(t, data)
	assert.Equal(t, "response.incomplete", types[len(types)-1])
	assert.Equal(t, "incomplete", get(events[len(events)-1], "response", "status"))
}

func TestResponsesErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		reply      providertest.Reply
		status     int
		typ        string
		code       any
		msg        string
		retryAfter string
	}{
		{providertest.Reply{Err: providers.ErrRateLimit, RetryAfter: 1500 * time.Millisecond}, 429, "requests", "rate_limit_exceeded", "Rate limit reached", "2"},
		{providertest.Reply{Err: providers.ErrServer}, 500, "server_error", nil, "The server had an error", ""},
		{providertest.Reply{Err: providers.ErrContextWindow}, 400, "invalid_request_error", "context_length_exceeded", "Your input exceeds the context window", ""},
		{providertest.Reply{Err: providers.ErrBadRequest}, 400, "invalid_request_error", nil, "No tool output found", ""},
		{providertest.Reply{Err: providers.ErrAuth}, 401, "invalid_request_error", "invalid_api_key", "Incorrect API key", ""},
	}
	for _, stream := range []bool{false, true} {
		for _, c := range cases {
			s := providertest.NewResponses(t, c.reply)
			resp, data := post(t, s.URL()+"/responses", openAIHeaders, responsesBody(stream))
			assert.Equal(t, c.status, resp.StatusCode)
			assert.Equal(t, c.retryAfter, resp.Header.Get("Retry-After"))
			m := decode(t, data)
			assert.Equal(t, "code,message,param,type", keys(m["error"]))
			assert.Equal(t, c.typ, get(m, "error", "type"))
			assert.Equal(t, c.code, get(m, "error", "code"))
			assert.Contains(t, get(m, "error", "message"), c.msg)
		}
	}
}

func TestResponsesMidStreamError(t *testing.T) {
	t.Parallel()
	s := providertest.NewResponses(t,
		providertest.Reply{Err: providers.ErrContextWindow, MidStream: true},
		providertest.Reply{Err: providers.ErrOverloaded, MidStream: true},
		providertest.Reply{Err: providers.ErrConnection, MidStream: true},
		providertest.Reply{Err: providers.ErrConnection},
	)
	for _, code := range []string{"context_length_exceeded", "server_is_overloaded"} {
		resp, data := post(t, s.URL()+"/responses", openAIHeaders, responsesBody(true))
		require.Equal(t, 200, resp.StatusCode)
		types, events := readResponsesStream(t, data)
		require.Equal(t, []string{"response.created", "response.in_progress", "response.failed"}, types)
		assert.Equal(t, "failed", get(events[2], "response", "status"))
		assert.Equal(t, code, get(events[2], "response", "error", "code"))
	}
	// A dropped connection: mid-stream after the first events, or before any answer.
	for range 2 {
		raw := strings.NewReader(`{"model":"gpt-5.5","input":"hi","stream":true}`)
		req, err := http.NewRequest(http.MethodPost, s.URL()+"/responses", raw)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer sk-test")
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			_, err = readAllErr(resp)
		}
		assert.Error(t, err)
	}
}

func TestResponsesRefusesBadRequests(t *testing.T) {
	t.Parallel()
	ft := newFakeT(t)
	s := providertest.NewResponses(ft)
	noModel := responsesBody(false)
	delete(noModel, "model")
	cases := []struct {
		path    string
		headers map[string]string
		body    any
		status  int
		msg     string
	}{
		{"/responses", nil, responsesBody(false), 401, "You didn't provide an API key"},
		{"/responses", openAIHeaders, noModel, 400, "Missing required parameter: 'model'."},
		{"/responses", openAIHeaders, "nope", 400, "We could not parse the JSON body"},
		{"/chat/completions", openAIHeaders, responsesBody(false), 404, "Invalid URL (POST /v1/chat/completions)"},
		{"/responses", openAIHeaders, responsesBody(false), 500, "providertest: request 5 is past the end of the script"},
	}
	for _, c := range cases {
		resp, data := post(t, s.URL()+c.path, c.headers, c.body)
		assert.Equal(t, c.status, resp.StatusCode)
		assert.True(t, strings.HasPrefix(get(decode(t, data), "error", "message").(string), c.msg), string(data))
	}
	assert.Len(t, s.Requests(), 5)
	errs := ft.Errors()
	require.Len(t, errs, 2, "the wrong path and the request past the script fail the test")
	assert.Contains(t, errs[0], "it serves POST /v1/responses")
	assert.Contains(t, errs[1], "its script has only 0 replies")
}
