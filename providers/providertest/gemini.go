package providertest

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"regexp"
	"strings"

	"github.com/agiraph/agiraph/providers"
)

// NewGemini starts a fake Gemini API (POST /v1beta/models/{model}:generateContent,
// :streamGenerateContent and :batchEmbedContents, the API Gemini CLI and the Google Gen AI SDKs
// speak) that answers with replies, one per request, in order. Give a client URL() as its base
// URL (the server root, as GOOGLE_GEMINI_BASE_URL expects); the key goes in x-goog-api-key (or
// ?key=).
//
// The recorded Request's Model is the model named in the path and Stream is true for
// streamGenerateContent. A reply's text becomes text parts (a word a chunk when streamed) and
// each call a functionCall part after it, sent whole as the API does, with an id only when the
// scripted call has one; Reply.Blocks are ignored. The finish reason is "STOP" unless Reply.Stop
// gives another ("MAX_TOKENS", "SAFETY", "MALFORMED_FUNCTION_CALL"). Errors carry the API's
// google.rpc status ("RESOURCE_EXHAUSTED"; Reply.ErrorType overrides it); Reply.RetryAfter goes
// into a RetryInfo detail, not a header, as the API sends it. A MidStream error is an error
// object sent as the stream's next data line.
func NewGemini(t T, replies ...Reply) *Server {
	t.Helper()
	return newServer(t, "gemini", "", replies, nil, serveGemini)
}

// NewGeminiFunc starts a fake Gemini API that answers every request with fn. fn runs on the
// server's goroutines, possibly concurrently.
func NewGeminiFunc(t T, fn func(Request) Reply) *Server {
	t.Helper()
	return newServer(t, "gemini", "", nil, fn, serveGemini)
}

// Contents returns the Gemini API body's "contents" (nil if absent), each content ({"role",
// "parts"}) as decoded JSON.
func (r Request) Contents() []map[string]any {
	return objects(r.JSON["contents"])
}

// geminiPath matches the methods the server serves.
var geminiPath = regexp.MustCompile(`^/(v1beta|v1)/models/([^/:]+):(generateContent|streamGenerateContent|batchEmbedContents)$`)

type geminiErrorBody struct {
	Error geminiErrDetail `json:"error"`
}

type geminiErrDetail struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Status  string `json:"status"`
	Details []any  `json:"details,omitempty"`
}

type geminiModality struct {
	Modality   string `json:"modality"`
	TokenCount int    `json:"tokenCount"`
}

type geminiUsage struct {
	PromptTokenCount        int              `json:"promptTokenCount"`
	CandidatesTokenCount    int              `json:"candidatesTokenCount,omitempty"`
	TotalTokenCount         int              `json:"totalTokenCount"`
	CachedContentTokenCount int              `json:"cachedContentTokenCount,omitempty"`
	PromptTokensDetails     []geminiModality `json:"promptTokensDetails"`
	CacheTokensDetails      []geminiModality `json:"cacheTokensDetails,omitempty"`
}

type geminiContent struct {
	Parts []any  `json:"parts"`
	Role  string `json:"role"`
}

type geminiCandidate struct {
	Content      geminiContent `json:"content"`
	FinishReason string        `json:"finishReason,omitempty"`
	Index        int           `json:"index"`
}

type geminiResponse struct {
	Candidates    []geminiCandidate `json:"candidates"`
	UsageMetadata geminiUsage       `json:"usageMetadata"`
	ModelVersion  string            `json:"modelVersion"`
	ResponseID    string            `json:"responseId"`
}

type geminiText struct {
	Text string `json:"text"`
}

type geminiFunctionCall struct {
	ID   string          `json:"id,omitempty"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
}

type geminiCallPart struct {
	FunctionCall geminiFunctionCall `json:"functionCall"`
}

func geminiFail(w http.ResponseWriter, status int, d geminiErrDetail, h http.Header) {
	d.Code = status
	writeJSON(w, status, geminiErrorBody{Error: d}, h)
}

// geminiErrorOf returns the status and error of an error reply.
func geminiErrorOf(r Reply) (int, geminiErrDetail) {
	status := r.Status
	var d geminiErrDetail
	switch {
	case errors.Is(r.Err, providers.ErrRateLimit):
		status, d = 429, geminiErrDetail{Status: "RESOURCE_EXHAUSTED",
			Message: "You exceeded your current quota, please check your plan and billing details. For more information on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits.",
			Details: []any{map[string]any{"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": []any{map[string]any{
				"quotaMetric": "generativelanguage.googleapis.com/generate_content_free_tier_requests", "quotaId": "GenerateRequestsPerMinutePerProjectPerModel-FreeTier",
				"quotaDimensions": map[string]any{"location": "global", "model": "gemini-2.5-pro"}, "quotaValue": "5"}}}}}
	case errors.Is(r.Err, providers.ErrOverloaded):
		status, d = 503, geminiErrDetail{Status: "UNAVAILABLE", Message: "The model is overloaded. Please try again later."}
	case errors.Is(r.Err, providers.ErrServer):
		status, d = 500, geminiErrDetail{Status: "INTERNAL", Message: "An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting"}
	case errors.Is(r.Err, providers.ErrAuth):
		status, d = 400, geminiErrDetail{Status: "INVALID_ARGUMENT", Message: "API key not valid. Please pass a valid API key.",
			Details: []any{map[string]any{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID",
				"domain": "googleapis.com", "metadata": map[string]any{"service": "generativelanguage.googleapis.com"}}}}
	case errors.Is(r.Err, providers.ErrContextWindow):
		status, d = 400, geminiErrDetail{Status: "INVALID_ARGUMENT", Message: "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576)."}
	case errors.Is(r.Err, providers.ErrBadRequest):
		status, d = 400, geminiErrDetail{Status: "INVALID_ARGUMENT", Message: "Please ensure that function call turn comes immediately after a user turn or after a function response turn."}
	}
	if r.Status != 0 && r.Status != http.StatusOK {
		status = r.Status
	}
	if status == 0 {
		status = 500
	}
	if d.Status == "" || (r.Status != 0 && r.Err == nil) {
		d = geminiDetailOf(status)
	}
	if r.ErrorType != "" {
		d.Status = r.ErrorType
	}
	if r.ErrorMessage != "" {
		d.Message = r.ErrorMessage
	}
	if r.RetryAfter > 0 {
		d.Details = append(d.Details, map[string]any{"@type": "type.googleapis.com/google.rpc.RetryInfo",
			"retryDelay": fmt.Sprintf("%ds", int(math.Ceil(r.RetryAfter.Seconds())))})
	}
	d.Code = status
	return status, d
}

// geminiDetailOf returns the error the API gives for a status.
func geminiDetailOf(status int) geminiErrDetail {
	switch status {
	case 400:
		return geminiErrDetail{Status: "INVALID_ARGUMENT", Message: "Request contains an invalid argument."}
	case 401:
		return geminiErrDetail{Status: "UNAUTHENTICATED", Message: "Request had invalid authentication credentials."}
	case 403:
		return geminiErrDetail{Status: "PERMISSION_DENIED", Message: "The caller does not have permission"}
	case 404:
		return geminiErrDetail{Status: "NOT_FOUND", Message: "Requested entity was not found."}
	case 429:
		return geminiErrDetail{Status: "RESOURCE_EXHAUSTED", Message: "Resource has been exhausted (e.g. check quota)."}
	case 503:
		return geminiErrDetail{Status: "UNAVAILABLE", Message: "The model is overloaded. Please try again later."}
	case 504:
		return geminiErrDetail{Status: "DEADLINE_EXCEEDED", Message: "The request timed out. Please try again."}
	}
	if status >= 500 {
		return geminiErrDetail{Status: "INTERNAL", Message: "An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting"}
	}
	return geminiErrDetail{Status: "FAILED_PRECONDITION", Message: "Precondition check failed."}
}

func serveGemini(s *Server, w http.ResponseWriter, r *http.Request, req Request) {
	m := geminiPath.FindStringSubmatch(r.URL.Path)
	if m == nil {
		s.t.Errorf("providertest: gemini server got %s %s; it serves POST /v1beta/models/{model}:generateContent, :streamGenerateContent and :batchEmbedContents (is the base URL %s, without /v1beta?)", r.Method, r.URL.Path, s.URL())
		geminiFail(w, 404, geminiErrDetail{Status: "NOT_FOUND", Message: "The requested URL " + r.URL.Path + " was not found on this server."}, nil)
		return
	}
	// The model and the stream are in the URL, not the body: record them from there.
	req.Model, req.Stream = m[2], m[3] == "streamGenerateContent"
	s.mu.Lock()
	s.requests[req.Index].Model, s.requests[req.Index].Stream = req.Model, req.Stream
	s.mu.Unlock()
	if r.Method != http.MethodPost {
		s.t.Errorf("providertest: gemini server got %s %s; want POST", r.Method, r.URL.Path)
		geminiFail(w, 405, geminiErrDetail{Status: "INVALID_ARGUMENT", Message: "Method " + r.Method + " is not allowed."}, nil)
		return
	}
	if strings.TrimSpace(r.Header.Get("X-Goog-Api-Key")) == "" && strings.TrimSpace(r.URL.Query().Get("key")) == "" {
		geminiFail(w, 403, geminiErrDetail{Status: "PERMISSION_DENIED",
			Message: "Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API."}, nil)
		return
	}
	if req.JSON == nil {
		geminiFail(w, 400, geminiErrDetail{Status: "INVALID_ARGUMENT", Message: "Invalid JSON payload received. Unexpected token."}, nil)
		return
	}
	if m[3] == "batchEmbedContents" {
		serveGeminiEmbeddings(s, w, req)
		return
	}
	if _, ok := req.JSON["contents"]; !ok {
		geminiFail(w, 400, geminiErrDetail{Status: "INVALID_ARGUMENT", Message: "* GenerateContentRequest.contents: contents is not specified\n"}, nil)
		return
	}
	if p := geminiFormatProblem(req.JSON); p != "" {
		geminiFail(w, 400, geminiErrDetail{Status: "INVALID_ARGUMENT", Message: p}, nil)
		return
	}
	if _, p, _ := req.media(); p != "" {
		geminiFail(w, 400, geminiErrDetail{Status: "INVALID_ARGUMENT", Message: p}, nil)
		return
	}
	reply, ok := s.reply(req)
	if !ok {
		geminiFail(w, 500, geminiErrDetail{Status: "INTERNAL", Message: s.scriptEnded(req)}, nil)
		return
	}
	h := http.Header{}
	for k, vs := range reply.Header {
		h[k] = append([]string(nil), vs...)
	}
	sse := r.URL.Query().Get("alt") == "sse"
	if reply.isError() && !(reply.MidStream && req.Stream && sse) {
		if errors.Is(reply.Err, providers.ErrConnection) {
			abort()
		}
		status, d := geminiErrorOf(reply)
		geminiFail(w, status, d, h)
		return
	}
	chunks, ok := geminiBuild(s, req, reply)
	if !ok {
		geminiFail(w, 500, geminiErrDetail{Status: "INTERNAL", Message: "providertest: a scripted tool call has invalid JSON arguments"}, nil)
		return
	}
	switch {
	case !req.Stream:
		writeJSON(w, http.StatusOK, geminiWhole(chunks), h)
	case !sse: // streamGenerateContent without alt=sse answers a JSON array of the chunks
		writeJSON(w, http.StatusOK, chunks, h)
	default:
		geminiStream(w, chunks, reply, h)
	}
}

// geminiBuild makes the chunks of a successful reply: a word of text each, then the function
// calls together; the last carries the finish reason and the full usage, the others the
// prompt's usage.
func geminiBuild(s *Server, req Request, r Reply) ([]geminiResponse, bool) {
	model := r.Model
	if model == "" {
		model = req.Model
	}
	prompt := r.Usage.InputTokens + r.Usage.CacheReadTokens
	partial := geminiUsage{PromptTokenCount: prompt, TotalTokenCount: prompt, CachedContentTokenCount: r.Usage.CacheReadTokens,
		PromptTokensDetails: []geminiModality{{Modality: "TEXT", TokenCount: prompt}}}
	if r.Usage.CacheReadTokens > 0 {
		partial.CacheTokensDetails = []geminiModality{{Modality: "TEXT", TokenCount: r.Usage.CacheReadTokens}}
	}
	chunk := func(parts ...any) geminiResponse {
		return geminiResponse{
			Candidates:    []geminiCandidate{{Content: geminiContent{Parts: parts, Role: "model"}}},
			UsageMetadata: partial, ModelVersion: model, ResponseID: "resp_test_" + idNum(req),
		}
	}
	var chunks []geminiResponse
	for _, w := range words(r.Text) {
		chunks = append(chunks, chunk(geminiText{Text: w}))
	}
	var calls []any
	for _, c := range r.Calls {
		a, ok := args(c)
		if !ok {
			s.t.Errorf("providertest: reply %d: tool call %q has invalid JSON arguments %q", req.Index+1, c.Name, c.Args)
			return nil, false
		}
		calls = append(calls, geminiCallPart{FunctionCall: geminiFunctionCall{ID: c.ID, Name: c.Name, Args: a}})
	}
	if len(calls) > 0 {
		chunks = append(chunks, chunk(calls...))
	}
	if len(chunks) == 0 {
		chunks = append(chunks, chunk(geminiText{Text: ""}))
	}
	last := &chunks[len(chunks)-1]
	last.Candidates[0].FinishReason = r.Stop
	if r.Stop == "" {
		last.Candidates[0].FinishReason = "STOP"
	}
	last.UsageMetadata.CandidatesTokenCount = r.Usage.OutputTokens
	last.UsageMetadata.TotalTokenCount = prompt + r.Usage.OutputTokens
	return chunks, true
}

// geminiWhole joins the chunks into the answer of generateContent: the text in one part.
func geminiWhole(chunks []geminiResponse) geminiResponse {
	whole := chunks[len(chunks)-1]
	var text strings.Builder
	var parts []any
	for _, c := range chunks {
		for _, p := range c.Candidates[0].Content.Parts {
			if t, ok := p.(geminiText); ok {
				text.WriteString(t.Text)
			} else {
				parts = append(parts, p)
			}
		}
	}
	if text.Len() > 0 || len(parts) == 0 {
		parts = append([]any{geminiText{Text: text.String()}}, parts...)
	}
	whole.Candidates = []geminiCandidate{{Content: geminiContent{Parts: parts, Role: "model"}, FinishReason: whole.Candidates[0].FinishReason}}
	return whole
}

// geminiStream sends the chunks as the API's server-sent events: bare "data:" lines, each
// event ended by CRLF CRLF.
func geminiStream(w http.ResponseWriter, chunks []geminiResponse, r Reply, h http.Header) {
	for k, vs := range h {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Content-Disposition", "attachment")
	w.WriteHeader(http.StatusOK)
	f, _ := w.(http.Flusher)
	send := func(v any) {
		b, err := json.Marshal(v)
		if err != nil {
			panic(err)
		}
		_, _ = fmt.Fprintf(w, "data: %s\r\n\r\n", b) // a client gone reads no more
		if f != nil {
			f.Flush()
		}
	}
	if r.isError() { // MidStream: one chunk of text, then the error
		send(geminiResponse{Candidates: []geminiCandidate{{Content: geminiContent{Parts: []any{geminiText{Text: ""}}, Role: "model"}}},
			UsageMetadata: chunks[0].UsageMetadata, ModelVersion: chunks[0].ModelVersion, ResponseID: chunks[0].ResponseID})
		if errors.Is(r.Err, providers.ErrConnection) {
			abort()
		}
		_, d := geminiErrorOf(r)
		send(geminiErrorBody{Error: d})
		return
	}
	for _, c := range chunks {
		send(c)
	}
}
