package nodes

import (
	"errors"
	"fmt"
	"strings"

	"github.com/agiraph/agiraph/runtime/bus"
	"github.com/agiraph/agiraph/runtime/eventlog"
)

// humanSays sends the human's message; to a worker waiting for the human it is the answer.
func (r *run) humanSays(to, body string) error {
	if strings.TrimSpace(body) == "" {
		return errors.New("nodes: empty message")
	}
	if to == "" {
		to = bus.Coordinator
	}
	if w, ok := r.board.Snapshot().Worker(to); ok && w.Status == WorkerWaiting {
		return r.answer(w.ID, body)
	}
	if strings.EqualFold(to, bus.Coordinator) && r.coordinatorWaiting() {
		return r.answer(bus.Coordinator, body)
	}
	if _, err := r.bus.Send(r.ctxOrBackground(), bus.Human, to, body); err != nil {
		return fmt.Errorf("nodes: %w", err)
	}
	if err := r.converse(bus.Human, to, body); err != nil {
		return err
	}
	if !strings.EqualFold(to, bus.Coordinator) {
		r.emit(eventlog.Event{Type: eventlog.HumanNudge, Worker: to, Text: body})
	}
	r.resume()
	return nil
}

// answer hands the human's answer to the worker (or coordinator) that asked.
func (r *run) answer(worker, text string) error {
	if strings.EqualFold(worker, bus.Coordinator) {
		r.mu.Lock()
		r.coordAnswer, r.coordQuestion = text, ""
		r.mu.Unlock()
	} else {
		w, ok := r.board.Snapshot().Worker(worker)
		if !ok {
			return fmt.Errorf("nodes: no worker %q", worker)
		}
		if _, err := r.board.update(w.Node, func(n *Node) error {
			if n.Status != NodeWaiting || n.Question == "" {
				return fmt.Errorf("%s has no question waiting for an answer", w.Name)
			}
			n.Answer = text
			return nil
		}); err != nil {
			return fmt.Errorf("nodes: %w", err)
		}
	}
	to := bus.Coordinator
	if !strings.EqualFold(worker, bus.Coordinator) {
		w, _ := r.board.Snapshot().Worker(worker)
		to = w.ID
	}
	r.emit(eventlog.Event{Type: eventlog.HumanResponse, Worker: to, Text: text})
	if err := r.converse(bus.Human, to, text); err != nil {
		return err
	}
	r.resume()
	return nil
}

// resume lifts a stop and wakes the run.
func (r *run) resume() {
	r.mu.Lock()
	was := r.stopped
	r.stopped = false
	r.mu.Unlock()
	if was {
		r.emit(eventlog.Event{Type: eventlog.AgentResumed, Text: "the human wrote"})
	}
	r.signal()
}

// stop cancels the workers; the run waits for the human.
func (r *run) stop() {
	r.mu.Lock()
	r.stopped = true
	r.mu.Unlock()
	r.pool.cancelAll()
	r.emit(eventlog.Event{Type: eventlog.AgentPaused, Text: "stopped by the human"})
	for _, w := range r.board.Snapshot().Workers {
		if w.Status == WorkerBusy {
			r.emit(eventlog.Event{Type: eventlog.WorkerStopped, Worker: w.ID, Text: "stopped by the human"})
		}
	}
	if _, err := r.bus.Send(r.ctxOrBackground(), squadName, bus.Coordinator, "The human stopped all workers; their nodes go back on the board and continue when the human writes again."); err != nil {
		r.emit(eventlog.New("x.error", err.Error(), nil))
	}
	r.signal()
}

// end makes the run end at its next tick, its workers stopped.
func (r *run) end() {
	r.mu.Lock()
	r.ending = true
	r.mu.Unlock()
	r.pool.cancelAll()
	r.signal()
}

func (r *run) isEnding() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ending
}

// coordinatorWaiting reports whether the coordinator waits for the human's answer.
func (r *run) coordinatorWaiting() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.coordQuestion != ""
}

// coordinatorHasNews reports whether the coordinator has something to react to: the human's
// answer to its question, or, when it is not waiting for one, mail.
func (r *run) coordinatorHasNews() bool {
	r.mu.Lock()
	answered, waiting := r.coordAnswer != "", r.coordQuestion != ""
	r.mu.Unlock()
	return answered || (!waiting && r.bus.Pending(bus.Coordinator) > 0)
}

// workToRestart reports whether an assignment can start because of something that happened
// outside the board's flow: an answered question, or mail for a worker that can be woken.
func (r *run) workToRestart() bool {
	if r.isStopped() {
		return false
	}
	snap := r.board.Snapshot()
	for _, n := range snap.Nodes {
		if n.Status == NodeWaiting && r.resumption(n) == runIt {
			return true
		}
	}
	for _, w := range snap.Workers {
		if _, ok := r.revivable(snap, w); ok {
			return true
		}
	}
	return false
}

// idle reports whether nothing runs and nothing can start.
func (r *run) idle() bool {
	if r.pool.size() > 0 {
		return false
	}
	snap := r.board.Snapshot()
	for _, n := range snap.Nodes {
		if ready(snap, n) || n.Status == NodeWaiting || n.Status == NodeRunning || n.Status == NodeAssigned {
			return false
		}
	}
	return true
}
