package langchain

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agiraph/agiraph/tools"
)

// maxRecorded bounds the bytes of a body the transport keeps.
const maxRecorded = 1 << 20

// recorder holds what the transport saw of one Generate's HTTP exchange. langchaingo keeps only
// an error's message; the recorder keeps the status, the retry-after header and the error body,
// notices errors sent inside a stream, and reads the answering model's name.
type recorder struct {
	// dropTemperature removes the temperature langchaingo always sends (0 when unset).
	dropTemperature bool
	// responseFormat, when set, is sent as the body's response_format: langchaingo sets one
	// per client, not per call, and drops most keywords of a schema.
	responseFormat json.RawMessage
	// pdfs name the request's PDFs, in order: langchaingo sends each as a "binary" part, which
	// the API does not know, and the transport makes it a "file" part of that name.
	pdfs []string

	mu         sync.Mutex
	status     int
	retryAfter time.Duration
	apiErr     *apiError // the error body, or the error chunk of a stream
	inStream   bool      // apiErr came inside a stream
	connErr    error     // the request or the body's reading failed
	model      string
	calls      []tools.Call // a stream's tool calls, assembled by index
	finish     string       // a stream's last finish reason
}

type recorderKey struct{}

func withRecorder(ctx context.Context, r *recorder) context.Context {
	return context.WithValue(ctx, recorderKey{}, r)
}

func recorderFrom(ctx context.Context) *recorder {
	r, _ := ctx.Value(recorderKey{}).(*recorder)
	return r
}

// apiError is the error object of OpenAI-style error bodies and stream chunks.
type apiError struct {
	Message string `json:"message"`
	Type    string `json:"type"`
	Code    any    `json:"code"` // a string, a number (some compatible servers) or null
}

// code returns the error's code as text.
func (e *apiError) code() string {
	switch c := e.Code.(type) {
	case string:
		return c
	case float64:
		return strconv.Itoa(int(c))
	}
	return ""
}

// sniffed is what the transport reads of a body or a stream's chunk.
type sniffed struct {
	Model   string    `json:"model"`
	Error   *apiError `json:"error"`
	Choices []struct {
		Delta struct {
			ToolCalls []callDelta `json:"tool_calls"`
		} `json:"delta"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
}

// callDelta is a piece of a streamed tool call.
type callDelta struct {
	Index    *int   `json:"index"`
	ID       string `json:"id"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// streamError returns the error chunk of a stream, which langchaingo skips, as an error.
func (r *recorder) streamError() error {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.apiErr != nil && r.inStream {
		return errors.New(r.apiErr.Message)
	}
	return nil
}

// answerModel returns the model named in the answer ("" if unknown).
func (r *recorder) answerModel() string {
	if r == nil {
		return ""
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.model
}

// snapshot returns a copy of the recorded facts, for reading without the lock.
func (r *recorder) snapshot() (status int, retryAfter time.Duration, apiErr *apiError, connErr error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.status, r.retryAfter, r.apiErr, r.connErr
}

func (r *recorder) sniff(data []byte, inStream bool) {
	var s sniffed
	if json.Unmarshal(data, &s) != nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.model == "" {
		r.model = s.Model
	}
	if s.Error != nil && r.apiErr == nil {
		r.apiErr, r.inStream = s.Error, inStream
	}
	if !inStream || len(s.Choices) == 0 {
		return
	}
	for _, d := range s.Choices[0].Delta.ToolCalls {
		r.addCallDelta(d)
	}
	if f := s.Choices[0].FinishReason; f != "" {
		r.finish = f
	}
}

// addCallDelta adds a piece of a streamed tool call to the call of its index (langchaingo
// ignores the index and appends arguments to the last call). A delta without an index
// continues the last call unless it has an id; one with the index of a call that has another id
// starts a new call, as some servers number every call 0.
func (r *recorder) addCallDelta(d callDelta) {
	i := len(r.calls) - 1
	switch {
	case d.Index != nil && *d.Index >= 0:
		i = *d.Index
		if i < len(r.calls) && d.ID != "" && r.calls[i].ID != "" && r.calls[i].ID != d.ID {
			i = len(r.calls)
		}
	case d.ID != "" || i < 0:
		i = len(r.calls)
	}
	for len(r.calls) <= i {
		r.calls = append(r.calls, tools.Call{})
	}
	c := &r.calls[i]
	if d.ID != "" {
		c.ID = d.ID
	}
	if d.Function.Name != "" {
		c.Name = d.Function.Name
	}
	c.Args = append(c.Args, d.Function.Arguments...)
}

// streamed returns a stream's tool calls and finish reason, as the transport assembled them.
func (r *recorder) streamed() ([]tools.Call, string) {
	if r == nil {
		return nil, ""
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.calls), r.finish
}

func (r *recorder) fail(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.connErr == nil {
		r.connErr = err
	}
}

// transport is the RoundTripper of services' HTTP clients: it fills the recorder found in the
// request's context, if any.
type transport struct {
	base http.RoundTripper
}

// recordingClient returns a copy of c (http.DefaultClient's settings when nil) whose transport
// records calls.
func recordingClient(c *http.Client) *http.Client {
	out := &http.Client{}
	if c != nil {
		*out = *c
	}
	base := out.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	out.Transport = &transport{base: base}
	return out
}

// RoundTrip sends req and records its answer.
func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	rec := recorderFrom(req.Context())
	if rec == nil {
		return t.base.RoundTrip(req)
	}
	if rec.dropTemperature || rec.responseFormat != nil || len(rec.pdfs) > 0 {
		var err error
		if req, err = rec.rewrite(req); err != nil {
			return nil, err
		}
	}
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		rec.fail(err)
		return nil, err
	}
	rec.mu.Lock()
	rec.status = resp.StatusCode
	rec.retryAfter = retryAfter(resp.Header)
	rec.mu.Unlock()
	if resp.StatusCode >= 400 {
		body, err := io.ReadAll(io.LimitReader(resp.Body, maxRecorded))
		resp.Body.Close()
		if err != nil {
			rec.fail(err)
		}
		rec.sniff(body, false)
		resp.Body = io.NopCloser(bytes.NewReader(body))
		return resp, nil
	}
	stream := strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream")
	resp.Body = &sniffer{ReadCloser: resp.Body, rec: rec, stream: stream}
	return resp, nil
}

// rewrite returns a copy of req whose JSON body has no "temperature" (when dropTemperature) and
// the recorder's response_format (when set).
func (r *recorder) rewrite(req *http.Request) (*http.Request, error) {
	if req.Body == nil || req.Body == http.NoBody {
		return req, nil
	}
	body, err := io.ReadAll(req.Body)
	req.Body.Close()
	if err != nil {
		return nil, err
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(body, &fields) == nil && fields != nil {
		if r.dropTemperature {
			delete(fields, "temperature")
		}
		if r.responseFormat != nil {
			fields["response_format"] = r.responseFormat
		}
		if len(r.pdfs) > 0 {
			fields["messages"] = r.filesOf(fields["messages"])
		}
		if b, err := json.Marshal(fields); err == nil {
			body = b
		}
	}
	out := req.Clone(req.Context())
	out.Body = io.NopCloser(bytes.NewReader(body))
	out.ContentLength = int64(len(body))
	out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	return out, nil
}

// filesOf returns the messages with each "binary" part made a "file" part named after the next
// of pdfs: {"type":"file","file":{"filename":…,"file_data":"data:application/pdf;base64,…"}}.
func (r *recorder) filesOf(raw json.RawMessage) json.RawMessage {
	var msgs []map[string]any
	if json.Unmarshal(raw, &msgs) != nil {
		return raw
	}
	next := 0
	for _, m := range msgs {
		parts, _ := m["content"].([]any)
		for i, p := range parts {
			part, _ := p.(map[string]any)
			bin, _ := part["binary"].(map[string]any)
			if part["type"] != "binary" || bin == nil || next >= len(r.pdfs) {
				continue
			}
			data, _ := bin["data"].(string)
			mime, _ := bin["mime_type"].(string)
			parts[i] = map[string]any{"type": "file", "file": map[string]any{
				"filename": r.pdfs[next], "file_data": "data:" + mime + ";base64," + data,
			}}
			next++
		}
	}
	out, err := json.Marshal(msgs)
	if err != nil {
		return raw
	}
	return out
}

// retryAfter reads a retry-after header: seconds, or an HTTP date.
func retryAfter(h http.Header) time.Duration {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil && s > 0 {
		return time.Duration(s * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), 0)
	}
	return 0
}

// sniffer reads a successful body through to the recorder: each "data:" line of a stream, or
// the whole JSON body (on EOF or close, whichever comes first).
type sniffer struct {
	io.ReadCloser
	rec    *recorder
	stream bool

	mu   sync.Mutex
	buf  []byte
	done bool
}

func (s *sniffer) Read(p []byte) (int, error) {
	n, err := s.ReadCloser.Read(p)
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.done {
		s.buf = append(s.buf, p[:n]...)
		if s.stream {
			s.lines()
		} else if len(s.buf) > maxRecorded {
			s.buf, s.done = nil, true
		}
	}
	switch {
	case err == io.EOF:
		s.end()
	case err != nil:
		s.rec.fail(err)
	}
	return n, err
}

func (s *sniffer) Close() error {
	s.mu.Lock()
	s.end()
	s.mu.Unlock()
	return s.ReadCloser.Close()
}

// lines sniffs the complete lines of a stream read so far.
func (s *sniffer) lines() {
	for {
		i := bytes.IndexByte(s.buf, '\n')
		if i < 0 {
			return
		}
		line := bytes.TrimSpace(s.buf[:i])
		s.buf = s.buf[i+1:]
		if data, ok := bytes.CutPrefix(line, []byte("data:")); ok {
			if data = bytes.TrimSpace(data); len(data) > 0 && data[0] == '{' {
				s.rec.sniff(data, true)
			}
		}
	}
}

// end sniffs what is left, once.
func (s *sniffer) end() {
	if s.done {
		return
	}
	s.done = true
	if s.stream {
		s.buf = append(s.buf, '\n')
		s.lines()
	} else {
		s.rec.sniff(s.buf, false)
	}
	s.buf = nil
}
