package nodes

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/agiraph/agiraph/internal/osfile"
	"github.com/agiraph/agiraph/nodes/bus"
	"github.com/agiraph/agiraph/nodes/eventlog"
	"github.com/agiraph/agiraph/nodes/store"
	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/runtime"
)

// applied is an outcome being applied to its node.
type applied struct {
	id       string // the assignment
	node     Node   // as it is before the outcome, then after
	worker   Worker
	rec      outcomeRecord
	already  bool     // the node had it applied, by a run a crash cut short
	children []string // the sub-nodes it asked for, on the board
}

// apply applies the outcomes of the assignments ids to the board — the sub-nodes they asked
// for, then one change for all of them — tells the coordinator, with one send for all, and
// returns their usage. It may run again for the same assignments after a crash: board changes
// are made once (a node records the assignment it applied), events and messages are keyed by
// the outcome, so a second run completes what the first one left half done, and repeats
// nothing.
func (r *run) apply(ctx context.Context, ids []string, stage int) (providers.Usage, error) {
	var usage providers.Usage
	var todo []applied
	for _, id := range ids {
		node, found := r.board.nodeOf(id)
		if !found {
			continue
		}
		already := node.Applied == id
		if !already && node.Status != NodeRunning && node.Status != NodeAssigned { // assigned: its start was lost to a crash
			continue
		}
		rec, ok, err := r.outcome(node.ID, id)
		if err != nil {
			rec, ok = r.damagedOutcome(node, id, err), true
		}
		if !ok {
			continue
		}
		a := applied{id: id, node: node, rec: rec, already: already}
		a.worker, _ = r.board.worker(node.Worker)
		// Run again for an outcome applied before, it finds the sub-nodes it made by their
		// keys, and logs their events if the step that made them did not commit.
		if a.children, err = r.subNodes(ctx, a, stage); err != nil {
			return usage, err
		}
		if !already {
			usage = usage.Add(node.newSpend(id, rec.Outcome.Usage))
		}
		todo = append(todo, a)
	}
	if len(todo) == 0 {
		return usage, nil
	}
	record := func(t *tx) error {
		for i := range todo {
			if err := r.record(t, &todo[i]); err != nil {
				return err
			}
		}
		return nil
	}
	tell := func() error {
		var msgs []bus.Message
		for _, a := range todo {
			msgs = append(msgs, r.tells(a.node, a.worker, a.rec)...)
		}
		_, err := r.bus.SendAll(ctx, msgs)
		return err
	}
	if err := r.board.change(ctx, record); err != nil {
		return usage, err
	}
	if err := tell(); err != nil {
		return usage, err
	}
	for _, a := range todo {
		if err := r.announce(ctx, a.node, a.worker, a.rec); err != nil {
			return usage, err
		}
	}
	return usage, nil
}

// damagedOutcome stands for the outcome of assignment id on node when its record cannot be
// read: the node is done if it published (its files are there), else it failed — not the run.
func (r *run) damagedOutcome(node Node, id string, err error) outcomeRecord {
	rec := outcomeRecord{Assignment: id, Outcome: runtime.Outcome{Status: runtime.Failed},
		Error: fmt.Sprintf("%v (the node is tried again if it may be; repair what damaged the store, or restore it from a backup)", err)}
	if files, ferr := r.dir.Node(node.ID).PublishedFiles(); ferr == nil && len(files) > 0 {
		rec.Outcome = runtime.Outcome{Status: runtime.Published, Published: files,
			Summary: fmt.Sprintf("published %s; its outcome is lost: %v", strings.Join(files, ", "), err)}
		rec.Error = ""
	}
	return rec
}

// subNodes puts the sub-nodes an outcome asked for on the board and returns their IDs. The
// sub-nodes of an outcome that checkpointed are waited for; those of one that published go on
// the board as work of their own (the node is done); a failed attempt's are dropped with it.
func (r *run) subNodes(ctx context.Context, a applied, stage int) ([]string, error) {
	o := a.rec.Outcome
	if o.Status != runtime.Checkpointed && o.Status != runtime.Published {
		return nil, nil
	}
	var children []string
	for i, sub := range o.SubNodes {
		c, _, err := r.board.create(ctx, nodeSpec{Task: sub.Task, Refs: sub.Refs, Worker: sub.Worker, Parent: a.node.ID, Stage: stage, By: a.worker.Name, Key: fmt.Sprintf("%s#%d", a.id, i)})
		if err != nil {
			if _, serr := r.bus.SendOnce(r.ctxOrBackground(), fmt.Sprintf("%s/refused%d", a.rec.key(), i), squadName, bus.Coordinator,
				fmt.Sprintf("Sub-node %d asked for by %s on %s was refused: %v", i+1, a.worker.Name, a.node.ID, err)); serr != nil {
				return nil, serr
			}
			continue
		}
		r.emitAt(ctx, eventlog.NodeCreated, c.ID, a.worker.ID, firstLine(c.Task), nil, "node/"+c.ID+"/created")
		children = append(children, c.ID)
	}
	return children, nil
}

// record applies an outcome to its node in t: the node's new status, the worker's history, and
// the worker released; a.node becomes the node as it is now. An outcome applied before only
// releases its worker.
func (r *run) record(t *tx, a *applied) error {
	o := a.rec.Outcome
	t.forget(outcomeKey(r.id, a.node.ID)) // applied: it is not collected again
	if a.already {
		return release(t, a.worker, a.id, o.Status)
	}
	retry := a.node.Attempts < r.cfg.maxAttempts
	spent := a.node.newSpend(a.id, o.Usage)
	if a.worker.ID != "" && a.worker.Damaged == "" && spent != (providers.Usage{}) {
		w, err := t.worker(a.worker.ID, func(w *Worker) { w.Spent = w.Spent.Add(spent) })
		if err != nil {
			return err
		}
		a.worker = w
	}
	n, err := t.node(a.node.ID, func(n *Node) error {
		n.Applied, n.Question, n.Answer, n.Approval, n.Woken, n.AnswerBy, n.Default = a.id, "", "", nil, false, time.Time{}, ""
		n.Spent, n.Counted = n.Spent.Add(spent), Spend{}
		if o.Usage != (providers.Usage{}) {
			n.Counted = Spend{Assignment: a.id, Usage: o.Usage}
		}
		switch o.Status {
		case runtime.Published:
			n.Status, n.Summary, n.Published, n.Result = NodeCompleted, o.Summary, o.Published, o.Result
		case runtime.Checkpointed:
			n.Status, n.Summary, n.WaitingFor = NodeCheckpointed, o.Summary, a.children
			if len(a.children) > 0 {
				n.Status = NodeWaiting
			}
		case runtime.Waiting:
			n.Status, n.Question, n.Approval, n.Asked = NodeWaiting, o.Question, o.Approval, a.rec.key()+"/question"
			if o.Approval == nil { // a tool call waits for its verdict
				n.AnswerBy, n.Default = r.answerBy(), o.Default
			}
		case runtime.Cancelled:
			n.Status = NodePending // its assignment is kept, to be resumed
		default:
			n.Summary = fmt.Sprintf("attempt %d %s: %s", n.Attempts, o.Status, a.rec.Error)
			n.Status = NodeFailed
			if retry {
				n.Status, n.Assignment = NodePending, ""
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	a.node = n
	if err := r.addHistory(t, a.worker, n, a.rec); err != nil {
		return err
	}
	return release(t, a.worker, a.id, o.Status)
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

// announce makes an applied outcome known to the human and the agent, once its node's change
// is on disk: the events, the worker's memory, the question to the human. Each is done once
// per outcome, however often announce runs.
func (r *run) announce(ctx context.Context, node Node, worker Worker, rec outcomeRecord) error {
	o, key := rec.Outcome, rec.key()
	switch o.Status {
	case runtime.Published, runtime.Checkpointed:
		text := o.Summary
		if o.Status == runtime.Checkpointed {
			text = "checkpointed: " + text
		}
		r.emitAt(ctx, eventlog.NodeCompleted, node.ID, worker.ID, text, map[string]any{"status": o.Status, "published": o.Published}, key+"/completed")
		if err := r.remember(ctx, worker, node, rec); err != nil {
			return err
		}
	case runtime.Waiting:
		r.emitAt(ctx, eventlog.HumanQuestion, node.ID, worker.ID, o.Question, o.Approval, key+"/question")
		if err := r.toHuman(ctx, key+"/question", worker.Name, o.Question); err != nil {
			return err
		}
		r.asked(Question{Key: key + "/question", Node: node.ID, Worker: worker.ID, Question: o.Question, Approval: o.Approval, Default: node.Default}, node.AnswerBy)
	case runtime.Cancelled:
	default:
		retry := node.Status == NodePending
		r.emitAt(ctx, eventlog.NodeFailed, node.ID, worker.ID, fmt.Sprintf("%s: %s", o.Status, rec.Error), map[string]any{"retry": retry, "attempt": node.Attempts}, key+"/failed")
	}
	if o.Status != runtime.Waiting {
		r.emitAt(ctx, eventlog.WorkerIdle, "", worker.ID, "", nil, key+"/idle")
	}
	return nil
}

// tells returns the messages an applied outcome sends among the agents — the note to the
// coordinator, and the messages the worker left unread or suggested — keyed by the outcome.
// The coordinator and the workers read them only in turns the squad starts after the node's
// change is on disk, so they may be sent while it is written (see board.changeAlong).
func (r *run) tells(node Node, worker Worker, rec outcomeRecord) []bus.Message {
	o, key := rec.Outcome, rec.key()
	var msgs []bus.Message
	tell := func(what, from, to, text string) {
		msgs = append(msgs, bus.Message{Key: key + "/" + what, From: from, To: to, Body: text})
	}
	stage := r.board.runState().Until == untilStage // the stage's note will tell of the node
	switch {
	case stage && (o.Status == runtime.Published || o.Status == runtime.Checkpointed):
	case o.Status == runtime.Published:
		var files []string
		for _, f := range o.Published {
			files = append(files, "nodes/"+node.ID+"/published/"+f)
		}
		tell("done", squadName, bus.Coordinator, fmt.Sprintf("Node %s (%s) completed: %s\nPublished: %s", node.ID, worker.Name, o.Summary, strings.Join(files, ", ")))
	case o.Status == runtime.Checkpointed:
		text := fmt.Sprintf("Node %s (%s) checkpointed: %s", node.ID, worker.Name, o.Summary)
		if len(node.WaitingFor) > 0 {
			text += fmt.Sprintf("\nIt waits for its sub-nodes %s.", strings.Join(node.WaitingFor, ", "))
		}
		tell("done", squadName, bus.Coordinator, text)
	case o.Status == runtime.Waiting, o.Status == runtime.Cancelled:
	default:
		text := fmt.Sprintf("Node %s (%s) %s: %s", node.ID, worker.Name, o.Status, rec.Error)
		if notes := r.dir.Node(node.ID).Path("failure_notes.md"); fileExists(notes) {
			text += "\nFailure notes: nodes/" + node.ID + "/failure_notes.md"
		}
		if node.Status == NodePending {
			text += "\nIt will be tried again."
		}
		tell("failed", squadName, bus.Coordinator, text)
	}
	if text := budgetNote("Node "+node.ID, node.Budget, node.Spent); text != "" {
		tell("budget", squadName, bus.Coordinator, text)
	}
	if text := budgetNote("Worker "+worker.Name, worker.Budget, worker.Spent); text != "" {
		tell("worker-budget", squadName, bus.Coordinator, text)
	}
	for i, m := range o.Unread { // back in the worker's mailbox, to wake it or wait for its next node
		tell(fmt.Sprintf("unread%d", i), m.From, worker.Name, m.Body)
	}
	for i, s := range o.Suggestions {
		tell(fmt.Sprintf("suggestion%d", i), worker.Name, bus.Coordinator, "Suggestion: "+s)
	}
	return msgs
}

// setNode changes a node and stamps the events that follow with it.
func (r *run) setNode(ctx context.Context, id string, fn func(n *Node)) (Node, error) {
	return r.board.update(ctx, id, func(n *Node) error { fn(n); return nil })
}

// appendTail is how much of a file appendOnce reads for its mark.
const appendTail = 64 << 10

// appendTails holds the buffers appendOnce reads into: once a worker's history holds a few hundred
// outcomes, each new one reads 64 KiB of it (BenchmarkSquad's B/op fell from 342 to 308 MB).
var appendTails = sync.Pool{New: func() any { return new([appendTail]byte) }}

// appendOnce appends line to the file at path, which it creates if need be — a file of a
// worker's own (its memory, its history), read by the worker, not by the squad — unless the
// file's latest lines (its last 64 KiB) hold mark: the line an outcome recorded again after a
// crash wrote the first time. One open serves both.
func appendOnce(path string, mark, line []byte) (err error) {
	f, err := osfile.OpenRegular(path, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, f.Close()) }()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	off := max(st.Size()-appendTail, 0)
	buf := appendTails.Get().(*[appendTail]byte)
	defer appendTails.Put(buf)
	tail := buf[:st.Size()-off]
	if _, err := f.ReadAt(tail, off); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	if bytes.Contains(tail, mark) {
		return nil
	}
	_, err = f.Write(line)
	return err
}

// addHistory adds a node's outcome that published or checkpointed to its worker's
// history.jsonl, once per outcome — an outcome recorded again after a crash cut its record short
// finds its line among the last — and keeps the file in the store with t.
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
	t.keep(path)
	line, err := json.Marshal(entry)
	if err != nil {
		return err
	}
	return appendOnce(path, key[1:len(key)-1], append(line, '\n')) // "outcome":"<key>"
}

// remember adds the node's outcome to the worker's memory, once, and keeps the file in the
// store.
func (r *run) remember(ctx context.Context, w Worker, n Node, rec outcomeRecord) error {
	dir := r.dir.Worker(w.ID)
	o := rec.Outcome
	line := fmt.Sprintf("- %s (%s): %s\n", n.ID, o.Status, firstLine(o.Summary))
	if err := appendOnce(dir.Memory(), []byte(line), []byte(line)); err != nil {
		return err
	}
	var ch store.Change
	if err := r.s.keep(&ch, dir.Memory()); err != nil {
		return err
	}
	return r.s.commit(ctx, ch, nil)
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
				if cn := rd.node(c); cn == nil || !cn.Status.ended() {
					all = false
				}
			}
			if all {
				woken = append(woken, n.ID)
			}
		}
	})
	for _, id := range woken {
		if _, err := r.setNode(ctx, id, func(n *Node) { n.Status, n.WaitingFor, n.Assignment = NodePending, nil, "" }); err != nil {
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
				if !n.Status.ended() {
					open++
				}
			default:
				total++
				if n.Status.done() {
					done++
				}
				if n.Status.ended() {
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
