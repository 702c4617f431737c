package nodes

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/agiraph/agiraph/nodes/bus"
	"github.com/agiraph/agiraph/nodes/workspace"
	"github.com/agiraph/agiraph/runtime"
)

// Run is one run of a squad, from Start or Resume: while it is in progress its methods act on it,
// and Wait (or Done) tells when and how it ended. A Run acts on its own run only: once the run
// has ended, its verbs return an error wrapping ErrNoRun, even while a later run — of the same
// id, resumed — is in progress. Its methods are safe for concurrent use.
type Run struct{ r *run }

// RunOption configures a new run (Start, Squad.Run).
type RunOption func(*runConfig)

type runConfig struct{ id string }

// WithRunID gives the new run this id rather than one made of the time it starts. It may be the
// id of a run whose start was cut short (see ErrNotStarted), not that of a run that started.
func WithRunID(id string) RunOption { return func(c *runConfig) { c.id = id } }

// Start begins a new run toward goal and returns its handle once the run has begun: its id
// chosen and its goal saved, so that Resume can continue it from then on. ctx bounds the whole
// run, not just Start: when it ends before the coordinator finishes, the run is paused and ends
// with an error wrapping ErrInterrupted. While another run is in progress, Start returns an
// error wrapping ErrRunning that names it.
func (s *Squad) Start(ctx context.Context, goal string, opts ...RunOption) (*Run, error) {
	if strings.TrimSpace(goal) == "" {
		return nil, errors.New("nodes: the run's goal is empty; say what the run is to do")
	}
	var c runConfig
	for _, o := range opts {
		o(&c)
	}
	now := s.cfg.now()
	if c.id == "" {
		base := now.UTC().Format("20060102-150405")
		c.id = base
		for i := 2; fileExists(string(s.home.Run(c.id))); i++ {
			c.id = fmt.Sprintf("%s-%d", base, i)
		}
	}
	if rec := s.cfg.recorder; rec != nil {
		rec.Begin(RunInfo{ID: c.id, Home: string(s.home), Goal: goal, Started: now, Clock: s.cfg.now, Model: s.cfg.model, CoordinatorModel: s.cfg.coordModel,
			RoleModels: s.cfg.roleModels, MaxConcurrent: s.cfg.maxConcurrent, Mode: s.cfg.mode})
	}
	return s.begin(ctx, c.id, goal)
}

// Run runs a new run toward goal (see Start) and returns how it ended (see Run.Wait): Start and
// Wait in one.
func (s *Squad) Run(ctx context.Context, goal string, opts ...RunOption) (Result, error) {
	h, err := s.Start(ctx, goal, opts...)
	if err != nil {
		return Result{}, err
	}
	return h.Wait()
}

// Resume continues the run id from its last tick and returns its handle, as Start does (ctx
// bounds the run; ErrRunning while another is in progress). Work that finished is not done
// again; work that was running continues (harnessed workers from their last step).
func (s *Squad) Resume(ctx context.Context, id string) (*Run, error) {
	return s.begin(ctx, id, "")
}

// Current returns the run in progress, nil when there is none.
func (s *Squad) Current() *Run {
	if r := s.cur.Load(); r != nil {
		return &Run{r: r}
	}
	return nil
}

// begin opens run id (a new one toward goal; with no goal, one to resume) and runs it in the
// background.
func (s *Squad) begin(ctx context.Context, id, goal string) (*Run, error) {
	if err := workspace.ValidID(id); err != nil {
		return nil, fmt.Errorf("nodes: run id: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if cur := s.cur.Load(); cur != nil {
		return nil, fmt.Errorf("%w: run %s; wait for it to end, or pause it, first", ErrRunning, cur.id)
	}
	r, err := s.open(id, goal)
	if err != nil {
		return nil, err
	}
	r.ctx, r.cancel = context.WithCancelCause(ctx)
	r.done = make(chan struct{})
	s.cur.Store(r)
	go r.runToEnd()
	return &Run{r: r}, nil
}

// runToEnd executes the run, then ends it: from then on its handle's verbs refuse, and another
// run may begin.
func (r *run) runToEnd() {
	res, err := r.execute()
	r.endMu.Lock() // waits for the verbs acting on the run now
	r.ended = true
	r.endMu.Unlock()
	r.s.settle() // the views of what the workers changed as they stopped
	if nerr := r.board.noteViews(context.Background(), r.s.homeID); nerr != nil {
		r.cfg.logger.Error("views not noted as written; the run reads them back when it opens next", "run", r.id, "err", nerr)
	}
	r.s.mu.Lock() // a trigger firing now waits, then finds no run in progress
	defer r.s.mu.Unlock()
	r.s.cur.Store(nil)
	r.res, r.err = res, errors.Join(err, r.bus.Close())
	close(r.done)
}

// ID returns the run's id, which its events, its folder and Resume know it by.
func (h *Run) ID() string { return h.r.id }

// Done is closed when the run has ended; Wait then returns at once.
func (h *Run) Done() <-chan struct{} { return h.r.done }

// Wait waits for the run to end and returns how it ended: finished (Result.Finished), paused by
// Pause (no error), or with an error — one wrapping ErrInterrupted when Start's (or Resume's)
// context ended, the run paused; any other when it failed. Either way Resume continues a run
// that did not finish. It takes no context, as the run's own bounds it; to stop waiting without
// ending the run, select on Done. Each call returns the same.
func (h *Run) Wait() (Result, error) {
	<-h.r.done
	return h.r.res, h.r.err
}

// Send sends the human's message to a participant of the run: "" or "coordinator" for the
// coordinator, a worker's name or role, or "*" for everyone. A message to a worker that waits
// for the human's answer is that answer.
func (h *Run) Send(to, body string) error {
	return h.act(false, func(r *run) error { return r.humanSays(to, body) })
}

// ErrNoQuestion is wrapped by the error Answer returns when the worker (or the coordinator) it
// names asked the human nothing: nobody is waiting for an answer.
var ErrNoQuestion = errors.New("nodes: nobody is waiting for an answer")

// Answer answers the question a worker (or the coordinator) asked the human; ErrNoQuestion when
// it asked none.
func (h *Run) Answer(worker, answer string) error {
	return h.act(false, func(r *run) error { return r.answer(worker, answer) })
}

// Stop stops the run's workers; their nodes go back to the board and resume later. The
// coordinator keeps its conversation and the run waits: the human's next message sets it going
// again.
func (h *Run) Stop() error {
	return h.act(false, func(r *run) error {
		r.stop()
		return nil
	})
}

// Pause pauses the run cleanly: its workers are stopped (their progress is kept), the
// coordinator's conversation is kept, and the run ends, Wait returning the latest output and no
// error. The run is not complete — only the coordinator's finish completes a run — and Resume
// takes it up again. It is how an infinite run is stopped.
func (h *Run) Pause() error {
	return h.act(false, func(r *run) error {
		r.end()
		return nil
	})
}

// Inbox returns the messages for the human that arrived since the last call, oldest first:
// replies of the coordinator, questions, messages from workers. (They are also events, for
// those who follow the run by its events.)
func (h *Run) Inbox() (msgs []runtime.Message, err error) {
	err = h.act(true, func(r *run) error {
		msgs, err = r.bus.Receive(bus.Human)
		return err
	})
	return msgs, err
}

// Board returns the run's board as it is now.
func (h *Run) Board() (snap Snapshot, err error) {
	err = h.act(true, func(r *run) error {
		snap = r.board.Snapshot()
		return nil
	})
	return snap, err
}

// act calls fn with the run while it is in progress, and keeps the run from ending until fn
// returns; ErrNoRun once it has ended. Unless fn only reads, ErrNoRun also once the
// coordinator finished a finite run, which only ends now: nothing is done to it after it
// completed.
func (h *Run) act(reads bool, fn func(*run) error) error {
	r := h.r
	r.endMu.RLock()
	defer r.endMu.RUnlock()
	switch {
	case r.ended:
		return fmt.Errorf("%w: run %s has ended", ErrNoRun, r.id)
	case !reads && r.complete():
		return fmt.Errorf("%w: run %s is complete", ErrNoRun, r.id)
	}
	return fn(r)
}
