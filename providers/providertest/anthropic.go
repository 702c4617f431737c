package providertest

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/agiraph/agiraph/providers"
)

// NewAnthropic starts a fake Anthropic Messages API that answers with replies, one per request,
// in order. Give a client URL() as its base URL (the root, without /v1).
func NewAnthropic(t T, replies ...Reply) *Server {
	t.Helper()
	return newServer(t, "anthropic", "", replies, nil, serveAnthropic)
}

// NewAnthropicFunc starts a fake Anthropic Messages API that answers every request with fn. fn
// runs on the server's goroutines, possibly concurrently.
func NewAnthropicFunc(t T, fn func(Request) Reply) *Server {
	t.Helper()
	return newServer(t, "anthropic", "", nil, fn, serveAnthropic)
}

type anthropicErrorBody struct {
	Type      string             `json:"type"`
	Error     anthropicErrDetail `json:"error"`
	RequestID string             `json:"request_id,omitempty"`
}

type anthropicErrDetail struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

type anthropicUsage struct {
	InputTokens              int `json:"input_tokens"`
	CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens"`
	OutputTokens             int `json:"output_tokens"`
}

type anthropicMessage struct {
	ID           string         `json:"id"`
	Type         string         `json:"type"`
	Role         string         `json:"role"`
	Model        string         `json:"model"`
	Content      []any          `json:"content"`
	StopReason   *string        `json:"stop_reason"`
	StopSequence *string        `json:"stop_sequence"`
	Usage        anthropicUsage `json:"usage"`
}

type anthropicText struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type anthropicToolUse struct {
	Type  string          `json:"type"`
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}

// anthropicRequestID is the request-id header and error field of a request.
func anthropicRequestID(req Request) string { return "req_test_" + idNum(req) }

func anthropicFail(w http.ResponseWriter, req Request, status int, typ, msg string, h http.Header) {
	if h == nil {
		h = http.Header{}
	}
	h.Set("Request-Id", anthropicRequestID(req))
	writeJSON(w, status, anthropicErrorBody{Type: "error", Error: anthropicErrDetail{Type: typ, Message: msg}, RequestID: anthropicRequestID(req)}, h)
}

// anthropicErrorOf returns the status, type and message of an error reply.
func anthropicErrorOf(r Reply) (int, string, string) {
	status, typ, msg := r.Status, "", ""
	switch {
	case errors.Is(r.Err, providers.ErrRateLimit):
		status, typ, msg = 429, "rate_limit_error", "This request would exceed the rate limit for your organization of 50 input tokens per minute. For details, refer to: https://docs.claude.com/en/api/rate-limits."
	case errors.Is(r.Err, providers.ErrOverloaded):
		status, typ, msg = 529, "overloaded_error", "Overloaded"
	case errors.Is(r.Err, providers.ErrServer):
		status, typ, msg = 500, "api_error", "Internal server error"
	case errors.Is(r.Err, providers.ErrAuth):
		status, typ, msg = 401, "authentication_error", "invalid x-api-key"
	case errors.Is(r.Err, providers.ErrContextWindow):
		status, typ, msg = 400, "invalid_request_error", "prompt is too long: 208310 tokens > 200000 maximum"
	case errors.Is(r.Err, providers.ErrBadRequest):
		status, typ, msg = 400, "invalid_request_error", "messages: roles must alternate between \"user\" and \"assistant\", but found multiple \"user\" roles in a row"
	}
	if r.Status != 0 && r.Status != http.StatusOK {
		status = r.Status
	}
	if status == 0 {
		status = 500
	}
	if typ == "" || (r.Status != 0 && r.Err == nil) {
		typ, msg = anthropicTypeOf(status)
	}
	if r.ErrorType != "" {
		typ = r.ErrorType
	}
	if r.ErrorMessage != "" {
		msg = r.ErrorMessage
	}
	return status, typ, msg
}

// anthropicTypeOf returns the error type and a message the API uses for a status.
func anthropicTypeOf(status int) (string, string) {
	switch status {
	case 400:
		return "invalid_request_error", "Invalid request"
	case 401:
		return "authentication_error", "invalid x-api-key"
	case 402:
		return "billing_error", "Your credit balance is too low to access the Anthropic API."
	case 403:
		return "permission_error", "Your API key does not have permission to use the specified resource."
	case 404:
		return "not_found_error", "Not found"
	case 413:
		return "request_too_large", "Request exceeds the maximum allowed number of bytes."
	case 429:
		return "rate_limit_error", "Number of requests has exceeded your rate limit"
	case 504:
		return "timeout_error", "Request timed out"
	case 529, 503:
		return "overloaded_error", "Overloaded"
	}
	if status >= 500 {
		return "api_error", "Internal server error"
	}
	return "invalid_request_error", "Invalid request"
}

func serveAnthropic(s *Server, w http.ResponseWriter, r *http.Request, req Request) {
	if r.URL.Path != "/v1/messages" {
		s.t.Errorf("providertest: anthropic server got %s %s; it serves POST /v1/messages (is the base URL %s, without /v1?)", r.Method, r.URL.Path, s.URL())
		anthropicFail(w, req, 404, "not_found_error", "Not Found", nil)
		return
	}
	if r.Method != http.MethodPost {
		s.t.Errorf("providertest: anthropic server got %s %s; want POST", r.Method, r.URL.Path)
		anthropicFail(w, req, 405, "invalid_request_error", "Method Not Allowed", nil)
		return
	}
	if r.Header.Get("X-Api-Key") == "" {
		anthropicFail(w, req, 401, "authentication_error", "x-api-key header is required", nil)
		return
	}
	if r.Header.Get("Anthropic-Version") == "" {
		anthropicFail(w, req, 400, "invalid_request_error", "anthropic-version: header is required", nil)
		return
	}
	if req.JSON == nil {
		anthropicFail(w, req, 400, "invalid_request_error", "There was an error parsing the body of your request", nil)
		return
	}
	for _, f := range []string{"model", "max_tokens", "messages"} {
		if _, ok := req.JSON[f]; !ok {
			anthropicFail(w, req, 400, "invalid_request_error", f+": Field required", nil)
			return
		}
	}
	if p := anthropicFormatProblem(req.JSON); p != "" {
		anthropicFail(w, req, 400, "invalid_request_error", p, nil)
		return
	}
	if _, p, _ := req.media(); p != "" {
		anthropicFail(w, req, 400, "invalid_request_error", p, nil)
		return
	}
	reply, ok := s.reply(req)
	if !ok {
		anthropicFail(w, req, 500, "api_error", s.scriptEnded(req), nil)
		return
	}
	if reply.isError() && !(reply.MidStream && req.Stream) {
		if errors.Is(reply.Err, providers.ErrConnection) {
			abort()
		}
		status, typ, msg := anthropicErrorOf(reply)
		anthropicFail(w, req, status, typ, msg, errorHeaders(reply))
		return
	}
	msg, ok := anthropicBuild(s, req, reply)
	if !ok {
		anthropicFail(w, req, 500, "api_error", "providertest: a scripted tool call has invalid JSON arguments", nil)
		return
	}
	h := http.Header{}
	for k, vs := range reply.Header {
		h[k] = append([]string(nil), vs...)
	}
	h.Set("Request-Id", anthropicRequestID(req))
	if !req.Stream {
		writeJSON(w, http.StatusOK, msg, h)
		return
	}
	anthropicStream(w, msg, reply, h)
}

// anthropicBuild makes the whole message of a successful reply.
func anthropicBuild(s *Server, req Request, r Reply) (anthropicMessage, bool) {
	model := r.Model
	if model == "" {
		model = req.Model
	}
	content := []any{}
	for _, b := range r.Blocks {
		content = append(content, b)
	}
	if r.Text != "" {
		content = append(content, anthropicText{Type: "text", Text: r.Text})
	}
	for i, c := range r.Calls {
		a, ok := args(c)
		if !ok {
			s.t.Errorf("providertest: reply %d: tool call %q has invalid JSON arguments %q", req.Index+1, c.Name, c.Args)
			return anthropicMessage{}, false
		}
		id := c.ID
		if id == "" {
			id = "toolu_test_" + idNum(req) + "_" + strconv.Itoa(i)
		}
		content = append(content, anthropicToolUse{Type: "tool_use", ID: id, Name: c.Name, Input: a})
	}
	stop := r.Stop
	if stop == "" {
		stop = "end_turn"
		if len(r.Calls) > 0 {
			stop = "tool_use"
		}
	}
	var seq *string
	if r.StopSequence != "" {
		seq = &r.StopSequence
	}
	return anthropicMessage{
		ID: "msg_test_" + idNum(req), Type: "message", Role: "assistant", Model: model,
		Content: content, StopReason: &stop, StopSequence: seq,
		Usage: anthropicUsage{
			InputTokens:              r.Usage.InputTokens,
			CacheCreationInputTokens: r.Usage.CacheWriteTokens,
			CacheReadInputTokens:     r.Usage.CacheReadTokens,
			OutputTokens:             r.Usage.OutputTokens,
		},
	}, true
}

// anthropicStream sends msg as the Messages API's event stream.
func anthropicStream(w http.ResponseWriter, msg anthropicMessage, r Reply, h http.Header) {
	ev := startSSE(w, h)
	start := msg
	start.Content = []any{}
	start.StopReason, start.StopSequence = nil, nil
	start.Usage.OutputTokens = min(msg.Usage.OutputTokens, 1)
	ev.event("message_start", map[string]any{"type": "message_start", "message": start})
	if r.isError() { // MidStream
		ev.event("ping", map[string]any{"type": "ping"})
		if errors.Is(r.Err, providers.ErrConnection) {
			abort()
		}
		_, typ, m := anthropicErrorOf(r)
		ev.event("error", anthropicErrorBody{Type: "error", Error: anthropicErrDetail{Type: typ, Message: m}})
		return
	}
	if len(msg.Content) == 0 {
		ev.event("ping", map[string]any{"type": "ping"})
	}
	for i, block := range msg.Content {
		startBlock, deltas := anthropicBlockEvents(block)
		ev.event("content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": startBlock})
		if i == 0 {
			ev.event("ping", map[string]any{"type": "ping"})
		}
		for _, d := range deltas {
			ev.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": d})
		}
		ev.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
	}
	ev.event("message_delta", map[string]any{
		"type":  "message_delta",
		"delta": map[string]any{"stop_reason": msg.StopReason, "stop_sequence": msg.StopSequence},
		"usage": msg.Usage,
	})
	ev.event("message_stop", map[string]any{"type": "message_stop"})
}

// anthropicBlockEvents returns the content_block_start block and the deltas of one block.
func anthropicBlockEvents(block any) (any, []any) {
	switch b := block.(type) {
	case anthropicText:
		var ds []any
		for _, w := range words(b.Text) {
			ds = append(ds, map[string]any{"type": "text_delta", "text": w})
		}
		return anthropicText{Type: "text", Text: ""}, ds
	case anthropicToolUse:
		b2 := b
		b2.Input = json.RawMessage("{}")
		return b2, jsonDeltas(string(b.Input))
	case json.RawMessage:
		var m map[string]json.RawMessage
		if json.Unmarshal(b, &m) != nil {
			return b, nil
		}
		var typ, thinking, sig string
		_ = json.Unmarshal(m["type"], &typ) // a field missing or of another type stays empty
		switch {
		case typ == "thinking":
			_ = json.Unmarshal(m["thinking"], &thinking) // as type
			_ = json.Unmarshal(m["signature"], &sig)
			var ds []any
			for _, w := range words(thinking) {
				ds = append(ds, map[string]any{"type": "thinking_delta", "thinking": w})
			}
			ds = append(ds, map[string]any{"type": "signature_delta", "signature": sig})
			return map[string]any{"type": "thinking", "thinking": "", "signature": ""}, ds
		case strings.HasSuffix(typ, "tool_use") && len(m["input"]) > 0:
			var input bytes.Buffer
			if json.Compact(&input, m["input"]) != nil {
				return b, nil
			}
			m["input"] = json.RawMessage("{}")
			return m, jsonDeltas(input.String())
		}
		return b, nil
	}
	return block, nil
}

// jsonDeltas splits JSON into input_json_delta deltas.
func jsonDeltas(s string) []any {
	var ds []any
	for _, p := range pieces(s, 3) {
		ds = append(ds, map[string]any{"type": "input_json_delta", "partial_json": p})
	}
	return ds
}
