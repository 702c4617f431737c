package nodes

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/agiraph/agiraph/nodes/eventlog"
)

// The errors Retry and Skip wrap: ErrNoNode for a node not on the board, ErrNodeState for one
// they cannot act on as it is (a running node, a damaged one); the error names the node and its
// status.
var (
	ErrNoNode    = errors.New("nodes: no such node")
	ErrNodeState = errors.New("nodes: the node cannot be changed so")
)

// Retry puts a failed node back on the board for a new attempt; its worker is chosen as any
// node's. The change and its event (eventlog.NodeRetried) commit together. It returns the node
// as it is then.
func (h *Run) Retry(node string) (n Node, err error) {
	err = h.act(false, func(r *run) error {
		n, err = r.operate(node, func(t *tx, n *Node) error {
			if n.Status != NodeFailed {
				return fmt.Errorf("%w: node %s is %s; only a failed node can be retried", ErrNodeState, n.ID, n.Status)
			}
			n.Status, n.Assignment = NodePending, ""
			t.emit(eventlog.Event{Type: eventlog.NodeRetried, Node: n.ID, Text: "retried by the human",
				Key: fmt.Sprintf("node/%s/retried/%d", n.ID, n.Attempts)})
			return nil
		})
		return err
	})
	return n, err
}

// Skip marks a pending or failed node skipped, with the human's note: the nodes that depend on
// it no longer wait for it, and their workers are told it was skipped and why; a stage counts it
// as ended, not done. The change and its event (eventlog.NodeSkipped) commit together. It
// returns the node as it is then.
func (h *Run) Skip(node, note string) (n Node, err error) {
	note = strings.TrimSpace(note)
	err = h.act(false, func(r *run) error {
		n, err = r.operate(node, func(t *tx, n *Node) error {
			if n.Status != NodePending && n.Status != NodeFailed {
				return fmt.Errorf("%w: node %s is %s; only a pending or failed node can be skipped (stop the run's workers first)", ErrNodeState, n.ID, n.Status)
			}
			n.Status, n.Assignment, n.Summary = NodeSkipped, "", "skipped by the human"
			if note != "" {
				n.Summary += ": " + note
			}
			t.emit(eventlog.Event{Type: eventlog.NodeSkipped, Node: n.ID, Text: note, Key: "node/" + n.ID + "/skipped"})
			return nil
		})
		return err
	})
	return n, err
}

// operate changes node id with fn, an operator's change, at once (it commits alone, as the
// human's answers do), and wakes the run. A damaged node is left as it is.
func (r *run) operate(id string, fn func(t *tx, n *Node) error) (n Node, err error) {
	switch old, ok := r.board.node(id); {
	case !ok:
		return n, fmt.Errorf("%w: %q is not on the board of run %s", ErrNoNode, id, r.id)
	case old.Damaged != "":
		return n, fmt.Errorf("%w: node %s is damaged: %s", ErrNodeState, id, old.Damaged)
	}
	err = r.board.change(context.Background(), func(t *tx) error {
		n, err = t.node(id, func(n *Node) error { return fn(t, n) })
		return err
	})
	if err != nil {
		return n, err
	}
	r.operated.Store(true)
	r.signal()
	return n, nil
}

// skippedDeps describes the nodes n depends on that the human skipped, for its worker's task.
func (r *run) skippedDeps(n Node) string {
	var b strings.Builder
	for _, d := range n.Deps {
		if dn, ok := r.board.node(d); ok && dn.Status == NodeSkipped {
			fmt.Fprintf(&b, "\n- %s (%s)", d, dn.Summary)
		}
	}
	if b.Len() == 0 {
		return ""
	}
	return "\n\nThese nodes this one depends on were skipped: they have no output; do without it." + b.String()
}
