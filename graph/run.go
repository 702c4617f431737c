package graph

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"runtime/debug"
	"slices"
	"strconv"
	"time"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel/trace"

	"github.com/agiraph/agiraph/checkpoint"
)

// Compiled is a validated graph, ready to run. It is safe for concurrent use: every run has its own
// state.
type Compiled[S any] struct {
	nodes         map[string]*node[S]
	order         []string
	edges         map[string][]string
	routers       map[string][]*router[S]
	joins         []*join
	joinsBySource map[string][]int
	reducer       Reducer[S]
	one           oneValue[S] // nil when the reducer decides alone (SetReducer)
	cfg           config
}

// Invoke runs the graph from input until it ends, fails or pauses, and returns the final state.
//
// With a checkpointer and a thread that already has checkpoints, input is merged into the thread's
// latest state and the graph runs again from START. The tasks the thread had left to run (it was
// paused, or failed) are dropped, but for those of deferred nodes that wait (see Defer): they keep
// waiting, as in LangGraph. A paused run returns its state so far and an
// *Interrupted error; continue it with Resume.
func (g *Compiled[S]) Invoke(ctx context.Context, input S, opts ...Option) (S, error) {
	r, err := g.newRun(g.cfg.with(opts), nil)
	if err != nil {
		var zero S
		return zero, err
	}
	ctx = r.traceRun(ctx, "graph.invoke")
	s, err := r.start(ctx, input)
	r.endRun(ctx, err)
	return s, err
}

// Resume continues a thread from its latest checkpoint: after an interrupt, a failure, a crash or a
// cancellation. Tasks of the interrupted superstep that finished are not run again.
//
// value answers the pending interrupt: with one interrupt raised by Interrupt pending, value is
// what that call returns; with several, pass a ResumeByID. Interrupts from WithInterruptBefore and
// WithInterruptAfter need no value.
func (g *Compiled[S]) Resume(ctx context.Context, value any, opts ...Option) (S, error) {
	r, err := g.newRun(g.cfg.with(opts), nil)
	if err != nil {
		var zero S
		return zero, err
	}
	ctx = r.traceRun(ctx, "graph.resume")
	s, err := r.resume(ctx, value)
	r.endRun(ctx, err)
	return s, err
}

// run is one invocation of a compiled graph.
type run[S any] struct {
	g      *Compiled[S]
	cfg    config
	parent *scope // the task that runs this graph as a subgraph; nil at the root
	ns     string
	saving bool
	w      *writer // the way to the saver, when saving
	env    *env
	emit   func(Event) bool // nil when nobody listens
	events chan Event       // tasks' custom and subgraph events, when someone listens
	// trackDelta keeps delta, the sum of all updates of this run, for subgraphs of the same type.
	trackDelta bool
	stopped    bool // the stream's reader stopped

	state    S
	delta    S
	step     int // the step of the latest checkpoint
	stepsRun int // supersteps run by this invocation
	next     []*task[S]
	joins    map[string][]string
	cp       checkpoint.Config // the checkpoint the frontier belongs to
	snaps    snapshots         // when the next checkpoint stores the full state
	cache    *StateCache[S]    // WithStateCache, at the root of a run that saves
	toParent *Command[S]       // a command for the parent graph that ended this run
	held     *heldValue        // a resume value waiting for an Interrupt call
	// keepOutput is set while the one task of a superstep runs, when the saver saves a step in
	// one call (checkpoint.StepSaver): its output is kept in stepWrites, to be saved with the
	// step's checkpoint rather than on its own (see runStep).
	keepOutput bool
	stepWrites []checkpoint.Write
	stepSaved  []effect          // the effects of the task whose output stepWrites holds (see Effect)
	meta       map[string]string // metadata of the next checkpoint
	span       trace.Span        // the run's span, when it records (see traceRun)
}

// task is one entry of the frontier.
type task[S any] struct {
	id   string
	node *node[S]
	arg  S // the Send's argument for push tasks
	push bool

	done bool       // the task finished: in this superstep, or before the checkpoint was loaded
	out  Command[S] // its update, when it was loaded from the checkpoint
	// Set when the run was loaded from a checkpoint.
	resume     []any     // answers to its Interrupt calls
	resuming   bool      // resume got a new answer in this invocation
	skipBefore bool      // its WithInterruptBefore pause was already answered
	flow       *flowTask // in an entrypoint's run, when loaded from a checkpoint

	cached bool // its output came from the node cache
	// saved holds the effects saved with its output, whose done functions the run's goroutine
	// calls when the task finishes (see Effect); nil when it has none.
	saved *[]effect
}

var errStopped = errors.New("graph: stream reader stopped")

func (g *Compiled[S]) newRun(cfg config, parent *scope) (*run[S], error) {
	r := &run[S]{g: g, cfg: cfg, parent: parent}
	r.snaps.every = cfg.snapshotEvery
	if parent != nil {
		r.ns = parent.path()
		r.cfg.checkpointID = ""
		r.cfg.saver, r.cfg.serde, r.cfg.thread = parent.saver, parent.serde, parent.thread
		r.cfg.modes, r.cfg.subgraphs, r.cfg.tracer = parent.modes, parent.subs, parent.tracer
		if !parent.subs {
			r.cfg.modes &= ModeCustom // its nodes' custom events are streamed all the same, as in LangGraph
		}
		if parent.events != nil && r.cfg.modes != 0 {
			r.emit = parent.emit
		}
	} else if cfg.saver != nil && cfg.thread == "" {
		return nil, errors.New("graph: a checkpointer is set but no thread: pass WithThread")
	}
	r.saving = r.cfg.saver != nil && r.cfg.thread != ""
	if r.saving {
		r.w = newWriter(r.cfg.saver, r.cfg.durability)
	}
	r.env = &env{saver: r.cfg.saver, serde: r.cfg.serde, thread: r.cfg.thread, saving: r.saving, modes: r.cfg.modes, subs: r.cfg.subgraphs, sub: parent != nil, nodeCache: r.cfg.nodeCache, tracer: r.cfg.tracer, durability: r.cfg.durability}
	if r.env.nodeCache == nil && parent != nil {
		r.env.nodeCache = parent.nodeCache
	}
	if r.saving && r.cfg.runID == "" {
		r.cfg.runID = uuid.NewString()
	}
	var err error
	r.cache, err = r.cacheOf()
	return r, err
}

// reduce merges update into cur with the graph's reducer, turning a panic into an error that
// names the update's node and step (node "" for the input).
func (g *Compiled[S]) reduce(cur, update S, node string, step int) (merged S, err error) {
	defer func() {
		if v := recover(); v != nil {
			what := "the input"
			if node != "" {
				what = fmt.Sprintf("the update of node %q (step %d)", node, step)
			}
			err = fmt.Errorf("graph: the reducer panicked merging %s: %w", what, &PanicError{Value: v, Stack: debug.Stack()})
		}
	}()
	return g.reducer(cur, update), nil
}

// start begins a run from input.
func (r *run[S]) start(ctx context.Context, input S) (_ S, err error) {
	var (
		base    S
		waiting []*task[S]
	)
	if r.saving && r.parent == nil {
		t, err := r.load(ctx)
		if err != nil {
			return base, err
		}
		if t != nil {
			if base, err = r.continueFrom(ctx, t); err != nil {
				return base, err
			}
			waiting = r.waitingAt(t)
			r.at(t)
			r.step++
		}
	}
	defer func() { err = r.finish(ctx, err) }()
	r.setEvents()
	if r.state, err = r.g.reduce(base, input, "", r.step); err != nil {
		return base, err
	}
	next, err := r.plan(ctx, []*task[S]{{node: &node[S]{name: START}}}, []Command[S]{{}}, waiting, nil)
	if err != nil {
		return r.state, err
	}
	r.next = next
	if !r.send(Event{Mode: ModeValues, Namespace: r.ns, Step: r.step, Data: r.state}) {
		return r.state, errStopped
	}
	if err := r.commitInput(ctx, checkpoint.SourceInput, "", input); err != nil {
		return r.state, err
	}
	return r.loop(ctx)
}

// waitingAt returns the tasks of deferred nodes that wait in checkpoint t's frontier (see split).
// New input drops the rest of the frontier, as in LangGraph, where a deferred node that waits is
// not a task yet: it keeps waiting, and runs once nothing else is left. Tasks of nodes this graph
// does not have (the thread was run by another graph) are dropped too.
func (r *run[S]) waitingAt(t *checkpoint.Tuple) []*task[S] {
	var next []*task[S]
	for _, ct := range t.Checkpoint.Next {
		if n := r.g.nodes[ct.Node]; n != nil {
			next = append(next, &task[S]{node: n, push: ct.Push})
		}
	}
	_, waiting := split(next)
	return waiting
}

// load returns the checkpoint the run starts from: the one WithCheckpointID names, or the
// namespace's latest; nil when the thread has none.
func (r *run[S]) load(ctx context.Context) (*checkpoint.Tuple, error) {
	t, err := r.cfg.saver.Get(ctx, r.nsConfig(r.cfg.checkpointID))
	switch {
	case err == nil:
		return t, nil
	case !errors.Is(err, checkpoint.ErrNotFound):
		return nil, fmt.Errorf("graph: thread %q: %w", r.cfg.thread, err)
	case r.cfg.checkpointID != "":
		return nil, fmt.Errorf("graph: thread %q has no checkpoint %q: %w", r.cfg.thread, r.cfg.checkpointID, err)
	}
	return nil, nil
}

// at positions the run at a loaded checkpoint.
func (r *run[S]) at(t *checkpoint.Tuple) {
	r.cp, r.step, r.joins = t.Config, t.Checkpoint.Step, cloneJoins(t.Checkpoint.Joins)
	r.w.savedID = t.Checkpoint.ID
	r.traceFrom(t.Checkpoint.ID)
}

// finish saves what the durability mode left unsaved and adds any failure to err.
func (r *run[S]) finish(ctx context.Context, err error) error {
	if !r.saving {
		return err
	}
	ferr := r.w.flush(ctx, r.cp, func() ([]byte, error) { return r.cfg.serde.Marshal(r.state) })
	if ferr == nil {
		return err
	}
	return errors.Join(err, fmt.Errorf("graph: save thread %q: %w", r.cfg.thread, ferr))
}

// setEvents opens the channel tasks use to reach the stream, when someone listens for them.
func (r *run[S]) setEvents() {
	if r.emit != nil && (r.cfg.modes&(ModeCustom|ModeMessages) != 0 || r.cfg.subgraphs || r.cfg.calls) {
		r.events = make(chan Event)
		r.env.events = r.events
	}
}

// loop runs supersteps until the frontier is empty.
func (r *run[S]) loop(ctx context.Context) (S, error) {
	for len(r.next) > 0 {
		if err := ctx.Err(); err != nil {
			return r.state, stopError(ctx, "before", r.step+1)
		}
		if r.saving {
			if err := r.w.failed(); err != nil {
				return r.state, err
			}
		}
		if r.stepsRun >= r.cfg.recursionLimit {
			return r.state, &RecursionLimitError{Limit: r.cfg.recursionLimit}
		}
		ran, waiting := split(r.next)
		if err := r.interruptBefore(ctx, ran); err != nil {
			return r.state, err
		}
		sctx, span := r.traceStep(ctx, len(ran))
		s, err := r.runStep(sctx, ran, waiting)
		r.endStep(span, err)
		if err != nil {
			return s, err
		}
	}
	return r.state, nil
}

// runStep runs the superstep of the tasks ran, merges their updates, plans the next frontier
// (which keeps the deferred tasks waiting) and saves the step. It returns the state to return
// when it fails or pauses.
func (r *run[S]) runStep(ctx context.Context, ran, waiting []*task[S]) (_ S, err error) {
	defer func() {
		if len(r.stepWrites) > 0 { // the step ends before its checkpoint: its task's output is saved alone
			err = errors.Join(err, r.saveStepWrites(ctx))
		}
	}()
	outs, err := r.superstep(ctx, ran)
	if err != nil {
		if _, paused := err.(*Interrupted); paused {
			// What the tasks that finished wrote is saved with the checkpoint, and shows in
			// the state returned (and in State) though the step is merged only once it
			// completes.
			s, merr := r.withDone(r.state, ran, outs)
			return s, errors.Join(err, merr)
		}
		return r.state, err
	}
	if err := r.checkUpdates(ran, outs); err != nil {
		return r.state, err
	}
	r.stepsRun++
	r.step++
	var before *S // the state before the step, which routers see with their node's update
	if len(ran) > 1 {
		b := r.state
		before = &b
	}
	for i, out := range outs {
		if r.state, err = r.g.reduce(r.state, out.Update, ran[i].node.name, r.step); err != nil {
			return r.state, err
		}
		if r.trackDelta {
			if r.delta, err = r.g.reduce(r.delta, out.Update, ran[i].node.name, r.step); err != nil {
				return r.state, err
			}
		}
		if out.ToParent && r.toParent == nil {
			r.toParent = &outs[i]
		}
	}
	if r.toParent != nil {
		r.next = nil
	} else if r.next, err = r.plan(ctx, ran, outs, waiting, before); err != nil {
		return r.state, err
	}
	if !r.send(Event{Mode: ModeValues, Namespace: r.ns, Step: r.step, Data: r.state}) {
		return r.state, errStopped
	}
	if err := r.commit(ctx, checkpoint.SourceLoop, false); err != nil {
		return r.state, err
	}
	if err := r.interruptAfter(ctx, ran); err != nil {
		return r.state, err
	}
	return r.state, nil
}

// split divides a frontier into what runs in the next superstep and the deferred tasks that wait:
// the task of a deferred node made by an edge, a router, a join or a goto waits while the frontier
// holds such a task of a node that is not deferred. Sends run at once, and hold nothing back (see
// Defer).
func split[S any](next []*task[S]) (now, wait []*task[S]) {
	held, holding := 0, 0
	for _, t := range next {
		switch {
		case t.push:
		case t.node.cfg.deferred:
			held++
		default:
			holding++
		}
	}
	if held == 0 || holding == 0 {
		return next, nil
	}
	now, wait = make([]*task[S], 0, len(next)-held), make([]*task[S], 0, held)
	for _, t := range next {
		if !t.push && t.node.cfg.deferred {
			wait = append(wait, t)
		} else {
			now = append(now, t)
		}
	}
	return now, wait
}

// checkUpdates fails a superstep in which several tasks set a field that keeps one value.
func (r *run[S]) checkUpdates(ran []*task[S], outs []Command[S]) error {
	if r.g.one == nil || len(outs) < 2 {
		return nil
	}
	field, setBy := r.g.one(len(outs), func(i int) *S { return &outs[i].Update })
	if len(setBy) == 0 {
		return nil
	}
	e := &InvalidUpdateError{Step: r.step + 1, Field: field}
	for _, i := range setBy {
		e.Nodes = append(e.Nodes, ran[i].node.name)
	}
	return e
}

// withDone returns s with the updates of the tasks that finished merged in frontier order; outs
// holds the tasks' outputs.
func (r *run[S]) withDone(s S, tasks []*task[S], outs []Command[S]) (S, error) {
	for i, t := range tasks {
		if !t.done {
			continue
		}
		var err error
		if s, err = r.g.reduce(s, outs[i].Update, t.node.name, r.step+1); err != nil {
			return s, err
		}
	}
	return s, nil
}

// superstep runs tasks, the part of the frontier that runs now, and returns their outputs in
// frontier order. A task that finishes is marked done; when the step pauses, the outputs of those
// that finished are returned with the *Interrupted error.
func (r *run[S]) superstep(ctx context.Context, tasks []*task[S]) ([]Command[S], error) {
	outs := make([]Command[S], len(tasks))
	todo := make([]int, 0, len(tasks))
	for i, t := range tasks {
		if t.done {
			outs[i] = t.out
		} else {
			todo = append(todo, i)
		}
	}
	var (
		firstErr error
		// interrupts holds what each task asked, by frontier index, so that they are reported
		// in the frontier's order whatever the order in which the tasks paused.
		interrupts [][]InterruptInfo
	)
	finish := func(i int, out Command[S], err error) {
		t := tasks[i]
		if t.saved != nil {
			effectsSaved(*t.saved)
			t.saved = nil
		}
		var sig *interruptSignal
		switch {
		case errors.As(err, &sig):
			if interrupts == nil {
				interrupts = make([][]InterruptInfo, len(tasks))
			}
			interrupts[i] = sig.interrupts
			r.send(Event{Mode: ModeTasks, Namespace: r.ns, Step: r.step + 1, Node: t.node.name, TaskID: t.id,
				Data: TaskEvent{Finished: true, Push: t.push, Interrupts: sig.interrupts}})
		case err != nil:
			if firstErr == nil {
				firstErr = &NodeError{Node: t.node.name, Step: r.step + 1, TaskID: t.id, Err: err}
			}
			r.send(Event{Mode: ModeTasks, Namespace: r.ns, Step: r.step + 1, Node: t.node.name, TaskID: t.id,
				Data: TaskEvent{Finished: true, Push: t.push, Err: err}})
		default:
			outs[i], t.done = out, true
			r.send(Event{Mode: ModeTasks, Namespace: r.ns, Step: r.step + 1, Node: t.node.name, TaskID: t.id,
				Data: TaskEvent{Finished: true, Push: t.push, Cached: t.cached}})
			r.send(Event{Mode: ModeUpdates, Namespace: r.ns, Step: r.step + 1, Node: t.node.name, TaskID: t.id, Data: out.Update})
		}
	}
	started := func(i int) {
		t := tasks[i]
		ev := TaskEvent{Push: t.push}
		if t.push {
			ev.Input = t.arg
		}
		r.send(Event{Mode: ModeTasks, Namespace: r.ns, Step: r.step + 1, Node: t.node.name, TaskID: t.id, Data: ev})
	}

	// The output of a step's only task is saved with the step's checkpoint (see keepOutput): set
	// here, read by the task's goroutine, cleared once no task of the step runs.
	r.keepOutput = len(todo) == 1 && r.saving && r.w.savesSteps()
	defer func() { r.keepOutput = false }()
	if len(todo) == 1 && r.events == nil && tasks[todo[0]].node.cfg.timeout == 0 {
		// One task and nobody to hear from it while it runs: run it here, without a goroutine.
		i := todo[0]
		started(i)
		if !r.stopped { // the reader may stop at the task's start event: then it does not run
			out, err := r.execute(ctx, tasks[i])
			finish(i, out, err)
		}
	} else if len(todo) > 0 {
		stepCtx, cancel := context.WithCancel(ctx)
		defer cancel()
		type result struct {
			i   int
			out Command[S]
			err error
		}
		done := make(chan result, len(todo))
		limit := r.cfg.maxConcurrency
		if limit <= 0 || limit > len(todo) {
			limit = len(todo)
		}
		launched, running := 0, 0
		launch := func() {
			i := todo[launched]
			launched++
			if started(i); r.stopped {
				cancel() // the reader stopped at this task's start event: launch no more
				return
			}
			running++
			go func() {
				out, err := r.execute(stepCtx, tasks[i])
				done <- result{i, out, err}
			}()
		}
		for launched < limit && !r.stopped {
			launch()
		}
		for running > 0 {
			select {
			case res := <-done:
				running--
				finish(res.i, res.out, res.err)
				if firstErr != nil || r.stopped {
					cancel()
				} else if launched < len(todo) && stepCtx.Err() == nil {
					launch()
				}
			case ev := <-r.events:
				if !r.send(ev) {
					cancel()
				}
			}
		}
	}
	switch {
	case r.stopped:
		return nil, errStopped
	case ctx.Err() != nil:
		return nil, stopError(ctx, "in", r.step+1)
	case firstErr != nil:
		return nil, firstErr
	case interrupts != nil:
		return outs, &Interrupted{Interrupts: slices.Concat(interrupts...)}
	}
	return outs, nil
}

// stopError reports a cancelled run; it matches both ctx.Err() and the cancellation's cause.
func stopError(ctx context.Context, where string, step int) error {
	if cause := context.Cause(ctx); cause != ctx.Err() {
		return fmt.Errorf("graph: run stopped %s step %d: %w: %w", where, step, ctx.Err(), cause)
	}
	return fmt.Errorf("graph: run stopped %s step %d: %w", where, step, ctx.Err())
}

// send passes an event to the stream if its mode is listened to; false means the reader stopped.
func (r *run[S]) send(ev Event) bool {
	if r.emit == nil || r.cfg.modes&ev.Mode == 0 || r.stopped {
		return !r.stopped
	}
	if !r.emit(ev) {
		r.stopped = true
	}
	return !r.stopped
}

// execute runs one task with its retry policy, or takes its output from the node cache, and saves
// what it wrote.
func (r *run[S]) execute(ctx context.Context, t *task[S]) (Command[S], error) {
	if r.span == nil {
		return r.executeTask(ctx, t)
	}
	ctx, span := r.traceTask(ctx, t)
	out, err := r.executeTask(ctx, t)
	r.endTask(span, t, err)
	return out, err
}

// executeTask is execute, within the task's span when the run is traced.
func (r *run[S]) executeTask(ctx context.Context, t *task[S]) (Command[S], error) {
	var key string
	if t.node.cfg.cache != nil && r.env.nodeCache != nil {
		out, k, err := r.fromCache(ctx, t)
		if err != nil || t.cached {
			return out, err
		}
		key = k
	}
	policy := t.node.cfg.retry
	for attempt := 1; ; attempt++ {
		sc := r.newScope(ctx, t)
		out, err := r.attempt(sc, t)
		effects := sc.end()
		if sig := sc.signal(err); sig != nil {
			if werr := r.putWrite(ctx, t, checkpoint.WriteInterrupt, len(t.resume), sig.interrupts); werr != nil {
				return Command[S]{}, werr
			}
			return Command[S]{}, sig
		}
		if err == nil {
			return out, r.saveOutput(ctx, t, out, key, effects)
		}
		if ctx.Err() != nil || policy == nil || attempt >= policy.attempts() || !policy.retryable(err) {
			if attempt > 1 {
				err = fmt.Errorf("gave up after %d attempts: %w", attempt, err)
			}
			if r.saving && ctx.Err() == nil {
				_ = r.w.putWrites(ctx, r.cp, []checkpoint.Write{{TaskID: t.id, Node: t.node.name, Kind: checkpoint.WriteError, Value: []byte(err.Error())}})
			}
			return Command[S]{}, err
		}
		r.traceRetry(ctx, attempt, err)
		if sleep(ctx, policy.wait(attempt)) != nil {
			return Command[S]{}, err
		}
	}
}

// saveOutput saves the output of task t with its effects, and caches the output under key unless
// key is "".
func (r *run[S]) saveOutput(ctx context.Context, t *task[S], out Command[S], key string, effects []effect) error {
	if !r.saving && key == "" {
		return nil
	}
	b, err := r.cfg.serde.Marshal(taskRecordOf(out))
	if err != nil {
		return fmt.Errorf("graph: save %s of node %q: %w", checkpoint.WriteUpdate, t.node.name, err)
	}
	if err := r.putEncoded(ctx, t, checkpoint.WriteUpdate, 0, b, effects); err != nil {
		return err
	}
	if key != "" {
		if err := r.env.nodeCache.Set(ctx, key, b, t.node.cfg.cache.TTL); err != nil {
			return fmt.Errorf("node cache: %w", err)
		}
	}
	return nil
}

// attempt calls the node once, bounded by its timeout. A node that overruns its timeout is left
// behind: its result, if it ever returns, is dropped.
func (r *run[S]) attempt(ctx context.Context, t *task[S]) (Command[S], error) {
	input := r.state
	if t.push {
		input = t.arg
	}
	timeout := t.node.cfg.timeout
	if timeout == 0 {
		return call(ctx, t.node.run, input)
	}
	actx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	type result struct {
		out Command[S]
		err error
	}
	ch := make(chan result, 1)
	go func() {
		out, err := call(actx, t.node.run, input)
		ch <- result{out, err}
	}()
	select {
	case res := <-ch:
		if res.err != nil && ctx.Err() == nil && errors.Is(actx.Err(), context.DeadlineExceeded) {
			return Command[S]{}, &TimeoutError{Node: t.node.name, Timeout: timeout}
		}
		return res.out, res.err
	case <-actx.Done():
		if ctx.Err() != nil {
			return Command[S]{}, ctx.Err()
		}
		return Command[S]{}, &TimeoutError{Node: t.node.name, Timeout: timeout}
	}
}

// call runs fn, turning a panic into a *PanicError.
func call[S any](ctx context.Context, fn CommandFunc[S], input S) (out Command[S], err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &PanicError{Value: v, Stack: debug.Stack()}
		}
	}()
	return fn(ctx, input)
}

func (r *run[S]) newScope(ctx context.Context, t *task[S]) *scope {
	sc := &scope{
		Context: ctx, env: r.env, node: t.node.name, step: r.step + 1, taskID: t.id, ns: r.ns, cpID: r.cp.CheckpointID,
		resume: t.resume, resuming: t.resuming,
	}
	if r.cfg.calls {
		sc.flow = &flowScope{task: t.flow}
		if r.saving {
			sc.flow.put = r.putCall
		}
	}
	if r.held != nil {
		sc.take = func(idx int) (any, bool, error) { return r.takeHeld(ctx, t, idx) }
	}
	return sc
}

// taskPath is the path of t's scope (see scope.path).
func (r *run[S]) taskPath(t *task[S]) string {
	return taskPath(r.ns, t.node.name, r.cp.CheckpointID, t.id)
}

// plan computes the next frontier from the tasks that ran and their outputs, and the deferred
// tasks that waited while they ran. A router sees the state before the step with only its node's
// update merged (LangGraph's): before, or, when it is nil (a step of one task), r.state.
func (r *run[S]) plan(ctx context.Context, ran []*task[S], outs []Command[S], waiting []*task[S], before *S) ([]*task[S], error) {
	var next []*task[S]
	var finished []string // the tasks of the step that are sources of joins
	pull := func(from, name string, declared []string) error {
		if name == END {
			return nil
		}
		n := r.g.nodes[name]
		if n == nil {
			return fmt.Errorf("graph: %s goes to unknown node %q", from, name)
		}
		if declared != nil && !slices.Contains(declared, name) {
			return fmt.Errorf("graph: %s goes to %q, which is not among its declared targets %v", from, name, declared)
		}
		for _, t := range next {
			if !t.push && t.node == n {
				return nil
			}
		}
		next = append(next, &task[S]{node: n})
		return nil
	}
	push := func(from string, s Send[S], declared []string) error {
		n := r.g.nodes[s.Node]
		if n == nil {
			return fmt.Errorf("graph: %s sends to unknown node %q", from, s.Node)
		}
		if declared != nil && !slices.Contains(declared, s.Node) {
			return fmt.Errorf("graph: %s sends to %q, which is not among its declared targets %v", from, s.Node, declared)
		}
		next = append(next, &task[S]{node: n, arg: s.Arg, push: true})
		return nil
	}
	for i, t := range ran {
		name := t.node.name
		from := "node " + strconv.Quote(name)
		out := outs[i]
		var destinations []string // nil when the node did not declare them
		if len(t.node.cfg.destinations) > 0 {
			destinations = t.node.cfg.destinations
		}
		for _, to := range out.Goto {
			if err := pull(from, to, destinations); err != nil {
				return nil, err
			}
		}
		for _, s := range out.Sends {
			if err := push(from, s, destinations); err != nil {
				return nil, err
			}
		}
		for _, to := range r.g.edges[name] {
			if err := pull(from, to, nil); err != nil {
				return nil, err
			}
		}
		view := r.state
		if before != nil && len(r.g.routers[name]) > 0 {
			var err error
			if view, err = r.ownView(*before, out.Update, name); err != nil {
				return nil, err
			}
		}
		for _, rt := range r.g.routers[name] {
			nx, err := route(ctx, rt, view)
			if err != nil {
				return nil, fmt.Errorf("graph: router from %q (after step %d): %w", name, r.step, err)
			}
			what := "router from " + strconv.Quote(name)
			var declared []string
			if len(rt.targets) > 0 {
				declared = rt.targets
			}
			for _, to := range nx.Goto {
				if err := pull(what, to, declared); err != nil {
					return nil, err
				}
			}
			for _, s := range nx.Sends {
				if err := push(what, s, declared); err != nil {
					return nil, err
				}
			}
		}
		if len(r.g.joinsBySource[name]) > 0 {
			finished = append(finished, name)
		}
	}
	for _, j := range r.completeJoins(finished) {
		if err := pull("join into "+strconv.Quote(r.g.joins[j].target), r.g.joins[j].target, nil); err != nil {
			return nil, err
		}
	}
	for _, t := range waiting {
		if !slices.ContainsFunc(next, func(n *task[S]) bool { return !n.push && n.node == t.node }) {
			next = append(next, &task[S]{node: t.node})
		}
	}
	for i, t := range next {
		t.id = strconv.Itoa(i)
	}
	return next, nil
}

// completeJoins records that the named sources finished in a step and returns the joins they
// complete, which then wait for all their sources again. A join is checked once per step, after
// every task of the step finished, so a source that finishes again in the step that completes its
// join does not count towards the next round.
func (r *run[S]) completeJoins(finished []string) []int {
	var touched, complete []int
	for _, name := range finished {
		for _, j := range r.g.joinsBySource[name] {
			if r.joins == nil {
				r.joins = map[string][]string{}
			}
			key := joinKey(r.g.joins[j])
			if !slices.Contains(r.joins[key], name) {
				r.joins[key] = append(r.joins[key], name)
			}
			if !slices.Contains(touched, j) {
				touched = append(touched, j)
			}
		}
	}
	for _, j := range touched {
		key := joinKey(r.g.joins[j])
		if len(r.joins[key]) == len(r.g.joins[j].sources) {
			delete(r.joins, key)
			complete = append(complete, j)
		}
	}
	return complete
}

// ownView is the state a router of node sees after a step of several tasks: before, the state
// before the step, with only node's update merged. It merges into a copy of before (before merged
// into a zero state), as the step's merge appended to before already.
func (r *run[S]) ownView(before, update S, node string) (S, error) {
	var zero S
	view, err := r.g.reduce(zero, before, "", r.step)
	if err != nil {
		return view, err
	}
	return r.g.reduce(view, update, node, r.step)
}

func joinKey(j *join) string { return fmt.Sprintf("%s<%v", j.target, j.sources) }

// route calls a router, turning a panic into an error.
func route[S any](ctx context.Context, rt *router[S], state S) (nx Next[S], err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &PanicError{Value: v, Stack: debug.Stack()}
		}
	}()
	return rt.route(ctx, state), nil
}

// interruptBefore pauses the run when the tasks about to run hold a node listed in
// WithInterruptBefore.
func (r *run[S]) interruptBefore(ctx context.Context, tasks []*task[S]) error {
	if len(r.cfg.interruptBefore) == 0 {
		return nil
	}
	var irs []InterruptInfo
	for _, t := range tasks {
		if t.done || t.skipBefore || !r.cfg.interruptBefore[t.node.name] {
			continue
		}
		if !r.saving {
			return fmt.Errorf("graph: interrupt before %q: %w", t.node.name, ErrNoCheckpointer)
		}
		it := InterruptInfo{ID: r.taskPath(t) + "#before", Node: t.node.name, NS: r.ns, When: "before"}
		if err := r.putWrite(ctx, t, checkpoint.WriteInterrupt, beforeIdx, []InterruptInfo{it}); err != nil {
			return err
		}
		irs = append(irs, it)
	}
	if len(irs) > 0 {
		return &Interrupted{Interrupts: irs}
	}
	return nil
}

// beforeIdx is the write index of WithInterruptBefore pauses and their answers.
const beforeIdx = -1

// interruptAfter pauses the run after a superstep in which a node of WithInterruptAfter ran, also
// when nothing is left to run (the thread has then finished); not when the superstep handed a
// command to the parent graph. The pause passes the breakpoints before the next step's tasks
// (WithInterruptBefore) too: a resume or an update from it does not pause again before they run,
// as in LangGraph, which pauses at a breakpoint only when the state changed since the last one.
func (r *run[S]) interruptAfter(ctx context.Context, ran []*task[S]) error {
	if len(r.cfg.interruptAfter) == 0 || r.toParent != nil {
		return nil
	}
	var irs []InterruptInfo
	for _, t := range ran {
		if r.cfg.interruptAfter[t.node.name] {
			if !r.saving {
				return fmt.Errorf("graph: interrupt after %q: %w", t.node.name, ErrNoCheckpointer)
			}
			irs = append(irs, InterruptInfo{ID: r.cp.CheckpointID + "#after:" + t.node.name, Node: t.node.name, NS: r.ns, When: "after"})
		}
	}
	if len(irs) == 0 {
		return nil
	}
	if err := r.passBefore(ctx, func(t *task[S]) bool { return r.cfg.interruptBefore[t.node.name] }); err != nil {
		return err
	}
	return &Interrupted{Interrupts: irs}
}

func cloneJoins(j map[string][]string) map[string][]string {
	if j == nil {
		return nil
	}
	out := maps.Clone(j)
	for k, v := range out {
		out[k] = slices.Clone(v)
	}
	return out
}

// newCheckpointID returns an ID that sorts after every earlier one of this process.
func newCheckpointID() string { return uuid.Must(uuid.NewV7()).String() }

var timeNow = time.Now
