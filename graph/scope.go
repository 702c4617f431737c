package graph

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel/trace"

	"github.com/agiraph/agiraph/checkpoint"
)

// env is what all tasks of a run share.
type env struct {
	saver  checkpoint.Saver
	serde  checkpoint.Serializer
	thread string
	saving bool
	modes  Mode
	subs   bool         // stream subgraph events
	sub    bool         // the run is a subgraph's (see OnText)
	events chan<- Event // to the run's loop; nil when nobody listens
	// nodeCache keeps the outputs of nodes with a CachePolicy (WithNodeCache).
	nodeCache  NodeCache
	tracer     trace.Tracer // the run's WithTracerProvider, for its subgraphs
	durability Durability   // the run's, which Effect checks
}

// scope is what a running task knows about itself and its run. It is the context the task's node
// gets, so Interrupt, Emit and subgraphs find it there. Each attempt of a task has its own scope.
type scope struct {
	context.Context
	*env
	node   string
	step   int
	taskID string
	ns     string // namespace of the graph the task belongs to
	cpID   string // the checkpoint whose frontier holds the task
	resume []any  // answers to the task's Interrupt calls, in order
	// resuming is set when this attempt got a new answer, so a subgraph continues with it.
	resuming bool
	// ended is set, under mu, when the attempt returned: Effect is refused from then on.
	ended bool
	// take gives an Interrupt call with no answer the run's held value, if any (heldValue).
	take func(idx int) (any, bool, error)

	flow *flowScope // nil but in an entrypoint's run (see Task)

	mu      sync.Mutex
	calls   int
	raised  *interruptSignal
	effects *[]effect // added with Effect; nil until the first (a scope is made for every attempt)
}

// flowScope is what a scope of an entrypoint's run has: the scope of its task in the engine, of
// its function, or of a call of a task (see Task). A call's results are saved as writes of the
// engine's task whose IDs are the task's ID, a dot and the call's place.
type flowScope struct {
	// The function's and the calls' scopes find their answers by interrupt ID, and raise their
	// interrupts also in up, the scope of the engine's task.
	answers map[string]any
	up      *scope
	task    *flowTask                                     // the engine's task's; nil for a task that has not run before
	put     func(context.Context, checkpoint.Write) error // nil when the run does not save
}

// flowTask is what the engine keeps for the task of an entrypoint's run.
type flowTask struct {
	asked  []string           // the IDs of the interrupts its resume answers, "" where unknown
	writes []checkpoint.Write // what its calls saved
}

// effect is a change an attempt of a task added with Effect.
type effect struct {
	value []byte
	done  func()
}

// end marks the attempt as returned and gives the effects it added.
func (sc *scope) end() []effect {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	sc.ended = true
	if sc.effects == nil {
		return nil
	}
	return *sc.effects
}

// effectsSaved calls, in order, the done functions of effects that were saved.
func effectsSaved(effects []effect) {
	for _, e := range effects {
		if e.done != nil {
			e.done()
		}
	}
}

// path names the task uniquely within its thread: the namespace of its interrupts and subgraph.
func (sc *scope) path() string { return taskPath(sc.ns, sc.node, sc.cpID, sc.taskID) }

// taskPath is the path of the task taskID of node, in the frontier of checkpoint cpID of the
// namespace ns.
func taskPath(ns, node, cpID, taskID string) string {
	p := node + ":" + cpID + "." + taskID
	if ns != "" {
		p = ns + "/" + p
	}
	return p
}

// emit passes an event to the run's loop; false when nobody listens or the task is over.
func (sc *scope) emit(ev Event) bool {
	if sc.events == nil {
		return false
	}
	select {
	case sc.events <- ev:
		return true
	case <-sc.Done():
		return false
	}
}

// Value makes the scope findable from the node's context and everything derived from it.
func (sc *scope) Value(key any) any {
	if key == (scopeKey{}) {
		return sc
	}
	return sc.Context.Value(key)
}

type scopeKey struct{}

func scopeFrom(ctx context.Context) *scope {
	sc, _ := ctx.Value(scopeKey{}).(*scope)
	return sc
}

// interruptSignal is the error Interrupt returns; the engine turns it into a paused task.
type interruptSignal struct {
	interrupts []InterruptInfo
}

func (s *interruptSignal) Error() string {
	return (&Interrupted{Interrupts: s.interrupts}).Error()
}

// signal returns the interrupt the attempt raised, whether or not the node passed the error on.
func (sc *scope) signal(err error) *interruptSignal {
	sc.mu.Lock()
	raised := sc.raised
	sc.mu.Unlock()
	if raised != nil {
		return raised
	}
	var sig *interruptSignal
	if errors.As(err, &sig) {
		return sig
	}
	return nil
}

// ResumeByID answers several pending interrupts at once, by Interrupt.ID.
type ResumeByID map[string]any

// Interrupt pauses the run to ask for input, typically from a human. The first time a node reaches
// it, Interrupt returns an error that the node must return: the run stops and reports payload in an
// *Interrupted error. When the thread is resumed with a value (Compiled.Resume), the node runs again
// from the start and this call returns that value, decoded into T. A node may call Interrupt several
// times; the calls are answered in order, one resume at a time.
//
// Interrupt needs a checkpointer and a thread ID; without them it returns ErrNoCheckpointer.
func Interrupt[T any](ctx context.Context, payload any) (T, error) {
	var zero T
	sc := scopeFrom(ctx)
	if sc == nil {
		return zero, errors.New("graph: Interrupt called outside a running node")
	}
	if !sc.saving {
		return zero, fmt.Errorf("graph: node %q: Interrupt: %w", sc.node, ErrNoCheckpointer)
	}
	sc.mu.Lock()
	defer sc.mu.Unlock()
	i := sc.calls
	sc.calls++
	var (
		v        any
		answered bool
		id       string
	)
	switch {
	case sc.flow != nil && sc.flow.up != nil:
		id = sc.path() + "#" + strconv.Itoa(i)
		v, answered = sc.flow.answers[id]
	case i < len(sc.resume):
		v, answered = sc.resume[i], true
	case sc.take != nil:
		var err error
		if v, answered, err = sc.take(i); err != nil {
			return zero, fmt.Errorf("graph: node %q: Interrupt: %w", sc.node, err)
		}
		if answered {
			sc.resume = append(sc.resume[:i:i], v)
		}
	}
	if answered {
		t, err := decodeAs[T](sc.serde, v)
		if err != nil {
			return zero, fmt.Errorf("graph: node %q: resume value %d does not fit %T: %w", sc.node, i, zero, err)
		}
		return t, nil
	}
	if id == "" {
		id = sc.path() + "#" + strconv.Itoa(i)
	}
	sig := &interruptSignal{interrupts: []InterruptInfo{{
		ID: id, Node: sc.node, NS: sc.ns, Value: payload, When: "during",
	}}}
	if sc.raised == nil {
		sc.raised = sig
	}
	if sc.flow != nil && sc.flow.up != nil {
		up := sc.flow.up
		up.mu.Lock()
		if up.raised == nil {
			up.raised = sig
		}
		up.mu.Unlock()
	}
	return zero, sig
}

// Effect records a change the running task makes beside the graph's state, in what the saver's
// database keeps for the graph's owner (a squad's board, messages, events), so that it is saved
// with the task's output: value goes to the saver as a checkpoint.WriteEffect write of the task,
// numbered (Idx) from 0 in the order the task added its effects, in the same PutWrites or PutStep
// call as the task's update, after it. The saver hands it to its effect handler inside the
// transaction of that call, so a resumed run finds the task's output and its effects, or neither.
// Effect keeps its own copy of value.
//
// done, when not nil, is called on the run's goroutine once that call has returned without error,
// in the order the effects were added, before the tasks of the next superstep run: it brings what
// the process holds in memory up to date. With DurabilityAsync the call is queued, not made, when
// done runs: the process runs ahead of the saver, as that mode says.
//
// Only an attempt of the task that finishes saves its effects: an attempt that fails, panics,
// times out, pauses (Interrupt) or is retried loses them, done is never called for them, and the
// next attempt starts with none. A task that returns a Command (Goto, Sends, ToParent) saves them
// as one that returns a state does; a task whose output comes from the node cache does not run,
// so it has none. Each task has its own effects, also a task of a subgraph. A node may call Effect
// from goroutines it starts, and waits for: a call after its attempt returned fails.
//
// Effect fails outside a running task, with an error wrapping ErrNoTask; in a run without a
// checkpointer and a thread, with ErrNoCheckpointer; and with DurabilityExit, which saves no task
// writes of the steps before the last.
func Effect(ctx context.Context, value []byte, done func()) error {
	sc := scopeFrom(ctx)
	if sc == nil {
		return fmt.Errorf("graph: Effect needs a running task of a graph with a checkpointer: %w", ErrNoTask)
	}
	if !sc.saving {
		return fmt.Errorf("graph: node %q: Effect: %w", sc.node, ErrNoCheckpointer)
	}
	if sc.durability == DurabilityExit {
		return fmt.Errorf("graph: node %q: Effect needs DurabilitySync or DurabilityAsync: DurabilityExit saves no task writes of the steps before the last", sc.node)
	}
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if sc.ended {
		return fmt.Errorf("graph: node %q: Effect called after the task's attempt returned", sc.node)
	}
	if sc.effects == nil {
		sc.effects = new([]effect)
	}
	*sc.effects = append(*sc.effects, effect{value: bytes.Clone(value), done: done})
	return nil
}

// decodeAs returns v as a T: itself when it is one, or else through the serializer (as for
// values loaded from a checkpoint, which come back untyped).
func decodeAs[T any](serde checkpoint.Serializer, v any) (T, error) {
	if t, ok := v.(T); ok {
		return t, nil
	}
	var t T
	b, err := serde.Marshal(v)
	if err != nil {
		return t, err
	}
	err = serde.Unmarshal(b, &t)
	return t, err
}

// Emit sends a value to the run's stream in ModeCustom, from inside a node: progress, anything a
// watcher wants before the node returns (a model's text has a mode of its own: see OnText). It does nothing when nobody
// streams custom events, and blocks while the reader is busy.
func Emit(ctx context.Context, v any) {
	sc := scopeFrom(ctx)
	if sc == nil || sc.modes&ModeCustom == 0 {
		return
	}
	sc.emit(Event{Mode: ModeCustom, Namespace: sc.ns, Step: sc.step, Node: sc.node, TaskID: sc.taskID, Data: v})
}

// OnText returns the function that streams a model's answer in ModeMessages from inside a node:
// set it as the model request's OnText (providers.Request.OnText), or call it from your own, and
// each piece of text becomes an event tagged with the node, step, task and namespace, whose Data
// is a MessageChunk naming model. Call OnText once for each model call: the chunks of one call
// share an ID. The returned function blocks while the reader is busy.
//
// OnText returns nil when nobody streams messages, so that the request does not stream at all.
// The models of a subgraph stream only WithSubgraphs, as in LangGraph; those of a graph invoked
// inside a node (not added as a subgraph, as the harnessed runtime runs its workers) stream as
// that node's, unless that graph is streamed itself.
func OnText(ctx context.Context, model string) func(delta string) {
	sc := scopeFrom(ctx)
	for sc != nil && (sc.events == nil || sc.modes&ModeMessages == 0) {
		if sc.sub {
			return nil
		}
		sc = scopeFrom(sc.Context)
	}
	if sc == nil {
		return nil
	}
	id := uuid.NewString()
	return func(delta string) {
		if delta != "" {
			sc.emit(Event{Mode: ModeMessages, Namespace: sc.ns, Step: sc.step, Node: sc.node, TaskID: sc.taskID,
				Data: MessageChunk{Text: delta, Model: model, ID: id}})
		}
	}
}

// TaskInfo describes the running task; nodes get it with CurrentTask.
type TaskInfo struct {
	Node      string
	Step      int
	TaskID    string
	Namespace string
}

// CurrentTask tells a node which task it is running as; ok is false outside a node.
func CurrentTask(ctx context.Context) (info TaskInfo, ok bool) {
	sc := scopeFrom(ctx)
	if sc == nil {
		return TaskInfo{}, false
	}
	return TaskInfo{Node: sc.node, Step: sc.step, TaskID: sc.taskID, Namespace: sc.ns}, true
}
