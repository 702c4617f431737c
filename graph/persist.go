package graph

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

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
	w := checkpoint.Write{TaskID: t.id, Node: t.node.name, Kind: kind, Idx: idx, Value: b}
	if err := r.w.putWrites(ctx, r.cp, []checkpoint.Write{w}); err != nil {
		return fmt.Errorf("graph: save %s of node %q in thread %q: %w", kind, t.node.name, r.cfg.thread, err)
	}
	return nil
}

// commit saves a checkpoint of the current state and frontier.
func (r *run[S]) commit(ctx context.Context, source checkpoint.Source, snapshot bool) error {
	if !r.saving {
		return nil
	}
	cp := checkpoint.Checkpoint{
		ID:        newCheckpointID(),
		ParentID:  r.cp.CheckpointID,
		Step:      r.step,
		Source:    source,
		RunID:     r.cfg.runID,
		Joins:     cloneJoins(r.joins),
		Meta:      r.meta,
		Format:    formatVersion,
		CreatedAt: timeNow(),
	}
	r.sinceSnap++
	if snapshot || cp.ParentID == "" || r.sinceSnap >= r.cfg.snapshotEvery {
		b, err := r.cfg.serde.Marshal(r.state)
		if err != nil {
			return fmt.Errorf("graph: save state of thread %q at step %d: %w", r.cfg.thread, r.step, err)
		}
		cp.State = b
		r.sinceSnap = 0
	}
	cp.Next = make([]checkpoint.Task, len(r.next))
	for i, t := range r.next {
		ct := checkpoint.Task{ID: t.id, Node: t.node.name, Push: t.push}
		if t.push {
			b, err := r.cfg.serde.Marshal(t.arg)
			if err != nil {
				return fmt.Errorf("graph: save the argument of a Send to %q: %w", t.node.name, err)
			}
			ct.Arg = b
		}
		cp.Next[i] = ct
	}
	cfg, err := r.w.put(ctx, r.nsConfig(""), cp)
	if err != nil {
		return fmt.Errorf("graph: save checkpoint of thread %q at step %d: %w", r.cfg.thread, r.step, err)
	}
	r.cp = cfg
	names := make([]string, len(r.next))
	for i, t := range r.next {
		names[i] = t.node.name
	}
	r.send(Event{Mode: ModeCheckpoints, Namespace: r.ns, Step: r.step, Data: CheckpointEvent{Config: cfg, Source: source, Next: names}})
	return nil
}

// stateAt rebuilds the state at a checkpoint: the nearest snapshot at or before it, with the update
// writes of every checkpoint in between applied in order. It also returns how many supersteps
// separate the checkpoint from that snapshot.
func (r *run[S]) stateAt(ctx context.Context, t *checkpoint.Tuple) (S, int, error) {
	var s S
	chain, err := r.ancestors(ctx, t, func(cp *checkpoint.Checkpoint) bool { return cp.State != nil })
	if err != nil {
		return s, 0, err
	}
	base := chain[len(chain)-1]
	if err := r.cfg.serde.Unmarshal(base.Checkpoint.State, &s); err != nil {
		return s, 0, r.corrupt(base, fmt.Errorf("state: %w", err))
	}
	s, err = r.replay(s, chain[1:])
	return s, len(chain) - 1, err
}

// deltaAt is the sum of the updates made since the run that reached t started: what a subgraph of
// the parent's own state type hands back to its parent.
func (r *run[S]) deltaAt(ctx context.Context, t *checkpoint.Tuple) (S, error) {
	var zero S
	chain, err := r.ancestors(ctx, t, func(cp *checkpoint.Checkpoint) bool { return cp.Source == checkpoint.SourceInput })
	if err != nil {
		return zero, err
	}
	return r.replay(zero, chain[1:])
}

// ancestors returns t and its parents, newest first, up to and including the first for which stop
// is true.
func (r *run[S]) ancestors(ctx context.Context, t *checkpoint.Tuple, stop func(*checkpoint.Checkpoint) bool) ([]*checkpoint.Tuple, error) {
	if err := r.checkFormat(t); err != nil {
		return nil, err
	}
	chain := []*checkpoint.Tuple{t}
	for cur := t; !stop(&cur.Checkpoint); {
		if cur.Checkpoint.ParentID == "" {
			return nil, r.corrupt(cur, errors.New("it has no saved state and no parent to rebuild it from"))
		}
		p, err := r.cfg.saver.Get(ctx, r.nsConfig(cur.Checkpoint.ParentID))
		if err != nil {
			return nil, r.corrupt(cur, fmt.Errorf("load its parent %s: %w", cur.Checkpoint.ParentID, err))
		}
		if err := r.checkFormat(p); err != nil {
			return nil, err
		}
		chain = append(chain, p)
		cur = p
	}
	return chain, nil
}

// replay applies, oldest first, the update writes of the given checkpoints (newest first) to s.
func (r *run[S]) replay(s S, chain []*checkpoint.Tuple) (S, error) {
	for i := len(chain) - 1; i >= 0; i-- {
		t := chain[i]
		updates := map[string][]byte{}
		for _, w := range t.Writes {
			if w.Kind == checkpoint.WriteUpdate {
				updates[w.TaskID] = w.Value
			}
		}
		for _, task := range t.Checkpoint.Next {
			b, ok := updates[task.ID]
			if !ok {
				return s, r.corrupt(t, fmt.Errorf("task %s (%s) has no saved update, so the state after it cannot be rebuilt", task.ID, task.Node))
			}
			var rec taskRecord[S]
			err := r.cfg.serde.Unmarshal(b, &rec)
			if err != nil {
				return s, r.corrupt(t, fmt.Errorf("update of task %s (%s): %w", task.ID, task.Node, err))
			}
			if s, err = r.g.reduce(s, rec.Update, task.Node, t.Checkpoint.Step+1); err != nil {
				return s, r.corrupt(t, err)
			}
		}
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
	if t == nil {
		return zero, fmt.Errorf("%w: thread %q has no checkpoint", ErrNothingToResume, r.cfg.thread)
	}
	if len(t.Checkpoint.Next) == 0 {
		s, _, err := r.stateAt(ctx, t)
		if err != nil {
			return s, err
		}
		return s, fmt.Errorf("%w: thread %q has finished", ErrNothingToResume, r.cfg.thread)
	}
	if r.state, r.sinceSnap, err = r.stateAt(ctx, t); err != nil {
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
	if err := r.answer(ctx, pending, value, answer); err != nil {
		return r.state, err
	}
	r.setEvents()
	return r.loop(ctx)
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
		r.next[i] = nt
		byID[ct.ID] = nt
	}
	asked := map[*task[S]]map[int][]InterruptInfo{}
	answered := map[*task[S]]map[int]any{}
	for _, w := range t.Writes {
		nt := byID[w.TaskID]
		if nt == nil {
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
		}
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
		}
		for _, idx := range slices.Sorted(maps.Keys(asked[nt])) {
			if _, ok := ans[idx]; !ok {
				pending = append(pending, pendingInterrupt[S]{task: nt, idx: idx, its: asked[nt][idx]})
			}
		}
	}
	return pending, nil
}

// answer matches value to the pending interrupts and saves the answers.
func (r *run[S]) answer(ctx context.Context, pending []pendingInterrupt[S], value any, isAnswer bool) error {
	byID, isMap := value.(ResumeByID)
	during := 0 // interrupts raised by Interrupt calls, which need a value
	for _, p := range pending {
		if p.idx != beforeIdx {
			during += len(p.its)
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
			p.task.resuming = true
		}
	}
	return nil
}
