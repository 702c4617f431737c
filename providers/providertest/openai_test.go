package providertest_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/providers/providertest"
	"github.com/agiraph/agiraph/tools"
)

func openAIBody(stream, usage bool) map[string]any {
	b := map[string]any{
		"model":    "gpt-4o",
		"messages": []any{map[string]any{"role": "user", "content": "Weather in Paris?"}},
	}
	if stream {
		b["stream"] = true
		if usage {
			b["stream_options"] = map[string]any{"include_usage": true}
		}
	}
	return b
}

func TestOpenAIJSON(t *testing.T) {
	t.Parallel()
	s := providertest.NewOpenAI(t,
		providertest.Reply{Text: "Checking.", Calls: []tools.Call{weatherCall}, Usage: providers.Usage{InputTokens: 10, CacheReadTokens: 4, OutputTokens: 7}},
		providertest.Reply{Calls: []tools.Call{{Name: "noargs"}}},
		providertest.Reply{Text: "cut", Stop: "length"},
	)
	if !strings.HasSuffix(s.URL(), "/v1") {
		t.Fatalf("URL %s should end in /v1", s.URL())
	}
	resp, data := post(t, s.URL()+"/chat/completions", openAIHeaders, openAIBody(false, false))
	eq(t, "status", resp.StatusCode, 200)
	eq(t, "content-type", resp.Header.Get("Content-Type"), "application/json")
	m := decode(t, data)
	eq(t, "keys", keys(m), "choices,created,id,model,object,service_tier,system_fingerprint,usage")
	if !strings.HasPrefix(m["id"].(string), "chatcmpl-") {
		t.Errorf("id = %v", m["id"])
	}
	eq(t, "object", m["object"], "chat.completion")
	if c, _ := m["created"].(float64); time.Since(time.Unix(int64(c), 0)) > time.Minute {
		t.Errorf("created = %v", m["created"])
	}
	eq(t, "model", m["model"], "gpt-4o")
	choice := get(m, "choices", 0)
	eq(t, "choice keys", keys(choice), "finish_reason,index,logprobs,message")
	eq(t, "index", get(choice, "index"), 0.0)
	eq(t, "finish_reason", get(choice, "finish_reason"), "tool_calls")
	msg := get(choice, "message")
	eq(t, "message keys", keys(msg), "annotations,content,refusal,role,tool_calls")
	eq(t, "role", get(msg, "role"), "assistant")
	eq(t, "content", get(msg, "content"), "Checking.")
	eq(t, "tool call", get(msg, "tool_calls", 0), map[string]any{"id": "toolu_01A", "type": "function",
		"function": map[string]any{"name": "get_weather", "arguments": `{"city":"Paris","unit":"celsius"}`}})
	usage := m["usage"]
	eq(t, "usage keys", keys(usage), "completion_tokens,completion_tokens_details,prompt_tokens,prompt_tokens_details,total_tokens")
	eq(t, "prompt_tokens", get(usage, "prompt_tokens"), 14.0)
	eq(t, "completion_tokens", get(usage, "completion_tokens"), 7.0)
	eq(t, "total_tokens", get(usage, "total_tokens"), 21.0)
	eq(t, "cached_tokens", get(usage, "prompt_tokens_details", "cached_tokens"), 4.0)

	_, data = post(t, s.URL()+"/chat/completions", openAIHeaders, openAIBody(false, false))
	m = decode(t, data)
	if v, ok := get(m, "choices", 0, "message").(map[string]any)["content"]; !ok || v != nil {
		t.Errorf("content = %v, want null", v)
	}
	call := get(m, "choices", 0, "message", "tool_calls", 0)
	if id, _ := get(call, "id").(string); !strings.HasPrefix(id, "call_") {
		t.Errorf("generated id %q", id)
	}
	eq(t, "arguments", get(call, "function", "arguments"), "{}")

	_, data = post(t, s.URL()+"/chat/completions", openAIHeaders, openAIBody(false, false))
	m = decode(t, data)
	eq(t, "finish", get(m, "choices", 0, "finish_reason"), "length")
	if _, ok := get(m, "choices", 0, "message").(map[string]any)["tool_calls"]; ok {
		t.Errorf("tool_calls present without calls")
	}

	r := s.Requests()[0]
	eq(t, "path", r.Path, "/v1/chat/completions")
	eq(t, "auth", r.Header.Get("Authorization"), "Bearer sk-test")
	eq(t, "model", r.Model, "gpt-4o")
	eq(t, "stream", r.Stream, false)
}

// openAIStream reads a chat completion stream back into its text, calls, finish reason and usage.
func readOpenAIStream(t *testing.T, data []byte, usageChunk bool) (text string, args map[int]string, names map[int]string, ids map[int]string, finish string, usage map[string]any) {
	t.Helper()
	events := parseSSE(t, data)
	args, names, ids = map[int]string{}, map[int]string{}, map[int]string{}
	if last := events[len(events)-1]; last.Name != "" || last.Data != "[DONE]" {
		t.Fatalf("stream does not end with [DONE]: %+v", last)
	}
	events = events[:len(events)-1]
	for i, e := range events {
		if e.Name != "" {
			t.Errorf("named event %q", e.Name)
		}
		c := e.JSON(t)
		eq(t, "object", c["object"], "chat.completion.chunk")
		if _, ok := c["usage"]; ok != usageChunk {
			t.Errorf("chunk %d: usage present = %v, want %v", i, ok, usageChunk)
		}
		choices := c["choices"].([]any)
		if len(choices) == 0 {
			if !usageChunk || i != len(events)-1 {
				t.Errorf("chunk %d has no choices", i)
			}
			usage = c["usage"].(map[string]any)
			continue
		}
		if usageChunk && c["usage"] != nil {
			t.Errorf("chunk %d: usage %v, want null", i, c["usage"])
		}
		ch := choices[0].(map[string]any)
		eq(t, "choice keys", keys(ch), "delta,finish_reason,index,logprobs")
		delta := ch["delta"].(map[string]any)
		if i == 0 {
			eq(t, "first role", delta["role"], "assistant")
		} else if _, ok := delta["role"]; ok {
			t.Errorf("chunk %d repeats the role", i)
		}
		if f, ok := ch["finish_reason"].(string); ok {
			finish = f
			eq(t, "finish delta", delta, map[string]any{})
		}
		if s, ok := delta["content"].(string); ok {
			text += s
		}
		tcs, _ := delta["tool_calls"].([]any)
		for _, tc := range tcs {
			idx := int(get(tc, "index").(float64))
			if id, ok := get(tc, "id").(string); ok {
				if _, seen := ids[idx]; seen {
					t.Errorf("call %d: id sent twice", idx)
				}
				ids[idx] = id
				eq(t, "type", get(tc, "type"), "function")
				names[idx] = get(tc, "function", "name").(string)
			} else if _, ok := ids[idx]; !ok {
				t.Errorf("call %d: arguments before id and name", idx)
			}
			args[idx] += get(tc, "function", "arguments").(string)
		}
	}
	return
}

func TestOpenAIStream(t *testing.T) {
	t.Parallel()
	second := tools.Call{Name: "get_time", Args: []byte(`{"tz":"Europe/Paris"}`)}
	reply := providertest.Reply{Text: "Let me look: Paris, 21°C.", Calls: []tools.Call{weatherCall, second}, Usage: providers.Usage{InputTokens: 20, OutputTokens: 9}}
	s := providertest.NewOpenAI(t, reply, reply, providertest.Reply{Calls: []tools.Call{weatherCall}})
	for _, withUsage := range []bool{true, false} {
		resp, data := post(t, s.URL()+"/chat/completions", openAIHeaders, openAIBody(true, withUsage))
		eq(t, "status", resp.StatusCode, 200)
		if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
			t.Errorf("content-type %q", resp.Header.Get("Content-Type"))
		}
		text, args, names, ids, finish, usage := readOpenAIStream(t, data, withUsage)
		eq(t, "text", text, reply.Text)
		eq(t, "args 0", args[0], `{"city":"Paris","unit":"celsius"}`)
		eq(t, "args 1", args[1], `{"tz":"Europe/Paris"}`)
		eq(t, "names", names, map[int]string{0: "get_weather", 1: "get_time"})
		eq(t, "id 0", ids[0], "toolu_01A")
		if !strings.HasPrefix(ids[1], "call_") {
			t.Errorf("id 1 = %q", ids[1])
		}
		eq(t, "finish", finish, "tool_calls")
		if withUsage {
			eq(t, "usage", []any{usage["prompt_tokens"], usage["completion_tokens"], usage["total_tokens"]}, []any{20.0, 9.0, 29.0})
		} else if usage != nil {
			t.Errorf("usage without include_usage")
		}
	}
	// Calls only: the first chunk carries the role, null content and the first call's header.
	_, data := post(t, s.URL()+"/chat/completions", openAIHeaders, openAIBody(true, false))
	first := parseSSE(t, data)[0].JSON(t)
	delta := get(first, "choices", 0, "delta").(map[string]any)
	if v, ok := delta["content"]; !ok || v != nil {
		t.Errorf("content = %v, want null", v)
	}
	eq(t, "header", get(delta, "tool_calls", 0, "function", "name"), "get_weather")
	_, args, _, _, _, _ := readOpenAIStream(t, data, false)
	eq(t, "args", args[0], `{"city":"Paris","unit":"celsius"}`)
}

func TestOpenAIErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		reply      providertest.Reply
		status     int
		typ        string
		code       any
		msg        string
		retryAfter string
	}{
		{providertest.Reply{Err: providers.ErrRateLimit, RetryAfter: 2 * time.Second}, 429, "requests", "rate_limit_exceeded", "Rate limit reached", "2"},
		{providertest.Reply{Err: providers.ErrServer}, 500, "server_error", nil, "The server had an error", ""},
		{providertest.Reply{Err: providers.ErrOverloaded}, 503, "server_error", nil, "overloaded", ""},
		{providertest.Reply{Err: providers.ErrContextWindow}, 400, "invalid_request_error", "context_length_exceeded", "maximum context length", ""},
		{providertest.Reply{Err: providers.ErrAuth}, 401, "invalid_request_error", "invalid_api_key", "Incorrect API key", ""},
		{providertest.Reply{Status: 429, ErrorType: "insufficient_quota", ErrorCode: "insufficient_quota", ErrorMessage: "You exceeded your current quota"}, 429, "insufficient_quota", "insufficient_quota", "exceeded your current quota", ""},
	}
	for _, stream := range []bool{false, true} {
		for _, c := range cases {
			s := providertest.NewOpenAI(t, c.reply)
			resp, data := post(t, s.URL()+"/chat/completions", openAIHeaders, openAIBody(stream, true))
			eq(t, "status", resp.StatusCode, c.status)
			eq(t, "retry-after", resp.Header.Get("Retry-After"), c.retryAfter)
			m := decode(t, data)
			eq(t, "keys", keys(m), "error")
			eq(t, "error keys", keys(m["error"]), "code,message,param,type")
			eq(t, "type", get(m, "error", "type"), c.typ)
			eq(t, "code", get(m, "error", "code"), c.code)
			if msg, _ := get(m, "error", "message").(string); !strings.Contains(msg, c.msg) {
				t.Errorf("message %q does not contain %q", msg, c.msg)
			}
		}
	}
}

func TestOpenAIRefusesBadRequests(t *testing.T) {
	t.Parallel()
	s := providertest.NewOpenAI(t)
	noMessages := openAIBody(false, false)
	delete(noMessages, "messages")
	cases := []struct {
		headers map[string]string
		body    any
		status  int
		msg     string
	}{
		{nil, openAIBody(false, false), 401, "You didn't provide an API key"},
		{map[string]string{"Authorization": "sk-test"}, openAIBody(false, false), 401, "You didn't provide an API key"},
		{openAIHeaders, noMessages, 400, "Missing required parameter: 'messages'."},
		{openAIHeaders, "nope", 400, "We could not parse the JSON body"},
	}
	for _, c := range cases {
		resp, data := post(t, s.URL()+"/chat/completions", c.headers, c.body)
		eq(t, "status", resp.StatusCode, c.status)
		if msg, _ := get(decode(t, data), "error", "message").(string); !strings.HasPrefix(msg, c.msg) {
			t.Errorf("message %q", msg)
		}
	}
	eq(t, "recorded", len(s.Requests()), 4)
}

func TestOpenAIMidStreamError(t *testing.T) {
	t.Parallel()
	s := providertest.NewOpenAI(t, providertest.Reply{Err: providers.ErrServer, MidStream: true})
	resp, data := post(t, s.URL()+"/chat/completions", openAIHeaders, openAIBody(true, false))
	eq(t, "status", resp.StatusCode, 200)
	events := parseSSE(t, data)
	eq(t, "events", len(events), 2)
	eq(t, "error type", get(events[1].JSON(t), "error", "type"), "server_error")
}

func TestConcurrentRequests(t *testing.T) {
	t.Parallel()
	const n = 20
	var replies []providertest.Reply
	for range n {
		replies = append(replies, providertest.Reply{Text: "same answer"})
	}
	s := providertest.NewOpenAI(t, replies...)
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			// Not post: it may call t.Fatal, which must not run outside the test's goroutine.
			raw, _ := json.Marshal(openAIBody(true, true))
			req, _ := http.NewRequest(http.MethodPost, s.URL()+"/chat/completions", bytes.NewReader(raw))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", openAIHeaders["Authorization"])
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Errorf("request: %v", err)
				return
			}
			defer resp.Body.Close()
			io.Copy(io.Discard, resp.Body)
			if resp.StatusCode != 200 {
				t.Errorf("status %d", resp.StatusCode)
			}
		})
	}
	wg.Wait()
	reqs := s.Requests()
	eq(t, "requests", len(reqs), n)
	for i, r := range reqs {
		eq(t, "index", r.Index, i)
	}
	eq(t, "remaining", s.Remaining(), 0)
}
