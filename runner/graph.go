package runner

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/agiraph/agiraph/checkpoint"
	"github.com/agiraph/agiraph/graph"
)

// Graph is a compiled graph registered with a Runner under a name: the handle that enqueues its
// runs and reads their results. Every process that executes runs registers the same graphs under
// the same names.
type Graph[S any] struct {
	r        *Runner
	name     string
	compiled *graph.Compiled[S]
}

// registered is a Graph of any state type, as the worker runs it.
type registered interface {
	execute(ctx context.Context, thread string, op op, saver checkpoint.Saver) outcome
}

// Register makes compiled known to r under name. Runs use r's PostgreSQL saver, whatever
// checkpointer compiled was given. Registering a name twice is an error.
func Register[S any](r *Runner, name string, compiled *graph.Compiled[S]) (*Graph[S], error) {
	if name == "" || compiled == nil {
		return nil, errors.New("runner: register: a graph needs a name and a compiled graph")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.graphs[name]; ok {
		return nil, fmt.Errorf("runner: register graph %q: the name is taken", name)
	}
	g := &Graph[S]{r: r, name: name, compiled: compiled}
	r.graphs[name] = g
	return g, nil
}

// Lookup returns the graph registered under name, for code that knows graphs by name. It fails
// with an error wrapping ErrUnknownGraph for a name not registered, and when the graph's state
// type is not S.
func Lookup[S any](r *Runner, name string) (*Graph[S], error) {
	r.mu.RLock()
	reg, ok := r.graphs[name]
	r.mu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("runner: graph %q: %w (registered: %q)", name, ErrUnknownGraph, r.names())
	}
	g, ok := reg.(*Graph[S])
	if !ok {
		var zero S
		return nil, fmt.Errorf("runner: graph %q has another state type than %T", name, zero)
	}
	return g, nil
}

func (r *Runner) names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return slices.Sorted(maps.Keys(r.graphs))
}

// Name is the name the graph is registered under.
func (g *Graph[S]) Name() string { return g.name }

// Invoke enqueues a run of the graph from input on thread, as graph.Compiled.Invoke would do it:
// on a thread with checkpoints, input is merged into its latest state. A process of the Runner's
// database runs it; Wait or Result tell how it ended. It fails with an error wrapping ErrBusy when
// the thread is queued or running, and when the thread belongs to another graph.
func (g *Graph[S]) Invoke(ctx context.Context, thread string, input S) error {
	b, err := json.Marshal(input)
	if err != nil {
		return g.errorf(thread, "invoke: encode the input: %w", err)
	}
	return g.enqueue(ctx, thread, op{Kind: opInvoke, Input: b}, nil)
}

// Resume enqueues the continuation of thread, as graph.Compiled.Resume would do it: value answers
// its pending interrupts (a graph.ResumeByID answers them by ID; a graph.ResumeCommand[S] answers,
// updates the state and adds nodes to the step, its Update stored as JSON), or is nil to continue
// a run that failed. It fails with an error wrapping ErrBusy when the thread is queued or running, and with
// one wrapping graph.ErrNothingToResume when it has never run or is done.
func (g *Graph[S]) Resume(ctx context.Context, thread string, value any) error {
	in := resumeInput{Value: value}
	switch v := value.(type) {
	case graph.ResumeByID:
		in = resumeInput{ByID: v}
	case graph.ResumeCommand[S]:
		update, err := json.Marshal(v.Update)
		if err != nil {
			return g.errorf(thread, "resume: encode the command's update: %w", err)
		}
		in = resumeInput{Value: v.Value, Command: true, Update: update, Goto: v.Goto}
	}
	b, err := json.Marshal(in)
	if err != nil {
		return g.errorf(thread, "resume: encode the value: %w", err)
	}
	return g.enqueue(ctx, thread, op{Kind: opResume, Input: b}, func(st Status) ([]string, error) {
		if st == "" || st == StatusDone {
			return nil, g.errorf(thread, "resume: %w: the thread is %s", graph.ErrNothingToResume, cmp.Or(string(st), "unknown"))
		}
		snap, err := g.compiled.State(ctx, graph.WithCheckpointer(g.r.saver), graph.WithThread(thread))
		if err != nil {
			return nil, g.errorf(thread, "resume: read the state: %w", err)
		}
		var ids []string
		for _, it := range snap.Interrupts {
			ids = append(ids, it.ID)
		}
		return ids, nil
	})
}

// enqueue records o as the thread's operation, status queued, and inserts its job, in one
// transaction. check, when set, vets the thread's current status (empty when it has no row) and
// returns the interrupt IDs o answers.
func (g *Graph[S]) enqueue(ctx context.Context, thread string, o op, check func(Status) ([]string, error)) error {
	if thread == "" {
		return g.errorf(thread, "%s: no thread ID", o.Kind)
	}
	o.ID = uuid.NewString()
	err := pgx.BeginFunc(ctx, g.r.pool, func(tx pgx.Tx) error {
		var owner string
		var st Status
		err := tx.QueryRow(ctx, `SELECT graph, status FROM `+runsTable+` WHERE thread_id = $1 FOR UPDATE`, thread).Scan(&owner, &st)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
		case err != nil:
			return err
		case owner != g.name:
			return g.errorf(thread, "%s: the thread belongs to graph %q", o.Kind, owner)
		case st == StatusQueued || st == StatusRunning:
			return g.errorf(thread, "%s: %w: the thread is %s", o.Kind, ErrBusy, st)
		}
		if check != nil {
			if o.Answers, err = check(st); err != nil {
				return err
			}
		}
		var gen int64
		err = tx.QueryRow(ctx, `INSERT INTO `+runsTable+` AS r (thread_id, graph, status, generation, op_id, op_kind, op_input, op_answers)
			VALUES ($1, $2, 'queued', 1, $3, $4, $5, $6)
			ON CONFLICT (thread_id) DO UPDATE SET status = 'queued', generation = r.generation + 1, op_id = $3, op_kind = $4,
				op_input = $5, op_answers = $6, owner = NULL, expires_at = NULL, job_id = NULL,
				error_text = NULL, interrupts = NULL, state = NULL, updated_at = now()
			RETURNING generation`, thread, g.name, o.ID, o.Kind, o.Input, o.answers()).Scan(&gen)
		if err != nil {
			return err
		}
		job, err := g.r.river.InsertTx(ctx, tx, runArgs{Thread: thread, Generation: gen}, &river.InsertOpts{Queue: g.r.opts.queue})
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE `+runsTable+` SET job_id = $2 WHERE thread_id = $1`, thread, job.Job.ID)
		return err
	})
	var ours *Error
	if errors.As(err, &ours) {
		return err
	}
	if err != nil {
		return g.errorf(thread, "%s: %w", o.Kind, err)
	}
	return nil
}

// Result reads how the thread's latest operation stands, without waiting. It fails with an error
// wrapping ErrUnknownThread when the thread has never been enqueued.
func (g *Graph[S]) Result(ctx context.Context, thread string) (Result[S], error) {
	var (
		res                   Result[S]
		owner                 string
		errText               *string
		interrupts, stateJSON []byte
	)
	err := g.r.pool.QueryRow(ctx, `SELECT graph, status, error_text, interrupts, state, updated_at FROM `+runsTable+` WHERE thread_id = $1`, thread).
		Scan(&owner, &res.Status, &errText, &interrupts, &stateJSON, &res.UpdatedAt)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return res, g.errorf(thread, "result: %w", ErrUnknownThread)
	case err != nil:
		return res, g.errorf(thread, "result: %w", err)
	case owner != g.name:
		return res, g.errorf(thread, "result: the thread belongs to graph %q", owner)
	}
	res.Graph, res.Thread = g.name, thread
	if stateJSON != nil {
		if err := json.Unmarshal(stateJSON, &res.State); err != nil {
			return res, g.errorf(thread, "result: decode the state: %w", err)
		}
	}
	if interrupts != nil {
		if err := json.Unmarshal(interrupts, &res.Interrupts); err != nil {
			return res, g.errorf(thread, "result: decode the interrupts: %w", err)
		}
	}
	if errText != nil {
		res.Err = &Error{Graph: g.name, Thread: thread, Text: *errText}
	}
	return res, nil
}

// Wait waits until the thread's latest operation has ended and returns what graph.Compiled.Invoke
// would have: the final state and nil, or the state so far and a *graph.Interrupted, or the
// state (if any) and an *Error with the run's error text. Waiting is done by reading the thread's
// row every poll interval (WithPollInterval).
func (g *Graph[S]) Wait(ctx context.Context, thread string) (S, error) {
	t := time.NewTicker(g.r.opts.pollInterval)
	defer t.Stop()
	for {
		res, err := g.Result(ctx, thread)
		if err != nil {
			return res.State, err
		}
		switch res.Status {
		case StatusDone:
			return res.State, nil
		case StatusInterrupted:
			return res.State, &graph.Interrupted{Interrupts: res.Interrupts}
		case StatusFailed:
			return res.State, error(res.Err)
		}
		select {
		case <-ctx.Done():
			return res.State, g.errorf(thread, "wait: %w", ctx.Err())
		case <-t.C:
		}
	}
}

func (g *Graph[S]) errorf(thread, format string, args ...any) error {
	return &Error{Graph: g.name, Thread: thread, Err: fmt.Errorf(format, args...)}
}

// Status is where a thread's latest operation stands.
type Status string

// The statuses of a thread.
const (
	StatusQueued      Status = "queued"      // waiting for a process to run it (again, after a takeover)
	StatusRunning     Status = "running"     // a process holds its lease and runs it
	StatusDone        Status = "done"        // the graph ended
	StatusFailed      Status = "failed"      // the run failed; Resume continues it
	StatusInterrupted Status = "interrupted" // the run waits for Resume to answer its interrupts
)

// Result is what Graph.Result reads of a thread.
type Result[S any] struct {
	Graph, Thread string
	Status        Status
	// State is the final state (done), the state so far (interrupted, failed), or the zero value.
	State S
	// Interrupts are the pending requests for input of an interrupted run.
	Interrupts []graph.InterruptInfo
	// Err is a failed run's error, as text: the process that ran it may be another.
	Err       *Error
	UpdatedAt time.Time
}
