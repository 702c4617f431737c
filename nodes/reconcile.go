package nodes

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/runtime"
	"github.com/agiraph/agiraph/runtime/bus"
	"github.com/agiraph/agiraph/runtime/eventlog"
	"github.com/agiraph/agiraph/runtime/workspace"
)

// apply applies the outcome of assignment id to the board, tells the coordinator, and returns
// the assignment's usage.
func (r *run) apply(ctx context.Context, id string, stage int) (providers.Usage, error) {
	var node Node
	found := false
	for _, n := range r.board.Snapshot().Nodes {
		if n.Assignment == id {
			node, found = n, true
			break
		}
	}
	if !found || node.Status != NodeRunning { // not this node's assignment, or applied already
		return providers.Usage{}, nil
	}
	rec, err := r.readOutcome(node.ID)
	if errors.Is(err, os.ErrNotExist) || (err == nil && rec.Assignment != id) {
		return providers.Usage{}, nil
	}
	if err != nil {
		return providers.Usage{}, err
	}
	o := rec.Outcome
	worker, _ := r.board.Snapshot().Worker(node.Worker)
	workerStatus := WorkerIdle
	if o.Status == runtime.Waiting {
		workerStatus = WorkerWaiting
	}
	if _, err := r.board.updateWorker(node.Worker, func(w *Worker) {
		w.Status, w.Node = workerStatus, ""
		if workerStatus == WorkerWaiting {
			w.Node = node.ID
		}
	}); err != nil {
		return o.Usage, err
	}
	tell := func(text string) error {
		_, err := r.bus.Send(ctx, squadName, bus.Coordinator, text)
		return err
	}
	switch o.Status {
	case runtime.Published:
		n, err := r.setNode(node.ID, func(n *Node) { n.Status, n.Summary, n.Published = NodeCompleted, o.Summary, o.Published })
		if err != nil {
			return o.Usage, err
		}
		r.emitAt(eventlog.NodeCompleted, n.ID, worker.ID, o.Summary, map[string]any{"published": o.Published, "status": o.Status})
		if err := r.remember(worker, n, o); err != nil {
			return o.Usage, err
		}
		var files []string
		for _, f := range o.Published {
			files = append(files, "nodes/"+n.ID+"/published/"+f)
		}
		if err := tell(fmt.Sprintf("Node %s (%s) completed: %s\nPublished: %s", n.ID, worker.Name, o.Summary, strings.Join(files, ", "))); err != nil {
			return o.Usage, err
		}
	case runtime.Checkpointed:
		var children []string
		for i, sub := range o.SubNodes {
			c, created, err := r.board.create(NewNode{Task: sub.Task, Refs: sub.Refs, Worker: sub.Worker, Parent: node.ID, Stage: stage, By: worker.Name, Key: fmt.Sprintf("%s#%d", id, i)})
			if err != nil {
				if terr := tell(fmt.Sprintf("Sub-node %d asked for by %s on %s was refused: %v", i+1, worker.Name, node.ID, err)); terr != nil {
					return o.Usage, terr
				}
				continue
			}
			if created {
				r.emit(eventlog.Event{Type: eventlog.NodeCreated, Node: c.ID, Worker: worker.ID, Text: firstLine(c.Task)})
			}
			children = append(children, c.ID)
		}
		status := NodeCheckpointed
		if len(children) > 0 {
			status = NodeWaiting
		}
		n, err := r.setNode(node.ID, func(n *Node) { n.Status, n.Summary, n.WaitingFor = status, o.Summary, children })
		if err != nil {
			return o.Usage, err
		}
		r.emit(eventlog.Event{Type: eventlog.NodeCompleted, Node: n.ID, Worker: worker.ID, Text: "checkpointed: " + o.Summary})
		if err := r.remember(worker, n, o); err != nil {
			return o.Usage, err
		}
		text := fmt.Sprintf("Node %s (%s) checkpointed: %s", n.ID, worker.Name, o.Summary)
		if len(children) > 0 {
			text += fmt.Sprintf("\nIt waits for its sub-nodes %s.", strings.Join(children, ", "))
		}
		if err := tell(text); err != nil {
			return o.Usage, err
		}
	case runtime.Waiting:
		if _, err := r.setNode(node.ID, func(n *Node) { n.Status, n.Question, n.Answer = NodeWaiting, o.Question, "" }); err != nil {
			return o.Usage, err
		}
		if _, err := r.bus.Send(ctx, worker.Name, bus.Human, o.Question); err != nil {
			return o.Usage, err
		}
		r.emit(eventlog.Event{Type: eventlog.HumanQuestion, Node: node.ID, Worker: worker.ID, Text: o.Question})
	case runtime.Cancelled:
		if _, err := r.setNode(node.ID, func(n *Node) { n.Status = NodePending }); err != nil {
			return o.Usage, err
		}
	default:
		retry := node.Attempts < r.cfg.maxAttempts
		if _, err := r.setNode(node.ID, func(n *Node) {
			n.Summary = fmt.Sprintf("attempt %d %s: %s", n.Attempts, o.Status, rec.Error)
			if retry {
				n.Status, n.Assignment = NodePending, ""
			} else {
				n.Status = NodeFailed
			}
		}); err != nil {
			return o.Usage, err
		}
		r.emitAt(eventlog.NodeFailed, node.ID, worker.ID, fmt.Sprintf("%s: %s", o.Status, rec.Error), map[string]any{"retry": retry, "attempt": node.Attempts})
		text := fmt.Sprintf("Node %s (%s) %s: %s", node.ID, worker.Name, o.Status, rec.Error)
		if notes := r.dir.Node(node.ID).Path("failure_notes.md"); fileExists(notes) {
			text += "\nFailure notes: nodes/" + node.ID + "/failure_notes.md"
		}
		if retry {
			text += "\nIt will be tried again."
		}
		if err := tell(text); err != nil {
			return o.Usage, err
		}
	}
	for _, s := range o.Suggestions {
		if _, err := r.bus.Send(ctx, worker.Name, bus.Coordinator, "Suggestion: "+s); err != nil {
			return o.Usage, err
		}
	}
	if workerStatus == WorkerIdle {
		r.emit(eventlog.Event{Type: eventlog.WorkerIdle, Worker: worker.ID})
	}
	return o.Usage, nil
}

// setNode changes a node and stamps the events that follow with it.
func (r *run) setNode(id string, fn func(n *Node)) (Node, error) {
	return r.board.update(id, func(n *Node) error { fn(n); return nil })
}

// remember adds the node to the worker's history and memory.
func (r *run) remember(w Worker, n Node, o runtime.Outcome) error {
	dir := r.dir.Worker(w.ID)
	var history []historyEntry
	if err := workspace.ReadJSON(dir.History(), &history); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	history = append(history, historyEntry{Node: n.ID, Task: firstLine(n.Task), Status: o.Status, Summary: o.Summary, Time: r.cfg.now().UTC()})
	if err := workspace.WriteJSON(dir.History(), history); err != nil {
		return err
	}
	f, err := os.OpenFile(dir.Memory(), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	_, werr := fmt.Fprintf(f, "- %s (%s): %s\n", n.ID, o.Status, firstLine(o.Summary))
	return errors.Join(werr, f.Close())
}

// wakeParents puts nodes whose sub-nodes are all done (or failed) back on the board, for a new
// assignment that integrates their results.
func (r *run) wakeParents(ctx context.Context) error {
	snap := r.board.Snapshot()
	for _, n := range snap.Nodes {
		if n.Status != NodeWaiting || len(n.WaitingFor) == 0 {
			continue
		}
		all := true
		for _, c := range n.WaitingFor {
			if cn, ok := snap.Node(c); !ok || !(cn.Status.done() || cn.Status == NodeFailed) {
				all = false
			}
		}
		if !all {
			continue
		}
		if _, err := r.setNode(n.ID, func(n *Node) { n.Status, n.WaitingFor, n.Assignment = NodePending, nil, "" }); err != nil {
			return err
		}
	}
	return nil
}

// stageComplete reports whether the stage's nodes are done as policy asks, with the note that
// tells the coordinator.
func (r *run) stageComplete(stage int, policy string) (string, bool) {
	var in []Node
	for _, n := range r.board.Snapshot().Nodes {
		if n.Stage == stage && n.Parent == "" {
			in = append(in, n)
		}
	}
	if len(in) == 0 {
		return "", false
	}
	done, ended := 0, 0
	for _, n := range in {
		if n.Status.done() {
			done++
		}
		if n.Status.done() || n.Status == NodeFailed {
			ended++
		}
	}
	var complete bool
	switch policy {
	case "any":
		complete = done >= 1
	case "majority":
		complete = done*2 > len(in)
	default:
		complete = ended == len(in)
	}
	if !complete {
		return "", false
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Stage %d is complete (policy %q): %d of %d nodes done.\n", stage, policyName(policy), done, len(in))
	for _, n := range in {
		fmt.Fprintf(&b, "- %s %s: %s\n", n.ID, n.Status, firstLine(n.Summary))
	}
	b.WriteString("Read their outputs, then reconvene to plan the next stage, or finish.")
	return b.String(), true
}

func policyName(p string) string {
	if p == "" {
		return "all"
	}
	return p
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
