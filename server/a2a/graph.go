package a2a

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agiraph/agiraph/checkpoint"
	"github.com/agiraph/agiraph/graph"
	"github.com/agiraph/agiraph/internal/a2awire"
)

// Graph is a compiled graph served as an A2A agent by NewGraph.
type Graph[S any] struct {
	// Name is the agent's name: its card is at path/Name/.well-known/agent-card.json.
	Name string
	// Description is what the card says of the agent.
	Description string
	Graph       *graph.Compiled[S]
	// Saver keeps the graph's threads: a task is a thread, its id the thread's.
	Saver checkpoint.Saver
	// In returns the state a task's first message starts the graph from, given its text.
	In func(text string) S
	// Out returns the output of a final state: the task's artifact and status message.
	Out func(S) string
}

// NewGraph returns a handler, mounted at path, that serves gr as the A2A agent gr.Name.
//
// A message without a task id starts a task: a new thread, on which the graph runs from
// gr.In of the message's text. Each superstep is a status update ("working"), naming its
// nodes. An interrupt pauses the task ("input-required", the interrupt's value as the status
// message, its text when it is a string); the next message on the task resumes the graph, its
// text the value Interrupt returns. The final state's gr.Out is the task's output (an artifact,
// and the status message of the completed task); a run that fails fails the task, its error
// the status message. tasks/get reads the thread's state; tasks/cancel cancels the run.
//
// The records of the tasks (their push notification configs, how they ended) are kept in
// memory: a task whose end is not known after a restart is read from its thread (completed,
// input-required, or failed when its run stopped half-way).
func NewGraph[S any](path string, gr Graph[S], opts ...Option) (*Handler, error) {
	var missing []string
	if gr.Name == "" {
		missing = append(missing, "Name")
	}
	if gr.Graph == nil {
		missing = append(missing, "Graph")
	}
	if gr.Saver == nil {
		missing = append(missing, "Saver (a task is a thread of the graph, kept by a checkpointer)")
	}
	if gr.In == nil {
		missing = append(missing, "In")
	}
	if gr.Out == nil {
		missing = append(missing, "Out")
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("a2a.NewGraph: the Graph lacks %s", strings.Join(missing, ", "))
	}
	if gr.Description == "" {
		gr.Description = "An Agiraph graph: send it a message, and it runs on it."
	}
	b := &graphAgent[S]{gr: gr, tasks: map[string]*graphTask{}, records: map[string]record{}}
	b.ctx, b.stop = context.WithCancel(context.Background())
	return newHandler(b, path, opts), nil
}

// graphAgent serves a graph: it is both the backend and its one agent.
type graphAgent[S any] struct {
	gr   Graph[S]
	ctx  context.Context // ends with close: the runs are cancelled
	stop context.CancelFunc
	wg   sync.WaitGroup

	mu      sync.Mutex
	tasks   map[string]*graphTask // the tasks run or asked about since the handler started
	records map[string]record
}

// graphTask is a task of a graph: the updates of its runs, in order, and its history.
type graphTask struct {
	updates []any         // StatusUpdate and ArtifactUpdate
	changed chan struct{} // closed, and replaced, at each update
	history []Message
	running bool
	cancel  context.CancelFunc // of the run, while it runs
	done    chan struct{}      // closed when the run ends
}

func (b *graphAgent[S]) agent(_ context.Context, id string) (agent, error) {
	if id != b.gr.Name {
		return nil, fmt.Errorf("%w: %q", errNoAgent, id)
	}
	return b, nil
}

func (b *graphAgent[S]) describe(id string) (string, Skill, error) {
	if id != b.gr.Name {
		return "", Skill{}, fmt.Errorf("%w: %q", errNoAgent, id)
	}
	return b.gr.Description, Skill{ID: "graph", Name: b.gr.Name, Description: "Send a message: the graph runs on it, and may ask " +
		"for more (the task is then input-required): answer with a message on the task.", Tags: []string{"graph"}}, nil
}

func (b *graphAgent[S]) pending(context.Context) map[string][]string { return nil }

func (b *graphAgent[S]) close() {
	b.stop()
	b.wg.Wait()
}

func (b *graphAgent[S]) ID() string { return b.gr.Name }

func (b *graphAgent[S]) record(task string) record {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.records[task]
}

func (b *graphAgent[S]) update(task string, fn func(*record) bool) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	rec := b.records[task]
	if fn(&rec) {
		b.records[task] = rec
	}
	return nil
}

// taskOf returns the task of thread id, made on first use. b.mu is held.
func (b *graphAgent[S]) taskOf(id string) *graphTask {
	t := b.tasks[id]
	if t == nil {
		t = &graphTask{changed: make(chan struct{})}
		b.tasks[id] = t
	}
	return t
}

// publish adds update u to task id's updates.
func (b *graphAgent[S]) publish(id string, u any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	t := b.taskOf(id)
	t.updates = append(t.updates, u)
	close(t.changed)
	t.changed = make(chan struct{})
}

func (b *graphAgent[S]) opts(thread string, o ...graph.Option) []graph.Option {
	return append([]graph.Option{graph.WithCheckpointer(b.gr.Saver), graph.WithThread(thread)}, o...)
}

// status: a task whose run is in progress is working; one whose end is recorded ended so (the
// output of a failed or cancelled one is its error); the others are as their thread is.
func (b *graphAgent[S]) status(task string) (state, msg, output string, err error) {
	b.mu.Lock()
	running := b.tasks[task] != nil && b.tasks[task].running
	rec := b.records[task]
	b.mu.Unlock()
	switch {
	case running:
		return StateWorking, "", "", nil
	case rec.State == StateCompleted:
		return rec.State, rec.Output, rec.Output, nil
	case rec.State != "":
		return rec.State, rec.Output, "", nil
	}
	snap, err := b.gr.Graph.State(b.ctx, b.opts(task)...)
	if err != nil {
		if errors.Is(err, checkpoint.ErrNotFound) {
			return "", "", "", notFound(b, task)
		}
		return "", "", "", err
	}
	switch {
	case len(snap.Interrupts) > 0:
		return StateInputRequired, valueText(snap.Interrupts[0].Value), "", nil
	case len(snap.Tasks) == 0:
		out := b.gr.Out(snap.Values)
		return StateCompleted, out, out, nil
	}
	return StateFailed, fmt.Sprintf("the run of thread %q stopped before it ended (nodes %s to run)", task, strings.Join(snap.Next, ", ")), "", nil
}

// valueText is the text of an interrupt's value: a string as it is, anything else as JSON.
func valueText(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(data)
}

func (b *graphAgent[S]) contents(id string) ([]Message, []Artifact, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if t := b.tasks[id]; t != nil {
		return slices.Clone(t.history), nil, nil
	}
	return nil, nil, nil
}

func (b *graphAgent[S]) cursor(task string) (int64, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if t := b.tasks[task]; t != nil {
		return int64(len(t.updates)), nil
	}
	return 0, nil
}

// deliver starts a task on a new thread, or resumes the task that waits for the message.
func (b *graphAgent[S]) deliver(_ context.Context, task, msg string) (delivered, error) {
	if task == "" {
		id, err := newThread()
		if err != nil {
			return delivered{}, err
		}
		in := b.gr.In(msg)
		return b.start(id, StateWorking, msg, func(ctx context.Context, opts []graph.Option) iter.Seq2[graph.Event, error] {
			return b.gr.Graph.Stream(ctx, in, opts...)
		})
	}
	state, _, _, err := b.status(task)
	if err != nil {
		return delivered{}, err
	}
	switch state {
	case StateInputRequired:
		return b.start(task, state, msg, func(ctx context.Context, opts []graph.Option) iter.Seq2[graph.Event, error] {
			return b.gr.Graph.StreamResume(ctx, msg, opts...)
		})
	case StateWorking, StateSubmitted:
		return delivered{}, &a2awire.Error{Code: a2awire.CodeUnsupported, Message: fmt.Sprintf("task %q is at work: the graph takes a message when it asks for one (input-required); wait for it, or cancel the task", task)}
	}
	return delivered{}, errEnded(task, state)
}

// newThread returns a new thread id: the time, and random bytes.
func newThread() (string, error) {
	var r [6]byte
	if _, err := rand.Read(r[:]); err != nil {
		return "", err
	}
	return time.Now().UTC().Format("20060102-150405") + "-" + hex.EncodeToString(r[:]), nil
}

// start runs the graph on thread id in the background, with msg as the user's message, the
// task's state being state; a task whose run is in progress already is refused.
func (b *graphAgent[S]) start(id, state, msg string, run func(context.Context, []graph.Option) iter.Seq2[graph.Event, error]) (delivered, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ctx.Err() != nil {
		return delivered{}, errors.New("the handler is closed")
	}
	t := b.taskOf(id)
	if t.running {
		return delivered{}, &a2awire.Error{Code: a2awire.CodeUnsupported, Message: fmt.Sprintf("task %q is at work already", id)}
	}
	ctx, cancel := context.WithCancel(b.ctx)
	t.running, t.cancel, t.done = true, cancel, make(chan struct{})
	t.history = append(t.history, *userMessage(id, fmt.Sprintf("%s-%d", id, len(t.history)), msg))
	d := delivered{run: id, state: state, after: int64(len(t.updates))}
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		defer cancel()
		final, err := b.follow(id, run(ctx, b.opts(id, graph.WithStreamMode(graph.ModeValues|graph.ModeUpdates))))
		b.end(id, final, err)
	}()
	return d, nil
}

// follow publishes a status update for each superstep of a run, naming its nodes; it returns
// the run's final state, or its error.
func (b *graphAgent[S]) follow(id string, events iter.Seq2[graph.Event, error]) (final S, err error) {
	var nodes []string
	for ev, err := range events {
		if err != nil {
			return final, err
		}
		if ev.Namespace != "" {
			continue
		}
		switch ev.Mode {
		case graph.ModeUpdates:
			nodes = append(nodes, ev.Node)
		case graph.ModeValues:
			final, _ = ev.Data.(S)
			if len(nodes) > 0 {
				m := agentMessage(id, fmt.Sprintf("%s-step-%d", id, ev.Step), fmt.Sprintf("step %d: %s", ev.Step, strings.Join(nodes, ", ")))
				m.Metadata = map[string]any{"step": ev.Step, "nodes": nodes}
				b.publish(id, statusUpdate(id, StateWorking, m))
				nodes = nil
			}
		}
	}
	return final, nil
}

// end publishes how a run of task id ended, and records it when it ended the task.
func (b *graphAgent[S]) end(id string, final S, err error) {
	var interrupted *graph.Interrupted
	state, msg, output := StateCompleted, "", ""
	switch {
	case err == nil:
		output = b.gr.Out(final)
		msg = output
	case errors.As(err, &interrupted) && len(interrupted.Interrupts) > 0:
		state, msg = StateInputRequired, valueText(interrupted.Interrupts[0].Value)
	case errors.Is(err, context.Canceled):
		state, msg = StateCanceled, "The task was canceled."
	default:
		state, msg = StateFailed, err.Error()
	}
	if a2awire.Terminal(state) {
		rec := output
		if state != StateCompleted {
			rec = msg
		}
		_ = ended(b, id, state, rec) // in memory: it does not fail
	}
	if state == StateCompleted {
		b.publish(id, artifactUpdate(id, outputArtifact(output)))
	}
	b.mu.Lock()
	t := b.taskOf(id)
	if state == StateInputRequired {
		t.history = append(t.history, *agentMessage(id, fmt.Sprintf("%s-%d", id, len(t.history)), msg))
	}
	t.running = false
	close(t.done)
	b.mu.Unlock()
	b.publish(id, statusUpdate(id, state, agentMessage(id, id+"-status", msg)))
}

// cancel cancels the run of task, and waits for it to end; a task that waits for input is
// cancelled at once.
func (b *graphAgent[S]) cancel(ctx context.Context, task string) error {
	b.mu.Lock()
	t := b.taskOf(task)
	if !t.running {
		b.mu.Unlock()
		_ = ended(b, task, StateCanceled, "The task was canceled.") // in memory
		b.publish(task, statusUpdate(task, StateCanceled, nil))
		return nil
	}
	t.cancel()
	done := t.done
	b.mu.Unlock()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// watch follows the task's updates.
func (b *graphAgent[S]) watch(ctx context.Context, task string, after int64, _ string, emit func(any) bool) bool {
	for {
		b.mu.Lock()
		t := b.tasks[task]
		if t == nil {
			b.mu.Unlock()
			return false
		}
		ups, changed := t.updates[min(int(after), len(t.updates)):], t.changed
		b.mu.Unlock()
		for _, u := range ups {
			after++
			if !emit(u) {
				return false
			}
			if su, ok := u.(StatusUpdate); ok && su.Final {
				return true
			}
		}
		select {
		case <-ctx.Done():
			return false
		case <-changed:
		}
	}
}
