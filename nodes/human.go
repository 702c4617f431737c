package nodes

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agiraph/agiraph/hooks"
	"github.com/agiraph/agiraph/nodes/bus"
	"github.com/agiraph/agiraph/nodes/eventlog"
)

// humanSays sends the human's message; to a worker waiting for the human it is the answer.
func (r *run) humanSays(to, body string) error {
	ctx := context.Background() // from outside the run's steps: what it changes commits at once
	if strings.TrimSpace(body) == "" {
		return errors.New("nodes: empty message")
	}
	if to == "" {
		to = bus.Coordinator
	}
	if w, ok := r.board.worker(to); ok && w.Status == WorkerWaiting {
		return r.answer(w.ID, body)
	}
	if strings.EqualFold(to, bus.Coordinator) && r.coordinatorWaiting() {
		return r.answer(bus.Coordinator, body)
	}
	if _, err := r.bus.Send(r.ctxOrBackground(), bus.Human, to, body); err != nil {
		return fmt.Errorf("nodes: %w", err)
	}
	if err := r.converse(ctx, "", bus.Human, to, body); err != nil {
		return err
	}
	if !strings.EqualFold(to, bus.Coordinator) {
		r.emit(ctx, eventlog.Event{Type: eventlog.HumanNudge, Worker: to, Text: body})
	}
	r.resume()
	return nil
}

// answer hands the human's answer to the worker (or coordinator) that asked. It is kept with
// the question (the run's state, or the node's), so a crash before the worker has it loses
// nothing.
func (r *run) answer(worker, text string) error {
	ctx := context.Background() // from outside the run's steps: what it changes commits at once
	if strings.EqualFold(worker, bus.Coordinator) {
		if err := verdict(r.board.runState().Approval, text); err != nil {
			return err
		}
		asked := false
		st, err := r.updateRun(ctx, func(s *runState) {
			if asked = s.Question != ""; asked {
				s.Answer, s.Question, s.Approval, s.AnswerBy, s.Default = text, "", nil, time.Time{}, ""
				r.answered(bus.Coordinator, text)
			}
		})
		if err != nil {
			return fmt.Errorf("nodes: %w", err)
		}
		if !asked {
			return fmt.Errorf("%w: the coordinator asked nothing", ErrNoQuestion)
		}
		if err := r.heard(ctx, st.Asked, bus.Coordinator, text); err != nil {
			return err
		}
		r.resume()
		return nil
	}
	w, ok := r.board.worker(worker)
	if !ok {
		return fmt.Errorf("nodes: no worker %q", worker)
	}
	nobody := fmt.Errorf("%w: %s asked nothing", ErrNoQuestion, w.Name)
	if w.Node == "" {
		return nobody
	}
	n, err := r.board.update(ctx, w.Node, func(n *Node) error {
		if n.Status != NodeWaiting || n.Question == "" {
			return nobody
		}
		if err := verdict(n.Approval, text); err != nil {
			return err
		}
		n.Answer = text
		r.answered(w.ID, text)
		return nil
	})
	if errors.Is(err, ErrNoQuestion) || errors.Is(err, hooks.ErrBadVerdict) {
		return err
	}
	if err != nil {
		return fmt.Errorf("nodes: %w", err)
	}
	if err := r.heard(ctx, n.Asked, w.ID, text); err != nil {
		return err
	}
	r.resume()
	return nil
}

// verdict checks that text answers the approval a question asks for, if it asks for one.
func verdict(a *hooks.Approval, text string) error {
	if a == nil {
		return nil
	}
	_, err := hooks.ParseVerdict(*a, text)
	return err
}

// heard makes the human's answer to the question asked (the key of what asked it: an outcome,
// or the coordinator's turn) known: an event and a line of the conversation, once. The
// answer is kept before; whoever takes it up calls heard again, so a crash in between loses
// neither.
func (r *run) heard(ctx context.Context, asked, to, text string) error {
	key := ""
	if asked != "" {
		key = asked + "/answer"
	}
	r.emit(ctx, eventlog.Event{Type: eventlog.HumanResponse, Worker: to, Text: text, Key: key})
	return r.converse(ctx, key, bus.Human, to, text)
}

// resume lifts a stop and wakes the run.
func (r *run) resume() {
	ctx := context.Background()
	r.mu.Lock()
	was := r.stopped
	r.stopped = false
	r.mu.Unlock()
	if was {
		r.emit(ctx, eventlog.Event{Type: eventlog.AgentResumed, Text: "the human wrote"})
	}
	r.signal()
}

// stop cancels the workers; the run waits for the human.
func (r *run) stop() {
	ctx := context.Background()
	r.mu.Lock()
	r.stopped = true
	r.mu.Unlock()
	// The busy workers are read before they are cancelled: a cancelled worker may turn idle
	// before the roster is read again.
	var busy []string
	for _, w := range r.board.roster() {
		if w.Status == WorkerBusy {
			busy = append(busy, w.ID)
		}
	}
	r.pool.cancelAll()
	r.emit(ctx, eventlog.Event{Type: eventlog.AgentPaused, Text: "stopped by the human"})
	for _, id := range busy {
		r.emit(ctx, eventlog.Event{Type: eventlog.WorkerStopped, Worker: id, Text: "stopped by the human"})
	}
	if _, err := r.bus.Send(r.ctxOrBackground(), squadName, bus.Coordinator, "The human stopped all workers; their nodes go back on the board and continue when the human writes again."); err != nil {
		r.emit(ctx, eventlog.New(eventlog.Error, err.Error(), nil))
	}
	r.signal()
}

// end ends the run's context: its workers stop (their progress is kept) and Run returns, the
// run paused and resumable.
func (r *run) end() {
	if r.cancel != nil {
		r.cancel(errEnded)
	}
}

// coordinatorWaiting reports whether the coordinator waits for the human's answer.
func (r *run) coordinatorWaiting() bool {
	return r.board.runState().Question != ""
}

// coordinatorHasNews reports whether the coordinator has something to react to: the human's
// answer to its question, or, when it is not waiting for one, mail. (A turn a crash cut short
// is taken up when the run starts again: see decideNext.)
func (r *run) coordinatorHasNews() bool {
	st := r.board.runState()
	return st.Answer != "" || (st.Question == "" && r.bus.Pending(bus.Coordinator) > 0)
}

// workToStart reports whether an assignment can start now that route_frontier has not started:
// one left running or assigned by a process that stopped (to run again or to collect), an
// answered question, or mail for a worker that can be woken — when there is room for it.
func (r *run) workToStart() bool {
	if r.isStopped() || r.pool.size() >= r.cfg.maxConcurrent {
		return false
	}
	for _, n := range r.board.unsettled() {
		if r.resumption(n) != leaveIt {
			return true
		}
	}
	return r.revival()
}

// revival reports whether a worker's mail can wake it back into its node.
func (r *run) revival() bool {
	for _, w := range r.board.roster() {
		if _, ok := r.revivable(w); ok {
			return true
		}
	}
	return false
}

// waitsOn describes what the run waits on: nodes at work, questions to the human, nodes
// blocked, or a trigger.
func (r *run) waitsOn() string {
	var parts []string
	if q := r.board.runState().Question; q != "" {
		parts = append(parts, "the human, to answer the coordinator: "+firstLine(q))
	}
	r.board.read(func(rd reader) {
		for _, n := range rd.nodes() {
			switch {
			case n.Status == NodeRunning || n.Status == NodeAssigned:
				parts = append(parts, fmt.Sprintf("node %s, %s by %s", n.ID, n.Status, n.Worker))
			case n.Status == NodeWaiting && n.Question != "":
				parts = append(parts, fmt.Sprintf("the human, to answer %s on node %s: %s", n.Worker, n.ID, firstLine(n.Question)))
			case n.Status == NodeWaiting:
				parts = append(parts, fmt.Sprintf("node %s, waiting for its sub-nodes %s", n.ID, strings.Join(n.WaitingFor, ", ")))
			case n.Status == NodePending && n.overBudget() != "":
				parts = append(parts, fmt.Sprintf("node %s, over its budget (%s)", n.ID, n.overBudget()))
			case n.Status == NodePending && workerOverBudget(rd, n):
				parts = append(parts, fmt.Sprintf("node %s, for %s, who is over budget", n.ID, n.Worker))
			case n.Status == NodePending && !ready(rd, n):
				parts = append(parts, fmt.Sprintf("node %s, pending after %s", n.ID, strings.Join(n.Deps, ", ")))
			}
		}
	})
	if r.isStopped() {
		parts = append(parts, "the human: the workers were stopped")
	}
	if len(parts) == 0 {
		return "nothing moved for " + r.cfg.stall.String() + "; waiting for the coordinator, a trigger or the human"
	}
	return "nothing moved for " + r.cfg.stall.String() + "; waiting on " + strings.Join(parts, "; ")
}

// workerOverBudget reports whether the worker n is given to has reached its budget.
func workerOverBudget(rd reader, n *Node) bool {
	w := rd.worker(n.Worker)
	return n.Worker != "" && w != nil && w.overBudget() != ""
}

// idle reports whether nothing runs and nothing can start.
func (r *run) idle() bool {
	if r.pool.size() > 0 {
		return false
	}
	idle := true
	r.board.read(func(rd reader) {
		for _, n := range rd.nodes() {
			if ready(rd, n) && !workerOverBudget(rd, n) || n.Status == NodeWaiting || n.Status == NodeRunning || n.Status == NodeAssigned {
				idle = false
				return
			}
		}
	})
	return idle
}
