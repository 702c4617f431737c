package providertest

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/agiraph/agiraph/providers"
)

// NewOpenAI starts a fake OpenAI Chat Completions API (and embeddings API, POST /v1/embeddings)
// that answers with replies, one per request, in order. Give a client URL() as its base URL (it ends in /v1).
func NewOpenAI(t T, replies ...Reply) *Server {
	t.Helper()
	return newServer(t, "openai", "/v1", replies, nil, serveOpenAI)
}

// NewOpenAIFunc starts a fake OpenAI Chat Completions API that answers every request with fn. fn
// runs on the server's goroutines, possibly concurrently.
func NewOpenAIFunc(t T, fn func(Request) Reply) *Server {
	t.Helper()
	return newServer(t, "openai", "/v1", nil, fn, serveOpenAI)
}

type openAIErrorBody struct {
	Error openAIErrDetail `json:"error"`
}

type openAIErrDetail struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

type openAIFunction struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type openAIToolCall struct {
	ID       string         `json:"id"`
	Type     string         `json:"type"`
	Function openAIFunction `json:"function"`
}

type openAIMessage struct {
	Role        string           `json:"role"`
	Content     *string          `json:"content"`
	Refusal     *string          `json:"refusal"`
	ToolCalls   []openAIToolCall `json:"tool_calls,omitempty"`
	Annotations []any            `json:"annotations"`
}

type openAIChoice struct {
	Index        int           `json:"index"`
	Message      openAIMessage `json:"message"`
	Logprobs     any           `json:"logprobs"`
	FinishReason string        `json:"finish_reason"`
}

type openAIUsage struct {
	PromptTokens            int            `json:"prompt_tokens"`
	CompletionTokens        int            `json:"completion_tokens"`
	TotalTokens             int            `json:"total_tokens"`
	PromptTokensDetails     map[string]int `json:"prompt_tokens_details"`
	CompletionTokensDetails map[string]int `json:"completion_tokens_details"`
}

type openAICompletion struct {
	ID                string         `json:"id"`
	Object            string         `json:"object"`
	Created           int64          `json:"created"`
	Model             string         `json:"model"`
	Choices           []openAIChoice `json:"choices"`
	Usage             openAIUsage    `json:"usage"`
	ServiceTier       string         `json:"service_tier"`
	SystemFingerprint string         `json:"system_fingerprint"`
}

func strp(s string) *string { return &s }

func openAIFail(w http.ResponseWriter, req Request, status int, d openAIErrDetail, h http.Header) {
	if h == nil {
		h = http.Header{}
	}
	h.Set("X-Request-Id", "req_test_"+idNum(req))
	writeJSON(w, status, openAIErrorBody{Error: d}, h)
}

// openAIErrorOf returns the status and error of an error reply.
func openAIErrorOf(r Reply) (int, openAIErrDetail) {
	status := r.Status
	var d openAIErrDetail
	switch {
	case errors.Is(r.Err, providers.ErrRateLimit):
		status, d = 429, openAIErrDetail{Type: "requests", Code: strp("rate_limit_exceeded"),
			Message: "Rate limit reached for gpt-4o in organization org-test on requests per min (RPM): Limit 500, Used 500, Requested 1. Please try again in 120ms. Visit https://platform.openai.com/account/rate-limits to learn more."}
	case errors.Is(r.Err, providers.ErrOverloaded):
		status, d = 503, openAIErrDetail{Type: "server_error", Message: "The engine is currently overloaded, please try again later"}
	case errors.Is(r.Err, providers.ErrServer):
		status, d = 500, openAIErrDetail{Type: "server_error", Message: "The server had an error while processing your request. Sorry about that!"}
	case errors.Is(r.Err, providers.ErrAuth):
		status, d = 401, openAIErrDetail{Type: "invalid_request_error", Code: strp("invalid_api_key"),
			Message: "Incorrect API key provided: sk-test. You can find your API key at https://platform.openai.com/account/api-keys."}
	case errors.Is(r.Err, providers.ErrContextWindow):
		status, d = 400, openAIErrDetail{Type: "invalid_request_error", Param: strp("messages"), Code: strp("context_length_exceeded"),
			Message: "This model's maximum context length is 128000 tokens. However, your messages resulted in 130512 tokens. Please reduce the length of the messages."}
	case errors.Is(r.Err, providers.ErrBadRequest):
		status, d = 400, openAIErrDetail{Type: "invalid_request_error", Param: strp("messages"),
			Message: "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'."}
	}
	if r.Status != 0 && r.Status != http.StatusOK {
		status = r.Status
	}
	if status == 0 {
		status = 500
	}
	if d.Type == "" || (r.Status != 0 && r.Err == nil) {
		d = openAIDetailOf(status)
	}
	if r.ErrorType != "" {
		d.Type = r.ErrorType
	}
	if r.ErrorMessage != "" {
		d.Message = r.ErrorMessage
	}
	if r.ErrorCode != "" {
		d.Code = strp(r.ErrorCode)
	}
	return status, d
}

// openAIDetailOf returns the error the API gives for a status.
func openAIDetailOf(status int) openAIErrDetail {
	switch status {
	case 401:
		return openAIErrDetail{Type: "invalid_request_error", Code: strp("invalid_api_key"), Message: "Incorrect API key provided: sk-test. You can find your API key at https://platform.openai.com/account/api-keys."}
	case 403:
		return openAIErrDetail{Type: "invalid_request_error", Code: strp("unsupported_country_region_territory"), Message: "Country, region, or territory not supported"}
	case 404:
		return openAIErrDetail{Type: "invalid_request_error", Code: strp("model_not_found"), Message: "The model does not exist or you do not have access to it."}
	case 429:
		return openAIErrDetail{Type: "requests", Code: strp("rate_limit_exceeded"), Message: "Rate limit reached for requests"}
	case 503:
		return openAIErrDetail{Type: "server_error", Message: "The engine is currently overloaded, please try again later"}
	}
	if status >= 500 {
		return openAIErrDetail{Type: "server_error", Message: "The server had an error while processing your request. Sorry about that!"}
	}
	return openAIErrDetail{Type: "invalid_request_error", Message: "Invalid request"}
}

func serveOpenAI(s *Server, w http.ResponseWriter, r *http.Request, req Request) {
	if r.URL.Path == "/v1/embeddings" {
		serveOpenAIEmbeddings(s, w, r, req)
		return
	}
	missing := func(req Request) *openAIErrDetail {
		if _, ok := req.JSON["model"]; !ok {
			return &openAIErrDetail{Type: "invalid_request_error", Message: "you must provide a model parameter"}
		}
		if _, ok := req.JSON["messages"]; !ok {
			return &openAIErrDetail{Type: "invalid_request_error", Param: strp("messages"), Code: strp("missing_required_parameter"),
				Message: "Missing required parameter: 'messages'."}
		}
		if rf, ok := req.JSON["response_format"]; ok {
			// Chat Completions nests the schema's fields in json_schema; Responses does not.
			format := map[string]any{"type": object(rf)["type"]}
			for k, v := range object(object(rf)["json_schema"]) {
				format[k] = v
			}
			if p := openAIFormatProblem(format, "response_format.json_schema"); p != "" {
				return &openAIErrDetail{Type: "invalid_request_error", Param: strp("response_format"), Message: p}
			}
		}
		return mediaDetail(req)
	}
	reply, h, ok := openAIAccept(s, w, r, req, "/v1/chat/completions", missing, openAIErrorOf)
	if !ok {
		return
	}
	c, ok := openAIBuild(s, req, reply)
	if !ok {
		openAIFail(w, req, 500, openAIErrDetail{Type: "server_error", Message: "providertest: a scripted tool call has invalid JSON arguments"}, nil)
		return
	}
	if !req.Stream {
		writeJSON(w, http.StatusOK, c, h)
		return
	}
	includeUsage := false
	if so, ok := req.JSON["stream_options"].(map[string]any); ok {
		includeUsage, _ = so["include_usage"].(bool)
	}
	openAIStream(w, c, reply, includeUsage, h)
}

// openAIAccept is what the OpenAI APIs (Chat Completions, Responses) do before they answer: it
// checks the path (path), the method, the key and the body, whose missing required field
// missing names, and takes the scripted reply. It answers the request itself, with an error
// errorOf makes for a scripted error, and returns false; or it returns the reply to send, with
// its headers.
func openAIAccept(s *Server, w http.ResponseWriter, r *http.Request, req Request, path string,
	missing func(Request) *openAIErrDetail, errorOf func(Reply) (int, openAIErrDetail)) (Reply, http.Header, bool) {
	fail := func(status int, d openAIErrDetail) (Reply, http.Header, bool) {
		openAIFail(w, req, status, d, nil)
		return Reply{}, nil, false
	}
	if r.URL.Path != path {
		s.t.Errorf("providertest: the server got %s %s; it serves POST %s (the base URL is %s)", r.Method, r.URL.Path, path, s.URL())
		return fail(404, openAIErrDetail{Type: "invalid_request_error", Message: "Invalid URL (" + r.Method + " " + r.URL.Path + ")"})
	}
	if r.Method != http.MethodPost {
		s.t.Errorf("providertest: the server got %s %s; want POST", r.Method, r.URL.Path)
		return fail(405, openAIErrDetail{Type: "invalid_request_error", Message: "Invalid method for URL (" + r.Method + " " + r.URL.Path + ")"})
	}
	key, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || strings.TrimSpace(key) == "" {
		return fail(401, openAIErrDetail{Type: "invalid_request_error",
			Message: "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY), or as the password field (with blank username) if you're accessing the API from your browser and are prompted for a username and password. You can obtain an API key from https://platform.openai.com/account/api-keys."})
	}
	if req.JSON == nil {
		return fail(400, openAIErrDetail{Type: "invalid_request_error",
			Message: "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not valid JSON. If you have trouble figuring out how to fix this, please contact us through our help center at help.openai.com.)"})
	}
	if d := missing(req); d != nil {
		return fail(400, *d)
	}
	reply, ok := s.reply(req)
	if !ok {
		return fail(500, openAIErrDetail{Type: "server_error", Message: s.scriptEnded(req)})
	}
	if reply.isError() && !(reply.MidStream && req.Stream) {
		if errors.Is(reply.Err, providers.ErrConnection) {
			abort()
		}
		status, d := errorOf(reply)
		openAIFail(w, req, status, d, errorHeaders(reply))
		return Reply{}, nil, false
	}
	h := http.Header{}
	for k, vs := range reply.Header {
		h[k] = append([]string(nil), vs...)
	}
	h.Set("X-Request-Id", "req_test_"+idNum(req))
	return reply, h, true
}

// openAIBuild makes the whole completion of a successful reply.
func openAIBuild(s *Server, req Request, r Reply) (openAICompletion, bool) {
	model := r.Model
	if model == "" {
		model = req.Model
	}
	msg := openAIMessage{Role: "assistant", Annotations: []any{}}
	if r.Text != "" {
		msg.Content = strp(r.Text)
	}
	for i, call := range r.Calls {
		a, ok := args(call)
		if !ok {
			s.t.Errorf("providertest: reply %d: tool call %q has invalid JSON arguments %q", req.Index+1, call.Name, call.Args)
			return openAICompletion{}, false
		}
		id := call.ID
		if id == "" {
			id = "call_test_" + idNum(req) + "_" + strconv.Itoa(i)
		}
		msg.ToolCalls = append(msg.ToolCalls, openAIToolCall{ID: id, Type: "function", Function: openAIFunction{Name: call.Name, Arguments: string(a)}})
	}
	finish := r.Stop
	if finish == "" {
		finish = "stop"
		if len(r.Calls) > 0 {
			finish = "tool_calls"
		}
	}
	prompt := r.Usage.InputTokens + r.Usage.CacheReadTokens
	return openAICompletion{
		ID: "chatcmpl-test" + idNum(req), Object: "chat.completion", Created: time.Now().Unix(), Model: model,
		Choices: []openAIChoice{{Index: 0, Message: msg, FinishReason: finish}},
		Usage: openAIUsage{
			PromptTokens: prompt, CompletionTokens: r.Usage.OutputTokens, TotalTokens: prompt + r.Usage.OutputTokens,
			PromptTokensDetails:     map[string]int{"cached_tokens": r.Usage.CacheReadTokens, "audio_tokens": 0},
			CompletionTokensDetails: map[string]int{"reasoning_tokens": 0, "audio_tokens": 0, "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0},
		},
		ServiceTier: "default", SystemFingerprint: "fp_test",
	}, true
}

// openAIStream sends c as Chat Completions chunks.
func openAIStream(w http.ResponseWriter, c openAICompletion, r Reply, includeUsage bool, h http.Header) {
	ev := startSSE(w, h)
	chunk := func(delta map[string]any, finish *string) map[string]any {
		ch := map[string]any{
			"id": c.ID, "object": "chat.completion.chunk", "created": c.Created, "model": c.Model,
			"service_tier": c.ServiceTier, "system_fingerprint": c.SystemFingerprint,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "logprobs": nil, "finish_reason": finish}},
		}
		if includeUsage {
			ch["usage"] = nil
		}
		return ch
	}
	msg := c.Choices[0].Message
	header := func(i int) map[string]any {
		tc := msg.ToolCalls[i]
		return map[string]any{"index": i, "id": tc.ID, "type": "function", "function": map[string]any{"name": tc.Function.Name, "arguments": ""}}
	}
	first := map[string]any{"role": "assistant", "content": "", "refusal": nil}
	headerSent := false
	if msg.Content == nil && len(msg.ToolCalls) > 0 && !r.isError() {
		first["content"] = nil
		first["tool_calls"] = []any{header(0)}
		headerSent = true
	}
	ev.event("", chunk(first, nil))
	if r.isError() { // MidStream
		if errors.Is(r.Err, providers.ErrConnection) {
			abort()
		}
		_, d := openAIErrorOf(r)
		ev.event("", openAIErrorBody{Error: d})
		return
	}
	if msg.Content != nil {
		for _, w := range words(*msg.Content) {
			ev.event("", chunk(map[string]any{"content": w}, nil))
		}
	}
	for i, tc := range msg.ToolCalls {
		if i > 0 || !headerSent {
			ev.event("", chunk(map[string]any{"tool_calls": []any{header(i)}}, nil))
		}
		for _, p := range pieces(tc.Function.Arguments, 3) {
			ev.event("", chunk(map[string]any{"tool_calls": []any{map[string]any{"index": i, "function": map[string]any{"arguments": p}}}}, nil))
		}
	}
	finish := c.Choices[0].FinishReason
	ev.event("", chunk(map[string]any{}, &finish))
	if includeUsage {
		ev.event("", map[string]any{
			"id": c.ID, "object": "chat.completion.chunk", "created": c.Created, "model": c.Model,
			"service_tier": c.ServiceTier, "system_fingerprint": c.SystemFingerprint,
			"choices": []any{}, "usage": c.Usage,
		})
	}
	ev.event("", "[DONE]")
}
