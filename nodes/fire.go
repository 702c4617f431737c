package nodes

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/agiraph/agiraph/nodes/bus"
	"github.com/agiraph/agiraph/nodes/eventlog"
	"github.com/agiraph/agiraph/nodes/triggers"
)

// fire delivers a trigger's firing: to the run in progress, or, when there is none, into the
// agent's latest run, which the WithWake callback is then asked to resume.
func (s *Squad) fire(f triggers.Firing) {
	s.mu.Lock()
	if r := s.cur.Load(); r != nil {
		defer s.mu.Unlock()
		r.fire(f)
		return
	}
	id, err := s.deliver(f)
	s.mu.Unlock()
	if err != nil {
		s.cfg.logger.Error("trigger not delivered", "trigger", f.Trigger.ID, "err", err)
		return
	}
	if id != "" && s.cfg.wake != nil {
		s.cfg.wake(id)
	}
}

// deliver carries out a firing in the agent's latest run while no run is in progress, and
// returns the run's id when it is one to resume ("" when there is no run, or it is complete).
// The caller holds s.mu.
func (s *Squad) deliver(f triggers.Firing) (string, error) {
	id, err := s.latestRun()
	if id == "" || err != nil {
		return "", err
	}
	dir := s.home.Run(id)
	board, err := s.openBoard(context.Background(), dir)
	if err != nil {
		return "", err
	}
	r := &run{s: s, cfg: s.cfg, id: id, dir: dir, board: board, log: s.log, sched: s.sched, pool: newPool(false), wake: make(chan struct{}, 1)}
	b, err := s.openBus(r)
	if err != nil {
		return "", err
	}
	r.bus = b
	r.fire(f)
	if err := b.Close(); err != nil {
		return "", err
	}
	if r.complete() {
		return "", nil
	}
	return id, nil
}

// latestRun returns the id of the agent's run whose state changed last; "" when it has none.
func (s *Squad) latestRun() (string, error) {
	docs, err := s.store.Docs(context.Background(), runKey(""))
	if err != nil {
		return "", err
	}
	latest, at := "", time.Time{}
	for _, d := range docs {
		var st runState
		if err := json.Unmarshal(d.Value, &st); err != nil {
			s.cfg.logger.Error("a run's state is damaged: its run takes no trigger", "key", d.Key, "err", err)
			continue
		}
		if !st.Updated.Before(at) {
			latest, at = strings.TrimPrefix(d.Key, runKey("")), st.Updated
		}
	}
	return latest, nil
}

// fire carries out a trigger's action in the run: wake the coordinator with the trigger's task,
// put a node back on the board, or send a message. A firing is delivered once, even if the
// scheduler fires it again after a crash.
func (r *run) fire(f triggers.Firing) {
	t := f.Trigger
	key := fmt.Sprintf("trigger/%s/%d", t.ID, f.At.UnixNano())
	what := string(t.Type)
	if f.Late {
		what += ", came due while the agent was down"
	}
	var err error
	switch t.Action.Kind {
	case triggers.Wake:
		_, err = r.bus.SendOnce(r.ctxOrBackground(), key, squadName, bus.Coordinator, fmt.Sprintf("[trigger %s (%s)] %s", t.ID, what, t.Action.Task))
	case triggers.Message:
		to := t.Action.To
		if to == "" {
			to = bus.Coordinator
		}
		_, err = r.bus.SendOnce(r.ctxOrBackground(), key, squadName, to, t.Action.Body)
	case triggers.RunNode:
		_, err = r.board.update(context.Background(), t.Action.Node, func(n *Node) error {
			if n.Status == NodeRunning || n.Status == NodeAssigned || n.Status == NodeWaiting {
				return nil // already at work
			}
			n.Status, n.Assignment = NodePending, ""
			return nil
		})
		if err == nil {
			_, err = r.bus.SendOnce(r.ctxOrBackground(), key, squadName, bus.Coordinator,
				fmt.Sprintf("[trigger %s (%s)] node %s is back on the board", t.ID, what, t.Action.Node))
		}
	default:
		err = fmt.Errorf("unknown action %q", t.Action.Kind)
	}
	if err != nil {
		r.cfg.logger.Error("trigger not delivered", "run", r.id, "trigger", t.ID, "err", err)
	}
	r.emitAt(context.Background(), eventlog.TriggerFired, t.Action.Node, t.By, fmt.Sprintf("%s %s: %s", t.ID, what, t.Action.Task+t.Action.Body), f, key)
	r.signal()
}
