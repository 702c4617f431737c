package nodes

import (
	"bytes"
	"context"
	"encoding/json"
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
// the assignment's usage. It may run again for the same assignment after a crash: board changes
// are made once (the node records the assignment it applied), events and messages are keyed by
// the outcome, so a second run completes what the first one left half done, and repeats
// nothing.
func (r *run) apply(ctx context.Context, id string, stage int) (providers.Usage, error) {
	node, found := r.board.nodeOf(id)
	if !found {
		return providers.Usage{}, nil
	}
	already := node.Applied == id
	if !already && node.Status != NodeRunning {
		return providers.Usage{}, nil
	}
	rec, ok, err := r.outcome(node.ID, id)
	if err != nil {
		rec, ok = r.damagedOutcome(node, id, err), true
	}
	if !ok {
		return providers.Usage{}, nil
	}
	o := rec.Outcome
	worker, _ := r.board.worker(node.Worker)
	if already {
		err = r.board.change(func(t *tx) error { return release(t, worker, id, o.Status) })
	} else {
		node, err = r.record(node, worker, id, rec, stage)
	}
	if err != nil {
		return o.Usage, err
	}
	if err := r.announce(ctx, node, worker, rec); err != nil {
		return o.Usage, err
	}
	return o.Usage, nil
}

// damagedOutcome stands for the outcome of assignment id on node when its file cannot be read:
// the node is done if it published (its files are there), else it failed — not the run. The
// file is left as it is.
func (r *run) damagedOutcome(node Node, id string, err error) outcomeRecord {
	rec := outcomeRecord{Assignment: id, Outcome: runtime.Outcome{Status: runtime.Failed},
		Error: fmt.Sprintf("%v (the file is left as it is: repair or delete it; the node is tried again if it may be)", err)}
	if files, ferr := r.dir.Node(node.ID).PublishedFiles(); ferr == nil && len(files) > 0 {
		rec.Outcome = runtime.Outcome{Status: runtime.Published, Published: files,
			Summary: fmt.Sprintf("published %s; its outcome is lost: %v (the file is left as it is)", strings.Join(files, ", "), err)}
		rec.Error = ""
	}
	return rec
}

// record applies an outcome to its node: its sub-nodes, then in one change the node's new
// status and its worker released. It returns the node as it is now. The sub-nodes of an
// outcome that checkpointed are waited for; those of one that published go on the board as
// work of their own (the node is done); a failed attempt's are dropped with it.
func (r *run) record(node Node, worker Worker, id string, rec outcomeRecord, stage int) (Node, error) {
	o := rec.Outcome
	var children []string
	if o.Status == runtime.Checkpointed || o.Status == runtime.Published {
		for i, sub := range o.SubNodes {
			c, _, err := r.board.create(nodeSpec{Task: sub.Task, Refs: sub.Refs, Worker: sub.Worker, Parent: node.ID, Stage: stage, By: worker.Name, Key: fmt.Sprintf("%s#%d", id, i)})
			if err != nil {
				if _, serr := r.bus.SendOnce(r.ctxOrBackground(), fmt.Sprintf("%s/refused%d", rec.key(), i), squadName, bus.Coordinator,
					fmt.Sprintf("Sub-node %d asked for by %s on %s was refused: %v", i+1, worker.Name, node.ID, err)); serr != nil {
					return node, serr
				}
				continue
			}
			r.emitAt(eventlog.NodeCreated, c.ID, worker.ID, firstLine(c.Task), nil, "node/"+c.ID+"/created")
			children = append(children, c.ID)
		}
	}
	retry := node.Attempts < r.cfg.maxAttempts
	var n Node
	err := r.board.change(func(t *tx) error {
		var err error
		if n, err = t.node(node.ID, func(n *Node) error {
			n.Applied, n.Question, n.Answer, n.Woken = id, "", "", false
			switch o.Status {
			case runtime.Published:
				n.Status, n.Summary, n.Published = NodeCompleted, o.Summary, o.Published
			case runtime.Checkpointed:
				n.Status, n.Summary, n.WaitingFor = NodeCheckpointed, o.Summary, children
				if len(children) > 0 {
					n.Status = NodeWaiting
				}
			case runtime.Waiting:
				n.Status, n.Question, n.Asked = NodeWaiting, o.Question, rec.key()+"/question"
			case runtime.Cancelled:
				n.Status = NodePending // its assignment is kept, to be resumed
			default:
				n.Summary = fmt.Sprintf("attempt %d %s: %s", n.Attempts, o.Status, rec.Error)
				n.Status = NodeFailed
				if retry {
					n.Status, n.Assignment = NodePending, ""
				}
			}
			return nil
		}); err != nil {
			return err
		}
		if err := r.addHistory(t, worker, n, rec); err != nil {
			return err
		}
		return release(t, worker, id, o.Status)
	})
	if err != nil {
		return node, err
	}
	return n, nil
}

// release frees, in t, the worker of assignment id, which ended with status s: idle, or waiting
// with its node for the human's answer. A worker that went on since is left as it is.
func release(t *tx, w Worker, id string, s runtime.Status) error {
	if w.ID == "" || w.Last != id || w.Status != WorkerBusy {
		return nil
	}
	_, err := t.worker(w.ID, func(w *Worker) {
		if s == runtime.Waiting {
			w.Status = WorkerWaiting
		} else {
			w.Status, w.Node = WorkerIdle, ""
		}
	})
	return err
}

// announce makes an applied outcome known: the events, the worker's history and memory, the
// note to the coordinator (or the question to the human), and the messages the worker left
// unread or suggested. Each is done once per outcome, however often announce runs.
func (r *run) announce(ctx context.Context, node Node, worker Worker, rec outcomeRecord) error {
	o, key := rec.Outcome, rec.key()
	tell := func(what, from, to, text string) error {
		_, err := r.bus.SendOnce(ctx, key+"/"+what, from, to, text)
		return err
	}
	switch o.Status {
	case runtime.Published, runtime.Checkpointed:
		text := o.Summary
		if o.Status == runtime.Checkpointed {
			text = "checkpointed: " + text
		}
		r.emitAt(eventlog.NodeCompleted, node.ID, worker.ID, text, map[string]any{"status": o.Status, "published": o.Published}, key+"/completed")
		if err := r.remember(worker, node, rec); err != nil {
			return err
		}
	case runtime.Waiting:
		r.emitAt(eventlog.HumanQuestion, node.ID, worker.ID, o.Question, nil, key+"/question")
	case runtime.Cancelled:
	default:
		retry := node.Status == NodePending
		r.emitAt(eventlog.NodeFailed, node.ID, worker.ID, fmt.Sprintf("%s: %s", o.Status, rec.Error), map[string]any{"retry": retry, "attempt": node.Attempts}, key+"/failed")
	}
	if o.Status != runtime.Waiting {
		r.emitAt(eventlog.WorkerIdle, "", worker.ID, "", nil, key+"/idle")
	}
	switch o.Status {
	case runtime.Published:
		var files []string
		for _, f := range o.Published {
			files = append(files, "nodes/"+node.ID+"/published/"+f)
		}
		if err := tell("done", squadName, bus.Coordinator, fmt.Sprintf("Node %s (%s) completed: %s\nPublished: %s", node.ID, worker.Name, o.Summary, strings.Join(files, ", "))); err != nil {
			return err
		}
	case runtime.Checkpointed:
		text := fmt.Sprintf("Node %s (%s) checkpointed: %s", node.ID, worker.Name, o.Summary)
		if len(node.WaitingFor) > 0 {
			text += fmt.Sprintf("\nIt waits for its sub-nodes %s.", strings.Join(node.WaitingFor, ", "))
		}
		if err := tell("done", squadName, bus.Coordinator, text); err != nil {
			return err
		}
	case runtime.Waiting:
		if err := r.toHuman(key+"/question", worker.Name, o.Question); err != nil {
			return err
		}
	case runtime.Cancelled:
	default:
		text := fmt.Sprintf("Node %s (%s) %s: %s", node.ID, worker.Name, o.Status, rec.Error)
		if notes := r.dir.Node(node.ID).Path("failure_notes.md"); fileExists(notes) {
			text += "\nFailure notes: nodes/" + node.ID + "/failure_notes.md"
		}
		if node.Status == NodePending {
			text += "\nIt will be tried again."
		}
		if err := tell("failed", squadName, bus.Coordinator, text); err != nil {
			return err
		}
	}
	for i, m := range o.Unread { // back in the worker's mailbox, to wake it or wait for its next node
		if err := tell(fmt.Sprintf("unread%d", i), m.From, worker.Name, m.Body); err != nil {
			return err
		}
	}
	for i, s := range o.Suggestions {
		if err := tell(fmt.Sprintf("suggestion%d", i), worker.Name, bus.Coordinator, "Suggestion: "+s); err != nil {
			return err
		}
	}
	return nil
}

// setNode changes a node and stamps the events that follow with it.
func (r *run) setNode(id string, fn func(n *Node)) (Node, error) {
	return r.board.update(id, func(n *Node) error { fn(n); return nil })
}

// wroteBefore reports whether the latest lines of the file at path (its last 64 KiB) hold
// what: a line that an outcome recorded again after a crash wrote the first time.
func wroteBefore(path string, what []byte) (bool, error) {
	tail, err := workspace.ReadTail(path, 64<<10)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return false, err
	}
	return bytes.Contains(tail, what), nil
}

// addHistory adds, in t, a node's outcome that published or checkpointed to its worker's
// history.jsonl, once per outcome: an outcome recorded again after a crash cut its record short
// finds its line among the last.
func (r *run) addHistory(t *tx, w Worker, n Node, rec outcomeRecord) error {
	o := rec.Outcome
	if w.ID == "" || (o.Status != runtime.Published && o.Status != runtime.Checkpointed) {
		return nil
	}
	path := r.dir.Worker(w.ID).History()
	entry := historyEntry{Node: n.ID, Task: firstLine(n.Task), Status: o.Status, Summary: o.Summary, Time: r.cfg.now().UTC(), Outcome: rec.key()}
	key, err := json.Marshal(map[string]string{"outcome": entry.Outcome})
	if err != nil {
		return err
	}
	if done, err := wroteBefore(path, key[1:len(key)-1]); err != nil || done { // "outcome":"<key>"
		return err
	}
	return t.batch.Append(path, entry)
}

// remember adds the node's outcome to the worker's memory, once.
func (r *run) remember(w Worker, n Node, rec outcomeRecord) error {
	dir := r.dir.Worker(w.ID)
	o := rec.Outcome
	line := fmt.Sprintf("- %s (%s): %s\n", n.ID, o.Status, firstLine(o.Summary))
	if done, err := wroteBefore(dir.Memory(), []byte(line)); err != nil || done {
		return err
	}
	f, err := os.OpenFile(dir.Memory(), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	_, werr := f.WriteString(line)
	return errors.Join(werr, f.Close())
}

// wakeParents puts nodes whose sub-nodes are all done (or failed) back on the board, for a new
// assignment that integrates their results.
func (r *run) wakeParents(ctx context.Context) error {
	var woken []string
	r.board.read(func(rd reader) {
		for _, n := range rd.nodes() {
			if n.Status != NodeWaiting || len(n.WaitingFor) == 0 {
				continue
			}
			all := true
			for _, c := range n.WaitingFor {
				if cn := rd.node(c); cn == nil || !(cn.Status.done() || cn.Status == NodeFailed) {
					all = false
				}
			}
			if all {
				woken = append(woken, n.ID)
			}
		}
	})
	for _, id := range woken {
		if _, err := r.setNode(id, func(n *Node) { n.Status, n.WaitingFor, n.Assignment = NodePending, nil, "" }); err != nil {
			return err
		}
	}
	return nil
}

// stageComplete reports whether the stage's nodes are done as policy asks, with the note that
// tells the coordinator. The policy counts the nodes the coordinator put on the board; under
// "all", the sub-nodes its workers asked for must have ended too (those of a node that
// published are work of their own, which no node waits for).
func (r *run) stageComplete(stage int, policy string) (string, bool) {
	if r.revival() {
		return "", false // a worker has mail to wake up to first
	}
	total, done, ended, open := 0, 0, 0, 0
	complete := false
	var b strings.Builder
	r.board.read(func(rd reader) {
		for _, n := range rd.nodes() {
			switch {
			case n.Stage != stage:
			case n.Parent != "":
				if !n.Status.done() && n.Status != NodeFailed {
					open++
				}
			default:
				total++
				if n.Status.done() {
					done++
				}
				if n.Status.done() || n.Status == NodeFailed {
					ended++
				}
			}
		}
		switch policy {
		case "any":
			complete = done >= 1
		case "majority":
			complete = done*2 > total
		default:
			complete = ended == total && open == 0
		}
		if total == 0 || !complete {
			return
		}
		fmt.Fprintf(&b, "Stage %d is complete (policy %q): %d of %d nodes done.\n", stage, policyName(policy), done, total)
		for _, n := range rd.nodes() {
			switch {
			case n.Stage != stage:
			case n.Parent != "":
				fmt.Fprintf(&b, "  - %s (sub-node of %s) %s: %s\n", n.ID, n.Parent, n.Status, firstLine(n.Summary))
			default:
				fmt.Fprintf(&b, "- %s %s: %s\n", n.ID, n.Status, firstLine(n.Summary))
			}
		}
	})
	if total == 0 || !complete {
		return "", false
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
