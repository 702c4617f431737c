package host

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/agiraph/agiraph/hooks"
	"github.com/agiraph/agiraph/nodes"
	"github.com/agiraph/agiraph/nodes/bus"
	"github.com/agiraph/agiraph/nodes/eventlog"
	"github.com/agiraph/agiraph/nodes/replay"
	"github.com/agiraph/agiraph/nodes/workspace"
)

// ID returns the agent's id.
func (a *Agent) ID() string { return a.id }

// State returns the agent's status (one of the Status constants), and its run in progress or
// its last run ("" when it has none), as last recorded: cheaper than [Agent.Summary], which
// reads the board.
func (a *Agent) State() (status, run string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.meta.Status, a.meta.Run
}

// Summary describes the agent.
func (a *Agent) Summary() Summary { return a.summary() }

// Run starts a new run of the agent toward goal, in the background, and returns the agent's
// summary as it started ("working", or "queued" beyond [WithMaxRuns]). [ErrBusy] when a run is
// in progress; [ErrElsewhere] when another replica of the fleet holds the agent.
func (a *Agent) Run(goal string) (Summary, error) { return a.run(goal, false) }

// RunRecorded is Run, recording the run into a cassette (see package nodes/replay) that
// [Agent.Cassette] reads once the run has ended without error. A run that is not the agent's
// first depends on the memory the runs before it wrote, which the cassette does not hold: in a
// new home its replay diverges.
func (a *Agent) RunRecorded(goal string) (Summary, error) { return a.run(goal, true) }

func (a *Agent) run(goal string, record bool) (Summary, error) {
	if err := checkNew("", goal, "", nil); err != nil {
		return Summary{}, mark(ErrInvalid, err)
	}
	if !record || a.host.cfg.record { // under WithRecordRuns, the host records it anyway
		return a.begin(goal, "", false)
	}
	id, err := a.newRunID()
	if err != nil {
		return Summary{}, fmt.Errorf("agent %q: %w", a.id, err)
	}
	a.recs.Record(id, a.cassette(id))
	return a.begin(goal, id, false)
}

// cassette is the path of the cassette of run id: <agent's home>/recordings/<id>.cassette.
func (a *Agent) cassette(id string) string {
	return filepath.Join(string(a.home), "recordings", id+".cassette")
}

// Cassette opens the cassette of the agent's run id, recorded by [Agent.RunRecorded] (or every
// run, under [WithRecordRuns]); [ErrNotFound] when the run was not recorded, has not ended, or
// failed.
func (a *Agent) Cassette(id string) (*os.File, error) {
	if workspace.ValidID(id) == nil {
		if _, err := replay.Load(a.cassette(id)); err == nil {
			return os.Open(a.cassette(id))
		}
	}
	return nil, mark(ErrNotFound, fmt.Errorf("agent %q has no recording of a run %q", a.id, id))
}

// Resume continues the agent's run id (paused, interrupted or failed) in the background, and
// returns the agent's summary as it started. A run the host recorded but stopped before it
// began starts anew toward the agent's goal. [ErrNotFound] when the agent has no run id.
func (a *Agent) Resume(id string) (Summary, error) {
	if workspace.ValidID(id) != nil || !a.resumable(id) {
		return Summary{}, mark(ErrNotFound, fmt.Errorf("agent %q has no run %q", a.id, id))
	}
	return a.begin("", id, true)
}

// SetBudget sets the budget of the agent's run id, its last run when id is empty, and returns
// that run's id (see nodes.Squad.SetBudget). A run that its budget paused (StatusOverBudget)
// is resumed with Resume once the limit is raised.
func (a *Agent) SetBudget(ctx context.Context, id string, b nodes.Budget) (string, error) {
	if id == "" {
		_, id = a.State()
	}
	if workspace.ValidID(id) != nil || !a.resumable(id) {
		return "", mark(ErrNotFound, fmt.Errorf("agent %q has no run %q", a.id, id))
	}
	sq, err := a.acquire()
	if err != nil {
		return "", err
	}
	defer a.release()
	if err := sq.SetBudget(ctx, id, b); err != nil {
		return "", mark(ErrInvalid, err)
	}
	return id, nil
}

// Fork starts, in the background, a new run from tick n of the agent's run from (see
// nodes.Squad.Fork), with what opts change, and returns the agent's summary as it started: its
// Run is the fork's id. answer, when not "", answers the coordinator's question pending at the
// tick. [ErrNotFound] when the agent has no run from, or the run no tick n; [ErrInvalid] for an
// answer where no question was pending.
func (a *Agent) Fork(ctx context.Context, from string, n int, answer string, opts ...nodes.ForkOption) (Summary, error) {
	if err := a.checkFork(ctx, from, n, answer, opts); err != nil {
		return Summary{}, err
	}
	id, err := a.newRunID()
	if err != nil {
		return Summary{}, err
	}
	opts = append(opts, nodes.ForkWithRunID(id))
	if answer != "" {
		opts = append(opts, nodes.ForkWithAnswer(answer))
	}
	started, err := a.host.startWith(a, "", id, false, func(ctx context.Context, sq *nodes.Squad) (*nodes.Run, error) {
		return sq.Fork(ctx, from, n, opts...)
	})
	if err != nil {
		return Summary{}, fmt.Errorf("agent %q: %w", a.id, err)
	}
	return a.describe(started, true), nil
}

// ForkAgent makes a new agent, id (a new id when empty), of the agent's goal, model, mode,
// tools, approval policy and budget, holding a fork of the agent's run from at tick n (see
// nodes.Squad.ForkAgent: the event log, the conversation and the memory as they were then), and
// starts the fork's run there in the background, as Create starts an agent's first run; answer,
// when not "", answers the coordinator's question pending at the tick. It returns the new
// agent's summary. Errors are Fork's and Create's; [ErrBusy] while the agent has a run in
// progress, and [ErrInvalid] in a fleet, whose agents keep their store in its database, from
// which no new agent's home is made.
func (a *Agent) ForkAgent(ctx context.Context, from string, n int, id, answer string, opts ...nodes.ForkOption) (Summary, error) {
	if a.host.fleet != nil {
		return Summary{}, mark(ErrInvalid, fmt.Errorf("agent %q: a fleet's agents keep their store in its PostgreSQL database, not in their folder, and a new agent's folder cannot be made of it: fork in the agent itself (leave \"agent\" out)", a.id))
	}
	if err := a.checkFork(ctx, from, n, answer, opts); err != nil {
		return Summary{}, err
	}
	a.mu.Lock()
	c := meta{ID: id, Goal: a.meta.Goal, Model: a.meta.Model, Mode: a.meta.Mode, Tools: a.meta.Tools, Approvals: a.meta.Approvals, Budget: a.meta.Budget}
	a.mu.Unlock()
	return a.host.create(c, func(b *Agent) (launch, error) {
		sq, err := a.acquire()
		if err != nil {
			return nil, err
		}
		defer a.release()
		run := b.meta.Run // b is not set up yet: no one else reads it
		if _, err := sq.ForkAgent(ctx, from, n, string(b.home), slices.Concat(opts, []nodes.ForkOption{nodes.ForkWithRunID(run)})...); err != nil {
			if errors.Is(err, nodes.ErrRunning) {
				err = mark(ErrBusy, err)
			}
			return nil, err
		}
		return func(ctx context.Context, sq *nodes.Squad) (*nodes.Run, error) {
			h, err := sq.Resume(ctx, run)
			if err == nil && answer != "" {
				err = h.Answer(bus.Coordinator, answer)
			}
			return h, err
		}, nil
	})
}

// checkFork returns why the agent's run from cannot be forked at tick n with answer and what
// opts ask, if it cannot, before anything starts in the background: [ErrNotFound] when it has no
// tick n, [ErrInvalid] for an answer where no question was pending, a node or a worker the tick
// had not, or a new task for a node done by then.
func (a *Agent) checkFork(ctx context.Context, from string, n int, answer string, opts []nodes.ForkOption) error {
	steps, err := a.Steps(ctx, from)
	if err != nil {
		return err
	}
	i := slices.IndexFunc(steps, func(s nodes.Step) bool { return s.Tick == n })
	switch {
	case i < 0:
		return mark(ErrNotFound, fmt.Errorf("agent %q: run %q has no tick %d (it has %d)", a.id, from, n, len(steps)))
	case answer != "" && steps[i].Question == "":
		return mark(ErrInvalid, fmt.Errorf("agent %q: run %q: the coordinator had asked nothing at tick %d; fork at a tick where a question was pending", a.id, from, n))
	}
	sq, err := a.acquire()
	if err != nil {
		return fmt.Errorf("agent %q: %w", a.id, err)
	}
	defer a.release()
	if err := sq.CheckFork(ctx, from, n, opts...); err != nil {
		return mark(ErrInvalid, fmt.Errorf("agent %q: %w", a.id, err))
	}
	return nil
}

// Steps returns the steps of the agent's run id, one a tick (see nodes.Squad.Steps), opening
// the agent's squad to read them when it is at rest. [ErrNotFound] when it has no run id.
func (a *Agent) Steps(ctx context.Context, id string) ([]nodes.Step, error) {
	if has, err := a.hasRun(id); workspace.ValidID(id) != nil || err == nil && !has {
		return nil, mark(ErrNotFound, fmt.Errorf("agent %q has no run %q", a.id, id))
	}
	sq, err := a.acquire()
	if err != nil {
		return nil, fmt.Errorf("agent %q: %w", a.id, err)
	}
	defer a.release()
	steps, err := sq.Steps(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("agent %q: %w", a.id, err)
	}
	return steps, nil
}

// begin is start, answering the summary of the run as it started.
func (a *Agent) begin(goal, run string, resume bool) (Summary, error) {
	started, err := a.host.start(a, goal, run, resume)
	if err != nil {
		return Summary{}, fmt.Errorf("agent %q: %w", a.id, err)
	}
	return a.describe(started, true), nil
}

// Send sends message to the coordinator (to "" or bus.Coordinator) or to worker to, in the run
// in progress; nodes.ErrNoRun when none is.
func (a *Agent) Send(ctx context.Context, to, message string) error {
	if to == "" {
		to = bus.Coordinator
	}
	return a.withRun(ctx, func(run *nodes.Run) error { return run.Send(to, message) })
}

// Answer answers the question that to (a worker's id, or bus.Coordinator) asked in the run in
// progress; to "" answers the one waiting, else the coordinator. It returns to whom the answer
// went; nodes.ErrNoRun when no run is in progress, nodes.ErrNoQuestion when to asked nothing.
func (a *Agent) Answer(ctx context.Context, to, response string) (string, error) {
	return a.answer(ctx, to, response, false)
}

// AnswerVerdict gives the human's verdict on the tool call that to (as for [Agent.Answer]) waits
// to have approved, and returns to whom it went; nodes.ErrNoQuestion when to waits for no
// approval: a question is answered with Answer.
func (a *Agent) AnswerVerdict(ctx context.Context, to string, v hooks.Verdict) (string, error) {
	return a.answer(ctx, to, v.Answer(), true)
}

func (a *Agent) answer(ctx context.Context, to, response string, verdict bool) (string, error) {
	err := a.withRun(ctx, func(run *nodes.Run) error {
		if to == "" || verdict {
			b, err := run.Board()
			if err != nil {
				return err
			}
			a.scan()
			if to == "" {
				if to, _, _ = a.waiting(b); to == "" {
					to = bus.Coordinator
				}
			}
			if verdict && a.pendingApproval(b, to) == nil {
				return fmt.Errorf("%w: %s waits for no tool call's approval; answer a question with a response, not a verdict", nodes.ErrNoQuestion, to)
			}
		}
		return run.Answer(to, response)
	})
	return to, err
}

// pendingApproval returns the tool call that who (a worker's id or name, or bus.Coordinator) waits to
// have approved on board b, nil when it waits for none.
func (a *Agent) pendingApproval(b nodes.Snapshot, who string) *hooks.Approval {
	if strings.EqualFold(who, bus.Coordinator) {
		a.scanMu.Lock()
		defer a.scanMu.Unlock()
		return a.approval
	}
	for _, w := range b.Workers {
		if w.ID != who && w.Name != who {
			continue
		}
		if n, ok := b.Node(w.Node); ok && n.Status == nodes.NodeWaiting {
			return n.Approval
		}
	}
	return nil
}

// Retry puts a failed node of the run in progress back on the board for a new attempt
// (nodes.Run.Retry), and returns it as it is then; nodes.ErrNoRun when no run is in progress.
func (a *Agent) Retry(ctx context.Context, node string) (n nodes.Node, err error) {
	err = a.withRun(ctx, func(run *nodes.Run) error {
		n, err = run.Retry(node)
		return err
	})
	return n, err
}

// Skip skips a pending or failed node of the run in progress, with the human's note
// (nodes.Run.Skip), and returns it as it is then; nodes.ErrNoRun when no run is in progress.
func (a *Agent) Skip(ctx context.Context, node, note string) (n nodes.Node, err error) {
	err = a.withRun(ctx, func(run *nodes.Run) error {
		n, err = run.Skip(node, note)
		return err
	})
	return n, err
}

// Stop stops the workers of the run in progress, which stays in progress; nodes.ErrNoRun when
// none is.
func (a *Agent) Stop(ctx context.Context) error { return a.withRun(ctx, (*nodes.Run).Stop) }

// Conversation returns the conversation between the human and the coordinator: up to limit
// entries (0: all) after the first after, and how many there are in all.
func (a *Agent) Conversation(after, limit int) ([]nodes.Entry, int, error) {
	return a.files.Conversation(after, limit)
}

// withRun calls fn with the agent's run in progress, its squad held open, if there is one;
// nodes.ErrNoRun otherwise. A run that was started but whose squad is still opening (a
// call right after the one that started it) is waited for, for up to runStartWait or until
// ctx ends.
func (a *Agent) withRun(ctx context.Context, fn func(*nodes.Run) error) error {
	end := time.Now().Add(runStartWait)
	for {
		err := nodes.ErrNoRun
		if sq := a.borrow(); sq != nil {
			if run := sq.Current(); run != nil {
				err = fn(run)
			}
			a.release()
		}
		if ioFailure(err) {
			return mark(ErrUnavailable, err)
		}
		if !errors.Is(err, nodes.ErrNoRun) || !a.starting() || time.Now().After(end) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// runStartWait bounds how long a call on a run waits for a run that is starting.
const runStartWait = 10 * time.Second

// starting reports whether a run of the agent was started and is working (not queued), so that
// its squad is open, or about to be.
func (a *Agent) starting() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.running && a.meta.Status == StatusWorking
}

// OpenRun opens the folder of the agent's run: within the agent's home, and not a symbolic link
// ([ErrLinked]); fs.ErrNotExist when it was not made (yet). Its errors name the folder within
// the agent's home.
func (a *Agent) OpenRun(run string) (*os.Root, error) {
	home, err := os.OpenRoot(string(a.home))
	if err != nil {
		return nil, err
	}
	defer home.Close()
	rel := filepath.Join(filepath.Base(filepath.Dir(string(a.home.Run(run)))), run)
	st, err := home.Lstat(rel)
	switch { // errors name the folder within the agent's, not the host's path to it
	case err != nil:
		return nil, err
	case st.Mode()&fs.ModeSymlink != 0:
		return nil, fmt.Errorf("%w: %s", ErrLinked, rel)
	case !st.IsDir():
		return nil, fmt.Errorf("%s is not a folder", rel)
	}
	return home.OpenRoot(rel)
}

// Follow returns the agent's logged events after seq, then each as it comes — and while its
// squad is open, the live ones too (text deltas, whose Seq is 0) — until ctx ends, the host
// closes or the agent is deleted: the channel is then closed.
func (a *Agent) Follow(ctx context.Context, after int64) <-chan eventlog.Event {
	out := make(chan eventlog.Event)
	ctx, cancel := context.WithCancel(ctx)
	go func() { // the end of the host or of the agent ends ctx
		defer cancel()
		select {
		case <-ctx.Done():
		case <-a.host.closing:
		case <-a.forgotten:
		}
	}()
	go func() {
		defer close(out)
		defer cancel()
		send := func(e eventlog.Event) bool {
			select {
			case out <- e:
			case <-ctx.Done():
				return false
			}
			if e.Seq > 0 {
				after = e.Seq
			}
			return true
		}
		// While the agent's squad is open, its log's events as they come; at rest, those the file
		// holds, then a look again once the squad opens or closes.
		for {
			events, stop, moved := a.subscribe(after)
			if events == nil {
				evs, err := a.files.Events(after, 0)
				if err != nil {
					a.log.Error("cannot read the agent's events", "err", err)
					return
				}
				for _, e := range evs {
					if !send(e) {
						return
					}
				}
			} else {
				moved = nil // the channel closes when the squad does
			}
			more := follow(ctx, events, moved, send)
			stop()
			if !more {
				return
			}
		}
	}()
	return out
}

// follow sends the events of the channel until it closes, or moved is closed, and reports true;
// false when ctx ended.
func follow(ctx context.Context, events <-chan eventlog.Event, moved <-chan struct{}, send func(eventlog.Event) bool) bool {
	for {
		select {
		case <-ctx.Done():
			return false
		case <-moved:
			return true
		case e, ok := <-events:
			if !ok {
				return true
			}
			if !send(e) {
				return false
			}
		}
	}
}
