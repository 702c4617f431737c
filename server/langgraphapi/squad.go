package langgraphapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"reflect"
	"slices"
	"strings"

	"github.com/agiraph/agiraph/checkpoint"
	"github.com/agiraph/agiraph/graph"
	"github.com/agiraph/agiraph/nodes"
	"github.com/agiraph/agiraph/nodes/bus"
	"github.com/agiraph/agiraph/nodes/eventlog"
	"github.com/agiraph/agiraph/server/host"
)

// RegisterHost serves the agents of a host as the threads of one assistant, whose graph ID is
// graphID: a thread is an agent of the host (the agent's ID is the thread's), and a run is one
// of the agent's runs, or a turn of the one in progress. A run's input (a goal, or a chat's
// messages of which the last is taken) starts the agent with that goal when the thread has none,
// a new run of it when it is at rest, and is a message to its coordinator when it is working. The
// run streams what the squad does — values (its conversation as messages, its summary and board),
// custom (its events), messages-tuple (the text of the coordinator and the workers as they write
// it) — and ends when the squad's run ends, or asks the human a question: the question is the
// run's interrupt, and a run with command {resume: answer} answers it.
//
// A run's config.configurable may name the mode ("mode": "finite" or "infinite") of an agent it
// creates, and its model ("model") among those WithSquadModels allows. Deleting the thread
// deletes the agent.
func RegisterHost(h *Handler, graphID string, hs *host.Host, opts ...SquadOption) error {
	switch {
	case graphID == "":
		return errors.New("langgraphapi: RegisterHost: empty graph ID")
	case hs == nil:
		return fmt.Errorf("langgraphapi: RegisterHost %q: no host", graphID)
	}
	s := &squad{graphID: graphID, host: hs}
	for _, o := range opts {
		o(s)
	}
	if err := h.add(s); err != nil {
		return err
	}
	return h.restart(context.Background())
}

// SquadOption configures the assistant RegisterHost makes.
type SquadOption func(*squad)

// WithSquadModels sets the models a run may name for an agent it creates (config.configurable
// "model"). By default it may name none, and agents use the host's models — the same policy as
// the server's WithModels, which the server passes here.
func WithSquadModels(names ...string) SquadOption {
	return func(s *squad) { s.models = append(s.models, names...) }
}

// squad is a host's agents as the threads of one assistant.
type squad struct {
	graphID string
	host    *host.Host
	models  []string // what a run may name as its agent's model
}

// squadInput is what a run of a squad takes: a goal, or a chat's messages, the last of which
// ({"type": "human", "content": text or [{"type": "text", "text": ...}]}) says what to do.
type squadInput struct {
	Goal     string           `json:"goal,omitempty"`
	Messages []map[string]any `json:"messages,omitempty"`
}

// text is what the input asks.
func (in squadInput) text() string {
	if in.Goal != "" || len(in.Messages) == 0 {
		return in.Goal
	}
	switch c := in.Messages[len(in.Messages)-1]["content"].(type) {
	case string:
		return c
	case []any:
		var parts []string
		for _, block := range c {
			if b, ok := block.(map[string]any); ok && b["type"] == "text" {
				s, _ := b["text"].(string)
				parts = append(parts, s)
			}
		}
		return strings.Join(parts, "\n")
	}
	return ""
}

func (s *squad) id() string              { return s.graphID }
func (s *squad) nodes() []string         { return []string{bus.Coordinator} }
func (s *squad) stateType() reflect.Type { return reflect.TypeFor[squadInput]() }
func (s *squad) edges() []graph.Edge {
	return []graph.Edge{{From: graph.START, To: bus.Coordinator}, {From: bus.Coordinator, To: graph.END}}
}

// squadAct is what a run does to the agent before it follows it: start or message it (text),
// answer its questions (answers: who asked → the answer; "" for whoever waits), or neither.
type squadAct struct {
	text        string
	answers     map[string]string
	model, mode string
}

func (s *squad) prepare(kw *runKwargs, cont bool) (runFunc, error) {
	switch {
	case len(kw.InterruptBefore) > 0 || len(kw.InterruptAfter) > 0:
		return nil, invalid("interrupt_before/after: a squad has no nodes to stop at")
	case kw.CheckpointID != "":
		return nil, invalid("checkpoint_id: a squad's thread has no checkpoints")
	}
	var act squadAct
	if c, ok := kw.Config["configurable"].(map[string]any); ok {
		act.model, _ = c["model"].(string)
		act.mode, _ = c["mode"].(string)
	}
	if act.model != "" && !slices.Contains(s.models, act.model) {
		if len(s.models) == 0 {
			return nil, invalid("config.configurable.model %q: a run may name no model here; agents use the server's", act.model)
		}
		return nil, invalid("config.configurable.model %q is not allowed (allowed: %s)", act.model, strings.Join(s.models, ", "))
	}
	switch {
	case cont:
	case kw.Command != nil:
		c := kw.Command
		if !isNull(c.Update) || len(c.Goto) > 0 {
			return nil, invalid("command: a squad takes resume (the answer to its question), not update or goto")
		}
		if isNull(c.Resume) {
			return nil, invalid("command: give resume, the answer to the squad's question")
		}
		act.answers = answersOf(c.Resume)
	case !isNull(kw.Input):
		in, err := decode[squadInput]("input", kw.Input)
		if err != nil {
			return nil, err
		}
		if act.text = strings.TrimSpace(in.text()); act.text == "" {
			return nil, invalid("input: give a goal, or messages whose last one has text")
		}
	}
	return func(ctx context.Context, thread string, _ []graph.Option) iter.Seq2[graph.Event, error] {
		return func(yield func(graph.Event, error) bool) {
			ag, after, run, err := s.act(ctx, thread, act)
			if err == nil {
				err = s.follow(ctx, ag, after, run, yield)
			}
			if err != nil {
				yield(graph.Event{}, err)
			}
		}
	}, nil
}

// answersOf reads a resume value: an object whose keys are interrupt IDs answers each of them,
// anything else is the answer to whoever waits (a string as it is, other values as JSON).
func answersOf(raw json.RawMessage) map[string]string {
	var v any
	_ = json.Unmarshal(raw, &v) // checked when the request was read
	if m, ok := v.(map[string]any); ok && len(m) > 0 {
		out := map[string]string{}
		for k, a := range m {
			if _, who, ok := strings.Cut(k, "/"); ok {
				out[who] = answerText(a)
			}
		}
		if len(out) == len(m) {
			return out
		}
	}
	return map[string]string{"": answerText(v)}
}

func answerText(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// act does to the thread's agent what the run asks, and returns the agent, the sequence number
// of its last logged event before, and its run to follow.
func (s *squad) act(ctx context.Context, thread string, act squadAct) (*host.Agent, int64, string, error) {
	ag, err := s.host.Agent(ctx, thread)
	if errors.Is(err, host.ErrNotFound) {
		if act.text == "" {
			return nil, 0, "", fmt.Errorf("%w: the thread has no squad yet: give it a goal", graph.ErrNothingToResume)
		}
		sum, err := s.host.Create(thread, act.text, act.model, nodes.Mode(act.mode))
		if err != nil {
			return nil, 0, "", err
		}
		ag, err = s.host.Agent(ctx, thread)
		return ag, 0, sum.Run, err
	}
	if err != nil {
		return nil, 0, "", err
	}
	evs, err := ag.Events(0, 0)
	if err != nil {
		return nil, 0, "", err
	}
	var after int64
	if len(evs) > 0 {
		after = evs[len(evs)-1].Seq
	}
	sum := ag.Summary() // State does not tell a run waiting for the human
	status, run := sum.Status, sum.Run
	working := status == host.StatusWorking || status == host.StatusWaiting || status == host.StatusQueued
	switch {
	case act.answers != nil:
		if status != host.StatusWaiting {
			return nil, 0, "", fmt.Errorf("%w: the squad asks nothing", graph.ErrNothingToResume)
		}
		for who, answer := range act.answers {
			if _, err := ag.Answer(ctx, who, answer); err != nil {
				return nil, 0, "", err
			}
		}
	case act.text != "" && working:
		err = ag.Send(ctx, "", act.text)
	case act.text != "":
		sum, err = ag.Run(act.text)
		run = sum.Run
	case working:
	case status == host.StatusPaused || status == host.StatusInterrupted || status == host.StatusFailed:
		_, err = ag.Resume(run)
	default:
		err = fmt.Errorf("%w: the squad's run has ended", graph.ErrNothingToResume)
	}
	return ag, after, run, err
}

// follow streams the agent's run from its events after seq until the run ends or asks the human.
// A run cancelled through the API pauses the squad.
func (s *squad) follow(ctx context.Context, ag *host.Agent, after int64, run string, yield func(graph.Event, error) bool) error {
	emit := func(mode graph.Mode, node string, data any) bool {
		return yield(graph.Event{Mode: mode, Node: node, TaskID: run, Data: data}, nil)
	}
	values := func() bool {
		v, err := squadValues(ag)
		return err != nil || emit(graph.ModeValues, "", v)
	}
	if !values() {
		return nil
	}
	turns := map[string]int{} // who → model turns so far: the ID of their text's message
	for e := range ag.Follow(ctx, after) {
		if run != "" && e.Run != "" && e.Run != run {
			continue
		}
		who := e.Worker
		if who == "" {
			who = bus.Coordinator
		}
		if e.Type == eventlog.TextDelta {
			id := fmt.Sprintf("%s/%s/%d", e.Run, who, turns[who])
			if !emit(graph.ModeMessages, who, graph.MessageChunk{Text: e.Text, Model: who, ID: id}) {
				return nil
			}
			continue
		}
		if !emit(graph.ModeCustom, who, e) {
			return nil
		}
		switch {
		case e.Type == eventlog.ModelTurn:
			turns[who]++
		case e.Type == eventlog.AgentFailed:
			values()
			return fmt.Errorf("the squad's run failed: %s", e.Text)
		case e.Type == eventlog.AgentCompleted || e.Type == eventlog.AgentPaused || e.Type == eventlog.CycleCompleted:
			values()
			return nil
		case e.Type == eventlog.HumanQuestion:
			values()
			return &graph.Interrupted{Interrupts: []graph.InterruptInfo{{
				ID: e.Run + "/" + who, Node: bus.Coordinator, Value: map[string]any{"question": e.Text, "from": who},
			}}}
		case strings.HasPrefix(string(e.Type), "node.") || e.Type == eventlog.HumanResponse:
			if !values() {
				return nil
			}
		}
	}
	if ctx.Err() == nil {
		return errors.New("the squad's host closed, or the agent was deleted")
	}
	if !errors.Is(context.Cause(ctx), errShutdown) {
		if err := ag.Pause(context.WithoutCancel(ctx)); err != nil && !errors.Is(err, nodes.ErrNoRun) {
			return err
		}
	}
	return ctx.Err()
}

// squadValues is the state of an agent as a thread's values: its conversation with the human as
// chat messages, its summary and its board.
func squadValues(ag *host.Agent) (map[string]any, error) {
	conv, _, err := ag.Conversation(0, 0)
	if err != nil {
		return nil, err
	}
	messages := make([]map[string]any, 0, len(conv))
	for _, l := range conv {
		m := map[string]any{"type": "ai", "name": l.From, "content": l.Content, "id": fmt.Sprintf("%s/%d", l.Run, l.Seq)}
		if l.From == bus.Human {
			m["type"] = "human"
			delete(m, "name")
		}
		messages = append(messages, m)
	}
	board, _, err := ag.Board()
	if err != nil && !errors.Is(err, nodes.ErrNoRun) {
		return nil, err
	}
	return map[string]any{"messages": messages, "summary": ag.Summary(), "board": board}, nil
}

func (s *squad) state(ctx context.Context, thread, checkpointID string) (threadState, error) {
	if checkpointID != "" {
		return threadState{}, notFound("thread %s has no checkpoint %s: a squad's thread has none", thread, checkpointID)
	}
	ag, err := s.host.Agent(ctx, thread)
	if errors.Is(err, host.ErrNotFound) {
		return emptyState(), nil
	}
	if err != nil {
		return threadState{}, err
	}
	values, err := squadValues(ag)
	if err != nil {
		return threadState{}, err
	}
	sum := values["summary"].(host.Summary)
	st := emptyState()
	st.Values = values
	st.Metadata = map[string]any{"status": sum.Status, "run_id": sum.Run}
	at := sum.Updated
	st.CreatedAt = &at
	if sum.Status == host.StatusWaiting {
		pending := []interruptJSON{{ID: sum.Run + "/" + sum.WaitingFor, Value: map[string]any{"question": sum.Question, "from": sum.WaitingFor}}}
		st.Next = []string{bus.Coordinator}
		st.Interrupts = pending
		st.Tasks = []taskJSON{{ID: sum.Run, Name: bus.Coordinator, Path: []string{"__pregel_pull", bus.Coordinator}, Interrupts: pending}}
	}
	return st, nil
}

func (s *squad) history(ctx context.Context, thread string, _ checkpoint.ListOptions) ([]threadState, error) {
	if _, err := s.host.Agent(ctx, thread); errors.Is(err, host.ErrNotFound) {
		return []threadState{}, nil
	}
	st, err := s.state(ctx, thread, "")
	return []threadState{st}, err
}

func (s *squad) update(context.Context, string, json.RawMessage, string, string) (checkpoint.Config, error) {
	return checkpoint.Config{}, invalid("a squad's state is not set from outside: send it a message with a run")
}

func (s *squad) dropThread(_ context.Context, thread string) error {
	if err := s.host.Delete(thread); err != nil && !errors.Is(err, host.ErrNotFound) {
		return err
	}
	return nil
}

func (s *squad) patchMetadata(context.Context, string, string, map[string]string) error {
	return invalid("a squad's thread has no checkpoints whose metadata could be patched")
}

func (s *squad) copyThread(context.Context, string, string) error {
	return invalid("a squad's thread cannot be copied")
}

// resumable: the host continues its agents' runs itself; the run follows it.
func (s *squad) resumable(context.Context, string, string) (bool, error) { return true, nil }

// rollback undoes nothing: what a squad did is done (the run was paused).
func (s *squad) rollback(context.Context, string, string) error { return nil }
