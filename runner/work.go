package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/agiraph/agiraph/checkpoint"
	"github.com/agiraph/agiraph/graph"
	leases "github.com/agiraph/agiraph/internal/lease"
)

// The kinds of operations.
const (
	opInvoke = "invoke"
	opResume = "resume"
)

// op is a thread's latest operation, as its row keeps it.
type op struct {
	ID      string // the run ID of the checkpoints it writes
	Kind    string // opInvoke or opResume
	Input   []byte // the input (invoke) or a resumeInput (resume), in JSON
	Answers []string
}

// answers returns o.Answers, never nil (the column is NOT NULL).
func (o op) answers() []string {
	if o.Answers == nil {
		return []string{}
	}
	return o.Answers
}

// resumeInput is the value of a resume, as stored.
type resumeInput struct {
	Value any              `json:"value,omitempty"`
	ByID  graph.ResumeByID `json:"by_id,omitempty"`
	// A graph.ResumeCommand: its Update (the graph's state type, in JSON) and Goto.
	Command bool            `json:"command,omitempty"`
	Update  json.RawMessage `json:"update,omitempty"`
	Goto    []string        `json:"goto,omitempty"`
}

// resumeValue is what the resume in gives Resume: its value, or the ResumeCommand it holds.
func resumeValue[S any](in resumeInput) (any, error) {
	if in.ByID != nil {
		return in.ByID, nil
	}
	if !in.Command {
		return in.Value, nil
	}
	cmd := graph.ResumeCommand[S]{Value: in.Value, Goto: in.Goto}
	if len(in.Update) > 0 {
		if err := json.Unmarshal(in.Update, &cmd.Update); err != nil {
			return nil, fmt.Errorf("decode the resume's update: %w", err)
		}
	}
	return cmd, nil
}

// outcome is how a run ended, encoded for the thread's row.
type outcome struct {
	err        error // the run's error
	status     Status
	errText    *string
	interrupts []byte
	state      []byte
}

// execute runs o on thread, saving through saver: the operation itself when it has not been
// applied yet, or else (its process died after applying it) the continuation of the thread from
// its latest checkpoint.
func (g *Graph[S]) execute(ctx context.Context, thread string, o op, saver checkpoint.Saver) outcome {
	opts := []graph.Option{graph.WithCheckpointer(saver), graph.WithThread(thread), graph.WithRunID(o.ID)}
	s, err := g.run(ctx, thread, o, opts)
	out := outcome{err: err, status: StatusDone}
	var it *graph.Interrupted
	switch {
	case errors.As(err, &it):
		out.status = StatusInterrupted
		out.interrupts, err = json.Marshal(it.Interrupts)
	case err != nil:
		out.status = StatusFailed
	}
	if err == nil {
		out.state, err = json.Marshal(s)
	}
	if err != nil && out.status != StatusFailed {
		out.status, err = StatusFailed, fmt.Errorf("encode the outcome: %w", err)
	}
	if err != nil {
		text := err.Error()
		out.errText = &text
	}
	return out
}

func (g *Graph[S]) run(ctx context.Context, thread string, o op, opts []graph.Option) (S, error) {
	var zero S
	fresh, err := g.fresh(ctx, thread, o, opts)
	if err != nil {
		return zero, err
	}
	if fresh && o.Kind == opInvoke {
		var input S
		if err := json.Unmarshal(o.Input, &input); err != nil {
			return zero, fmt.Errorf("decode the input: %w", err)
		}
		return g.compiled.Invoke(ctx, input, opts...)
	}
	if fresh {
		var in resumeInput
		if err := json.Unmarshal(o.Input, &in); err != nil {
			return zero, fmt.Errorf("decode the resume value: %w", err)
		}
		v, err := resumeValue[S](in)
		if err != nil {
			return zero, err
		}
		return g.compiled.Resume(ctx, v, opts...)
	}
	snap, err := g.compiled.State(ctx, opts...)
	switch {
	case err != nil:
		return zero, err
	case len(snap.Tasks) == 0:
		return snap.Values, nil
	case len(snap.Interrupts) > 0:
		return snap.Values, &graph.Interrupted{Interrupts: snap.Interrupts}
	}
	return g.compiled.Resume(ctx, nil, opts...)
}

// fresh reports whether o has not been applied to the thread yet: it has written no checkpoint,
// and (a resume) every interrupt it answers is still pending.
func (g *Graph[S]) fresh(ctx context.Context, thread string, o op, opts []graph.Option) (bool, error) {
	written, err := g.r.saver.List(ctx, checkpoint.Config{ThreadID: thread}, checkpoint.ListOptions{RunID: o.ID, Limit: 1})
	if err != nil || len(written) > 0 || o.Kind == opInvoke || len(o.Answers) == 0 {
		return len(written) == 0, err
	}
	snap, err := g.compiled.State(ctx, opts...)
	if err != nil {
		return false, err
	}
	pending := map[string]bool{}
	for _, it := range snap.Interrupts {
		pending[it.ID] = true
	}
	for _, id := range o.Answers {
		if !pending[id] {
			return false, nil
		}
	}
	return true, nil
}

// runArgs are the arguments of a run's River job: the thread and the generation of its row the
// job was made for. A job whose generation is not the row's is stale and ends at once.
type runArgs struct {
	Thread     string `json:"thread"`
	Generation int64  `json:"generation"`
}

// Kind is the River job kind of runs.
func (runArgs) Kind() string { return "agiraph_run" }

// InsertOpts makes a run's job unique by its arguments among the jobs not finished: one job per
// thread and generation, however many watchdogs see a lease expire at once.
func (runArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{UniqueOpts: river.UniqueOpts{ByArgs: true, ByState: []rivertype.JobState{
		rivertype.JobStateAvailable, rivertype.JobStatePending, rivertype.JobStateRetryable,
		rivertype.JobStateRunning, rivertype.JobStateScheduled,
	}}}
}

// worker runs the jobs of runs.
type worker struct {
	river.WorkerDefaults[runArgs]
	r *Runner
}

// Timeout is -1: River neither cancels a run nor rescues its job; the lease does that.
func (*worker) Timeout(*river.Job[runArgs]) time.Duration { return -1 }

// Work takes the thread's lease, runs its operation while renewing the lease, and records the
// outcome if the lease is still this process's.
func (w *worker) Work(ctx context.Context, job *river.Job[runArgs]) error {
	r := w.r
	deadline := time.Now().Add(r.opts.leaseTTL)
	reg, l, o, err := r.take(ctx, job.Args, job.ID)
	if err != nil || reg == nil {
		return err
	}
	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := r.keep(runCtx, cancel, l, deadline)
	// The run's checkpoints are written only while this process holds the lease: a node that
	// ignores its context cannot save after another process took the thread over.
	saver := r.saver.Fenced(r.runs.Fence(r.runs.Held(l.thread, l.generation)))
	out := reg.execute(runCtx, l.thread, o, saver)
	stop()
	bg := context.WithoutCancel(ctx)
	switch cause := context.Cause(runCtx); {
	case errors.Is(cause, leases.ErrLost):
		r.logger.Warn("runner: lease lost; the run stopped", "thread", l.thread, "generation", l.generation, "cause", cause)
		return nil
	case out.err != nil && ctx.Err() != nil: // stopping
		return r.handover(bg, l)
	}
	return r.finish(bg, l, out)
}

// lease is a thread's lease as this process holds it. The generation is the one taking the lease
// gave the thread's row (the job's, raised): the renewal, the outcome, a handover and the run's
// checkpoints (a fence) all require that the row still has it, and this process as its owner.
type lease struct {
	thread     string
	generation int64
}

// take takes the lease of the job's thread for the job (jobID), when the thread is queued under
// the job's generation. It returns nil, and no error, when the job is stale: the thread is done,
// queued again, or run by another process.
func (r *Runner) take(ctx context.Context, job runArgs, jobID int64) (reg registered, l lease, o op, err error) {
	l.thread = job.Thread
	err = pgx.BeginFunc(ctx, r.pool, func(tx pgx.Tx) error {
		var (
			name string
			st   Status
			gen  int64
		)
		err := tx.QueryRow(ctx, `SELECT graph, status, generation, op_id, op_kind, op_input, op_answers FROM `+runsTable+` WHERE thread_id = $1 FOR UPDATE`, l.thread).
			Scan(&name, &st, &gen, &o.ID, &o.Kind, &o.Input, &o.Answers)
		if errors.Is(err, pgx.ErrNoRows) || err == nil && (gen != job.Generation || st != StatusQueued) {
			return nil
		}
		if err != nil {
			return err
		}
		r.mu.RLock()
		reg = r.graphs[name]
		r.mu.RUnlock()
		if reg == nil {
			return fmt.Errorf("runner: graph %q of thread %q is not registered in this process (%s); the job is retried", name, l.thread, r.runs.Owner)
		}
		var taken bool
		l.generation, taken, err = r.runs.Take(ctx, tx, l.thread, leases.Extra{Set: "status = 'running', job_id = $1, updated_at = now()", Args: []any{jobID}})
		if !taken { // the row, locked and queued, has a free lease: only an error leaves it untaken
			reg = nil
		}
		return err
	})
	if err != nil {
		reg = nil
	}
	return reg, l, o, err
}

// keep renews the lease every heartbeat until stop is called (lease.Keep). When the lease is
// taken by another process, or cannot be renewed before deadline (when it may expire), it cancels
// the run with an error wrapping lease.ErrLost: the run stops before another process can take the
// thread over.
func (r *Runner) keep(ctx context.Context, cancel context.CancelCauseFunc, l lease, deadline time.Time) (stop func()) {
	renew := func(ctx context.Context) (bool, error) { return r.runs.Renew(ctx, r.pool, l.thread, l.generation) }
	return leases.Keep(ctx, deadline, r.opts.leaseTTL, r.opts.heartbeat, renew, func(err error) { cancel(err) },
		r.logger.With("thread", l.thread))
}

// finish records the outcome of a run and ends its lease, in one statement that does nothing when
// the lease is no longer this process's.
func (r *Runner) finish(ctx context.Context, l lease, out outcome) error {
	held, err := r.runs.Release(ctx, r.pool, l.thread, l.generation, leases.Extra{
		Set:  "status = $1, error_text = $2, interrupts = $3, state = $4, job_id = NULL, updated_at = now()",
		Args: []any{out.status, out.errText, out.interrupts, out.state}})
	if err != nil {
		return fmt.Errorf("runner: record the outcome of thread %q: %w", l.thread, err)
	}
	if !held {
		r.logger.Warn("runner: the lease was lost before the outcome was recorded", "thread", l.thread, "generation", l.generation)
	}
	return nil
}

// handover gives up the thread of l, whose run this stopping process cancelled: it ends the lease
// and queues the thread again at once for another process, unless the lease was lost.
func (r *Runner) handover(ctx context.Context, l lease) error {
	held, err := r.runs.Release(ctx, r.pool, l.thread, l.generation, leases.Extra{})
	if err != nil || !held {
		return err
	}
	_, err = r.requeue(ctx, false, `thread_id = $1 AND status = 'running'`, l.thread)
	return err
}

// requeue queues threads again under a new generation, each with a new job, in one transaction:
// those whose process died (the watchdog, cancelOld set: the dead process's jobs are cancelled,
// so that River's rescuer finalizes them), or the one a stopping process gave up. It claims the
// threads whose lease is free (see lease.Table.Claim) and that meet cond, with args. It returns
// how many it queued.
func (r *Runner) requeue(ctx context.Context, cancelOld bool, cond string, args ...any) (int, error) {
	var n int
	err := pgx.BeginFunc(ctx, r.pool, func(tx pgx.Tx) error {
		rows, err := r.runs.Claim(ctx, tx, leases.Extra{Set: "status = 'queued', job_id = NULL, updated_at = now()", Where: cond, Args: args},
			[]string{"job_id"}, 1000)
		if err != nil {
			return err
		}
		var (
			threads []string
			jobs    []river.InsertManyParams
			old     []int64
		)
		for rows.Next() {
			var a runArgs
			var job *int64
			if err := rows.Scan(&a.Thread, &a.Generation, &job); err != nil {
				return err
			}
			threads = append(threads, a.Thread)
			jobs = append(jobs, river.InsertManyParams{Args: a, InsertOpts: &river.InsertOpts{Queue: r.opts.queue}})
			if job != nil && cancelOld {
				old = append(old, *job)
			}
		}
		if err := rows.Err(); err != nil || len(jobs) == 0 {
			return err
		}
		inserted, err := r.river.InsertManyTx(ctx, tx, jobs)
		if err != nil {
			return err
		}
		ids := make([]int64, len(inserted))
		for i, res := range inserted {
			ids[i] = res.Job.ID
		}
		if _, err := tx.Exec(ctx, `UPDATE `+runsTable+` r SET job_id = j.id FROM unnest($1::text[], $2::bigint[]) AS j (thread_id, id)
			WHERE r.thread_id = j.thread_id`, threads, ids); err != nil {
			return err
		}
		for _, id := range old {
			if _, err := r.river.JobCancelTx(ctx, tx, id); err != nil && !errors.Is(err, rivertype.ErrNotFound) {
				return err
			}
		}
		n = len(jobs)
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("runner: queue threads again: %w", err)
	}
	return n, nil
}

// orphaned selects, for requeue, among the threads whose lease is free, those whose process died:
// running ones (whose lease expired), and queued ones whose job a process fetched (River says it
// is running) but did not take the lease for within a TTL ($1, in seconds). Taking the lease is
// the first thing a job does, so the process that fetched it died; should it be alive and slow,
// the new generation makes its job stale.
const orphaned = `status = 'running'
	OR status = 'queued' AND job_id IN (SELECT id FROM river_job WHERE state = 'running' AND attempted_at < now() - make_interval(secs => $1))`

// watch is the watchdog: every watch interval, it queues again the threads whose lease expired.
func (r *Runner) watch(ctx context.Context) {
	defer r.watching.Done()
	t := time.NewTicker(r.opts.watchInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		n, err := r.requeue(ctx, true, orphaned, r.opts.leaseTTL.Seconds())
		switch {
		case err != nil && ctx.Err() == nil:
			r.logger.Warn("runner: watchdog", "error", err)
		case n > 0:
			r.logger.Info("runner: took over threads whose process stopped renewing their lease", slog.Int("threads", n))
		}
	}
}
