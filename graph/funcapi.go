package graph

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/agiraph/agiraph/checkpoint"
)

// Entrypoint is a workflow written as a Go function (LangGraph's functional API): it runs as the
// one node of a graph, so it is saved, interrupted, resumed, streamed and made durable as a graph
// is, and the tasks it calls (see Task) save their results as they finish. A run of the
// entrypoint that starts again (Resume after an interrupt, a failure or a crash) runs the
// function again from the start; each task call that finished before returns its saved result
// without running. Calls are told apart by their order in the function: call tasks in the same
// order on every run, and keep side effects in tasks.
//
// The thread keeps what the last run returned, which the next run on the thread reads with
// Previous (SaveFinal saves another value in its place). An Entrypoint is safe for concurrent use.
type Entrypoint[In, Out any] struct {
	name string
	g    *Compiled[flowState[In, Out]]
}

// flowState is the state of an entrypoint's graph: the input, the value returned, what Previous
// gives the thread's next run, and whether the run for the input has not returned yet. An update
// sets the fields it holds (nil ones are left as they are) and Pending.
type flowState[In, Out any] struct {
	In      *In  `json:"in,omitempty"`
	Out     *Out `json:"out,omitempty"`
	Saved   *any `json:"saved,omitempty"`
	Pending bool `json:"pending,omitempty"`
}

func mergeFlow[In, Out any](cur, u flowState[In, Out]) flowState[In, Out] {
	if u.In != nil {
		cur.In = u.In
	}
	if u.Out != nil {
		cur.Out = u.Out
	}
	if u.Saved != nil {
		cur.Saved = u.Saved
	}
	cur.Pending = u.Pending
	return cur
}

func (s flowState[In, Out]) out() Out {
	var zero Out
	if s.Out == nil || s.Pending {
		return zero
	}
	return *s.Out
}

// NewEntrypoint makes a workflow of fn, named name: the name of its node in checkpoints and
// events. opts are a graph's options (a checkpointer, a durability mode, …), which each run's own
// options add to.
func NewEntrypoint[In, Out any](name string, fn func(ctx context.Context, in In) (Out, error), opts ...Option) (*Entrypoint[In, Out], error) {
	switch {
	case name == "" || name == START || name == END:
		return nil, fmt.Errorf("graph: entrypoint name %q: give the entrypoint a name of its own", name)
	case fn == nil:
		return nil, fmt.Errorf("graph: entrypoint %q has no function", name)
	}
	sg := New[flowState[In, Out]]()
	sg.SetReducer(mergeFlow[In, Out])
	sg.AddNode(name, func(ctx context.Context, s flowState[In, Out]) (flowState[In, Out], error) {
		return runEntrypoint(ctx, name, fn, s)
	})
	sg.AddEdge(START, name)
	sg.AddEdge(name, END)
	g, err := sg.Compile(opts...)
	if err != nil {
		return nil, err
	}
	g.cfg.calls = true
	return &Entrypoint[In, Out]{name: name, g: g}, nil
}

// runEntrypoint runs fn as the entrypoint's node, and waits for the tasks it called.
func runEntrypoint[In, Out any](ctx context.Context, name string, fn func(context.Context, In) (Out, error), s flowState[In, Out]) (flowState[In, Out], error) {
	var in In
	if s.In != nil {
		in = *s.In
	}
	sc := scopeFrom(ctx)
	fl := &flow{prev: s.Saved, answers: map[string]any{}, done: map[string][]byte{}}
	if t := sc.flow.task; t != nil {
		for i, id := range t.asked {
			if id != "" && i < len(sc.resume) {
				fl.answers[id] = sc.resume[i]
			}
		}
		for _, w := range t.writes {
			if w.Kind == checkpoint.WriteUpdate {
				fl.done[w.TaskID] = w.Value
			}
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	fr := fl.frame(ctx, sc, name, sc.taskID)
	fr.body = true
	out, err := fn(fr.ctx, in)
	if err != nil {
		cancel() // the tasks still running are of no use
	}
	fl.wg.Wait()
	if err != nil {
		return flowState[In, Out]{Pending: true}, err
	}
	fl.mu.Lock()
	saved := fl.save
	fl.mu.Unlock()
	if saved == nil {
		v := any(out)
		saved = &v
	}
	return flowState[In, Out]{Out: &out, Saved: saved}, nil
}

// flow is what the function of one run of an entrypoint and the tasks it calls share.
type flow struct {
	answers map[string]any    // answers to interrupts, by ID
	done    map[string][]byte // the encoded results of the calls that finished, by call ID
	prev    *any              // what the thread's last run saved
	wg      sync.WaitGroup    // the calls running

	mu   sync.Mutex
	save *any // SaveFinal's value
}

// frame is the entrypoint's function or one call of a task, as its context knows it.
type frame struct {
	fl    *flow
	sc    *scope
	ctx   context.Context
	body  bool         // the entrypoint's function, not a task
	calls atomic.Int64 // the tasks it called so far
}

type frameKey struct{}

// frame makes the scope and the context of the entrypoint's function or of a call, node being its
// name and id its task ID, within up, the scope of the entrypoint's task.
func (fl *flow) frame(ctx context.Context, up *scope, node, id string) *frame {
	if up.flow.up != nil {
		up = up.flow.up
	}
	sc := &scope{
		Context: ctx, env: up.env, node: node, step: up.step, taskID: id, ns: up.ns, cpID: up.cpID,
		flow: &flowScope{answers: fl.answers, up: up, put: up.flow.put},
	}
	fr := &frame{fl: fl, sc: sc}
	fr.ctx = context.WithValue(sc, frameKey{}, fr)
	return fr
}

func frameFrom(ctx context.Context) *frame {
	fr, _ := ctx.Value(frameKey{}).(*frame)
	return fr
}

// Previous returns what the last run of the entrypoint on this thread saved: the value it returned,
// or what it passed to SaveFinal. ok is false on a thread's first run, and outside an entrypoint's
// function. The value is decoded into T when it comes from a checkpoint.
func Previous[T any](ctx context.Context) (prev T, ok bool, err error) {
	fr := frameFrom(ctx)
	if fr == nil || !fr.body || fr.fl.prev == nil {
		return prev, false, nil
	}
	if prev, err = decodeAs[T](fr.sc.serde, *fr.fl.prev); err != nil {
		return prev, false, fmt.Errorf("graph: entrypoint %q: the previous value does not fit %T: %w", fr.sc.node, prev, err)
	}
	return prev, true, nil
}

// SaveFinal sets what Previous gives the next run of the entrypoint on this thread, in place of the
// value this run returns (LangGraph's entrypoint.final). It fails outside an entrypoint's function.
func SaveFinal(ctx context.Context, save any) error {
	fr := frameFrom(ctx)
	if fr == nil || !fr.body {
		return errors.New("graph: SaveFinal called outside an entrypoint's function")
	}
	fr.fl.mu.Lock()
	fr.fl.save = &save
	fr.fl.mu.Unlock()
	return nil
}

// Task is a step of an entrypoint (see Entrypoint) whose result is saved in the thread's checkpoint
// when it finishes, encoded by the run's serializer: a run of the entrypoint that starts again
// gets it without running the task again. A task that fails fails the entrypoint's run (unless the
// entrypoint handles the error); the run started again runs it again. Tasks may call tasks.
type Task[A, R any] struct {
	name  string
	fn    func(ctx context.Context, a A) (R, error)
	retry *RetryPolicy
}

// TaskOption configures a Task.
type TaskOption func(*taskConfig)

type taskConfig struct{ retry *RetryPolicy }

// WithTaskRetry retries a call of the task that fails as p says, as WithRetry does for a node.
func WithTaskRetry(p RetryPolicy) TaskOption { return func(c *taskConfig) { c.retry = &p } }

// NewTask makes a task named name (in events and checkpoints) that runs fn.
func NewTask[A, R any](name string, fn func(ctx context.Context, a A) (R, error), opts ...TaskOption) (*Task[A, R], error) {
	switch {
	case name == "":
		return nil, errors.New("graph: a task needs a name")
	case fn == nil:
		return nil, fmt.Errorf("graph: task %q has no function", name)
	}
	var c taskConfig
	for _, o := range opts {
		o(&c)
	}
	if c.retry != nil {
		if err := c.retry.validate(); err != nil {
			return nil, fmt.Errorf("graph: task %q: %w", name, err)
		}
	}
	return &Task[A, R]{name: name, fn: fn, retry: c.retry}, nil
}

// Future is the result of a call of a task, which runs while its caller goes on.
type Future[R any] struct {
	done chan struct{}
	v    R
	err  error
}

// Get waits for the call to end and returns its result. A call that asked for input (Interrupt)
// returns the interrupt as its error: return it from the entrypoint.
func (f *Future[R]) Get() (R, error) {
	<-f.done
	return f.v, f.err
}

// Call starts a call of the task with argument a and returns at once: calls not waited for run
// in parallel. ctx must be the context of an entrypoint's function or of a task it called. The
// call's result, when a run of the entrypoint saved one for it, is returned without running it;
// calls are matched to saved results by their order in their caller.
func (t *Task[A, R]) Call(ctx context.Context, a A) *Future[R] {
	f := &Future[R]{done: make(chan struct{})}
	caller := frameFrom(ctx)
	if caller == nil {
		f.err = fmt.Errorf("graph: task %q called outside an entrypoint: %w", t.name, ErrNoTask)
		close(f.done)
		return f
	}
	id := caller.sc.taskID + "." + strconv.FormatInt(caller.calls.Add(1)-1, 10)
	if b, ok := caller.fl.done[id]; ok {
		if err := caller.sc.serde.Unmarshal(b, &f.v); err != nil {
			f.err = fmt.Errorf("graph: task %q (call %s): its saved result does not fit %T: %w", t.name, id, f.v, err)
		}
		close(f.done)
		return f
	}
	caller.fl.wg.Add(1)
	go func() {
		defer caller.fl.wg.Done()
		defer close(f.done)
		f.v, f.err = t.run(ctx, caller, id, a)
	}()
	return f
}

// run runs call id of the task with its retry policy and saves its result or its failure.
func (t *Task[A, R]) run(ctx context.Context, caller *frame, id string, a A) (R, error) {
	var zero R
	for attempt := 1; ; attempt++ {
		fr := caller.fl.frame(ctx, caller.sc, t.name, id)
		v, err := callTask(fr.ctx, t.fn, a)
		if err == nil {
			return v, t.saved(ctx, fr.sc, id, v)
		}
		if fr.sc.signal(err) != nil {
			return zero, err
		}
		if ctx.Err() != nil || t.retry == nil || attempt >= t.retry.attempts() || !t.retry.retryable(err) {
			if attempt > 1 {
				err = fmt.Errorf("gave up after %d attempts: %w", attempt, err)
			}
			err = fmt.Errorf("task %q (call %s): %w", t.name, id, err)
			if fr.sc.flow.put != nil && ctx.Err() == nil {
				_ = fr.sc.flow.put(ctx, checkpoint.Write{TaskID: id, Node: t.name, Kind: checkpoint.WriteError, Value: []byte(err.Error())})
			}
			return zero, err
		}
		if sleep(ctx, t.retry.wait(attempt)) != nil {
			return zero, err
		}
	}
}

// saved saves v, the result of call id, and streams it as the task's update.
func (t *Task[A, R]) saved(ctx context.Context, sc *scope, id string, v R) error {
	if sc.flow.put != nil {
		b, err := sc.serde.Marshal(v)
		if err != nil {
			return fmt.Errorf("graph: task %q (call %s): save its result: %w", t.name, id, err)
		}
		if err := sc.flow.put(ctx, checkpoint.Write{TaskID: id, Node: t.name, Kind: checkpoint.WriteUpdate, Value: b}); err != nil {
			return err
		}
	}
	if sc.modes&ModeUpdates != 0 {
		sc.emit(Event{Mode: ModeUpdates, Namespace: sc.ns, Step: sc.step, Node: t.name, TaskID: id, Data: v})
	}
	return nil
}

// callTask runs fn, turning a panic into a *PanicError.
func callTask[A, R any](ctx context.Context, fn func(context.Context, A) (R, error), a A) (v R, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = &PanicError{Value: p, Stack: debug.Stack()}
		}
	}()
	return fn(ctx, a)
}

// Invoke runs the entrypoint with in on a new run and returns what it returned. A thread that ran
// before gives its saved value to Previous. A run that pauses returns an *Interrupted error;
// continue it with Resume.
func (e *Entrypoint[In, Out]) Invoke(ctx context.Context, in In, opts ...Option) (Out, error) {
	s, err := e.g.Invoke(ctx, flowState[In, Out]{In: &in, Pending: true}, opts...)
	return s.out(), err
}

// Resume runs the entrypoint's function again on the thread's latest input: after an interrupt
// (value answers it, as for a graph's Resume), a failure, a crash or a cancellation. The calls of
// tasks that finished return their saved results without running.
func (e *Entrypoint[In, Out]) Resume(ctx context.Context, value any, opts ...Option) (Out, error) {
	s, err := e.g.Resume(ctx, value, opts...)
	return s.out(), err
}

// Stream runs the entrypoint as Invoke does, yielding events of the modes chosen with
// WithStreamMode (default ModeValues): in ModeValues, the value returned; in ModeUpdates, the
// result of each call of a task as it finishes (Node is the task's name) and, last, the value
// returned (Node is the entrypoint's name); ModeCustom, ModeTasks and ModeCheckpoints as for a
// graph (the tasks of ModeTasks are the entrypoint's runs).
func (e *Entrypoint[In, Out]) Stream(ctx context.Context, in In, opts ...Option) iter.Seq2[Event, error] {
	return e.events(e.g.Stream(ctx, flowState[In, Out]{In: &in, Pending: true}, opts...))
}

// StreamResume is Resume, streamed as Stream streams.
func (e *Entrypoint[In, Out]) StreamResume(ctx context.Context, value any, opts ...Option) iter.Seq2[Event, error] {
	return e.events(e.g.StreamResume(ctx, value, opts...))
}

// events turns the events of the entrypoint's graph into the entrypoint's.
func (e *Entrypoint[In, Out]) events(seq iter.Seq2[Event, error]) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		for ev, err := range seq {
			if s, ok := ev.Data.(flowState[In, Out]); ok {
				if ev.Mode == ModeValues && (s.Pending || s.Out == nil) {
					continue
				}
				ev.Data = s.out()
			}
			if !yield(ev, err) {
				return
			}
		}
	}
}

// State returns the thread's latest checkpoint (or the one WithCheckpointID names): Values is the
// value the last run returned, zero while a run has not returned.
func (e *Entrypoint[In, Out]) State(ctx context.Context, opts ...Option) (Snapshot[Out], error) {
	s, err := e.g.State(ctx, opts...)
	return outSnapshot(s), err
}

// History lists the thread's checkpoints, newest first, as State describes them.
func (e *Entrypoint[In, Out]) History(ctx context.Context, filter checkpoint.ListOptions, opts ...Option) ([]Snapshot[Out], error) {
	list, err := e.g.History(ctx, filter, opts...)
	out := make([]Snapshot[Out], len(list))
	for i, s := range list {
		out[i] = outSnapshot(s)
	}
	return out, err
}

func outSnapshot[In, Out any](s Snapshot[flowState[In, Out]]) Snapshot[Out] {
	return Snapshot[Out]{
		Values: s.Values.out(), Next: s.Next, Tasks: s.Tasks, Interrupts: s.Interrupts, Config: s.Config,
		ParentID: s.ParentID, Step: s.Step, Source: s.Source, RunID: s.RunID, Meta: s.Meta, CreatedAt: s.CreatedAt,
	}
}
