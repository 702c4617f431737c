// Package a2aworker is a runtime adapter that makes a remote A2A agent a worker: it runs an
// assignment by sending its task to the agent (JSON-RPC, a streaming message: A2A 1.0 when the
// agent's card announces it, 0.3 otherwise) and maps the task's lifecycle onto the assignment:
//
//   - the agent's messages while it works are Output events; a message whose metadata names a
//     recipient ("agiraph.to": "coordinator") goes to it through the assignment's mailbox, and
//     messages that arrive in the mailbox go to the agent, on its task;
//   - the artifacts it sends are written to the node's scratch folder (a file part under its
//     name, a text part as <artifact>.md, a data part as <artifact>.json);
//   - "completed" publishes them, with the status message as the summary — or, when the status
//     message's metadata says "agiraph.outcome": "checkpointed", leaves them in scratch and
//     checkpoints;
//   - "input-required" is the worker's question to the human (Outcome.Question; the task's id is
//     Outcome.Session), and the Run that brings Assignment.Answer sends it on the task;
//   - "failed", "canceled" and the others end the assignment so, with the status message as
//     the error;
//   - the end of Run's context cancels the remote task (tasks/cancel).
//
// The remote task's id is kept in the node's scratch folder (_a2a.json): a Run of the same
// assignment after a crash follows the same task again (tasks/resubscribe).
//
// It speaks JSON-RPC over HTTP and server-sent events with the standard library only.
package a2aworker

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agiraph/agiraph/internal/a2awire"
	"github.com/agiraph/agiraph/runtime"
	"github.com/agiraph/agiraph/runtime/adapter"
)

// Runtime runs assignments on a remote A2A agent. It is safe for concurrent use.
type Runtime struct {
	url    string
	client *http.Client
	token  string

	mu       sync.Mutex
	endpoint string          // the card's JSON-RPC URL, once read
	version  a2awire.Version // the version of A2A spoken there
	ids      atomic.Int64
}

// Option configures a Runtime.
type Option func(*Runtime)

// WithClient sets the HTTP client that talks to the agent (default: http.DefaultClient).
func WithClient(c *http.Client) Option { return func(r *Runtime) { r.client = c } }

// WithToken sends token as a bearer token with each request (the card's too).
func WithToken(token string) Option { return func(r *Runtime) { r.token = token } }

// New returns a runtime over the A2A agent at url: the URL its card is served under
// (url/.well-known/agent-card.json), or the URL of the card itself (ending in .json).
func New(url string, opts ...Option) *Runtime {
	r := &Runtime{url: url, client: http.DefaultClient}
	for _, o := range opts {
		o(r)
	}
	return r
}

// cancelWait bounds how long a Run whose context ended waits for the agent to take the
// cancellation of its task.
const cancelWait = 2 * time.Second

// mailEvery is how often the mailbox is looked at while the agent works.
const mailEvery = 200 * time.Millisecond

// stateFile keeps the remote task's id in the node's scratch folder: a protocol file, never
// published.
const stateFile = "_a2a.json"

// Metadata keys of the agent's messages that the adapter reads.
const (
	metaTo      = "agiraph.to"      // the recipient of a message the agent sends
	metaOutcome = "agiraph.outcome" // "checkpointed": the completed task checkpoints
)

// Run runs a on the agent: see the package documentation.
func (r *Runtime) Run(ctx context.Context, a runtime.Assignment, sink runtime.Sink) (runtime.Outcome, error) {
	em := adapter.NewEmitter(a, sink)
	if err := ctx.Err(); err != nil {
		return em.End(runtime.Outcome{Status: runtime.StatusOf(ctx, err)}, err)
	}
	em.Emit(runtime.Event{Kind: runtime.Started, Text: "remote A2A agent at " + r.url})
	w := &work{r: r, a: a, em: em}
	o, err := w.run(ctx)
	if err != nil && ctx.Err() != nil {
		o.Status, err = runtime.StatusOf(ctx, ctx.Err()), ctx.Err()
	}
	return em.End(o, err)
}

// work is one Run.
type work struct {
	r  *Runtime
	a  runtime.Assignment
	em *adapter.Emitter
	// the remote task's id and its context's, once known
	task, context string
}

func (w *work) run(ctx context.Context) (runtime.Outcome, error) {
	endpoint, err := w.r.resolve(ctx)
	if err != nil {
		return runtime.Outcome{Status: runtime.Failed}, err
	}
	var saved struct{ Task, Context string }
	_ = readJSON(filepath.Join(w.a.Dir.Scratch(), stateFile), &saved)
	w.task, w.context = saved.Task, saved.Context
	if w.task == "" {
		w.task = w.a.Session
	}
	method, params := "message/stream", any(a2awire.SendParams{Message: w.message(w.a.Task)})
	switch {
	case w.a.Answer != "" && w.task != "":
		params = a2awire.SendParams{Message: w.message(w.a.Answer)}
	case w.task != "":
		method, params = "tasks/resubscribe", a2awire.TaskParams{ID: w.task}
	}
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	resp, err := w.r.call(ctx, endpoint, method, params, "text/event-stream")
	if err != nil {
		return runtime.Outcome{Status: runtime.Failed}, err
	}
	events := make(chan result)
	done := make(chan struct{})
	go func() { // the stream's events; it ends when its body closes
		defer close(done)
		defer close(events)
		sse(resp.Body, func(data []byte) bool {
			select {
			case events <- decode(data):
				return true
			case <-ctx.Done():
				return false
			}
		})
	}()
	defer func() { resp.Body.Close(); <-done }()
	tick := time.NewTicker(mailEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			w.cancel(ctx, endpoint)
			return runtime.Outcome{}, ctx.Err()
		case <-tick.C:
			if err := w.forward(ctx, endpoint); err != nil {
				return runtime.Outcome{Status: runtime.Failed}, err
			}
		case ev, ok := <-events:
			if !ok {
				if ctx.Err() != nil {
					continue
				}
				return runtime.Outcome{Status: runtime.Failed}, fmt.Errorf("a2aworker: %s: the stream of task %q ended before the task did", w.r.url, w.task)
			}
			if o, end, err := w.handle(ctx, ev); end || err != nil {
				return o, err
			}
		}
	}
}

// message is the user's message text, on the remote task when there is one.
func (w *work) message(text string) a2awire.Message {
	return a2awire.Message{Role: "user", Kind: "message", TaskID: w.task, ContextID: w.context,
		MessageID: fmt.Sprintf("%s-%d-%d", w.a.ID, time.Now().UnixNano(), w.r.ids.Add(1)),
		Parts:     []a2awire.Part{{Kind: "text", Text: text}}}
}

// result is an event of a stream: its JSON-RPC result, or error.
type result struct {
	raw json.RawMessage
	err error
}

func decode(data []byte) result {
	var resp struct {
		Result json.RawMessage `json:"result"`
		Error  *a2awire.Error  `json:"error"`
	}
	if err := json.Unmarshal(data, &resp); err != nil {
		return result{err: fmt.Errorf("an event that is not JSON-RPC: %w", err)}
	}
	if resp.Error != nil {
		return result{err: resp.Error}
	}
	return result{raw: resp.Result}
}

// handle takes an event of the stream; end says the assignment ended, with o and err.
func (w *work) handle(ctx context.Context, res result) (o runtime.Outcome, end bool, err error) {
	if res.err != nil {
		return runtime.Outcome{Status: runtime.Failed}, true, fmt.Errorf("a2aworker: %s: %w", w.r.url, res.err)
	}
	ev, err := w.r.version.DecodeEvent(res.raw)
	if err != nil {
		return runtime.Outcome{Status: runtime.Failed}, true, fmt.Errorf("a2aworker: %s: an event of the stream: %w", w.r.url, err)
	}
	var st a2awire.Status
	switch ev := ev.(type) {
	case a2awire.Message: // an answer without a task
		o, err := w.publish(text(ev.Parts))
		return o, true, err
	case a2awire.Task:
		if err := w.know(ev.ID, ev.ContextID); err != nil {
			return runtime.Outcome{Status: runtime.Failed}, true, err
		}
		for _, art := range ev.Artifacts {
			if err := w.write(art, false); err != nil {
				return runtime.Outcome{Status: runtime.Failed}, true, err
			}
		}
		st = ev.Status
	case a2awire.ArtifactUpdate:
		if err := w.know(ev.TaskID, ev.ContextID); err != nil {
			return runtime.Outcome{Status: runtime.Failed}, true, err
		}
		return runtime.Outcome{}, false, w.write(ev.Artifact, ev.Append)
	case a2awire.StatusUpdate:
		if err := w.know(ev.TaskID, ev.ContextID); err != nil {
			return runtime.Outcome{Status: runtime.Failed}, true, err
		}
		st = ev.Status
	}
	return w.status(ctx, st)
}

// know records the remote task's id and its context's, the first time it is told.
func (w *work) know(task, context string) error {
	if task == "" || task == w.task && context == w.context {
		return nil
	}
	w.task, w.context = task, context
	return writeJSON(filepath.Join(w.a.Dir.Scratch(), stateFile), map[string]string{"task": task, "context": context})
}

// status takes the task's status: a message while it works, or its end.
func (w *work) status(ctx context.Context, s a2awire.Status) (runtime.Outcome, bool, error) {
	var msg string
	var meta map[string]any
	if s.Message != nil {
		msg, meta = text(s.Message.Parts), s.Message.Metadata
	}
	switch s.State {
	case a2awire.StateSubmitted, a2awire.StateWorking:
		if msg == "" {
			return runtime.Outcome{}, false, nil
		}
		if to, _ := meta[metaTo].(string); to != "" {
			return runtime.Outcome{Status: runtime.Failed}, false, w.send(ctx, to, msg, s.Message.MessageID)
		}
		w.em.Emit(runtime.Event{Kind: runtime.Output, Text: msg})
		return runtime.Outcome{}, false, nil
	case a2awire.StateCompleted:
		if meta[metaOutcome] == string(runtime.Checkpointed) {
			return runtime.Outcome{Status: runtime.Checkpointed, Summary: msg, Session: w.task}, true, nil
		}
		o, err := w.publish(msg)
		return o, true, err
	case a2awire.StateInputRequired:
		w.em.Emit(runtime.Event{Kind: runtime.AskedHuman, Text: msg})
		return runtime.Outcome{Status: runtime.Waiting, Question: msg, Session: w.task}, true, nil
	case a2awire.StateCanceled:
		return runtime.Outcome{Status: runtime.Cancelled, Summary: msg, Session: w.task}, true,
			fmt.Errorf("a2aworker: %s canceled task %q: %s", w.r.url, w.task, msg)
	}
	return runtime.Outcome{Status: runtime.Failed, Summary: msg, Session: w.task}, true,
		fmt.Errorf("a2aworker: task %q of %s is %s: %s", w.task, w.r.url, s.State, msg)
}

// publish publishes what the agent wrote, with summary.
func (w *work) publish(summary string) (runtime.Outcome, error) {
	files, err := w.a.Dir.Publish()
	if err != nil {
		return runtime.Outcome{Status: runtime.Failed, Summary: summary}, err
	}
	return runtime.Outcome{Status: runtime.Published, Summary: summary, Published: files, Session: w.task}, nil
}

// send sends the agent's message to its recipient, once.
func (w *work) send(ctx context.Context, to, body, id string) error {
	if w.a.Mailbox == nil {
		return fmt.Errorf("a2aworker: %s sent a message to %q, and the worker has no mailbox", w.r.url, to)
	}
	if err := w.a.Mailbox.Send(ctx, w.a.ID+"/"+w.task+"/"+id, to, body); err != nil {
		return err
	}
	w.em.Emit(runtime.Event{Kind: runtime.MessageSent, Message: &runtime.Message{From: w.a.Worker, To: to, Body: body, Time: time.Now()}})
	return nil
}

// forward sends the messages waiting in the mailbox to the agent, on its task.
func (w *work) forward(ctx context.Context, endpoint string) error {
	if w.a.Mailbox == nil || w.task == "" {
		return nil
	}
	no := false
	for _, m := range w.a.Mailbox.Receive("") {
		w.em.Emit(runtime.Event{Kind: runtime.MessageReceived, Message: &m})
		params := a2awire.SendParams{Message: w.message(fmt.Sprintf("From %s: %s", m.From, m.Body)), Configuration: &a2awire.SendConfig{Blocking: &no}}
		resp, err := w.r.call(ctx, endpoint, "message/send", params, "application/json")
		if err != nil {
			return err
		}
		res := decodeBody(resp)
		if res.err != nil {
			return fmt.Errorf("a2aworker: %s: a message on task %q: %w", w.r.url, w.task, res.err)
		}
	}
	return nil
}

// cancel cancels the remote task, waiting cancelWait at the most.
func (w *work) cancel(ctx context.Context, endpoint string) {
	if w.task == "" {
		return
	}
	ctx, stop := context.WithTimeout(context.WithoutCancel(ctx), cancelWait)
	defer stop()
	if resp, err := w.r.call(ctx, endpoint, "tasks/cancel", a2awire.TaskParams{ID: w.task}, "application/json"); err == nil {
		resp.Body.Close()
	}
}

// decodeBody reads the JSON-RPC response of a call.
func decodeBody(resp *http.Response) result {
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return result{err: err}
	}
	return decode(data)
}

// text joins the text parts.
func text(parts []a2awire.Part) string {
	var s []string
	for _, p := range parts {
		if p.Kind == "text" && p.Text != "" {
			s = append(s, p.Text)
		}
	}
	return strings.Join(s, "\n")
}

// write writes an artifact's parts to scratch: appended to what its earlier chunks wrote when
// add is set. A file already published is left as it is.
func (w *work) write(art a2awire.Artifact, add bool) error {
	base := art.Name
	if base == "" {
		base = art.ArtifactID
	}
	for i, p := range art.Parts {
		name, data := base, []byte(p.Text)
		switch p.Kind {
		case "file":
			if p.File == nil {
				continue
			}
			if p.File.Name != "" {
				name = p.File.Name
			}
			data = p.File.Bytes
		case "data":
			name, data = withExt(base, ".json"), p.Data
		default:
			name = withExt(base, ".md")
		}
		if len(art.Parts) > 1 && i > 0 && name == base {
			name = fmt.Sprintf("%s-%d", name, i+1)
		}
		name, err := fileName(name)
		if err != nil {
			return fmt.Errorf("a2aworker: %s: artifact %q: %w", w.r.url, art.ArtifactID, err)
		}
		if _, err := os.Lstat(filepath.Join(w.a.Dir.Published(), name)); err == nil {
			continue
		}
		flag := os.O_WRONLY | os.O_CREATE | os.O_TRUNC
		if add {
			flag = os.O_WRONLY | os.O_CREATE | os.O_APPEND
		}
		f, err := os.OpenFile(filepath.Join(w.a.Dir.Scratch(), name), flag, 0o644)
		if err != nil {
			return err
		}
		_, err = f.Write(data)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// withExt is name with ext, unless it has an extension.
func withExt(name, ext string) string {
	if filepath.Ext(name) != "" {
		return name
	}
	return name + ext
}

// fileName checks the name of an artifact's file: a plain name in scratch, which publishing
// moves (not a protocol or hidden file).
func fileName(name string) (string, error) {
	name = strings.ReplaceAll(name, "\\", "/")
	name = strings.ReplaceAll(strings.Trim(name, "/"), "/", "_")
	if name == "" || name == "." || name == ".." || strings.HasPrefix(name, "_") || strings.HasPrefix(name, ".") {
		return "", fmt.Errorf("the file name %q is not one the adapter writes (empty, hidden, or a protocol file)", name)
	}
	return name, nil
}

// resolve returns the agent's JSON-RPC endpoint, from its card (read once).
func (r *Runtime) resolve(ctx context.Context) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.endpoint != "" {
		return r.endpoint, nil
	}
	u := r.url
	if !strings.HasSuffix(u, ".json") {
		u = strings.TrimSuffix(u, "/") + "/.well-known/agent-card.json"
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return "", fmt.Errorf("a2aworker: the agent's card: %w", err)
	}
	r.authorize(req)
	resp, err := r.client.Do(req)
	if err != nil {
		return "", fmt.Errorf("a2aworker: the agent's card: %w", err)
	}
	defer resp.Body.Close()
	var card a2awire.AgentCard
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("a2aworker: the agent's card at %s: %s", u, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(&card); err != nil {
		return "", fmt.Errorf("a2aworker: %s is not an agent card: %w", u, err)
	}
	if r.endpoint, r.version = card.Endpoint(); r.endpoint == "" {
		return "", fmt.Errorf("a2aworker: the agent card at %s has no JSON-RPC interface of A2A 1.0 or 0.3", u)
	}
	return r.endpoint, nil
}

func (r *Runtime) authorize(req *http.Request) {
	if r.token != "" {
		req.Header.Set("Authorization", "Bearer "+r.token)
	}
}

// call posts a JSON-RPC request of method (by its 0.3 name), in the agent's version of A2A; a
// status other than 200 is an error that names it.
func (r *Runtime) call(ctx context.Context, endpoint, method string, params any, accept string) (*http.Response, error) {
	v := r.version
	params, method = v.Params(method, params), v.Method(method)
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": r.ids.Add(1), "method": method, "params": params})
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("a2aworker: %s: %w", method, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", accept)
	req.Header.Set(a2awire.VersionHeader, string(v))
	r.authorize(req)
	resp, err := r.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("a2aworker: %s %s: %w", method, endpoint, err)
	}
	if resp.StatusCode != http.StatusOK {
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		resp.Body.Close()
		return nil, fmt.Errorf("a2aworker: %s %s: %s: %s", method, endpoint, resp.Status, bytes.TrimSpace(data))
	}
	if ct := resp.Header.Get("Content-Type"); accept == "text/event-stream" && !strings.HasPrefix(ct, "text/event-stream") {
		res := decodeBody(resp) // a JSON-RPC error instead of a stream
		if res.err == nil {
			res.err = errors.New("the answer is not a stream of events")
		}
		return nil, fmt.Errorf("a2aworker: %s %s: %w", method, endpoint, res.err)
	}
	return resp, nil
}

// sse reads server-sent events from body, calling fn with the data of each until it reports
// false or the body ends.
func sse(body io.Reader, fn func(data []byte) bool) {
	sc := bufio.NewScanner(body)
	sc.Buffer(nil, 64<<20)
	var data []byte
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if len(data) > 0 && !fn(data) {
				return
			}
			data = nil
		case strings.HasPrefix(line, "data:"):
			if len(data) > 0 {
				data = append(data, '\n')
			}
			data = append(data, strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " ")...)
		}
	}
	if len(data) > 0 {
		fn(data)
	}
}

func readJSON(path string, v any) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return json.Unmarshal(data, v)
}

func writeJSON(path string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}
