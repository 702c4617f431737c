package graph

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/agiraph/agiraph/checkpoint"
)

// formatVersion is the version of how states, task outputs, interrupts and resume values are
// encoded in checkpoints. A checkpoint of another version is refused, not misread.
const formatVersion = 1

// taskRecord is how a task's output is saved.
type taskRecord[S any] struct {
	Update   S               `json:"update"`
	Goto     []string        `json:"goto,omitempty"`
	Sends    []sendRecord[S] `json:"sends,omitempty"`
	ToParent bool            `json:"to_parent,omitempty"`
}

type sendRecord[S any] struct {
	Node string `json:"node"`
	Arg  S      `json:"arg"`
}

func taskRecordOf[S any](c Command[S]) taskRecord[S] {
	rec := taskRecord[S]{Update: c.Update, Goto: c.Goto, ToParent: c.ToParent}
	for _, s := range c.Sends {
		rec.Sends = append(rec.Sends, sendRecord[S](s))
	}
	return rec
}

func (rec taskRecord[S]) command() Command[S] {
	c := Command[S]{Update: rec.Update, Goto: rec.Goto, ToParent: rec.ToParent}
	for _, s := range rec.Sends {
		c.Sends = append(c.Sends, Send[S](s))
	}
	return c
}

// resumeRecord is how an answer to an interrupt is saved.
type resumeRecord struct {
	Value any            `json:"value,omitempty"`
	ByID  map[string]any `json:"by_id,omitempty"`
	// Held marks a task's answer that was a held value (see run.held): the held value is taken.
	Held bool `json:"held,omitempty"`
}

func (rec resumeRecord) value() any {
	if rec.ByID != nil {
		return ResumeByID(rec.ByID)
	}
	return rec.Value
}

func (r *run[S]) nsConfig(checkpointID string) checkpoint.Config {
	return checkpoint.Config{ThreadID: r.cfg.thread, NS: r.ns, CheckpointID: checkpointID}
}

// putWrite encodes v and saves it as a write of task t of the current checkpoint.
func (r *run[S]) putWrite(ctx context.Context, t *task[S], kind checkpoint.WriteKind, idx int, v any) error {
	b, err := r.cfg.serde.Marshal(v)
	if err != nil {
		return fmt.Errorf("graph: save %s of node %q: %w", kind, t.node.name, err)
	}
	return r.putEncoded(ctx, t, kind, idx, b, nil)
}

// putEncoded saves b, encoded, as a write of task t of the current checkpoint, when the run saves,
// and after it, in the same call, effects: the task's effects, which only its output has. Their
// done functions are called once that call returned (see task.saved and run.stepSaved).
func (r *run[S]) putEncoded(ctx context.Context, t *task[S], kind checkpoint.WriteKind, idx int, b []byte, effects []effect) error {
	if !r.saving {
		return nil
	}
	w := checkpoint.Write{TaskID: t.id, Node: t.node.name, Kind: kind, Idx: idx, Value: b}
	if r.keepOutput && kind == checkpoint.WriteUpdate {
		r.stepWrites = withEffects(append(r.stepWrites, w), w, effects)
		r.stepSaved = append(r.stepSaved, effects...)
		r.snaps.saved(writeSize(w))
		return nil
	}
	if err := r.w.putWrites(ctx, r.cp, withEffects([]checkpoint.Write{w}, w, effects)); err != nil {
		return fmt.Errorf("graph: save %s of node %q in thread %q: %w", kind, t.node.name, r.cfg.thread, err)
	}
	r.snaps.saved(writeSize(w))
	if len(effects) > 0 {
		saved := effects
		t.saved = &saved
	}
	return nil
}

// withEffects appends to writes the effects of the task whose output is w, as its WriteEffect
// writes.
func withEffects(writes []checkpoint.Write, w checkpoint.Write, effects []effect) []checkpoint.Write {
	for i, e := range effects {
		writes = append(writes, checkpoint.Write{TaskID: w.TaskID, Node: w.Node, Kind: checkpoint.WriteEffect, Idx: i, Value: e.value})
	}
	return writes
}

// saveStepWrites saves the output kept for the step's checkpoint (see keepOutput) on its own,
// when the step ended without one: even when the run was cancelled, so that a resume does not
// run the task again.
func (r *run[S]) saveStepWrites(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), flushTimeout)
	defer cancel()
	writes, saved := r.stepWrites, r.stepSaved
	r.stepWrites, r.stepSaved = nil, nil
	if err := r.w.putWrites(ctx, r.cp, writes); err != nil {
		return fmt.Errorf("graph: save %s of node %q in thread %q: %w", writes[0].Kind, writes[0].Node, r.cfg.thread, err)
	}
	effectsSaved(saved)
	return nil
}

// commit saves a checkpoint of the current state and frontier after a superstep, or, with full
// set, a checkpoint that holds a snapshot of the state whatever the snapshot policy says (a fork).
func (r *run[S]) commit(ctx context.Context, source checkpoint.Source, full bool) error {
	return r.save(ctx, source, full, nil)
}

// commitInput saves the checkpoint made by merging update, from outside the run (an invocation's
// input, or UpdateState's update as node), into the state of the checkpoint the run is at. Unless
// a snapshot is due, update is saved as a WriteInput of that checkpoint, from which the new one's
// state is rebuilt: an input costs what it holds, not what the state holds.
func (r *run[S]) commitInput(ctx context.Context, source checkpoint.Source, node string, update S) error {
	if !r.saving {
		return nil
	}
	b, err := r.cfg.serde.Marshal(taskRecord[S]{Update: update})
	if err != nil {
		return fmt.Errorf("graph: save the %s of thread %q at step %d: %w", source, r.cfg.thread, r.step, err)
	}
	return r.save(ctx, source, false, &checkpoint.Write{Node: node, Kind: checkpoint.WriteInput, Value: b})
}

// save saves a checkpoint of the current state and frontier. It holds a snapshot of the state when
// full is set, when it is the first of its namespace, or when the snapshot policy says one is due;
// otherwise input, when the checkpoint was made by one, is saved as a write of the parent, with
// the checkpoint, as is the output of the step's task kept for it (keepOutput).
func (r *run[S]) save(ctx context.Context, source checkpoint.Source, full bool, input *checkpoint.Write) error {
	if !r.saving {
		return nil
	}
	next, err := r.frontier()
	if err != nil {
		return err
	}
	cp := checkpoint.Checkpoint{
		ID:        newCheckpointID(),
		ParentID:  r.cp.CheckpointID,
		Step:      r.step,
		Source:    source,
		RunID:     r.cfg.runID,
		Next:      next,
		Joins:     cloneJoins(r.joins),
		Meta:      r.meta,
		Format:    formatVersion,
		CreatedAt: timeNow(),
	}
	r.snaps.checkpoint(&cp)
	switch {
	case full || cp.ParentID == "" || r.snaps.due():
		b, err := r.cfg.serde.Marshal(r.state)
		if err != nil {
			return fmt.Errorf("graph: save state of thread %q at step %d: %w", r.cfg.thread, r.step, err)
		}
		cp.State = b
		r.snaps.snapshot(len(b))
	case input != nil:
		input.TaskID = cp.ID
		r.stepWrites = append(r.stepWrites, *input)
		r.snaps.saved(writeSize(*input))
	}
	writes, saved := r.stepWrites, r.stepSaved
	r.stepWrites, r.stepSaved = nil, nil
	var cfg checkpoint.Config
	if source == checkpoint.SourceInput && cp.ParentID == "" && r.cfg.inputAside && r.cfg.durability == DurabilitySync && len(writes) == 0 {
		cfg = r.w.putAside(ctx, r.nsConfig(""), cp)
	} else {
		cfg, err = r.w.putStep(ctx, r.cp, writes, r.nsConfig(""), cp)
	}
	if err != nil {
		return fmt.Errorf("graph: save checkpoint of thread %q at step %d: %w", r.cfg.thread, r.step, err)
	}
	effectsSaved(saved)
	r.cp = cfg
	r.cache.put(r.cacheKey(), cp.ID, r.state, r.snaps.count())
	names := make([]string, len(r.next))
	for i, t := range r.next {
		names[i] = t.node.name
	}
	r.send(Event{Mode: ModeCheckpoints, Namespace: r.ns, Step: r.step, Data: CheckpointEvent{Config: cfg, Source: source, Next: names}})
	return nil
}

// frontier encodes the next tasks for a checkpoint.
func (r *run[S]) frontier() ([]checkpoint.Task, error) {
	next := make([]checkpoint.Task, len(r.next))
	for i, t := range r.next {
		ct := checkpoint.Task{ID: t.id, Node: t.node.name, Push: t.push}
		if t.push {
			b, err := r.cfg.serde.Marshal(t.arg)
			if err != nil {
				return nil, fmt.Errorf("graph: save the argument of a Send to %q: %w", t.node.name, err)
			}
			ct.Arg = b
		}
		next[i] = ct
	}
	return next, nil
}

// stateAt rebuilds the state at a checkpoint: the nearest snapshot at or before it, advanced along
// the checkpoints in between. It also returns that chain: t and its ancestors, newest first, down
// to the snapshot. A state the cache holds at t is not rebuilt: then the chain is nil.
func (r *run[S]) stateAt(ctx context.Context, t *checkpoint.Tuple) (S, []*checkpoint.Tuple, error) {
	if s, _, ok := r.cache.get(r.cacheKey(), t); ok {
		return s, nil, nil
	}
	var s S
	chain, err := r.ancestors(ctx, t, func(cp *checkpoint.Checkpoint) bool { return cp.State != nil })
	if err != nil {
		return s, nil, err
	}
	base := chain[len(chain)-1]
	if err := r.cfg.serde.Unmarshal(base.Checkpoint.State, &s); err != nil {
		return s, nil, r.corrupt(base, fmt.Errorf("state: %w", err))
	}
	s, err = r.replay(s, chain)
	return s, chain, err
}

// continueFrom rebuilds the state at t for a run that goes on from t, and counts what was saved
// since that state's snapshot.
func (r *run[S]) continueFrom(ctx context.Context, t *checkpoint.Tuple) (S, error) {
	if s, count, ok := r.cache.get(r.cacheKey(), t); ok {
		r.snaps.restore(count, t)
		return s, nil
	}
	s, chain, err := r.stateAt(ctx, t)
	if err == nil {
		r.snaps.resume(chain)
	}
	return s, err
}

// deltaAt is the sum of the updates made since the run that reached t started: what a subgraph of
// the parent's own state type hands back to its parent.
func (r *run[S]) deltaAt(ctx context.Context, t *checkpoint.Tuple) (S, error) {
	var zero S
	chain, err := r.ancestors(ctx, t, func(cp *checkpoint.Checkpoint) bool { return cp.Source == checkpoint.SourceInput })
	if err != nil {
		return zero, err
	}
	return r.replay(zero, chain)
}

// ancestors returns t and its parents, newest first, up to and including the first for which stop
// is true. Parents are read in pages (List) of the checkpoints that precede the last one found,
// each as long as the chain found so far: a chain of n checkpoints takes about log2(n) reads,
// which read at most about twice what the chain holds.
func (r *run[S]) ancestors(ctx context.Context, t *checkpoint.Tuple, stop func(*checkpoint.Checkpoint) bool) ([]*checkpoint.Tuple, error) {
	if err := r.checkFormat(t); err != nil {
		return nil, err
	}
	chain := []*checkpoint.Tuple{t}
	var page map[string]*checkpoint.Tuple
	for cur := t; !stop(&cur.Checkpoint); {
		p, read, err := r.parentOf(ctx, cur, page, len(chain))
		if err != nil {
			return nil, err
		}
		if err := r.checkFormat(p); err != nil {
			return nil, err
		}
		page = read
		chain = append(chain, p)
		cur = p
	}
	return chain, nil
}

// parentOf returns the parent of t: from page when it holds it, or else from a new page of the n
// checkpoints that precede t, which it also returns, or else (checkpoints of other branches fill
// the page) alone.
func (r *run[S]) parentOf(ctx context.Context, t *checkpoint.Tuple, page map[string]*checkpoint.Tuple, n int) (*checkpoint.Tuple, map[string]*checkpoint.Tuple, error) {
	id := t.Checkpoint.ParentID
	if id == "" {
		return nil, page, r.corrupt(t, errors.New("it has no saved state and no parent to rebuild it from"))
	}
	if p, ok := page[id]; ok {
		return p, page, nil
	}
	list, err := r.cfg.saver.List(ctx, r.nsConfig(""), checkpoint.ListOptions{Before: t.Checkpoint.ID, Limit: n})
	if err != nil {
		return nil, page, r.corrupt(t, fmt.Errorf("load its parent %s: %w", id, err))
	}
	page = make(map[string]*checkpoint.Tuple, len(list))
	for i := range list {
		page[list[i].Checkpoint.ID] = &list[i]
	}
	if p, ok := page[id]; ok {
		return p, page, nil
	}
	p, err := r.cfg.saver.Get(ctx, r.nsConfig(id))
	if err != nil {
		return nil, page, r.corrupt(t, fmt.Errorf("load its parent %s: %w", id, err))
	}
	return p, page, nil
}

// replay rebuilds the state of chain[0] from s, the state of the last of chain: a checkpoint and
// its ancestors, newest first.
func (r *run[S]) replay(s S, chain []*checkpoint.Tuple) (S, error) {
	var err error
	for i := len(chain) - 1; i > 0; i-- {
		if s, err = r.advance(s, chain[i], chain[i-1]); err != nil {
			return s, err
		}
	}
	return s, nil
}

// advance returns the state of checkpoint t from s, the state of its parent p: s with the updates
// of p's tasks that ran merged in the order of p's frontier (deferred tasks that waited wrote
// nothing), or, when t was made by an input or an edit,
// with that update.
func (r *run[S]) advance(s S, p, t *checkpoint.Tuple) (S, error) {
	if src := t.Checkpoint.Source; src == checkpoint.SourceInput || src == checkpoint.SourceUpdate {
		for _, w := range p.Writes {
			if w.Kind == checkpoint.WriteInput && w.TaskID == t.Checkpoint.ID {
				return r.merge(s, p, w.Value, "the "+string(src)+" of checkpoint "+t.Checkpoint.ID, w.Node, t.Checkpoint.Step)
			}
		}
		return s, r.corrupt(t, fmt.Errorf("it holds no state, and its parent %s holds no %s for it", p.Checkpoint.ID, src))
	}
	updates := map[string][]byte{}
	for _, w := range p.Writes {
		if w.Kind == checkpoint.WriteUpdate {
			updates[w.TaskID] = w.Value
		}
	}
	for _, task := range p.Checkpoint.Next {
		b, ok := updates[task.ID]
		if !ok {
			if n := r.g.nodes[task.Node]; n != nil && n.cfg.deferred && !task.Push {
				continue // it waited (see Defer)
			}
			return s, r.corrupt(p, fmt.Errorf("task %s (%s) has no saved update, so the state after it cannot be rebuilt", task.ID, task.Node))
		}
		var err error
		if s, err = r.merge(s, p, b, fmt.Sprintf("update of task %s (%s)", task.ID, task.Node), task.Node, t.Checkpoint.Step); err != nil {
			return s, err
		}
	}
	return s, nil
}

// merge decodes b, an update (what names it) saved with checkpoint t, and merges it into s as the
// update of node at step.
func (r *run[S]) merge(s S, t *checkpoint.Tuple, b []byte, what, node string, step int) (S, error) {
	var rec taskRecord[S]
	if err := r.cfg.serde.Unmarshal(b, &rec); err != nil {
		return s, r.corrupt(t, fmt.Errorf("%s: %w", what, err))
	}
	s, err := r.g.reduce(s, rec.Update, node, step)
	if err != nil {
		return s, r.corrupt(t, err)
	}
	return s, nil
}

// checkFormat refuses a checkpoint written in an encoding this build does not know.
func (r *run[S]) checkFormat(t *checkpoint.Tuple) error {
	if t.Checkpoint.Format != formatVersion {
		return r.corrupt(t, fmt.Errorf("it is in format version %d; this build reads version %d", t.Checkpoint.Format, formatVersion))
	}
	return nil
}

// CorruptCheckpointError is a checkpoint that cannot be read back into a run.
type CorruptCheckpointError struct {
	Thread, NS, CheckpointID string
	Err                      error
}

func (e *CorruptCheckpointError) Error() string {
	return fmt.Sprintf("graph: thread %q namespace %q checkpoint %s is unusable: %v", e.Thread, e.NS, e.CheckpointID, e.Err)
}

func (e *CorruptCheckpointError) Unwrap() error { return e.Err }

func (r *run[S]) corrupt(t *checkpoint.Tuple, err error) error {
	return &CorruptCheckpointError{Thread: r.cfg.thread, NS: r.ns, CheckpointID: t.Checkpoint.ID, Err: err}
}

// pendingInterrupt is an interrupt loaded from a checkpoint that has no answer yet.
type pendingInterrupt[S any] struct {
	task *task[S]
	idx  int
	its  []InterruptInfo
}

// resume loads the thread's latest checkpoint of this namespace (or the one WithCheckpointID names)
// and continues the run, value answering the pending interrupts.
func (r *run[S]) resume(ctx context.Context, value any) (S, error) {
	return r.resumeWith(ctx, value, true)
}

// resumeWith is resume; answer is false when value is not an answer (a subgraph run again without
// new input), so pending interrupts of Interrupt calls are raised again.
func (r *run[S]) resumeWith(ctx context.Context, value any, answer bool) (_ S, err error) {
	var zero S
	if !r.saving {
		return zero, fmt.Errorf("graph: resume: %w", ErrNoCheckpointer)
	}
	t, err := r.load(ctx)
	if err != nil {
		return zero, err
	}
	cmd, isCmd := value.(ResumeCommand[S])
	if isCmd {
		value = cmd.Value
	}
	// A command that updates or goes somewhere runs also on a thread that has finished or has no
	// checkpoint yet, from the state it has.
	edits := isCmd && cmd.edits()
	switch {
	case t == nil && !edits:
		return zero, fmt.Errorf("%w: thread %q has no checkpoint", ErrNothingToResume, r.cfg.thread)
	case t == nil:
		r.step = -1 // the command's checkpoint is the thread's first, step 0
		defer func() { err = r.finish(ctx, err) }()
		if err := r.edit(ctx, cmd, nil); err != nil {
			return r.state, err
		}
		return r.continueLoop(ctx, nil, value, answer, false)
	case len(t.Checkpoint.Next) == 0 && !edits:
		s, _, err := r.stateAt(ctx, t)
		if err != nil {
			return s, err
		}
		return s, fmt.Errorf("%w: thread %q has finished", ErrNothingToResume, r.cfg.thread)
	}
	if r.state, err = r.continueFrom(ctx, t); err != nil {
		return r.state, err
	}
	if r.trackDelta {
		if r.delta, err = r.deltaAt(ctx, t); err != nil {
			return r.state, err
		}
	}
	r.at(t)
	defer func() { err = r.finish(ctx, err) }()
	forked, err := r.fork(ctx, t)
	if err != nil {
		return r.state, err
	}
	var pending []pendingInterrupt[S]
	if !forked {
		if pending, err = r.loadFrontier(t); err != nil {
			return r.state, err
		}
	}
	if edits {
		var carried []checkpoint.Write
		if !forked {
			carried = t.Writes
		}
		if err := r.edit(ctx, cmd, carried); err != nil {
			return r.state, err
		}
	}
	// A checkpoint made by UpdateState or a fork runs its tasks from scratch: the interrupts
	// they raised before are gone, and a value given now waits for the first Interrupt call.
	return r.continueLoop(ctx, pending, value, answer, forked || t.Checkpoint.Source == checkpoint.SourceUpdate)
}

// continueLoop answers the pending interrupts with value (see answer) and runs the frontier.
func (r *run[S]) continueLoop(ctx context.Context, pending []pendingInterrupt[S], value any, answer, mayHold bool) (S, error) {
	if err := r.answer(ctx, pending, value, answer, mayHold); err != nil {
		return r.state, err
	}
	r.setEvents()
	if !r.send(Event{Mode: ModeValues, Namespace: r.ns, Step: r.step, Data: r.state}) {
		return r.state, errStopped
	}
	return r.loop(ctx)
}

// edit carries out the update and the gotos of a ResumeCommand: a checkpoint of source update
// whose state has cmd.Update merged, whose frontier has a task of each of cmd.Goto's nodes added,
// and which keeps writes, what the tasks of the frontier wrote so far, but their effects: those
// were handled with the writes that carried them.
func (r *run[S]) edit(ctx context.Context, cmd ResumeCommand[S], writes []checkpoint.Write) error {
	for _, name := range cmd.Goto {
		n := r.g.nodes[name]
		switch {
		case name == END:
			continue
		case n == nil:
			return fmt.Errorf("graph: resume thread %q: the command goes to unknown node %q", r.cfg.thread, name)
		case slices.ContainsFunc(r.next, func(t *task[S]) bool { return !t.push && t.node == n }):
			continue
		}
		r.next = append(r.next, &task[S]{id: strconv.Itoa(len(r.next)), node: n})
	}
	r.step++
	var err error
	if r.state, err = r.g.reduce(r.state, cmd.Update, "", r.step); err != nil {
		return err
	}
	r.meta = map[string]string{"resume_command": "true"}
	defer func() { r.meta = nil }()
	if err := r.commitInput(ctx, checkpoint.SourceUpdate, "", cmd.Update); err != nil {
		return err
	}
	var carried []checkpoint.Write
	for _, w := range writes {
		if w.Kind != checkpoint.WriteInput && w.Kind != checkpoint.WriteEffect && w.TaskID != heldTask {
			carried = append(carried, w)
		}
	}
	if len(carried) == 0 {
		return nil
	}
	if err := r.w.putWrites(ctx, r.cp, carried); err != nil {
		return fmt.Errorf("graph: resume thread %q: carry the paused step's writes: %w", r.cfg.thread, err)
	}
	for _, w := range carried {
		r.snaps.saved(writeSize(w))
	}
	return nil
}

// edits reports whether the command updates the state or goes somewhere.
func (c ResumeCommand[S]) edits() bool {
	var zero S
	return len(c.Goto) > 0 || !reflect.DeepEqual(c.Update, zero)
}

// heldTask is the task ID of the write that saves a held value.
const heldTask = ""

// heldValue is a resume value given when no Interrupt call was waiting for one: after
// UpdateState, or on a fork of an interrupted checkpoint, whose tasks run again from scratch. The
// first Interrupt call of the run's tasks that has no answer takes it (LangGraph's null resume).
type heldValue struct {
	mu sync.Mutex
	v  any
	ok bool // taken
}

// takeHeld gives task t's Interrupt call number idx the held value, if it is still there, and
// saves it as that call's answer.
func (r *run[S]) takeHeld(ctx context.Context, t *task[S], idx int) (any, bool, error) {
	h := r.held
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.ok {
		return nil, false, nil
	}
	if err := r.putWrite(ctx, t, checkpoint.WriteResume, idx, resumeRecord{Value: h.v, Held: true}); err != nil {
		return nil, false, err
	}
	h.ok = true
	t.resume = append(t.resume[:idx:idx], h.v) // a retry of the task gets it too
	if t.flow != nil {
		t.flow.asked = append(t.flow.asked[:idx:idx], "")
	}
	return h.v, true, nil
}

// fork starts a new branch at the loaded checkpoint t when WithCheckpointID named it and it is not
// the thread's latest: a copy of t whose next tasks have written nothing, so they all run again.
func (r *run[S]) fork(ctx context.Context, t *checkpoint.Tuple) (bool, error) {
	if r.cfg.checkpointID == "" {
		return false, nil
	}
	latest, err := r.cfg.saver.Get(ctx, r.nsConfig(""))
	if err != nil {
		return false, fmt.Errorf("graph: thread %q: %w", r.cfg.thread, err)
	}
	if latest.Checkpoint.ID == t.Checkpoint.ID {
		return false, nil
	}
	if _, err := r.loadFrontier(&checkpoint.Tuple{Config: t.Config, Checkpoint: t.Checkpoint}); err != nil {
		return false, err
	}
	r.meta = map[string]string{"forked_from": t.Checkpoint.ID}
	defer func() { r.meta = nil }()
	return true, r.commit(ctx, checkpoint.SourceFork, true)
}

// loadFrontier rebuilds the tasks of a checkpoint with what they had written, and returns the
// interrupts still waiting for an answer.
func (r *run[S]) loadFrontier(t *checkpoint.Tuple) ([]pendingInterrupt[S], error) {
	if err := r.checkFormat(t); err != nil {
		return nil, err
	}
	byID := map[string]*task[S]{}
	r.next = make([]*task[S], len(t.Checkpoint.Next))
	for i, ct := range t.Checkpoint.Next {
		n := r.g.nodes[ct.Node]
		if n == nil {
			return nil, r.corrupt(t, fmt.Errorf("its next task %s names node %q, which this graph does not have", ct.ID, ct.Node))
		}
		nt := &task[S]{id: ct.ID, node: n, push: ct.Push}
		if ct.Push {
			if err := r.cfg.serde.Unmarshal(ct.Arg, &nt.arg); err != nil {
				return nil, r.corrupt(t, fmt.Errorf("argument of task %s (%s): %w", ct.ID, ct.Node, err))
			}
		}
		if r.cfg.calls {
			nt.flow = &flowTask{}
		}
		r.next[i] = nt
		byID[ct.ID] = nt
	}
	asked := map[*task[S]]map[int][]InterruptInfo{}
	answered := map[*task[S]]map[int]any{}
	var (
		held  *resumeRecord
		taken bool
	)
	for _, w := range t.Writes {
		if w.TaskID == heldTask && w.Kind == checkpoint.WriteResume {
			held = new(resumeRecord)
			if err := r.cfg.serde.Unmarshal(w.Value, held); err != nil {
				return nil, r.corrupt(t, fmt.Errorf("held resume value: %w", err))
			}
			continue
		}
		nt := byID[w.TaskID]
		if nt == nil {
			if owner, _, ok := strings.Cut(w.TaskID, "."); ok && byID[owner] != nil && byID[owner].flow != nil {
				byID[owner].flow.writes = append(byID[owner].flow.writes, w)
			}
			continue
		}
		switch w.Kind {
		case checkpoint.WriteUpdate:
			var rec taskRecord[S]
			if err := r.cfg.serde.Unmarshal(w.Value, &rec); err != nil {
				return nil, r.corrupt(t, fmt.Errorf("update of task %s (%s): %w", w.TaskID, w.Node, err))
			}
			nt.done, nt.out = true, rec.command()
		case checkpoint.WriteInterrupt:
			var its []InterruptInfo
			if err := r.cfg.serde.Unmarshal(w.Value, &its); err != nil {
				return nil, r.corrupt(t, fmt.Errorf("interrupt of task %s (%s): %w", w.TaskID, w.Node, err))
			}
			if asked[nt] == nil {
				asked[nt] = map[int][]InterruptInfo{}
			}
			asked[nt][w.Idx] = its
		case checkpoint.WriteResume:
			var rec resumeRecord
			if err := r.cfg.serde.Unmarshal(w.Value, &rec); err != nil {
				return nil, r.corrupt(t, fmt.Errorf("resume value of task %s (%s): %w", w.TaskID, w.Node, err))
			}
			if answered[nt] == nil {
				answered[nt] = map[int]any{}
			}
			answered[nt][w.Idx] = rec.value()
			taken = taken || rec.Held
		}
	}
	r.held = nil
	if held != nil && !taken {
		r.held = &heldValue{v: held.Value}
	}
	var pending []pendingInterrupt[S]
	for _, nt := range r.next {
		if nt.done {
			continue
		}
		ans := answered[nt]
		_, nt.skipBefore = ans[beforeIdx]
		for i := 0; ; i++ {
			v, ok := ans[i]
			if !ok {
				break
			}
			nt.resume = append(nt.resume, v)
			if nt.flow != nil {
				nt.flow.asked = append(nt.flow.asked, askedID(asked[nt][i]))
			}
		}
		for _, idx := range slices.Sorted(maps.Keys(asked[nt])) {
			if _, ok := ans[idx]; !ok {
				pending = append(pending, pendingInterrupt[S]{task: nt, idx: idx, its: asked[nt][idx]})
			}
		}
	}
	return pending, nil
}

// askedID is the ID of the one interrupt of its, or "" (a subgraph's task may ask several).
func askedID(its []InterruptInfo) string {
	if len(its) != 1 {
		return ""
	}
	return its[0].ID
}

// putCall saves w, a write of a call of a task (see Task), as a write of the current checkpoint.
func (r *run[S]) putCall(ctx context.Context, w checkpoint.Write) error {
	if err := r.w.putWrites(ctx, r.cp, []checkpoint.Write{w}); err != nil {
		return fmt.Errorf("graph: save %s of task %q in thread %q: %w", w.Kind, w.Node, r.cfg.thread, err)
	}
	r.snaps.saved(writeSize(w))
	return nil
}

// hold saves value as the held value of the checkpoint the run is at.
func (r *run[S]) hold(ctx context.Context, value any) error {
	b, err := r.cfg.serde.Marshal(resumeRecord{Value: value})
	if err != nil {
		return fmt.Errorf("graph: resume thread %q: save the value: %w", r.cfg.thread, err)
	}
	w := checkpoint.Write{TaskID: heldTask, Kind: checkpoint.WriteResume, Value: b}
	if err := r.w.putWrites(ctx, r.cp, []checkpoint.Write{w}); err != nil {
		return fmt.Errorf("graph: resume thread %q: save the value: %w", r.cfg.thread, err)
	}
	r.snaps.saved(writeSize(w))
	r.held = &heldValue{v: value}
	return nil
}

// answer matches value to the pending interrupts and saves the answers. With mayHold set, a value
// that no pending interrupt asks for is held for the first Interrupt call (see heldValue).
func (r *run[S]) answer(ctx context.Context, pending []pendingInterrupt[S], value any, isAnswer, mayHold bool) error {
	byID, isMap := value.(ResumeByID)
	during := 0 // interrupts raised by Interrupt calls, which need a value; breakpoints do not
	for _, p := range pending {
		for _, it := range p.its {
			if it.When == "during" {
				during++
			}
		}
	}
	if r.parent == nil {
		switch {
		case isMap:
			known := map[string]bool{}
			for _, p := range pending {
				for _, it := range p.its {
					known[it.ID] = true
				}
			}
			for id := range byID {
				if !known[id] {
					return fmt.Errorf("graph: resume thread %q: no pending interrupt has ID %q (pending: %v)", r.cfg.thread, id, slices.Sorted(maps.Keys(known)))
				}
			}
		case during > 1:
			return fmt.Errorf("graph: resume thread %q: %d interrupts are waiting; answer them with a ResumeByID", r.cfg.thread, during)
		case during == 0 && value != nil && mayHold:
			return r.hold(ctx, value)
		case during == 0 && value != nil:
			return fmt.Errorf("graph: resume thread %q: no interrupt is waiting for the value %v", r.cfg.thread, value)
		}
	}
	for _, p := range pending {
		var v any
		switch {
		case !isAnswer:
			continue
		case p.idx == beforeIdx:
		case isMap:
			sub := ResumeByID{}
			for _, it := range p.its {
				if a, ok := byID[it.ID]; ok {
					sub[it.ID] = a
				}
			}
			if len(sub) == 0 {
				continue
			}
			if p.task.node.sub == nil {
				v = sub[p.its[0].ID]
			} else {
				v = sub
			}
		default:
			v = value
		}
		rec := resumeRecord{Value: v}
		if m, ok := v.(ResumeByID); ok {
			rec = resumeRecord{ByID: m}
		}
		if err := r.putWrite(ctx, p.task, checkpoint.WriteResume, p.idx, rec); err != nil {
			return err
		}
		if p.idx == beforeIdx {
			p.task.skipBefore = true
		} else {
			p.task.resume = append(p.task.resume, v)
			if p.task.flow != nil {
				p.task.flow.asked = append(p.task.flow.asked, askedID(p.its))
			}
			p.task.resuming = true
		}
	}
	return nil
}
