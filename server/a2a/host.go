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
	"sync"
	"time"
	"unicode/utf8"

	"github.com/agiraph/agiraph/internal/a2awire"
	"github.com/agiraph/agiraph/nodes/eventlog"
	"github.com/agiraph/agiraph/nodes/store"
	"github.com/agiraph/agiraph/nodes/workspace"
	"github.com/agiraph/agiraph/server/host"
)

// hostBackend serves the agents of a host: a task is a run of an agent. The records of an
// agent's tasks are documents of its store ("a2a/<task>"), which a fleet's replicas share; those
// a server kept before, as <root>/a2a/<agent>/<task>.json, are read until the store has them.
type hostBackend struct {
	host   *host.Host
	legacy *records

	mu    sync.Mutex      // orders the updates of records
	ended map[string]bool // agent/task whose end is recorded
}

func (b *hostBackend) agent(ctx context.Context, id string) (agent, error) {
	a, err := b.host.Agent(ctx, id)
	if errors.Is(err, host.ErrNotFound) {
		return nil, fmt.Errorf("%w: %q", errNoAgent, id)
	}
	if err != nil {
		return nil, err
	}
	return &hostAgent{Agent: a, b: b}, nil
}

func (b *hostBackend) describe(id string) (string, Skill, error) {
	sum, err := b.host.Summary(id)
	if err != nil {
		return "", Skill{}, fmt.Errorf("%w: %q", errNoAgent, id)
	}
	desc := "An Agiraph squad: a coordinator and workers that take on the goal it is sent."
	if sum.Goal != "" {
		desc = "An Agiraph squad whose goal is: " + sum.Goal
	}
	return desc, Skill{
		ID:   "squad",
		Name: "Work toward a goal",
		Description: "Send a goal: a coordinator plans the work on a board, workers do it, and the task " +
			"ends with the squad's output and the files it published. The squad may ask a question " +
			"(the task is then input-required): answer it with a message on the task.",
		Tags: []string{"squad", "multi-agent"},
	}, nil
}

// pending returns the tasks whose push notifications were being sent: those whose end is not
// recorded.
func (b *hostBackend) pending(ctx context.Context) map[string][]string {
	sums, err := b.host.List()
	if err != nil {
		return nil
	}
	out := map[string][]string{}
	for _, sum := range sums {
		ag, err := b.agent(ctx, sum.ID)
		if err != nil {
			continue
		}
		a := ag.(*hostAgent)
		tasks := map[string]record{}
		for _, task := range b.legacy.tasks(sum.ID) {
			tasks[task] = b.legacy.read(sum.ID, task)
		}
		_ = a.Store(func(st store.Store) error {
			docs, err := st.Docs(ctx, recordPrefix)
			for _, d := range docs {
				var rec record
				if json.Unmarshal(d.Value, &rec) == nil {
					tasks[strings.TrimPrefix(d.Key, recordPrefix)] = rec
				}
			}
			return err
		})
		for task, rec := range tasks {
			if len(rec.Push) > 0 && rec.State == "" {
				out[sum.ID] = append(out[sum.ID], task)
			}
		}
	}
	return out
}

func (b *hostBackend) close() {}

// isEnded reports whether the end of agent/task is recorded; markEnded says it is: a task's end
// does not change, and the records are not read again to learn it.
func (b *hostBackend) isEnded(key string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.ended[key]
}

func (b *hostBackend) markEnded(key string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.ended[key] = true
}

// hostAgent is an agent of a host.
type hostAgent struct {
	*host.Agent
	b *hostBackend
}

// recordPrefix prefixes the keys of the tasks' records in an agent's store.
const recordPrefix = "a2a/"

func (a *hostAgent) record(task string) record {
	rec, _ := a.read(task)
	return rec
}

// read returns the record of task: its document in the agent's store, or else the file a
// server kept it in before.
func (a *hostAgent) read(task string) (record, error) {
	var rec record
	err := a.Store(func(st store.Store) error {
		doc, err := st.Doc(context.Background(), recordPrefix+task)
		if err != nil || doc.Value == nil {
			rec = a.b.legacy.read(a.ID(), task)
			return err
		}
		return json.Unmarshal(doc.Value, &rec)
	})
	return rec, err
}

func (a *hostAgent) update(task string, fn func(*record) bool) error {
	a.b.mu.Lock()
	defer a.b.mu.Unlock()
	rec, err := a.read(task)
	if err != nil || !fn(&rec) {
		return err
	}
	var ch store.Change
	if err := ch.Put(recordPrefix+task, rec); err != nil {
		return err
	}
	return a.Store(func(st store.Store) error { return st.Apply(context.Background(), ch) })
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

func (a *hostAgent) status(run string) (state, msg, output string, err error) {
	sum := a.Summary()
	if run != "" && run == sum.Run {
		state, msg = stateOf(sum)
		if key := a.ID() + "/" + run; a2awire.Terminal(state) && !a.b.isEnded(key) {
			if ended(a, run, state, sum.Output) == nil {
				a.b.markEnded(key)
			}
		}
		return state, msg, sum.Output, nil
	}
	if workspace.ValidID(run) != nil {
		return "", "", "", notFound(a, run)
	}
	rec, err := a.read(run)
	if err != nil {
		return "", "", "", err
	}
	if rec.State == "" {
		root, err := a.OpenRun(run)
		if err != nil {
			return "", "", "", notFound(a, run)
		}
		root.Close()
		rec.State = StateUnknown
	}
	return rec.State, "", rec.Output, nil
}

func (a *hostAgent) contents(run string) ([]Message, []Artifact, error) {
	evs, err := a.Events(0, 0)
	if err != nil {
		return nil, nil, err
	}
	var history []Message
	var artifacts []Artifact
	for _, e := range evs {
		if e.Run != run {
			continue
		}
		if m := historyOf(e); m != nil {
			history = append(history, *m)
		}
		if e.Type == eventlog.NodeCompleted {
			artifacts = append(artifacts, a.published(run, e.Node)...)
		}
	}
	return history, artifacts, nil
}

// historyOf returns the message of the task's history that event e is, or nil.
func historyOf(e eventlog.Event) *Message {
	id := fmt.Sprintf("%s-%d", e.Run, e.Seq)
	switch {
	case e.Text == "":
		return nil
	case e.Type == eventlog.AgentStarted, e.Type == eventlog.HumanResponse, e.Type == eventlog.HumanNudge:
		return userMessage(e.Run, id, e.Text)
	case e.Type == eventlog.HumanQuestion:
		return agentMessage(e.Run, id, e.Text)
	}
	return nil
}

// maxArtifact bounds a published file sent as an artifact, in bytes: a larger one is named, not
// sent.
const maxArtifact = 4 << 20

// published returns the artifacts of the files node published in run: each file a file part,
// its content in base64.
func (a *hostAgent) published(run, node string) []Artifact {
	if workspace.ValidID(node) != nil {
		return nil
	}
	root, err := a.OpenRun(run)
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

// cursor returns the seq of the agent's last logged event.
func (a *hostAgent) cursor(string) (int64, error) {
	evs, err := a.Events(0, 0)
	if err != nil || len(evs) == 0 {
		return 0, err
	}
	return evs[len(evs)-1].Seq, nil
}

// deliver starts a new run toward msg, or on the run in progress, sends msg to its
// coordinator or answers the question the squad asked.
func (a *hostAgent) deliver(ctx context.Context, run, msg string) (delivered, error) {
	after, err := a.cursor(run)
	if err != nil {
		return delivered{}, err
	}
	d := delivered{run: run, state: StateWorking, after: after}
	if d.run == "" {
		if _, last := a.State(); last != "" {
			_, _, _, _ = a.status(last) // a task that ended is recorded as it ended
		}
		started, err := a.Run(msg)
		if errors.Is(err, host.ErrBusy) {
			_, cur := a.State()
			return delivered{}, &a2awire.Error{Code: a2awire.CodeUnsupported, Message: fmt.Sprintf("agent %q is at work on task %q: send the message with that taskId to take part in it, or cancel it first", a.ID(), cur)}
		}
		if err != nil {
			return delivered{}, err
		}
		d.run = started.Run
		return d, nil
	}
	d.state, _, _, err = a.status(d.run)
	if err != nil {
		return delivered{}, err
	}
	switch d.state {
	case StateInputRequired:
		_, err = a.Answer(ctx, "", msg)
	case StateWorking, StateSubmitted:
		err = a.Send(ctx, "", msg)
	default:
		err = errEnded(d.run, d.state)
	}
	return d, err
}

// errEnded is the error of a message on a task that ended.
func errEnded(task, state string) error {
	return &a2awire.Error{Code: a2awire.CodeUnsupported, Message: fmt.Sprintf("task %q is %s and takes no more messages: send a message without a taskId for a new task", task, state)}
}

// cancel pauses the run.
func (a *hostAgent) cancel(ctx context.Context, _ string) error { return a.Pause(ctx) }

// pollEvery is how often a task followed is looked at, beside its events: a run's end or its
// question shows in the agent's state, not always in an event.
const pollEvery = 100 * time.Millisecond

// watch follows the agent's events and looks at its state every pollEvery. A question shows
// only once its event came (or the task was asked it already): the agent's state may still show
// the question a message just answered.
func (a *hostAgent) watch(ctx context.Context, run string, after int64, state string, emit func(any) bool) bool {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	events := a.Follow(ctx, after)
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	asked := state == StateInputRequired
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
			asked = asked || e.Type == eventlog.HumanQuestion
			if e.Type == eventlog.NodeCompleted {
				for _, art := range a.published(run, e.Node) {
					if !emit(artifactUpdate(run, art)) {
						return false
					}
				}
			}
			if shown(e.Type) && e.Text != "" {
				m := agentMessage(run, fmt.Sprintf("%s-%d", run, e.Seq), e.Text)
				m.Metadata = map[string]any{"event": string(e.Type), "node": e.Node, "worker": e.Worker}
				if !emit(statusUpdate(run, StateWorking, m)) {
					return false
				}
			}
			continue
		case <-tick.C:
		}
		st, msg, output, err := a.status(run)
		if err != nil || st == state || st == StateInputRequired && !asked {
			continue
		}
		state = st
		if st == StateCompleted && output != "" && !emit(artifactUpdate(run, outputArtifact(output))) {
			return false
		}
		var m *Message
		if msg != "" {
			m = agentMessage(run, run+"-status", msg)
		}
		if !emit(statusUpdate(run, st, m)) || a2awire.Final(st) {
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
