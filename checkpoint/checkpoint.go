// Package checkpoint defines how a graph run is persisted: the Saver interface, the records it
// stores, an in-memory Saver and the serializer that turns states into bytes.
//
// A thread is one conversation with a graph; it holds a chain of checkpoints, one per superstep.
// Each checkpoint records what is needed to continue the run from there: the next tasks (the
// frontier, including Sends and their arguments), the progress of joins, and either a full snapshot
// of the state or nothing, in which case the state is its parent's state with the parent's task
// writes applied — or, for a checkpoint made by an input or an edit from outside the run, with the
// parent's WriteInput write for it. Task writes are saved the moment each task finishes, so a run
// that stops in the middle of a superstep resumes by running only the tasks that have not written.
//
// Savers store bytes and never interpret them; the graph package owns the encoding.
//
// It is the bottom layer: it imports no other package of the repository (internal/layers
// checks that nothing imports upward).
package checkpoint

import (
	"context"
	"errors"
	"time"
)

// ErrNotFound is returned by Saver.Get when the thread, namespace or checkpoint does not exist.
var ErrNotFound = errors.New("checkpoint: not found")

// ErrNoEffectHandler is wrapped by the error of a PutWrites or PutStep that carries a WriteEffect
// write to a saver made without an effect handler; nothing of that call is saved.
var ErrNoEffectHandler = errors.New("checkpoint: an effect write needs a saver with an effect handler (WithEffects)")

// Source says what created a checkpoint.
type Source string

// The sources of checkpoints.
const (
	SourceInput  Source = "input"  // the input of an invocation was applied
	SourceLoop   Source = "loop"   // a superstep finished
	SourceUpdate Source = "update" // the state was updated from outside the run
	SourceFork   Source = "fork"   // a copy of another checkpoint, to branch from it
)

// Config addresses a thread, a namespace inside it (subgraphs keep their checkpoints under their own
// namespace; the root graph's is ""), and optionally one checkpoint (empty means the latest).
type Config struct {
	ThreadID     string
	NS           string
	CheckpointID string
}

// Task is one entry of a checkpoint's frontier: a node to run in the next superstep. A task made by
// a Send carries its argument; a task triggered by edges has none and reads the checkpoint's state.
type Task struct {
	ID   string // unique within the checkpoint
	Node string
	Arg  []byte // encoded argument of a Send; nil for edge-triggered tasks (kept apart from empty)
	Push bool   // true for a task made by a Send
}

// Checkpoint is the saved position of a run after a superstep.
type Checkpoint struct {
	ID       string // unique and increasing in creation order within a thread
	ParentID string // the checkpoint this one continues from; empty for the first
	Step     int    // supersteps done since the thread's first input, counting from 0
	Source   Source
	RunID    string // the invocation that wrote it

	// State is a full snapshot of the encoded state, or nil when the state is the parent's state
	// with the parent's update writes applied in the order of the parent's Next (or, when Source
	// is SourceInput or SourceUpdate, with the parent's WriteInput write whose TaskID is this
	// checkpoint's ID). Savers keep nil and empty apart: an empty snapshot is a state encoded as
	// zero bytes.
	State []byte
	// Next is the frontier: the tasks of the next superstep, in their deterministic order.
	Next []Task
	// Joins records, for each join target, the sources that have finished since it last ran.
	Joins map[string][]string
	// Meta holds free-form metadata (for example the nodes that ran, or who updated the state).
	Meta map[string]string

	// Format is the version of the encoding of State, Next's arguments and the task writes, set by
	// the writer; a reader refuses a version it does not know instead of misreading it.
	Format int

	CreatedAt time.Time // kept to at least the millisecond
}

// WriteKind says what a task write records.
type WriteKind string

// The kinds of task writes.
const (
	WriteUpdate    WriteKind = "update"    // the task finished; Value is its encoded output
	WriteError     WriteKind = "error"     // the task failed; Value is the error text
	WriteInterrupt WriteKind = "interrupt" // the task paused for input; Value is the encoded interrupt
	WriteResume    WriteKind = "resume"    // a value answering the task's interrupt number Idx
	// WriteInput is an update from outside the run (an invocation's input, an edit of the state)
	// that made a child of the checkpoint: TaskID is the child's ID, Value the encoded update.
	WriteInput WriteKind = "input"
	// WriteEffect is a change a task made to what is kept beside its graph in the saver's
	// database (a squad's board, messages, events). The graph package saves a task's effects with
	// its output, in the same PutWrites or PutStep, so that a resumed run finds both or neither.
	// A saver gives each one to its effect handler inside the transaction that saves the writes,
	// once per (TaskID, Idx), and keeps its key but not its Value; a saver without a handler
	// refuses it. Value is encoded by the owner of that state; Idx orders a task's effects.
	//
	// In a call of PutWrites or PutStep, the handler gets each effect write whose key the
	// checkpoint does not have yet, in the order of the writes, after the writes before it; when
	// it fails, nothing of the call is saved and the call's error wraps the handler's. A call
	// whose checkpoint does not exist applies nothing. Get and List return an effect write with
	// its key and a nil Value.
	WriteEffect WriteKind = "effect"
)

// Write is something a task of a checkpoint's frontier recorded, or (WriteInput) the update that
// made a child of the checkpoint. Writes are keyed by (TaskID, Kind, Idx): putting the same key
// twice keeps the first, so retried saves are harmless.
type Write struct {
	TaskID string
	Node   string
	Kind   WriteKind
	Idx    int
	Value  []byte
}

// Tuple is a checkpoint with its address and the writes its frontier's tasks have recorded so far.
type Tuple struct {
	Config     Config // with CheckpointID set
	Checkpoint Checkpoint
	Writes     []Write // in the order they were put
}

// ListOptions narrows Saver.List. Every filter that is set must match.
type ListOptions struct {
	Before string            // only checkpoints whose ID is smaller than this one (stored or not)
	Limit  int               // at most this many; 0 means all
	Source Source            // only checkpoints from this source
	RunID  string            // only checkpoints written by this run
	Meta   map[string]string // only checkpoints whose Meta has all these entries
}

// Match reports whether cp passes the filters of o (Source, RunID, Meta); Before and Limit are
// about position and are not checked. Savers that cannot filter in their store use it.
func (o ListOptions) Match(cp *Checkpoint) bool {
	if o.Source != "" && cp.Source != o.Source || o.RunID != "" && cp.RunID != o.RunID {
		return false
	}
	for k, v := range o.Meta {
		if got, ok := cp.Meta[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// Saver persists checkpoints and task writes. Implementations must be safe for concurrent use, and
// must pass the conformance suite in package checkpointtest.
//
// A thread's checkpoint IDs increase in the order the checkpoints were created (the graph package
// uses time-ordered UUIDs); "latest" and "newest first" follow that order.
type Saver interface {
	// Put stores cp under cfg's thread and namespace and returns the config that addresses it.
	// Putting an ID that exists replaces that checkpoint and keeps its writes.
	Put(ctx context.Context, cfg Config, cp Checkpoint) (Config, error)
	// PutWrites records writes of tasks of the checkpoint cfg addresses; a config without a
	// CheckpointID is refused, and one naming no stored checkpoint fails with an error wrapping
	// ErrNotFound. Its WriteEffect writes are applied as WriteEffect says.
	PutWrites(ctx context.Context, cfg Config, writes []Write) error
	// Get returns the checkpoint cfg addresses, or the thread's latest in cfg.NS when
	// cfg.CheckpointID is empty, with its writes. When there is none it returns an error for which
	// errors.Is(err, ErrNotFound) holds.
	Get(ctx context.Context, cfg Config) (*Tuple, error)
	// List returns the checkpoints of cfg's thread and namespace, newest first.
	List(ctx context.Context, cfg Config, opts ListOptions) ([]Tuple, error)
	// DeleteThread removes every checkpoint and write of a thread, in all namespaces.
	DeleteThread(ctx context.Context, threadID string) error
}

// A CommitSyncer is a saver that says whether a commit is on the disk when it returns, so that
// it survives a power failure: checkpoint/sqlite's with SyncFull, PostgreSQL's. An application
// whose steps write elsewhere too (files, say) syncs those writes before the step commits when
// its saver does, so that no checkpoint names a write a power failure lost (see SyncsCommits).
type CommitSyncer interface {
	Saver
	// SyncsCommits reports whether each commit is synced to the disk before it returns.
	SyncsCommits() bool
}

// SyncsCommits reports whether s is a CommitSyncer whose commits are synced to the disk before
// they return. A saver that does not say is taken not to sync them (the memory saver keeps
// nothing across a restart, let alone a power failure).
func SyncsCommits(s Saver) bool {
	cs, ok := s.(CommitSyncer)
	return ok && cs.SyncsCommits()
}

// A StepSaver saves a superstep in one call: the writes of the step's tasks, which belong to
// the checkpoint the step started from, and the checkpoint the step made. A saver that talks to a
// server implements it so that a step costs one round trip, not two; the graph package uses it
// when a saver has it (for a step of one task, and for an input), and PutWrites then Put when not.
type StepSaver interface {
	Saver
	// PutStep records writes of the checkpoint parent addresses, as PutWrites does, and stores cp
	// under cfg's thread and namespace, as Put does. The writes are saved no later than cp (a
	// crash never leaves cp without them), and cp is not stored when PutStep fails: a parent
	// that does not exist fails it with an error wrapping ErrNotFound.
	PutStep(ctx context.Context, parent Config, writes []Write, cfg Config, cp Checkpoint) (Config, error)
}

// A MetadataPatcher can change the metadata of a checkpoint it stores, the one thing of a
// checkpoint that is not fixed once it is put (clients tag a thread's states, as LangGraph's
// API lets them). A saver that can do it implements it beside Saver.
type MetadataPatcher interface {
	Saver
	// PatchMetadata merges meta into the Meta of the checkpoint cfg addresses, the thread's
	// latest in cfg.NS when cfg.CheckpointID is empty: each of meta's keys takes its value, the
	// other keys keep theirs. Nothing else of the checkpoint, nor its writes, changes. When there
	// is no such checkpoint it returns an error for which errors.Is(err, ErrNotFound) holds.
	PatchMetadata(ctx context.Context, cfg Config, meta map[string]string) error
}

// PutStep saves writes of the checkpoint parent addresses and cp under cfg with s: in one call
// when s is a StepSaver, else with PutWrites (when there are writes), then Put.
func PutStep(ctx context.Context, s Saver, parent Config, writes []Write, cfg Config, cp Checkpoint) (Config, error) {
	if ss, ok := s.(StepSaver); ok && len(writes) > 0 {
		return ss.PutStep(ctx, parent, writes, cfg, cp)
	}
	if len(writes) > 0 {
		if err := s.PutWrites(ctx, parent, writes); err != nil {
			return Config{}, err
		}
	}
	return s.Put(ctx, cfg, cp)
}
