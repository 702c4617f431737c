package a2aworker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/internal/a2awire"
	"github.com/agiraph/agiraph/runtime"
	"github.com/agiraph/agiraph/runtime/a2aworker"
	"github.com/agiraph/agiraph/runtime/runtimetest"
)

// agent is a fake remote A2A agent: each task it is given streams the events of script (given
// the task's id and the message), then, with hang, waits until the client goes.
type agent struct {
	script func(task string, msg a2awire.Message) []any
	hang   bool
	sent   chan a2awire.Message // when not nil, each message it is sent

	mu           sync.Mutex
	tasks        int
	messages     []a2awire.Message // every message it was sent
	canceled     []string          // the tasks canceled
	resubscribed []string          // the tasks followed again
}

// serve serves the agent over HTTP for the test, with a token.
func (ag *agent) serve(t *testing.T) *httptest.Server {
	var ts *httptest.Server
	ts = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer agent-token" {
			http.Error(w, "no token", http.StatusUnauthorized)
			return
		}
		if r.Method == http.MethodGet && r.URL.Path == "/.well-known/agent-card.json" {
			_ = json.NewEncoder(w).Encode(a2awire.AgentCard{Name: "fake", URL: ts.URL + "/rpc", ProtocolVersion: a2awire.ProtocolVersion})
			return
		}
		var req struct {
			ID     json.RawMessage
			Method string
			Params json.RawMessage
		}
		require.NoError(t, json.NewDecoder(r.Body).Decode(&req))
		switch req.Method {
		case "tasks/cancel":
			var p a2awire.TaskParams
			require.NoError(t, json.Unmarshal(req.Params, &p))
			ag.mu.Lock()
			ag.canceled = append(ag.canceled, p.ID)
			ag.mu.Unlock()
			_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": a2awire.Task{ID: p.ID, Kind: "task", Status: a2awire.Status{State: a2awire.StateCanceled}}})
			return
		case "tasks/resubscribe":
			var p a2awire.TaskParams
			require.NoError(t, json.Unmarshal(req.Params, &p))
			ag.mu.Lock()
			ag.resubscribed = append(ag.resubscribed, p.ID)
			ag.mu.Unlock()
			ag.stream(w, r, req.ID, p.ID, a2awire.Message{TaskID: p.ID})
			return
		case "message/send", "message/stream":
		default:
			_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": req.ID, "error": a2awire.Error{Code: a2awire.CodeMethodNotFound, Message: req.Method}})
			return
		}
		var p a2awire.SendParams
		require.NoError(t, json.Unmarshal(req.Params, &p))
		ag.mu.Lock()
		ag.messages = append(ag.messages, p.Message)
		if ag.sent != nil {
			ag.sent <- p.Message
		}
		task := p.Message.TaskID
		if task == "" {
			ag.tasks++
			task = fmt.Sprint("task-", ag.tasks)
		}
		ag.mu.Unlock()
		if req.Method == "message/send" {
			_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": a2awire.Task{ID: task, Kind: "task", Status: a2awire.Status{State: a2awire.StateWorking}}})
			return
		}
		ag.stream(w, r, req.ID, task, p.Message)
	}))
	t.Cleanup(ts.Close)
	return ts
}

// stream answers the events of task: the task, then its script's, then, with hang, nothing
// until the client goes.
func (ag *agent) stream(w http.ResponseWriter, r *http.Request, id json.RawMessage, task string, msg a2awire.Message) {
	w.Header().Set("Content-Type", "text/event-stream")
	send := func(v any) {
		data, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "result": v})
		fmt.Fprintf(w, "data: %s\n\n", data)
		w.(http.Flusher).Flush()
	}
	send(a2awire.Task{ID: task, ContextID: task, Kind: "task", Status: a2awire.Status{State: a2awire.StateWorking}})
	for _, ev := range ag.script(task, msg) {
		send(ev)
	}
	if ag.hang {
		<-r.Context().Done()
	}
}

// runtime returns a runtime over the agent.
func (ag *agent) runtime(t *testing.T) runtime.Runtime {
	return a2aworker.New(ag.serve(t).URL, a2aworker.WithToken("agent-token"))
}

func status(task, state, text string, meta map[string]any) a2awire.StatusUpdate {
	u := a2awire.StatusUpdate{TaskID: task, ContextID: task, Kind: "status-update", Final: a2awire.Final(state), Status: a2awire.Status{State: state}}
	if text != "" {
		u.Status.Message = &a2awire.Message{Role: "agent", Kind: "message", MessageID: task + "-" + state, Parts: []a2awire.Part{{Kind: "text", Text: text}}, Metadata: meta}
	}
	return u
}

func artifact(task, name, content string) a2awire.ArtifactUpdate {
	return a2awire.ArtifactUpdate{TaskID: task, ContextID: task, Kind: "artifact-update", LastChunk: true,
		Artifact: a2awire.Artifact{ArtifactID: name, Name: name, Parts: []a2awire.Part{{Kind: "file", File: &a2awire.File{Name: name, Bytes: []byte(content)}}}}}
}

// behaviors makes fake agents for the conformance suite.
type behaviors struct{}

func (behaviors) Prepare(*testing.T, *runtime.Assignment) {}

func (behaviors) Publishes(t *testing.T, file, content, summary string) runtime.Runtime {
	return (&agent{script: func(task string, _ a2awire.Message) []any {
		return []any{artifact(task, file, content), status(task, a2awire.StateCompleted, summary, nil)}
	}}).runtime(t)
}

func (behaviors) Checkpoints(t *testing.T, file, content, summary string) runtime.Runtime {
	return (&agent{script: func(task string, _ a2awire.Message) []any {
		return []any{artifact(task, file, content), status(task, a2awire.StateCompleted, summary, map[string]any{"agiraph.outcome": "checkpointed"})}
	}}).runtime(t)
}

func (behaviors) SendsThenPublishes(t *testing.T, to, body, summary string) runtime.Runtime {
	return (&agent{script: func(task string, _ a2awire.Message) []any {
		return []any{status(task, a2awire.StateWorking, body, map[string]any{"agiraph.to": to}), status(task, a2awire.StateCompleted, summary, nil)}
	}}).runtime(t)
}

func (behaviors) Hangs(t *testing.T) runtime.Runtime {
	return (&agent{script: func(string, a2awire.Message) []any { return nil }, hang: true}).runtime(t)
}

func TestConformance(t *testing.T) { runtimetest.Run(t, behaviors{}) }

// text is a message's text.
func text(m a2awire.Message) string {
	if len(m.Parts) == 0 {
		return ""
	}
	return m.Parts[0].Text
}

// yearAsked runs an assignment on rt, whose agent asks "Which year?", answers "1903", and checks
// that the agent's answer.md is published. It returns the assignment.
func yearAsked(t *testing.T, rt runtime.Runtime) runtime.Assignment {
	a := runtimetest.NewAssignment(t, nil)
	o, err := rt.Run(t.Context(), a, nil)
	require.NoError(t, err)
	require.Equal(t, runtime.Waiting, o.Status)
	assert.Equal(t, "Which year?", o.Question)
	assert.NotEmpty(t, o.Session, "the remote task")

	a.Session, a.Answer = o.Session, "1903"
	o, err = rt.Run(t.Context(), a, nil)
	require.NoError(t, err)
	assert.Equal(t, runtime.Published, o.Status)
	assert.Equal(t, "Answered.", o.Summary)
	assert.Equal(t, []string{"answer.md"}, o.Published)
	got, err := os.ReadFile(filepath.Join(a.Dir.Published(), "answer.md"))
	require.NoError(t, err)
	assert.Equal(t, "The year is 1903.\n", string(got))
	return a
}

func TestQuestionAnswered(t *testing.T) {
	ag := &agent{script: func(task string, msg a2awire.Message) []any {
		if msg.TaskID == "" {
			return []any{status(task, a2awire.StateInputRequired, "Which year?", nil)}
		}
		return []any{artifact(task, "answer.md", "The year is "+text(msg)+".\n"), status(task, a2awire.StateCompleted, "Answered.", nil)}
	}}
	a := yearAsked(t, ag.runtime(t))
	require.Len(t, ag.messages, 2)
	assert.Equal(t, a.Task, text(ag.messages[0]))
	assert.Equal(t, "task-1", ag.messages[1].TaskID, "the answer goes on the task")
}

func TestCancelCancelsTheRemoteTask(t *testing.T) {
	ag := &agent{script: func(task string, _ a2awire.Message) []any {
		return []any{status(task, a2awire.StateWorking, "On it.", nil)}
	}, hang: true}
	rt := ag.runtime(t)
	a := runtimetest.NewAssignment(t, nil)
	ctx, cancel := context.WithCancel(t.Context())
	var events []runtime.Event
	o, err := rt.Run(ctx, a, func(e runtime.Event) {
		events = append(events, e)
		if e.Kind == runtime.Output {
			cancel()
		}
	})
	assert.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, runtime.Cancelled, o.Status)
	assert.Equal(t, []string{"task-1"}, ag.canceled)
}

func TestMessagesGoToTheTask(t *testing.T) {
	mb := &runtimetest.Mailbox{}
	mb.Deliver("coordinator", "Mind the budget.")
	ag := &agent{script: func(string, a2awire.Message) []any { return nil }, hang: true, sent: make(chan a2awire.Message, 2)}
	ts := ag.serve(t)
	rt := a2aworker.New(ts.URL+"/.well-known/agent-card.json", a2aworker.WithToken("agent-token"))
	ctx, cancel := context.WithCancel(t.Context())
	go func() { // the task, then the message on it: the test is over
		<-ag.sent
		forwarded := <-ag.sent
		assert.Equal(t, "task-1", forwarded.TaskID)
		assert.Equal(t, "From coordinator: Mind the budget.", text(forwarded))
		cancel()
	}()
	_, err := rt.Run(ctx, runtimetest.NewAssignment(t, mb), nil)
	assert.ErrorIs(t, err, context.Canceled)
}

func TestFailedTask(t *testing.T) {
	ag := &agent{script: func(task string, _ a2awire.Message) []any {
		return []any{status(task, a2awire.StateFailed, "The data source is down.", nil)}
	}}
	o, err := ag.runtime(t).Run(t.Context(), runtimetest.NewAssignment(t, nil), nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "The data source is down.")
	assert.Equal(t, runtime.Failed, o.Status)
}

func TestBadToken(t *testing.T) {
	ts := (&agent{}).serve(t)
	o, err := a2aworker.New(ts.URL).Run(t.Context(), runtimetest.NewAssignment(t, nil), nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "401")
	assert.Equal(t, runtime.Failed, o.Status)
}

// A Run of an assignment whose task was given already (a crash came after) follows that task.
func TestFollowsItsTaskAgain(t *testing.T) {
	ag := &agent{script: func(task string, _ a2awire.Message) []any {
		return []any{artifact(task, "report.md", "# Report\n"), status(task, a2awire.StateCompleted, "Done.", nil)}
	}}
	a := runtimetest.NewAssignment(t, nil)
	require.NoError(t, os.WriteFile(filepath.Join(a.Dir.Scratch(), "_a2a.json"), []byte(`{"task": "task-9", "context": "ctx-9"}`), 0o644))
	o, err := ag.runtime(t).Run(t.Context(), a, nil)
	require.NoError(t, err)
	assert.Equal(t, runtime.Published, o.Status)
	assert.Equal(t, []string{"report.md"}, o.Published)
	assert.Equal(t, []string{"task-9"}, ag.resubscribed)
	assert.Empty(t, ag.messages, "no new task")
}
