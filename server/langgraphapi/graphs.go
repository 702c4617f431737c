package langgraphapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"reflect"
	"slices"
	"time"

	"github.com/agiraph/agiraph/checkpoint"
	"github.com/agiraph/agiraph/graph"
)

// entry is a registered graph with its state type erased: runs take and give JSON.
type entry interface {
	id() string
	nodes() []string
	edges() []graph.Edge
	stateType() reflect.Type
	// prepare checks a run's input or command and returns what carries it out. With cont set it
	// continues the thread from its latest checkpoint instead (a run a stopped process left).
	prepare(kw *runKwargs, cont bool) (runFunc, error)
	state(ctx context.Context, thread, checkpointID string) (threadState, error)
	history(ctx context.Context, thread string, filter checkpoint.ListOptions) ([]threadState, error)
	update(ctx context.Context, thread string, values json.RawMessage, asNode, checkpointID string) (checkpoint.Config, error)
	// patchMetadata merges meta into the metadata of the thread's checkpoint checkpointID (its
	// latest when empty).
	patchMetadata(ctx context.Context, thread, checkpointID string, meta map[string]string) error
	// dropThread deletes what the thread holds; copyThread copies it to another thread.
	dropThread(ctx context.Context, thread string) error
	copyThread(ctx context.Context, from, to string) error
	// resumable reports whether run left the thread where it can be continued (prepare with cont)
	// rather than started again.
	resumable(ctx context.Context, thread, runID string) (bool, error)
	// rollback returns the thread to where it was before run.
	rollback(ctx context.Context, thread, runID string) error
}

// runFunc streams a run of a graph on a thread with opts (the thread, run ID, modes...).
type runFunc func(ctx context.Context, thread string, opts []graph.Option) iter.Seq2[graph.Event, error]

// typed is a registered graph over state S.
type typed[S any] struct {
	graphID string
	g       *graph.Compiled[S]
	cp      checkpoint.Saver
}

func (t *typed[S]) id() string              { return t.graphID }
func (t *typed[S]) nodes() []string         { return t.g.Nodes() }
func (t *typed[S]) edges() []graph.Edge     { return t.g.Edges() }
func (t *typed[S]) stateType() reflect.Type { return reflect.TypeFor[S]() }
func (t *typed[S]) opts(o ...graph.Option) []graph.Option {
	return append([]graph.Option{graph.WithCheckpointer(t.cp)}, o...)
}

// decode reads a JSON object of S's fields, refusing fields S does not have.
func decode[S any](what string, raw json.RawMessage) (S, error) {
	var s S
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return s, invalid("%s does not fit the graph's state: %v", what, err)
	}
	return s, nil
}

func (t *typed[S]) prepare(kw *runKwargs, cont bool) (runFunc, error) {
	if cont {
		return t.resume(nil), nil
	}
	if kw.Command == nil {
		if isNull(kw.Input) {
			return t.resume(nil), nil
		}
		in, err := decode[S]("input", kw.Input)
		if err != nil {
			return nil, err
		}
		return func(ctx context.Context, _ string, opts []graph.Option) iter.Seq2[graph.Event, error] {
			return t.g.Stream(ctx, in, t.opts(opts...)...)
		}, nil
	}
	c := kw.Command
	if isNull(c.Resume) && isNull(c.Update) && len(c.Goto) == 0 {
		return nil, invalid("command: give resume, update or goto")
	}
	known := t.g.Nodes()
	for _, n := range c.Goto {
		if !slices.Contains(known, n) && n != graph.END {
			return nil, invalid("command.goto: the graph has no node %q", n)
		}
	}
	if isNull(c.Update) && len(c.Goto) == 0 {
		return t.resume(c.Resume), nil
	}
	var update S
	if !isNull(c.Update) {
		var err error
		if update, err = decode[S]("command.update", c.Update); err != nil {
			return nil, err
		}
	}
	return func(ctx context.Context, _ string, opts []graph.Option) iter.Seq2[graph.Event, error] {
		value := t.resumeValue(ctx, c.Resume, opts)
		return t.g.StreamResume(ctx, graph.ResumeCommand[S]{Value: value, Update: update, Goto: c.Goto}, t.opts(opts...)...)
	}, nil
}

// resume continues the thread with value as the answer to its interrupts.
func (t *typed[S]) resume(raw json.RawMessage) runFunc {
	return func(ctx context.Context, _ string, opts []graph.Option) iter.Seq2[graph.Event, error] {
		return t.g.StreamResume(ctx, t.resumeValue(ctx, raw, opts), t.opts(opts...)...)
	}
}

// resumeValue decodes a resume value; an object whose keys are all IDs of the thread's pending
// interrupts answers each of them (graph.ResumeByID), as LangGraph's clients send it.
func (t *typed[S]) resumeValue(ctx context.Context, raw json.RawMessage, opts []graph.Option) any {
	if isNull(raw) {
		return nil
	}
	var v any
	_ = json.Unmarshal(raw, &v) // checked when the request was read
	m, ok := v.(map[string]any)
	if !ok || len(m) == 0 {
		return v
	}
	snap, err := t.g.State(ctx, t.opts(opts...)...)
	if err != nil {
		return v
	}
	for k := range m {
		if !slices.ContainsFunc(snap.Interrupts, func(i graph.InterruptInfo) bool { return i.ID == k }) {
			return v
		}
	}
	return graph.ResumeByID(m)
}

func (t *typed[S]) state(ctx context.Context, thread, checkpointID string) (threadState, error) {
	snap, err := t.g.State(ctx, t.opts(graph.WithThread(thread), graph.WithCheckpointID(checkpointID))...)
	if errors.Is(err, checkpoint.ErrNotFound) {
		if checkpointID != "" {
			return threadState{}, notFound("thread %s has no checkpoint %s", thread, checkpointID)
		}
		return emptyState(), nil
	}
	if err != nil {
		return threadState{}, err
	}
	return stateOf(snap), nil
}

func (t *typed[S]) history(ctx context.Context, thread string, filter checkpoint.ListOptions) ([]threadState, error) {
	snaps, err := t.g.History(ctx, filter, t.opts(graph.WithThread(thread))...)
	if err != nil {
		return nil, err
	}
	out := make([]threadState, 0, len(snaps))
	for _, s := range snaps {
		out = append(out, stateOf(s))
	}
	return out, nil
}

func (t *typed[S]) update(ctx context.Context, thread string, values json.RawMessage, asNode, checkpointID string) (checkpoint.Config, error) {
	var update S
	if !isNull(values) {
		var err error
		if update, err = decode[S]("values", values); err != nil {
			return checkpoint.Config{}, err
		}
	}
	if asNode != "" && asNode != graph.START && asNode != graph.END && !slices.Contains(t.g.Nodes(), asNode) {
		return checkpoint.Config{}, invalid("as_node: the graph has no node %q", asNode)
	}
	return t.g.UpdateState(ctx, update, asNode, t.opts(graph.WithThread(thread), graph.WithCheckpointID(checkpointID))...)
}

func (t *typed[S]) patchMetadata(ctx context.Context, thread, checkpointID string, meta map[string]string) error {
	mp, ok := t.cp.(checkpoint.MetadataPatcher)
	if !ok {
		return invalid("graph %q: its checkpointer (%T) cannot change a checkpoint's metadata", t.graphID, t.cp)
	}
	err := mp.PatchMetadata(ctx, checkpoint.Config{ThreadID: thread, CheckpointID: checkpointID}, meta)
	if errors.Is(err, checkpoint.ErrNotFound) {
		if checkpointID == "" {
			return notFound("thread %s has no state yet", thread)
		}
		return notFound("thread %s has no checkpoint %q", thread, checkpointID)
	}
	return err
}

func isNull(raw json.RawMessage) bool {
	return len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null"
}

// interruptJSON is a pending interrupt as the API shows it.
type interruptJSON struct {
	ID    string `json:"id"`
	Value any    `json:"value"`
}

func interruptsJSON(in []graph.InterruptInfo) []interruptJSON {
	out := make([]interruptJSON, 0, len(in))
	for _, i := range in {
		out = append(out, interruptJSON{ID: i.ID, Value: i.Value})
	}
	return out
}

// checkpointRef addresses a checkpoint.
type checkpointRef struct {
	ThreadID     string `json:"thread_id"`
	NS           string `json:"checkpoint_ns"`
	CheckpointID string `json:"checkpoint_id"`
}

func refOf(c checkpoint.Config) *checkpointRef {
	if c.CheckpointID == "" {
		return nil
	}
	return &checkpointRef{ThreadID: c.ThreadID, NS: c.NS, CheckpointID: c.CheckpointID}
}

// taskJSON is one of a state's next tasks.
type taskJSON struct {
	ID         string          `json:"id"`
	Name       string          `json:"name"`
	Path       []string        `json:"path"` // where the task comes from, as LangGraph says it
	Error      *string         `json:"error"`
	Interrupts []interruptJSON `json:"interrupts"`
	Checkpoint *checkpointRef  `json:"checkpoint"`
	State      any             `json:"state"`
	Result     any             `json:"result"`
}

// written is what a task wrote, as LangGraph shows a task's result: the fields of its update (a
// state) that it set, by their names in the state's JSON — those that encode otherwise than in a
// zero state. An update that does not encode as a JSON object is shown whole; nil stays nil.
func written(update any) any {
	var fields, unset map[string]json.RawMessage
	b, err := json.Marshal(update)
	if err != nil || json.Unmarshal(b, &fields) != nil || fields == nil {
		return update
	}
	zero, _ := json.Marshal(reflect.Zero(reflect.TypeOf(update)).Interface())
	_ = json.Unmarshal(zero, &unset)
	for k, v := range fields {
		if bytes.Equal(v, unset[k]) {
			delete(fields, k)
		}
	}
	return fields
}

// threadState is a thread's state at one checkpoint, as the API shows it.
type threadState struct {
	Values           any             `json:"values"`
	Next             []string        `json:"next"`
	Tasks            []taskJSON      `json:"tasks"`
	Metadata         map[string]any  `json:"metadata"`
	CreatedAt        *time.Time      `json:"created_at"`
	Checkpoint       *checkpointRef  `json:"checkpoint"`
	ParentCheckpoint *checkpointRef  `json:"parent_checkpoint"`
	Interrupts       []interruptJSON `json:"interrupts"`
}

// emptyState is the state of a thread that has no checkpoint.
func emptyState() threadState {
	return threadState{Values: map[string]any{}, Next: []string{}, Tasks: []taskJSON{}, Metadata: map[string]any{}, Interrupts: []interruptJSON{}}
}

func stateOf[S any](s graph.Snapshot[S]) threadState {
	st := threadState{
		Values:     s.Values,
		Next:       append([]string{}, s.Next...),
		Tasks:      make([]taskJSON, 0, len(s.Tasks)),
		Metadata:   map[string]any{"source": string(s.Source), "step": s.Step, "run_id": s.RunID},
		Checkpoint: refOf(s.Config),
		Interrupts: interruptsJSON(s.Interrupts),
	}
	for k, v := range s.Meta {
		st.Metadata[k] = v
	}
	if !s.CreatedAt.IsZero() {
		at := s.CreatedAt
		st.CreatedAt = &at
	}
	if s.ParentID != "" {
		st.ParentCheckpoint = refOf(checkpoint.Config{ThreadID: s.Config.ThreadID, NS: s.Config.NS, CheckpointID: s.ParentID})
	}
	for _, task := range s.Tasks {
		st.Tasks = append(st.Tasks, taskJSON{ID: task.ID, Name: task.Node, Path: []string{"__pregel_pull", task.Node}, Interrupts: interruptsJSON(task.Interrupts), Result: written(task.Update)})
	}
	return st
}

func (t *typed[S]) dropThread(ctx context.Context, thread string) error {
	return t.cp.DeleteThread(ctx, thread)
}

// resumable: the run wrote the thread's latest checkpoint.
func (t *typed[S]) resumable(ctx context.Context, thread, runID string) (bool, error) {
	tu, err := t.cp.Get(ctx, checkpoint.Config{ThreadID: thread})
	if errors.Is(err, checkpoint.ErrNotFound) {
		return false, nil
	}
	return err == nil && tu.Checkpoint.RunID == runID, err
}

// rollback returns the thread to the checkpoint the run started from: a fork of it becomes the
// latest (the thread has none when the run wrote its first).
func (t *typed[S]) rollback(ctx context.Context, thread, runID string) error {
	written, err := t.cp.List(ctx, checkpoint.Config{ThreadID: thread}, checkpoint.ListOptions{RunID: runID})
	if err != nil || len(written) == 0 {
		return err
	}
	if parent := written[len(written)-1].Checkpoint.ParentID; parent != "" {
		_, err = t.update(ctx, thread, nil, "", parent)
		return err
	}
	return t.cp.DeleteThread(ctx, thread)
}

// copyThread copies the checkpoints of a thread's root namespace, and their writes, to another
// thread. Effect writes are left out: what they did is done.
func (t *typed[S]) copyThread(ctx context.Context, from, to string) error {
	s := t.cp
	tuples, err := s.List(ctx, checkpoint.Config{ThreadID: from}, checkpoint.ListOptions{})
	if err != nil {
		return err
	}
	for _, listed := range slices.Backward(tuples) {
		tu, err := s.Get(ctx, listed.Config)
		if err != nil {
			return err
		}
		cfg, err := s.Put(ctx, checkpoint.Config{ThreadID: to}, tu.Checkpoint)
		if err != nil {
			return fmt.Errorf("copy checkpoint %s: %w", tu.Checkpoint.ID, err)
		}
		writes := slices.DeleteFunc(slices.Clone(tu.Writes), func(w checkpoint.Write) bool { return w.Kind == checkpoint.WriteEffect })
		if len(writes) > 0 {
			if err := s.PutWrites(ctx, cfg, writes); err != nil {
				return fmt.Errorf("copy the writes of checkpoint %s: %w", tu.Checkpoint.ID, err)
			}
		}
	}
	return nil
}
