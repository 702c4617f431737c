package nodes

import (
	"fmt"

	"github.com/agiraph/agiraph/runtime/bus"
	"github.com/agiraph/agiraph/runtime/triggers"
)

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
		_, err = r.board.update(t.Action.Node, func(n *Node) error {
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
	r.emitAt("x.trigger_fired", t.Action.Node, t.By, fmt.Sprintf("%s %s: %s", t.ID, what, t.Action.Task+t.Action.Body), f, key)
	r.signal()
}
