package providertest_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/providers/providertest"
	"github.com/agiraph/agiraph/tools"
)

var weatherCall = tools.Call{ID: "toolu_01A", Name: "get_weather", Args: json.RawMessage(`{"city": "Paris", "unit": "celsius"}`)}

func anthropicBody(stream bool) map[string]any {
	return map[string]any{
		"model": "claude-sonnet-4-5", "max_tokens": 1024, "stream": stream,
		"messages": []any{map[string]any{"role": "user", "content": "Weather in Paris?"}},
	}
}

func TestAnthropicJSON(t *testing.T) {
	t.Parallel()
	s := providertest.NewAnthropic(t, providertest.Reply{
		Text:  "Let me check.",
		Calls: []tools.Call{weatherCall, {Name: "noargs"}},
		Usage: providers.Usage{InputTokens: 12, OutputTokens: 34, CacheReadTokens: 5, CacheWriteTokens: 6},
	})
	if strings.HasSuffix(s.URL(), "/v1") {
		t.Fatalf("URL %s should be the root", s.URL())
	}
	resp, data := post(t, s.URL()+"/v1/messages", anthropicHeaders, anthropicBody(false))
	eq(t, "status", resp.StatusCode, 200)
	eq(t, "content-type", resp.Header.Get("Content-Type"), "application/json")
	if !strings.HasPrefix(resp.Header.Get("request-id"), "req_") {
		t.Errorf("request-id header = %q", resp.Header.Get("request-id"))
	}
	m := decode(t, data)
	eq(t, "keys", keys(m), "content,id,model,role,stop_reason,stop_sequence,type,usage")
	if !strings.HasPrefix(m["id"].(string), "msg_") {
		t.Errorf("id = %v", m["id"])
	}
	eq(t, "type", m["type"], "message")
	eq(t, "role", m["role"], "assistant")
	eq(t, "model", m["model"], "claude-sonnet-4-5")
	eq(t, "stop_reason", m["stop_reason"], "tool_use")
	if v, ok := m["stop_sequence"]; !ok || v != nil {
		t.Errorf("stop_sequence = %v, want null", v)
	}
	eq(t, "usage", m["usage"], map[string]any{"input_tokens": 12.0, "output_tokens": 34.0, "cache_read_input_tokens": 5.0, "cache_creation_input_tokens": 6.0})
	content := m["content"].([]any)
	eq(t, "blocks", len(content), 3)
	eq(t, "text block", content[0], map[string]any{"type": "text", "text": "Let me check."})
	eq(t, "tool block keys", keys(content[1]), "id,input,name,type")
	eq(t, "tool block", content[1], map[string]any{"type": "tool_use", "id": "toolu_01A", "name": "get_weather", "input": map[string]any{"city": "Paris", "unit": "celsius"}})
	if id, _ := get(content[2], "id").(string); !strings.HasPrefix(id, "toolu_") {
		t.Errorf("generated id = %q", id)
	}
	eq(t, "empty input", get(content[2], "input"), map[string]any{})

	reqs := s.Requests()
	eq(t, "requests", len(reqs), 1)
	r := reqs[0]
	eq(t, "method", r.Method, "POST")
	eq(t, "path", r.Path, "/v1/messages")
	eq(t, "stream", r.Stream, false)
	eq(t, "model", r.Model, "claude-sonnet-4-5")
	eq(t, "header", r.Header.Get("anthropic-version"), "2023-06-01")
	eq(t, "max_tokens", r.JSON["max_tokens"], 1024.0)
	eq(t, "messages", len(r.Messages()), 1)
	eq(t, "message", r.Messages()[0]["content"], "Weather in Paris?")
	if !json.Valid(r.Body) {
		t.Errorf("raw body %q", r.Body)
	}
	eq(t, "remaining", s.Remaining(), 0)
}

func TestAnthropicDefaultsAndStops(t *testing.T) {
	t.Parallel()
	s := providertest.NewAnthropic(t,
		providertest.Reply{Text: "hi"},
		providertest.Reply{Text: "cut", Stop: "max_tokens"},
		providertest.Reply{Text: "x", Stop: "stop_sequence", StopSequence: "END", Model: "claude-other"},
	)
	for i, want := range []string{"end_turn", "max_tokens", "stop_sequence"} {
		_, data := post(t, s.URL()+"/v1/messages", anthropicHeaders, anthropicBody(false))
		m := decode(t, data)
		eq(t, "stop_reason", m["stop_reason"], want)
		if i == 2 {
			eq(t, "stop_sequence", m["stop_sequence"], "END")
			eq(t, "model", m["model"], "claude-other")
		}
	}
}

func TestAnthropicStream(t *testing.T) {
	t.Parallel()
	search := json.RawMessage(`{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{"query":"paris weather"}}`)
	result := json.RawMessage(`{"type":"web_search_tool_result","tool_use_id":"srvtoolu_1","content":[{"type":"web_search_result","url":"https://example.com","title":"Weather","encrypted_content":"abc","page_age":null}]}`)
	thinking := json.RawMessage(`{"type":"thinking","thinking":"I should look it up.","signature":"sig123"}`)
	s := providertest.NewAnthropic(t, providertest.Reply{
		Blocks: []json.RawMessage{thinking, search, result},
		Text:   "It is sunny in Paris, 21°C today.",
		Calls:  []tools.Call{weatherCall},
		Usage:  providers.Usage{InputTokens: 100, OutputTokens: 50, CacheReadTokens: 7},
	})
	resp, data := post(t, s.URL()+"/v1/messages", anthropicHeaders, anthropicBody(true))
	eq(t, "status", resp.StatusCode, 200)
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Errorf("content-type %q", resp.Header.Get("Content-Type"))
	}
	events := parseSSE(t, data)
	var names []string
	type block struct {
		start map[string]any
		text  string
		think string
		sig   string
		json  string
		done  bool
	}
	var blocks []*block
	var final map[string]any
	pieces := 0
	for _, e := range events {
		names = append(names, e.Name)
		d := e.JSON(t)
		eq(t, "data type", d["type"], e.Name)
		switch e.Name {
		case "message_start":
			msg := d["message"].(map[string]any)
			eq(t, "start keys", keys(msg), "content,id,model,role,stop_reason,stop_sequence,type,usage")
			eq(t, "start content", len(msg["content"].([]any)), 0)
			if msg["stop_reason"] != nil {
				t.Errorf("stop_reason at start = %v", msg["stop_reason"])
			}
			eq(t, "start input_tokens", get(msg, "usage", "input_tokens"), 100.0)
			eq(t, "start cache_read", get(msg, "usage", "cache_read_input_tokens"), 7.0)
		case "content_block_start":
			eq(t, "index", d["index"], float64(len(blocks)))
			blocks = append(blocks, &block{start: d["content_block"].(map[string]any)})
		case "content_block_delta":
			b := blocks[int(d["index"].(float64))]
			if b.done {
				t.Errorf("delta after stop")
			}
			delta := d["delta"].(map[string]any)
			switch delta["type"] {
			case "text_delta":
				b.text += delta["text"].(string)
			case "thinking_delta":
				b.think += delta["thinking"].(string)
			case "signature_delta":
				b.sig += delta["signature"].(string)
			case "input_json_delta":
				b.json += delta["partial_json"].(string)
				pieces++
			default:
				t.Errorf("delta type %v", delta["type"])
			}
		case "content_block_stop":
			blocks[int(d["index"].(float64))].done = true
		case "message_delta":
			final = d
		}
	}
	eq(t, "first events", strings.Join(names[:3], " "), "message_start content_block_start ping")
	eq(t, "last events", strings.Join(names[len(names)-2:], " "), "message_delta message_stop")
	eq(t, "blocks", len(blocks), 5)
	for i, b := range blocks {
		if !b.done {
			t.Errorf("block %d not stopped", i)
		}
	}
	eq(t, "thinking start", blocks[0].start, map[string]any{"type": "thinking", "thinking": "", "signature": ""})
	eq(t, "thinking", blocks[0].think, "I should look it up.")
	eq(t, "signature", blocks[0].sig, "sig123")
	eq(t, "server tool start input", blocks[1].start["input"], map[string]any{})
	eq(t, "server tool name", blocks[1].start["name"], "web_search")
	eq(t, "server tool input", blocks[1].json, `{"query":"paris weather"}`)
	eq(t, "search result", blocks[2].start["tool_use_id"], "srvtoolu_1")
	eq(t, "search result content", get(blocks[2].start, "content", 0, "url"), "https://example.com")
	eq(t, "text start", blocks[3].start, map[string]any{"type": "text", "text": ""})
	eq(t, "text", blocks[3].text, "It is sunny in Paris, 21°C today.")
	eq(t, "tool start", blocks[4].start, map[string]any{"type": "tool_use", "id": "toolu_01A", "name": "get_weather", "input": map[string]any{}})
	eq(t, "tool input", blocks[4].json, `{"city":"Paris","unit":"celsius"}`)
	if pieces < 4 {
		t.Errorf("input_json_delta pieces = %d, want the JSON split", pieces)
	}
	eq(t, "delta keys", keys(final), "delta,type,usage")
	eq(t, "stop_reason", get(final, "delta", "stop_reason"), "tool_use")
	if v, ok := final["delta"].(map[string]any)["stop_sequence"]; !ok || v != nil {
		t.Errorf("stop_sequence = %v", v)
	}
	eq(t, "output_tokens", get(final, "usage", "output_tokens"), 50.0)
	eq(t, "recorded stream", s.Requests()[0].Stream, true)

	// The non-streaming answer to the same reply has the raw blocks unchanged, first.
	s2 := providertest.NewAnthropic(t, providertest.Reply{Blocks: []json.RawMessage{search, result}, Text: "ok"})
	_, data = post(t, s2.URL()+"/v1/messages", anthropicHeaders, anthropicBody(false))
	m := decode(t, data)
	var want []any
	json.Unmarshal([]byte(`[`+string(search)+`,`+string(result)+`,{"type":"text","text":"ok"}]`), &want)
	eq(t, "content", m["content"], want)
}

func TestAnthropicEmptyStream(t *testing.T) {
	t.Parallel()
	s := providertest.NewAnthropic(t, providertest.Reply{})
	_, data := post(t, s.URL()+"/v1/messages", anthropicHeaders, anthropicBody(true))
	var names []string
	for _, e := range parseSSE(t, data) {
		names = append(names, e.Name)
	}
	eq(t, "events", strings.Join(names, " "), "message_start ping message_delta message_stop")
}

func TestAnthropicErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		reply      providertest.Reply
		status     int
		typ, msg   string
		retryAfter string
	}{
		{providertest.Reply{Err: providers.ErrRateLimit, RetryAfter: 1500 * time.Millisecond}, 429, "rate_limit_error", "rate limit", "2"},
		{providertest.Reply{Err: providers.ErrOverloaded}, 529, "overloaded_error", "Overloaded", ""},
		{providertest.Reply{Err: providers.ErrServer}, 500, "api_error", "Internal server error", ""},
		{providertest.Reply{Err: providers.ErrContextWindow}, 400, "invalid_request_error", "prompt is too long", ""},
		{providertest.Reply{Err: providers.ErrAuth}, 401, "authentication_error", "invalid x-api-key", ""},
		{providertest.Reply{Err: providers.ErrBadRequest}, 400, "invalid_request_error", "roles must alternate", ""},
		{providertest.Reply{Status: 403}, 403, "permission_error", "permission", ""},
		{providertest.Reply{Status: 429, RetryAfter: 30 * time.Second}, 429, "rate_limit_error", "rate limit", "30"},
		{providertest.Reply{Status: 400, ErrorMessage: "max_tokens: 99999 > 64000"}, 400, "invalid_request_error", "max_tokens: 99999 > 64000", ""},
		{providertest.Reply{Err: providers.ErrServer, Status: 502, ErrorType: "api_error", ErrorMessage: "bad gateway"}, 502, "api_error", "bad gateway", ""},
	}
	for _, stream := range []bool{false, true} {
		for _, c := range cases {
			s := providertest.NewAnthropic(t, c.reply)
			resp, data := post(t, s.URL()+"/v1/messages", anthropicHeaders, anthropicBody(stream))
			eq(t, "status", resp.StatusCode, c.status)
			eq(t, "retry-after", resp.Header.Get("retry-after"), c.retryAfter)
			eq(t, "content-type", resp.Header.Get("Content-Type"), "application/json")
			m := decode(t, data)
			eq(t, "keys", keys(m), "error,request_id,type")
			eq(t, "type", m["type"], "error")
			eq(t, "error keys", keys(m["error"]), "message,type")
			eq(t, "error type", get(m, "error", "type"), c.typ)
			if msg, _ := get(m, "error", "message").(string); !strings.Contains(msg, c.msg) {
				t.Errorf("message %q does not contain %q", msg, c.msg)
			}
			eq(t, "request_id", m["request_id"], resp.Header.Get("request-id"))
		}
	}
}

func TestAnthropicRefusesBadRequests(t *testing.T) {
	t.Parallel()
	s := providertest.NewAnthropic(t, providertest.Reply{Text: "only for the good one"})
	noKey := map[string]string{"anthropic-version": "2023-06-01"}
	noVersion := map[string]string{"x-api-key": "k"}
	noMax := anthropicBody(false)
	delete(noMax, "max_tokens")
	cases := []struct {
		headers map[string]string
		body    any
		status  int
		typ     string
		msg     string
	}{
		{noKey, anthropicBody(false), 401, "authentication_error", "x-api-key header is required"},
		{noVersion, anthropicBody(false), 400, "invalid_request_error", "anthropic-version: header is required"},
		{anthropicHeaders, noMax, 400, "invalid_request_error", "max_tokens: Field required"},
		{anthropicHeaders, "{not json", 400, "invalid_request_error", "There was an error parsing the body of your request"},
	}
	for _, c := range cases {
		resp, data := post(t, s.URL()+"/v1/messages", c.headers, c.body)
		eq(t, "status", resp.StatusCode, c.status)
		m := decode(t, data)
		eq(t, "error", m["error"], map[string]any{"type": c.typ, "message": c.msg})
	}
	eq(t, "remaining after refusals", s.Remaining(), 1)
	eq(t, "recorded", len(s.Requests()), 4)
	resp, _ := post(t, s.URL()+"/v1/messages", anthropicHeaders, anthropicBody(false))
	eq(t, "good status", resp.StatusCode, 200)
}

func TestAnthropicMidStreamError(t *testing.T) {
	t.Parallel()
	s := providertest.NewAnthropic(t, providertest.Reply{Err: providers.ErrOverloaded, MidStream: true})
	resp, data := post(t, s.URL()+"/v1/messages", anthropicHeaders, anthropicBody(true))
	eq(t, "status", resp.StatusCode, 200)
	events := parseSSE(t, data)
	last := events[len(events)-1]
	eq(t, "first", events[0].Name, "message_start")
	eq(t, "last", last.Name, "error")
	eq(t, "error", last.JSON(t), map[string]any{"type": "error", "error": map[string]any{"type": "overloaded_error", "message": "Overloaded"}})
}

func TestConnectionDropped(t *testing.T) {
	t.Parallel()
	for _, stream := range []bool{false, true} {
		a := providertest.NewAnthropic(t, providertest.Reply{Err: providers.ErrConnection, MidStream: stream})
		o := providertest.NewOpenAI(t, providertest.Reply{Err: providers.ErrConnection, MidStream: stream})
		body := anthropicBody(stream)
		for _, target := range []struct {
			url     string
			headers map[string]string
		}{{a.URL() + "/v1/messages", anthropicHeaders}, {o.URL() + "/chat/completions", openAIHeaders}} {
			raw, _ := json.Marshal(body)
			req, _ := http.NewRequest("POST", target.url, strings.NewReader(string(raw)))
			for k, v := range target.headers {
				req.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(req)
			if err == nil {
				_, err = readAllErr(resp)
			}
			if err == nil {
				t.Errorf("%s (stream %v): no error from a dropped connection", target.url, stream)
			}
		}
	}
}

func TestAnthropicFunc(t *testing.T) {
	t.Parallel()
	s := providertest.NewAnthropicFunc(t, func(r providertest.Request) providertest.Reply {
		n := len(r.Messages())
		if n > 2 {
			return providertest.Reply{Err: providers.ErrContextWindow}
		}
		return providertest.Reply{Text: strings.Repeat("ok ", n)}
	})
	body := anthropicBody(false)
	_, data := post(t, s.URL()+"/v1/messages", anthropicHeaders, body)
	eq(t, "text", get(decode(t, data), "content", 0, "text"), "ok ")
	body["messages"] = []any{map[string]any{}, map[string]any{}, map[string]any{}}
	resp, _ := post(t, s.URL()+"/v1/messages", anthropicHeaders, body)
	eq(t, "status", resp.StatusCode, 400)
}

func TestScriptEndFailsTheTest(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"anthropic", "openai"} {
		ft := newFakeT(t)
		var s *providertest.Server
		url, headers, body := "", anthropicHeaders, any(anthropicBody(false))
		if name == "anthropic" {
			s = providertest.NewAnthropic(ft, providertest.Reply{Text: "one"})
			url = s.URL() + "/v1/messages"
		} else {
			s = providertest.NewOpenAI(ft, providertest.Reply{Text: "one"})
			url, headers = s.URL()+"/chat/completions", openAIHeaders
		}
		resp, _ := post(t, url, headers, body)
		eq(t, name+" first", resp.StatusCode, 200)
		if len(ft.Errors()) != 0 {
			t.Fatalf("%s: unexpected failures %v", name, ft.Errors())
		}
		resp, data := post(t, url, headers, body)
		eq(t, name+" past the end", resp.StatusCode, 500)
		if !strings.Contains(string(data), "past the end of the script") {
			t.Errorf("%s: body %s", name, data)
		}
		errs := ft.Errors()
		if len(errs) != 1 || !strings.Contains(errs[0], "script has only 1 replies") {
			t.Errorf("%s: failures %v", name, errs)
		}
	}
}

func TestWrongPathFailsTheTest(t *testing.T) {
	t.Parallel()
	ft := newFakeT(t)
	s := providertest.NewAnthropic(ft, providertest.Reply{Text: "unused"})
	resp, data := post(t, s.URL()+"/v1/v1/messages", anthropicHeaders, anthropicBody(false))
	eq(t, "status", resp.StatusCode, 404)
	eq(t, "error type", get(decode(t, data), "error", "type"), "not_found_error")
	if errs := ft.Errors(); len(errs) != 1 || !strings.Contains(errs[0], "/v1/v1/messages") {
		t.Errorf("failures %v", errs)
	}
	ft2 := newFakeT(t)
	o := providertest.NewOpenAI(ft2)
	resp, _ = post(t, o.URL()+"/v1/chat/completions", openAIHeaders, map[string]any{})
	eq(t, "openai status", resp.StatusCode, 404)
	if errs := ft2.Errors(); len(errs) != 1 {
		t.Errorf("openai failures %v", errs)
	}
}
