// Package providertest runs fake model-provider HTTP servers that speak the providers' real wire
// formats, so provider adapters built on the official SDKs (the Anthropic Go SDK, langchaingo's
// OpenAI client) and CLI agents can be tested end to end without a network or a key.
//
// [NewAnthropic] (Messages API), [NewOpenAI] (Chat Completions and embeddings), [NewResponses]
// (the Responses API), [NewGemini] (generateContent and batchEmbedContents) and [NewOllama] (its
// embeddings API and Chat Completions) each start a [Server] that plays a script of [Reply] values, one per
// request, in order (or answers with a function of the request), and records every request it
// gets. A request past the end of the script, or to a path the API does not serve, fails the
// test.
//
// What the fakes reproduce faithfully, and what they simplify, is in docs/providers.md (Fake
// providers for tests).
package providertest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/tools"
)

// T is the part of testing.TB a Server uses; *testing.T and *testing.B satisfy it.
type T interface {
	Helper()
	Errorf(format string, args ...any)
	Cleanup(func())
}

// Request is one HTTP request a Server got.
type Request struct {
	// Index is the request's position among all the requests the server got, from 0.
	Index  int
	Method string
	// Path is the URL path, for example "/v1/messages".
	Path   string
	Header http.Header
	// Body is the raw body.
	Body []byte
	// JSON is the body decoded, or nil when it is not a JSON object.
	JSON map[string]any
	// Stream reports whether the body asked for a stream ("stream": true).
	Stream bool
	// Model is the body's "model" field.
	Model string
}

// Messages returns the body's "messages" array (nil if absent), each message as decoded JSON.
func (r Request) Messages() []map[string]any {
	arr, _ := r.JSON["messages"].([]any)
	var out []map[string]any
	for _, m := range arr {
		if mm, ok := m.(map[string]any); ok {
			out = append(out, mm)
		}
	}
	return out
}

// Reply is one scripted answer: a successful message (text, tool calls, raw blocks) or an error.
type Reply struct {
	// Text is the assistant's text (none if empty).
	Text string
	// Calls are the tool calls, after the text. A call without an ID gets a generated one; empty
	// Args are sent as {}.
	Calls []tools.Call
	// Blocks are extra raw Anthropic content blocks (for example thinking, server_tool_use and
	// web_search_tool_result blocks), placed before the text. Ignored by the OpenAI server.
	Blocks []json.RawMessage
	// Stop is the provider's own stop or finish reason ("end_turn", "max_tokens", "pause_turn",
	// "refusal"; "stop", "length", "content_filter"). By default it is "tool_use" / "tool_calls"
	// when there are calls and "end_turn" / "stop" otherwise.
	Stop string
	// StopSequence is the Anthropic stop_sequence (for Stop "stop_sequence"); null when empty.
	StopSequence string
	// Usage is the token usage, in the canonical sense (see docs/providers.md for OpenAI).
	Usage providers.Usage
	// Model overrides the model named in the answer (by default the request's).
	Model string

	// Err, when set to one of the providers.Err* kinds, makes the reply an error of that kind
	// with the provider's real status, type, code and message for it (each may be overridden
	// below). ErrConnection drops the connection without an answer.
	Err error
	// Status, when neither 0 nor 200, makes the reply an error with this HTTP status.
	Status int
	// ErrorType is the error's type ("rate_limit_error"; "invalid_request_error"); derived from
	// Err or Status when empty.
	ErrorType string
	// ErrorMessage is the error's message; a realistic default when empty.
	ErrorMessage string
	// ErrorCode is the OpenAI error code ("context_length_exceeded"); derived when empty.
	ErrorCode string
	// RetryAfter, when positive, is sent in a retry-after header, in whole seconds rounded up.
	RetryAfter time.Duration
	// MidStream sends the error, for a streaming request, inside a stream that has started
	// (HTTP 200, Anthropic's "error" event after message_start, OpenAI's error chunk after the
	// role chunk) instead of as an HTTP error. With ErrConnection, the connection drops mid-stream.
	MidStream bool
	// Header holds extra response headers.
	Header http.Header
	// Vectors gives the vector of each text of an embeddings request (OpenAI's /v1/embeddings,
	// Gemini's batchEmbedContents, Ollama's /api/embed); nil gives [Vector]'s.
	Vectors func(text string) []float32
}

// isError reports whether r is an error reply.
func (r Reply) isError() bool { return r.Err != nil || (r.Status != 0 && r.Status != http.StatusOK) }

// Server is a fake provider. It closes itself when the test ends.
type Server struct {
	t        T
	srv      *httptest.Server
	base     string
	provider string
	fn       func(Request) Reply

	mu       sync.Mutex
	replies  []Reply
	next     int
	requests []Request
}

// URL returns the base URL to give a client: the server root for Anthropic (no /v1), the root
// followed by /v1 for OpenAI.
func (s *Server) URL() string { return s.base }

// Requests returns the requests the server got, in order, including refused ones.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Remaining returns how many scripted replies have not been played.
func (s *Server) Remaining() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.replies) - s.next
}

// Close shuts the server down; it is also done at the end of the test.
func (s *Server) Close() { s.srv.Close() }

func newServer(t T, provider, suffix string, replies []Reply, fn func(Request) Reply, h func(*Server, http.ResponseWriter, *http.Request, Request)) *Server {
	t.Helper()
	s := &Server{t: t, provider: provider, replies: replies, fn: fn}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h(s, w, r, s.record(r))
	}))
	s.base = s.srv.URL + suffix
	t.Cleanup(s.srv.Close)
	return s
}

// record reads and records a request.
func (s *Server) record(r *http.Request) Request {
	body, _ := readAll(r)
	req := Request{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body}
	var m map[string]any
	if json.Unmarshal(body, &m) == nil && m != nil {
		req.JSON = m
		req.Stream, _ = m["stream"].(bool)
		req.Model, _ = m["model"].(string)
	}
	s.mu.Lock()
	req.Index = len(s.requests)
	s.requests = append(s.requests, req)
	s.mu.Unlock()
	return req
}

func readAll(r *http.Request) ([]byte, error) { return io.ReadAll(r.Body) }

// reply returns the reply for req; ok is false when the script has ended (and the test failed).
func (s *Server) reply(req Request) (Reply, bool) {
	if s.fn != nil {
		return s.fn(req), true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.next >= len(s.replies) {
		s.t.Errorf("providertest: %s server got request %d (%s %s) but its script has only %d replies", s.provider, req.Index+1, req.Method, req.Path, len(s.replies))
		return Reply{}, false
	}
	r := s.replies[s.next]
	s.next++
	return r, true
}

// scriptEnded is the message of the error answered past the end of the script.
func (s *Server) scriptEnded(req Request) string {
	return fmt.Sprintf("providertest: request %d is past the end of the script", req.Index+1)
}

// ids returns the deterministic id suffix of a request.
func idNum(req Request) string { return fmt.Sprintf("%04d", req.Index+1) }

// writeJSON writes v as a JSON response with the status and extra headers.
func writeJSON(w http.ResponseWriter, status int, v any, extra http.Header) {
	for k, vs := range extra {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	_, _ = w.Write(b) // a client gone reads no more
}

// errorHeaders returns the headers of an error reply.
func errorHeaders(r Reply) http.Header {
	h := http.Header{}
	for k, vs := range r.Header {
		h[k] = append([]string(nil), vs...)
	}
	if r.RetryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(int(math.Ceil(r.RetryAfter.Seconds()))))
	}
	return h
}

// sse is a server-sent event writer.
type sse struct {
	w http.ResponseWriter
	f http.Flusher
}

func startSSE(w http.ResponseWriter, extra http.Header) *sse {
	for k, vs := range extra {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	f, _ := w.(http.Flusher)
	return &sse{w: w, f: f}
}

// event writes one event; an empty name writes a bare "data:" line as OpenAI does.
func (s *sse) event(name string, data any) {
	var payload string
	if str, ok := data.(string); ok {
		payload = str
	} else {
		b, err := json.Marshal(data)
		if err != nil {
			panic(err)
		}
		payload = string(b)
	}
	if name != "" {
		_, _ = fmt.Fprintf(s.w, "event: %s\n", name) // a client gone reads no more
	}
	_, _ = fmt.Fprintf(s.w, "data: %s\n\n", payload)
	if s.f != nil {
		s.f.Flush()
	}
}

// abort drops the connection without finishing the response.
func abort() { panic(http.ErrAbortHandler) }

// words splits text into word-sized deltas that join back to it.
func words(s string) []string {
	if s == "" {
		return nil
	}
	return strings.SplitAfter(s, " ")
}

// pieces splits s into up to n pieces on rune boundaries, which join back to s.
func pieces(s string, n int) []string {
	if len(s) <= 1 || n <= 1 {
		return []string{s}
	}
	var out []string
	size := (len(s) + n - 1) / n
	for len(s) > 0 {
		cut := min(size, len(s))
		for cut < len(s) && !utf8.RuneStart(s[cut]) {
			cut++
		}
		out = append(out, s[:cut])
		s = s[cut:]
	}
	return out
}

// args returns a call's arguments as compact JSON, in the caller's key order ({} when empty); ok
// is false if they are not valid JSON.
func args(c tools.Call) (json.RawMessage, bool) {
	if len(bytes.TrimSpace(c.Args)) == 0 {
		return json.RawMessage("{}"), true
	}
	var b bytes.Buffer
	if err := json.Compact(&b, c.Args); err != nil {
		return nil, false
	}
	return b.Bytes(), true
}
