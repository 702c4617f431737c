package graph

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agiraph/agiraph/checkpoint"
)

// Snapshot is a thread's state at one checkpoint.
type Snapshot[S any] struct {
	// Values is the state at the checkpoint. For a thread's latest checkpoint (State without
	// WithCheckpointID) it includes the updates of the next tasks that already finished: a step
	// paused by an interrupt or stopped by a failure shows the work its other tasks did.
	Values S
	// Next lists the nodes of the tasks still to run (deferred ones that wait included); it is
	// empty when the run has finished, or when every next task has finished but the step they
	// belong to was not saved yet (a crash) — Tasks tells these apart.
	Next []string
	// Tasks are the checkpoint's next tasks, finished or not: none when the run has finished.
	Tasks []TaskState
	// Interrupts are the requests for input the run is waiting for at this checkpoint.
	Interrupts []InterruptInfo
	Config     checkpoint.Config // addresses this checkpoint
	ParentID   string
	Step       int
	Source     checkpoint.Source
	RunID      string
	Meta       map[string]string
	CreatedAt  time.Time
}

// TaskState is one of a snapshot's next tasks.
type TaskState struct {
	ID   string
	Node string
	// Done is set when the task finished (its update is in the snapshot's Values, for the
	// latest checkpoint) and will not run again when the thread is resumed.
	Done bool
	// Update is what the task wrote, once Done: the update of the state it returned, an S of the
	// snapshot's (the fields it set; under the default reducer, those it left zero it did not
	// write), read from the writes the checkpointer keeps for the checkpoint. It is nil for a task
	// that has not finished.
	Update any
	// Interrupts are the task's requests for input that have no answer yet.
	Interrupts []InterruptInfo
	// Subgraph is, for a task of a subgraph with WithSubgraphs given to State or History, the
	// subgraph's latest snapshot under the task's namespace, as a Snapshot of the subgraph's
	// state type (its own tasks' subgraphs included): where it paused, or where it ended. It is
	// nil without WithSubgraphs, for other tasks, and for a subgraph that saved nothing yet.
	Subgraph any
}

// threadRun is a run used to read or change a thread outside of an invocation.
func (g *Compiled[S]) threadRun(opts []Option) (*run[S], error) {
	r, err := g.newRun(g.cfg.with(opts), nil)
	if err != nil {
		return nil, err
	}
	if !r.saving {
		return nil, ErrNoCheckpointer
	}
	return r, nil
}

// State returns the thread's latest snapshot (or the one WithCheckpointID names). A thread with no
// checkpoint gives an error wrapping checkpoint.ErrNotFound.
func (g *Compiled[S]) State(ctx context.Context, opts ...Option) (Snapshot[S], error) {
	r, err := g.threadRun(opts)
	if err != nil {
		return Snapshot[S]{}, err
	}
	t, err := r.load(ctx)
	if err != nil {
		return Snapshot[S]{}, err
	}
	if t == nil {
		return Snapshot[S]{}, fmt.Errorf("graph: thread %q: %w", r.cfg.thread, checkpoint.ErrNotFound)
	}
	s, _, err := r.stateAt(ctx, t)
	if err != nil {
		return Snapshot[S]{}, err
	}
	return r.snapshot(ctx, t, s, r.cfg.checkpointID == "")
}

// History returns the thread's snapshots, newest first, narrowed by filter (limit, before, source,
// run, metadata).
func (g *Compiled[S]) History(ctx context.Context, filter checkpoint.ListOptions, opts ...Option) ([]Snapshot[S], error) {
	r, err := g.threadRun(opts)
	if err != nil {
		return nil, err
	}
	tuples, err := r.cfg.saver.List(ctx, r.nsConfig(""), filter)
	if err != nil {
		return nil, fmt.Errorf("graph: history of thread %q: %w", r.cfg.thread, err)
	}
	// Rebuild states oldest first, so each checkpoint that stores only updates advances its
	// parent's. A state is advanced once: an appending reducer may share its arrays with the next,
	// so a second child of a checkpoint (a branch) is rebuilt on its own.
	type built struct {
		tuple *checkpoint.Tuple
		state S
	}
	byID := map[string]built{}
	out := make([]Snapshot[S], len(tuples))
	for i := len(tuples) - 1; i >= 0; i-- {
		t := &tuples[i]
		var s S
		if p, ok := byID[t.Checkpoint.ParentID]; ok && t.Checkpoint.State == nil {
			delete(byID, t.Checkpoint.ParentID)
			if err := r.checkFormat(t); err != nil {
				return nil, err
			}
			s, err = r.advance(p.state, p.tuple, t)
		} else {
			s, _, err = r.stateAt(ctx, t)
		}
		if err != nil {
			return nil, err
		}
		byID[t.Checkpoint.ID] = built{t, s}
		if out[i], err = r.snapshot(ctx, t, s, false); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// snapshot describes checkpoint t, whose state is s; with latest set, the updates of its next
// tasks that finished are merged into the values and those tasks are not listed in Next. With
// WithSubgraphs, the tasks of subgraphs get the subgraph's snapshot.
func (r *run[S]) snapshot(ctx context.Context, t *checkpoint.Tuple, s S, latest bool) (Snapshot[S], error) {
	pending, err := r.loadFrontier(t)
	if err != nil {
		return Snapshot[S]{}, err
	}
	if latest {
		outs := make([]Command[S], len(r.next))
		for i, t := range r.next {
			outs[i] = t.out
		}
		if s, err = r.withDone(s, r.next, outs); err != nil {
			return Snapshot[S]{}, r.corrupt(t, err)
		}
	}
	snap := Snapshot[S]{
		Values: s, Config: t.Config, ParentID: t.Checkpoint.ParentID, Step: t.Checkpoint.Step,
		Source: t.Checkpoint.Source, RunID: t.Checkpoint.RunID, Meta: t.Checkpoint.Meta, CreatedAt: t.Checkpoint.CreatedAt,
	}
	asked := map[*task[S]][]InterruptInfo{}
	for _, p := range pending {
		asked[p.task] = append(asked[p.task], p.its...)
		snap.Interrupts = append(snap.Interrupts, p.its...)
	}
	for _, task := range r.next {
		if !latest || !task.done {
			snap.Next = append(snap.Next, task.node.name)
		}
		ts := TaskState{ID: task.id, Node: task.node.name, Done: task.done, Interrupts: asked[task]}
		if task.done {
			ts.Update = task.out.Update
		}
		if sub, ok := task.node.sub.(subgraph); ok && r.cfg.subgraphs {
			if ts.Subgraph, err = sub.stateIn(ctx, r.env, taskPath(r.ns, task.node.name, t.Config.CheckpointID, task.id)); err != nil {
				return Snapshot[S]{}, err
			}
		}
		snap.Tasks = append(snap.Tasks, ts)
	}
	return snap, nil
}

// subgraph is a compiled graph run as a subgraph, as State sees it.
type subgraph interface {
	// stateIn returns the latest snapshot (a Snapshot of the subgraph's state type) saved under
	// the namespace ns of the thread of e, with those of its own subgraphs; nil when it has none.
	stateIn(ctx context.Context, e *env, ns string) (any, error)
}

func (g *Compiled[S]) stateIn(ctx context.Context, e *env, ns string) (any, error) {
	cfg := g.cfg
	cfg.saver, cfg.serde, cfg.thread = e.saver, e.serde, e.thread
	cfg.subgraphs, cfg.checkpointID, cfg.cache = true, "", nil
	r, err := g.newRun(cfg, nil)
	if err != nil {
		return nil, err
	}
	r.ns = ns
	t, err := r.load(ctx)
	if err != nil || t == nil {
		return nil, err
	}
	s, _, err := r.stateAt(ctx, t)
	if err != nil {
		return nil, err
	}
	return r.snapshot(ctx, t, s, true)
}

// UpdateState changes a thread's state from outside a run, as if node asNode had returned update:
// the update is merged by the reducer into the latest state (or the state of the checkpoint
// WithCheckpointID names: a fork, the old branch stays), and a new checkpoint is saved whose next
// tasks are where asNode's edges and routers lead. With asNode "" the next tasks stay those of the
// checkpoint updated (they run again from scratch), or, on a thread with no checkpoint, are the
// first nodes, as after an input. END is not a node and is refused. Resume continues
// from the new checkpoint, whose config is returned. When the run was paused before nodes
// (WithInterruptBefore), the update counts as the answer: those nodes run on Resume without pausing
// again.
func (g *Compiled[S]) UpdateState(ctx context.Context, update S, asNode string, opts ...Option) (checkpoint.Config, error) {
	r, err := g.threadRun(opts)
	if err != nil {
		return checkpoint.Config{}, err
	}
	var from *node[S]
	switch {
	case asNode == END:
		return checkpoint.Config{}, fmt.Errorf("graph: update state as %q: END is not a node; update as a node whose edges lead to END", asNode)
	case asNode == START:
		from = &node[S]{name: START}
	case asNode != "":
		if from = g.nodes[asNode]; from == nil {
			return checkpoint.Config{}, fmt.Errorf("graph: update state as unknown node %q", asNode)
		}
	}
	t, err := r.load(ctx)
	if err != nil {
		return checkpoint.Config{}, err
	}
	if t == nil && from == nil {
		from = &node[S]{name: START} // the first update of a thread is its input
	}
	var (
		base   S
		paused map[string]bool
	)
	if t != nil {
		if base, err = r.continueFrom(ctx, t); err != nil {
			return checkpoint.Config{}, err
		}
		r.at(t)
		r.step++
		if paused, err = r.pausedBefore(t); err != nil {
			return checkpoint.Config{}, err
		}
		if asNode == "" {
			if _, err := r.loadFrontier(&checkpoint.Tuple{Config: t.Config, Checkpoint: t.Checkpoint}); err != nil {
				return checkpoint.Config{}, err
			}
		}
	}
	if r.state, err = g.reduce(base, update, asNode, r.step); err != nil {
		return checkpoint.Config{}, err
	}
	if from != nil {
		if r.next, err = r.plan(ctx, []*task[S]{{node: from}}, []Command[S]{{Update: update}}, nil, nil); err != nil {
			return checkpoint.Config{}, err
		}
	}
	r.meta = map[string]string{"as_node": asNode}
	err = r.commitInput(ctx, checkpoint.SourceUpdate, asNode, update)
	if err == nil && len(paused) > 0 {
		err = r.passBefore(ctx, func(t *task[S]) bool { return paused[t.node.name] })
	}
	if err = r.finish(ctx, err); err != nil {
		return checkpoint.Config{}, err
	}
	return r.cp, nil
}

// pausedBefore returns the nodes whose breakpoints (WithInterruptBefore) checkpoint t asked for
// or passed.
func (r *run[S]) pausedBefore(t *checkpoint.Tuple) (map[string]bool, error) {
	pending, err := r.loadFrontier(t)
	if err != nil {
		return nil, err
	}
	paused := map[string]bool{}
	for _, p := range pending {
		if p.idx == beforeIdx {
			paused[p.task.node.name] = true
		}
	}
	for _, t := range r.next {
		if t.skipBefore {
			paused[t.node.name] = true
		}
	}
	return paused, nil
}

// passBefore marks the frontier's tasks for which pass is true as already past their breakpoints
// (WithInterruptBefore): updating the state of a paused run is how a human answers it.
func (r *run[S]) passBefore(ctx context.Context, pass func(*task[S]) bool) error {
	for _, t := range r.next {
		if pass(t) {
			if err := r.putWrite(ctx, t, checkpoint.WriteResume, beforeIdx, resumeRecord{}); err != nil {
				return err
			}
		}
	}
	return nil
}

// DeleteThread removes every checkpoint of a thread from the graph's checkpointer.
func (g *Compiled[S]) DeleteThread(ctx context.Context, thread string) error {
	if g.cfg.saver == nil {
		return ErrNoCheckpointer
	}
	if thread == "" {
		return errors.New("graph: delete thread: no thread ID")
	}
	return g.cfg.saver.DeleteThread(ctx, thread)
}
