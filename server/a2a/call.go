package a2a

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agiraph/agiraph/internal/a2awire"
)

// backend is what a Handler serves: the agents of a host (New), or a graph as an agent
// (NewGraph). The JSON-RPC methods, streams and push notifications are the Handler's, over it.
type backend interface {
	// agent returns agent id, or an error wrapping errNoAgent.
	agent(ctx context.Context, id string) (agent, error)
	// describe returns what agent id's card says of it: its description and its skill; an
	// error wrapping errNoAgent when there is no such agent.
	describe(id string) (string, Skill, error)
	// pending returns the tasks, by agent, whose push notifications were being sent when the
	// backend last stopped.
	pending(ctx context.Context) map[string][]string
	// close ends what the backend runs, and waits for it.
	close()
}

// agent is an agent of a backend: its tasks, and the records the Handler keeps of them.
type agent interface {
	ID() string
	// status returns the state of task, its status message and its output; the error of a
	// task the agent has not (see notFound).
	status(task string) (state, msg, output string, err error)
	// contents returns the history of task (its output aside) and its artifacts (the same).
	contents(task string) ([]Message, []Artifact, error)
	// cursor returns where the updates of task are now: a watch from there misses none of the
	// updates that come after.
	cursor(task string) (int64, error)
	// deliver acts on a message's text: a new task toward it when task is "", else a message
	// on task.
	deliver(ctx context.Context, task, text string) (delivered, error)
	// cancel cancels task, which has not ended.
	cancel(ctx context.Context, task string) error
	// watch follows task from the update after cursor after, its state as shown being state: it
	// calls emit with each update (a StatusUpdate or an ArtifactUpdate) until the task reaches
	// a final state — the last update emitted is its final status — emit reports false, or ctx
	// ends. It reports whether the task reached a final state.
	watch(ctx context.Context, task string, after int64, state string, emit func(any) bool) bool
	// record returns the record of task (an empty one when there is none); update changes it
	// with fn, which reports whether it changed it.
	record(task string) record
	update(task string, fn func(*record) bool) error
}

// errNoAgent is the error of an agent a backend has not.
var errNoAgent = errors.New("no such agent")

// record is what the handler keeps of a task: how it ended, once it did, and where its push
// notifications go.
type record struct {
	State  string       `json:"state,omitempty"`
	Output string       `json:"output,omitempty"`
	Push   []pushConfig `json:"push,omitempty"`
}

// ended records in a's record of task how it ended.
func ended(a agent, task, state, output string) error {
	return a.update(task, func(rec *record) bool {
		if rec.State == state && rec.Output == output {
			return false
		}
		rec.State, rec.Output = state, output
		return true
	})
}

// call is a JSON-RPC call to an agent.
type call struct {
	h      *Handler
	a      agent
	id     json.RawMessage
	method string          // by its 0.3 name
	v      a2awire.Version // the version the call speaks
}

// notFound is the error of a task agent a has not.
func notFound(a agent, task string) error {
	return &a2awire.Error{Code: a2awire.CodeTaskNotFound, Message: fmt.Sprintf("agent %q has no task %q", a.ID(), task)}
}

// delivered is where a message left its task: its id, its state as the message found it, and
// the cursor of its updates before.
type delivered struct {
	run   string
	state string
	after int64
}

// deliver acts on a message: see agent.deliver. It sets the message's push notification
// config, if it has one.
func (c *call) deliver(ctx context.Context, p a2awire.SendParams) (delivered, error) {
	msg := text(p.Message)
	if strings.TrimSpace(msg) == "" {
		return delivered{}, invalid("the message has no text part: send the goal, or the answer, as text")
	}
	d, err := c.a.deliver(ctx, p.Message.TaskID, msg)
	if err != nil {
		return delivered{}, err
	}
	if cfg := p.Configuration; cfg != nil && cfg.Push != nil {
		if _, err := c.setPushOf(d.run, *cfg.Push); err != nil {
			return delivered{}, err
		}
	}
	return d, nil
}

// send is message/send: it answers the task once it reaches a final state (or at once, when
// the configuration says blocking false).
func (c *call) send(ctx context.Context, raw json.RawMessage) (any, error) {
	var p a2awire.SendParams
	if err := c.params(raw, &p); err != nil {
		return nil, err
	}
	d, err := c.deliver(ctx, p)
	if err != nil {
		return nil, err
	}
	var history *int
	if cfg := p.Configuration; cfg != nil {
		history = cfg.HistoryLength
		if cfg.Blocking != nil && !*cfg.Blocking {
			return taskNow(c.a, d.run, history)
		}
	}
	c.a.watch(ctx, d.run, d.after, d.state, func(any) bool { return true })
	return taskNow(c.a, d.run, history)
}

// get is tasks/get.
func (c *call) get(raw json.RawMessage) (any, error) {
	var p a2awire.TaskParams
	if err := c.params(raw, &p); err != nil {
		return nil, err
	}
	return taskNow(c.a, p.ID, p.HistoryLength)
}

// cancel is tasks/cancel.
func (c *call) cancel(ctx context.Context, raw json.RawMessage) (any, error) {
	var p a2awire.TaskParams
	if err := c.params(raw, &p); err != nil {
		return nil, err
	}
	state, _, _, err := c.a.status(p.ID)
	if err != nil {
		return nil, err
	}
	if a2awire.Terminal(state) || state == StateUnknown {
		return nil, &a2awire.Error{Code: a2awire.CodeNotCancelable, Message: fmt.Sprintf("task %q is %s: it cannot be canceled", p.ID, state)}
	}
	if err := c.a.cancel(ctx, p.ID); err != nil {
		return nil, &a2awire.Error{Code: a2awire.CodeNotCancelable, Message: fmt.Sprintf("task %q: %v", p.ID, err)}
	}
	return taskNow(c.a, p.ID, nil)
}

func now() string { return time.Now().UTC().Format(time.RFC3339Nano) }

// agentMessage is a message of the agent on task run.
func agentMessage(run, id, text string) *Message {
	return &Message{Role: "agent", Kind: "message", MessageID: id, TaskID: run, ContextID: run,
		Parts: []Part{{Kind: "text", Text: text}}}
}

// userMessage is a message of the user on task run.
func userMessage(run, id, text string) *Message {
	m := agentMessage(run, id, text)
	m.Role = "user"
	return m
}

// statusUpdate is the update of task run's status.
func statusUpdate(run, state string, msg *Message) StatusUpdate {
	return StatusUpdate{TaskID: run, ContextID: run, Kind: "status-update", Final: a2awire.Final(state),
		Status: Status{State: state, Message: msg, Timestamp: now()}}
}

// artifactUpdate is the update of an artifact of task run.
func artifactUpdate(run string, art Artifact) ArtifactUpdate {
	return ArtifactUpdate{TaskID: run, ContextID: run, Kind: "artifact-update", Artifact: art, LastChunk: true}
}

// outputArtifact is the artifact of a task's output.
func outputArtifact(output string) Artifact {
	return Artifact{ArtifactID: "output", Name: "output", Description: "The task's output.", Parts: []Part{{Kind: "text", Text: output}}}
}

// taskNow returns task run of a as it is now, with the last history messages of its history (all
// when history is nil): its output, once it completed, is its last message and an artifact.
func taskNow(a agent, run string, history *int) (Task, error) {
	state, msg, output, err := a.status(run)
	if err != nil {
		return Task{}, err
	}
	t := Task{ID: run, ContextID: run, Kind: "task", Status: Status{State: state, Timestamp: now()}}
	if msg != "" {
		t.Status.Message = agentMessage(run, run+"-status", msg)
	}
	if t.History, t.Artifacts, err = a.contents(run); err != nil {
		return Task{}, err
	}
	if state == StateCompleted && output != "" {
		t.History = append(t.History, *agentMessage(run, run+"-output", output))
		t.Artifacts = append(t.Artifacts, outputArtifact(output))
	}
	if history != nil && *history < len(t.History) {
		t.History = t.History[len(t.History)-max(*history, 0):]
	}
	return t, nil
}

// text returns the text of a message's text parts.
func text(m Message) string {
	var b strings.Builder
	for _, p := range m.Parts {
		if p.Kind == "text" && p.Text != "" {
			if b.Len() > 0 {
				b.WriteString("\n")
			}
			b.WriteString(p.Text)
		}
	}
	return b.String()
}
