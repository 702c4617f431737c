// Package scripted is a deterministic providers.Model: it plays a script of answers, or answers
// with a function of the conversation. Tests and the offline demo use it in place of a real
// model; a Recorder captures a real model's answers as such a script.
//
// A Model keeps none of the requests it gets, so a long run with many scripted models holds no
// conversations in memory. A test that inspects what a model was asked builds it with
// KeepRequests, and reads them with Requests:
//
//	coder := scripted.New("coder", turns...).KeepRequests()
//	// ... run ...
//	first := coder.Requests()[0]
//
// Requests on a model that was not asked to keep them panics, rather than answer with an empty
// list a test could mistake for "the model was never called".
//
// A Model answers at once. One a person watches is given a pace with Paced: it waits that long
// before each answer, as a real model takes its time, and a cancelled context ends the wait.
package scripted

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/tools"
)

// ErrScriptEnded is returned by a Model asked for more answers than its script has.
var ErrScriptEnded = errors.New("scripted: the script has no more answers")

// Turn is one scripted answer: text, tool calls, or both; or an error.
type Turn struct {
	Text  string       `json:"text,omitempty"`
	Calls []tools.Call `json:"calls,omitempty"`
	// Stop defaults to tool_use when there are calls and to end otherwise.
	Stop  providers.StopReason `json:"stop,omitempty"`
	Usage providers.Usage      `json:"usage,omitempty"`
	// Err, when set, is returned instead of an answer (for example a *providers.Error).
	Err error `json:"-"`
}

// Response turns the turn into the answer a model would give.
func (t Turn) Response(model string) providers.Response {
	msg := providers.Message{Role: providers.Assistant}
	if t.Text != "" {
		msg.Parts = append(msg.Parts, providers.Text(t.Text))
	}
	for i := range t.Calls {
		c := t.Calls[i]
		msg.Parts = append(msg.Parts, providers.Part{Type: providers.ToolCallPart, ToolCall: &c})
	}
	stop := t.Stop
	if stop == "" {
		stop = providers.StopEnd
		if len(t.Calls) > 0 {
			stop = providers.StopToolUse
		}
	}
	return providers.Response{Message: msg, StopReason: stop, Usage: t.Usage, Model: model}
}

// files are the files a scripted model takes: images and PDFs, as bytes or URLs. A request with
// another file, or a malformed one, fails as a real provider's would.
var files = providers.FileLimits{Images: true, ImageURLs: true, PDFs: true, PDFURLs: true}

// Func answers a request; it sees the whole conversation.
type Func func(ctx context.Context, req providers.Request) (Turn, error)

// Model plays a script. It is safe for concurrent use: turns are handed out in the order the calls
// arrive.
type Model struct {
	name string
	fn   Func

	mu       sync.Mutex
	turns    []Turn
	next     int
	keep     bool // keep requests; see KeepRequests
	requests []providers.Request
	pace     time.Duration // the wait before each answer; see Paced
}

// New returns a model named "scripted/<name>" that answers with turns, one per call, in order,
// and fails with ErrScriptEnded after the last.
func New(name string, turns ...Turn) *Model {
	return &Model{name: name, turns: turns}
}

// NewFunc returns a model named "scripted/<name>" that answers every call with fn.
func NewFunc(name string, fn Func) *Model {
	return &Model{name: name, fn: fn}
}

// Name returns "scripted/<name>".
func (m *Model) Name() string { return "scripted/" + m.name }

// Generate answers with the next turn (or the function), after the model's pace. Text is
// streamed to req.OnText word by word, as a real model would. A call cancelled before it
// answers returns the context's error and leaves the script where it was.
func (m *Model) Generate(ctx context.Context, req providers.Request) (providers.Response, error) {
	if err := m.wait(ctx); err != nil {
		return providers.Response{}, err
	}
	if err := files.CheckMessages("scripted", m.name, req.Messages); err != nil {
		return providers.Response{}, err
	}
	m.mu.Lock()
	if m.keep {
		m.requests = append(m.requests, req)
	}
	var (
		turn Turn
		err  error
	)
	if m.fn == nil {
		if m.next >= len(m.turns) {
			err = fmt.Errorf("%w (%s played all %d)", ErrScriptEnded, m.Name(), len(m.turns))
		} else {
			turn = m.turns[m.next]
			m.next++
		}
	}
	m.mu.Unlock()
	if m.fn != nil {
		turn, err = m.fn(ctx, req)
	}
	if err == nil {
		err = turn.Err
	}
	if err != nil {
		return providers.Response{}, err
	}
	if req.OnText != nil && turn.Text != "" {
		for _, w := range strings.SplitAfter(turn.Text, " ") {
			req.OnText(w)
		}
	}
	return turn.Response(m.Name()), nil
}

// wait waits the model's pace, or until ctx is done.
func (m *Model) wait(ctx context.Context) error {
	m.mu.Lock()
	pace := m.pace
	m.mu.Unlock()
	if pace <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(pace)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Paced makes the model wait d before each answer, so that a person can follow a run it plays,
// and returns the model; 0 answers at once, the default. A context cancelled while the model
// waits ends the wait at once, with the context's error.
func (m *Model) Paced(d time.Duration) *Model {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.pace = d
	return m
}

// KeepRequests makes the model keep every request it gets from now on, for Requests to return,
// and returns the model. Call it where the model is built: scripted.New(name, turns...).KeepRequests().
// The requests are kept for the model's lifetime, so leave it off models that are only played.
func (m *Model) KeepRequests() *Model {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.keep = true
	return m
}

// Requests returns the requests the model got since KeepRequests, in order. It panics if the model
// was not asked to keep them: a model keeps none by default.
func (m *Model) Requests() []providers.Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.keep {
		panic(fmt.Sprintf("scripted: Requests on %s, which keeps no requests; build it with scripted.New(...).KeepRequests() or scripted.NewFunc(...).KeepRequests()", m.Name()))
	}
	return append([]providers.Request(nil), m.requests...)
}

// Remaining returns how many scripted turns have not been played.
func (m *Model) Remaining() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.turns) - m.next
}

// Recorder wraps a model and keeps its answers as turns, to be replayed later by New.
type Recorder struct {
	providers.Model
	mu    sync.Mutex
	turns []Turn
}

// Record returns a Recorder around m.
func Record(m providers.Model) *Recorder { return &Recorder{Model: m} }

// Generate calls the wrapped model and records its answer. Opaque provider blocks are not part of
// a turn and are not recorded.
func (r *Recorder) Generate(ctx context.Context, req providers.Request) (providers.Response, error) {
	resp, err := r.Model.Generate(ctx, req)
	if err != nil {
		return resp, err
	}
	r.mu.Lock()
	r.turns = append(r.turns, Turn{Text: resp.Message.Text(), Calls: resp.Message.ToolCalls(), Stop: resp.StopReason, Usage: resp.Usage})
	r.mu.Unlock()
	return resp, nil
}

// Script returns the recorded turns, in the order the answers came.
func (r *Recorder) Script() []Turn {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Turn(nil), r.turns...)
}

// JSON is a turn whose text is v marshalled to JSON: the answer to a request for structured
// output (providers.Request.Output, which a Func sees). It panics when v cannot be marshalled:
// a script's mistake.
func JSON(v any) Turn {
	raw, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("scripted: JSON: %v", err))
	}
	return Turn{Text: string(raw)}
}

// Call is a tool call for a scripted turn, with args marshalled to JSON. It panics when args
// cannot be marshalled: a script's mistake.
func Call(name string, args any) tools.Call {
	raw, err := json.Marshal(args)
	if err != nil {
		panic(fmt.Sprintf("scripted: the arguments of %s: %v", name, err))
	}
	return tools.Call{Name: name, Args: raw}
}

// Last returns what a scripted model answers to: the text of the request's last message and the
// tool results it holds.
func Last(req providers.Request) (text string, results []tools.Result) {
	if len(req.Messages) == 0 {
		return "", nil
	}
	for _, p := range req.Messages[len(req.Messages)-1].Parts {
		switch p.Type {
		case providers.TextPart:
			text += p.Text
		case providers.ToolResultPart:
			results = append(results, *p.ToolResult)
		}
	}
	return text, results
}

// Results returns, for each tool the conversation called, the content of the latest result it
// holds of that tool ("" when none came yet): what a script checks to know how far it has come.
func Results(req providers.Request) map[string]string {
	out := map[string]string{}
	for _, m := range req.Messages {
		for _, c := range m.ToolCalls() {
			if _, ok := out[c.Name]; !ok {
				out[c.Name] = ""
			}
		}
		for _, p := range m.Parts {
			if p.Type == providers.ToolResultPart {
				out[p.ToolResult.Name] = p.ToolResult.Content
			}
		}
	}
	return out
}
