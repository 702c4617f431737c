package a2a

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"mime"
	"path"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agiraph/agiraph/internal/a2awire"
	"github.com/agiraph/agiraph/nodes/eventlog"
	"github.com/agiraph/agiraph/nodes/workspace"
	"github.com/agiraph/agiraph/server/host"
)

// call is a JSON-RPC call to an agent.
type call struct {
	h      *Handler
	a      *host.Agent
	id     json.RawMessage
	method string          // by its 0.3 name
	v      a2awire.Version // the version the call speaks
}

// notFound is the error of a task the agent has not.
func (c *call) notFound(task string) error {
	return &a2awire.Error{Code: a2awire.CodeTaskNotFound, Message: fmt.Sprintf("agent %q has no task %q", c.a.ID(), task)}
}

// stateOf returns the state of the task that is the agent's last run, described by sum, and
// its status message.
func stateOf(sum host.Summary) (string, string) {
	switch sum.Status {
	case host.StatusWorking, host.StatusInterrupted:
		return StateWorking, ""
	case host.StatusQueued:
		return StateSubmitted, ""
	case host.StatusWaiting:
		q := sum.Question
		if q == "" {
			q = fmt.Sprintf("%s waits for your answer.", sum.WaitingFor)
		}
		return StateInputRequired, q
	case host.StatusPaused:
		return StateCanceled, ""
	case host.StatusComplete:
		return StateCompleted, sum.Output
	case host.StatusFailed, host.StatusDamaged:
		return StateFailed, sum.Error
	}
	return StateUnknown, ""
}

// status returns the state of task run and its status message, and its output; the error of a
// task the agent has not.
func (c *call) status(run string) (state, msg, output string, err error) {
	sum := c.a.Summary()
	if run != "" && run == sum.Run {
		state, msg = stateOf(sum)
		if a2awire.Terminal(state) {
			c.h.records.ended(c.a.ID(), run, state, sum.Output)
		}
		return state, msg, sum.Output, nil
	}
	if workspace.ValidID(run) != nil {
		return "", "", "", c.notFound(run)
	}
	rec := c.h.records.read(c.a.ID(), run)
	if rec.State == "" {
		root, err := c.a.OpenRun(run)
		if err != nil {
			return "", "", "", c.notFound(run)
		}
		root.Close()
		rec.State = StateUnknown
	}
	return rec.State, "", rec.Output, nil
}

// agentMessage is a message of the agent on task run.
func agentMessage(run, id, text string) *Message {
	return &Message{Role: "agent", Kind: "message", MessageID: id, TaskID: run, ContextID: run,
		Parts: []Part{{Kind: "text", Text: text}}}
}

// task returns task run as it is now, with the last history messages of its history (all when
// history is nil).
func (c *call) task(run string, history *int) (Task, error) {
	state, msg, output, err := c.status(run)
	if err != nil {
		return Task{}, err
	}
	t := Task{ID: run, ContextID: run, Kind: "task", Status: Status{State: state, Timestamp: now()}}
	if msg != "" {
		t.Status.Message = agentMessage(run, run+"-status", msg)
	}
	evs, err := c.a.Events(0, 0)
	if err != nil {
		return Task{}, err
	}
	for _, e := range evs {
		if e.Run != run {
			continue
		}
		if m := historyOf(e); m != nil {
			t.History = append(t.History, *m)
		}
		if e.Type == eventlog.NodeCompleted {
			t.Artifacts = append(t.Artifacts, c.published(run, e.Node)...)
		}
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

func now() string { return time.Now().UTC().Format(time.RFC3339Nano) }

// historyOf returns the message of the task's history that event e is, or nil.
func historyOf(e eventlog.Event) *Message {
	role := ""
	switch e.Type {
	case eventlog.AgentStarted, eventlog.HumanResponse, eventlog.HumanNudge:
		role = "user"
	case eventlog.HumanQuestion:
		role = "agent"
	default:
		return nil
	}
	if e.Text == "" {
		return nil
	}
	return &Message{Role: role, Kind: "message", MessageID: fmt.Sprintf("%s-%d", e.Run, e.Seq), TaskID: e.Run, ContextID: e.Run,
		Parts: []Part{{Kind: "text", Text: e.Text}}}
}

// outputArtifact is the artifact of a task's output.
func outputArtifact(output string) Artifact {
	return Artifact{ArtifactID: "output", Name: "output", Description: "The squad's output.", Parts: []Part{{Kind: "text", Text: output}}}
}

// maxArtifact bounds a published file sent as an artifact, in bytes: a larger one is named, not
// sent.
const maxArtifact = 4 << 20

// published returns the artifacts of the files node published in run: each file a file part,
// its content in base64.
func (c *call) published(run, node string) []Artifact {
	if workspace.ValidID(node) != nil {
		return nil
	}
	root, err := c.a.OpenRun(run)
	if err != nil {
		return nil
	}
	defer root.Close()
	dir := workspace.Run(".").Node(node).Published()
	var out []Artifact
	_ = fs.WalkDir(root.FS(), dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil
		}
		name := strings.TrimPrefix(p, dir+"/")
		art := Artifact{ArtifactID: node + "/" + name, Name: node + "/" + name, Description: fmt.Sprintf("published by node %s", node)}
		info, err := d.Info()
		if err != nil || info.Size() > maxArtifact {
			art.Parts = []Part{{Kind: "text", Text: fmt.Sprintf("%s is larger than %d bytes: read it from the agent's workspace.", name, maxArtifact)}}
			out = append(out, art)
			return nil
		}
		data, err := fs.ReadFile(root.FS(), p)
		if err != nil {
			return nil
		}
		typ := mime.TypeByExtension(path.Ext(name))
		if typ == "" {
			typ = "application/octet-stream"
			if utf8.Valid(data) {
				typ = "text/plain"
			}
		}
		art.Parts = []Part{{Kind: "file", File: &File{Name: art.Name, MimeType: typ, Bytes: data}}}
		out = append(out, art)
		return nil
	})
	return out
}

// lastSeq returns the seq of the agent's last logged event.
func (c *call) lastSeq() (int64, error) {
	evs, err := c.a.Events(0, 0)
	if err != nil || len(evs) == 0 {
		return 0, err
	}
	return evs[len(evs)-1].Seq, nil
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

// delivered is where a message left its task: its id, its state as the message found it, and
// the seq of the agent's last event before.
type delivered struct {
	run   string
	state string
	after int64
}

// deliver acts on a message: a new run toward its text, or on the task it names, a message to
// its coordinator or the answer to its question.
func (c *call) deliver(ctx context.Context, p a2awire.SendParams) (delivered, error) {
	msg := text(p.Message)
	if strings.TrimSpace(msg) == "" {
		return delivered{}, invalid("the message has no text part: send the goal, or the answer, as text")
	}
	after, err := c.lastSeq()
	if err != nil {
		return delivered{}, err
	}
	d := delivered{run: p.Message.TaskID, state: StateWorking, after: after}
	if d.run == "" {
		if _, last := c.a.State(); last != "" {
			_, _, _, _ = c.status(last) // a task that ended is recorded as it ended
		}
		started, err := c.a.Run(msg)
		if errors.Is(err, host.ErrBusy) {
			_, cur := c.a.State()
			return delivered{}, &a2awire.Error{Code: a2awire.CodeUnsupported, Message: fmt.Sprintf("agent %q is at work on task %q: send the message with that taskId to take part in it, or cancel it first", c.a.ID(), cur)}
		}
		if err != nil {
			return delivered{}, err
		}
		d.run = started.Run
	} else {
		d.state, _, _, err = c.status(d.run)
		if err != nil {
			return delivered{}, err
		}
		switch d.state {
		case StateInputRequired:
			_, err = c.a.Answer(ctx, "", msg)
		case StateWorking, StateSubmitted:
			err = c.a.Send(ctx, "", msg)
		default:
			err = &a2awire.Error{Code: a2awire.CodeUnsupported, Message: fmt.Sprintf("task %q is %s and takes no more messages: send a message without a taskId for a new task", d.run, d.state)}
		}
		if err != nil {
			return delivered{}, err
		}
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
			return c.task(d.run, history)
		}
	}
	c.watch(ctx, d.run, d.after, d.state, func(any) bool { return true })
	return c.task(d.run, history)
}

// get is tasks/get.
func (c *call) get(raw json.RawMessage) (any, error) {
	var p a2awire.TaskParams
	if err := c.params(raw, &p); err != nil {
		return nil, err
	}
	return c.task(p.ID, p.HistoryLength)
}

// cancel is tasks/cancel: it pauses the task's run.
func (c *call) cancel(ctx context.Context, raw json.RawMessage) (any, error) {
	var p a2awire.TaskParams
	if err := c.params(raw, &p); err != nil {
		return nil, err
	}
	state, _, _, err := c.status(p.ID)
	if err != nil {
		return nil, err
	}
	if a2awire.Terminal(state) || state == StateUnknown {
		return nil, &a2awire.Error{Code: a2awire.CodeNotCancelable, Message: fmt.Sprintf("task %q is %s: it cannot be canceled", p.ID, state)}
	}
	if err := c.a.Pause(ctx); err != nil {
		return nil, &a2awire.Error{Code: a2awire.CodeNotCancelable, Message: fmt.Sprintf("task %q: %v", p.ID, err)}
	}
	return c.task(p.ID, nil)
}

// pollEvery is how often a task followed is looked at, beside its events: a run's end or its
// question shows in the agent's state, not always in an event.
const pollEvery = 100 * time.Millisecond

// watch follows task run from the event after seq after, its state as shown being state: it
// calls emit with each update (a StatusUpdate or an ArtifactUpdate) until the task reaches a
// final state — the last update emitted is its final status — emit reports false, ctx ends or
// the host closes. It reports whether the task reached a final state.
func (c *call) watch(ctx context.Context, run string, after int64, state string, emit func(any) bool) bool {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	events := c.a.Follow(ctx, after)
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	update := func(msg *Message, st string) StatusUpdate {
		return StatusUpdate{TaskID: run, ContextID: run, Kind: "status-update", Final: a2awire.Final(st),
			Status: Status{State: st, Message: msg, Timestamp: now()}}
	}
	for {
		select {
		case <-ctx.Done():
			return false
		case e, ok := <-events:
			if !ok {
				return false
			}
			if e.Seq == 0 || e.Run != run {
				continue
			}
			if e.Type == eventlog.NodeCompleted {
				for _, art := range c.published(run, e.Node) {
					if !emit(ArtifactUpdate{TaskID: run, ContextID: run, Kind: "artifact-update", Artifact: art, LastChunk: true}) {
						return false
					}
				}
			}
			if shown(e.Type) && e.Text != "" {
				m := agentMessage(run, fmt.Sprintf("%s-%d", run, e.Seq), e.Text)
				m.Metadata = map[string]any{"event": string(e.Type), "node": e.Node, "worker": e.Worker}
				if !emit(update(m, StateWorking)) {
					return false
				}
			}
			continue
		case <-tick.C:
		}
		st, msg, output, err := c.status(run)
		if err != nil || st == state {
			continue
		}
		state = st
		if st == StateCompleted && output != "" && !emit(ArtifactUpdate{TaskID: run, ContextID: run, Kind: "artifact-update", Artifact: outputArtifact(output), LastChunk: true}) {
			return false
		}
		var m *Message
		if msg != "" {
			m = agentMessage(run, run+"-status", msg)
		}
		if !emit(update(m, st)) || a2awire.Final(st) {
			return a2awire.Final(st)
		}
	}
}

// shown reports whether events of type t come to a stream as status updates: what the squad
// does, not each tool call or model turn.
func shown(t eventlog.Type) bool {
	switch t {
	case eventlog.NodeCreated, eventlog.NodeAssigned, eventlog.NodeCompleted, eventlog.NodeFailed,
		eventlog.WorkerSpawned, eventlog.StageStarted, eventlog.StageReconvened, eventlog.StageCompleted,
		eventlog.HumanQuestion, eventlog.HumanResponse, eventlog.HumanNudge:
		return true
	}
	return false
}
