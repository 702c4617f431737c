package nodes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/agiraph/agiraph/internal/proc"
	"github.com/agiraph/agiraph/nodes/bus"
	"github.com/agiraph/agiraph/nodes/eventlog"
	"github.com/agiraph/agiraph/nodes/store"
	"github.com/agiraph/agiraph/nodes/workspace"
	"github.com/agiraph/agiraph/runtime"
	"github.com/agiraph/agiraph/tools/mcp"
)

// plan chooses the assignments to start this tick, within the pool's free places: first those
// to resume (after a restart, or with the human's answer), then workers woken by mail, then
// ready nodes, each matched to its chosen worker or an idle one, spawning workers as needed.
// It reads the board in place: its cost grows with the nodes it starts, not with the board.
func (r *run) plan(ctx context.Context, st tick) ([]launch, error) {
	free := r.cfg.maxConcurrent - r.pool.size()
	var out []launch
	taken := map[string]bool{}
	add := func(node, worker, assignment string, wake bool) {
		out = append(out, launch{Node: node, Worker: worker, Assignment: assignment, Wake: wake})
		taken[worker] = true
		free--
	}
	for _, n := range r.board.unsettled() {
		if free <= 0 {
			break
		}
		switch r.resumption(n) {
		case collectIt:
			r.pool.finish(n.Assignment, nil)
		case runIt:
			add(n.ID, n.Worker, n.Assignment, n.Woken)
		}
	}
	if free > 0 {
		woken, err := r.revivals(ctx, st.Tick, taken)
		if err != nil {
			return nil, err
		}
		for _, l := range woken[:min(free, len(woken))] {
			add(l.Node, l.Worker, l.Assignment, true)
		}
	}
	if free <= 0 {
		return out, r.assignAll(ctx, out)
	}
	// The ready nodes that can start, in order: those for a chosen worker when it is idle and
	// not taken; the others get an idle worker no pending node waits for, or a new one.
	var starts []Node
	reserved := map[string]bool{}
	r.board.read(func(rd reader) {
		for _, n := range rd.nodes() {
			if n.Status == NodePending && n.Worker != "" {
				reserved[n.Worker] = true
			}
		}
		for _, n := range rd.nodes() {
			if len(starts) == free {
				break
			}
			if !ready(rd, n) {
				continue
			}
			if n.Worker != "" {
				w := rd.worker(n.Worker)
				if w == nil || w.Status != WorkerIdle || taken[w.ID] || w.overBudget() != "" {
					continue
				}
				taken[w.ID] = true
			}
			starts = append(starts, cloneNode(n))
		}
	})
	var roster []Worker // read once, for the nodes no worker waits for
	for _, n := range starts {
		worker := n.Worker
		if worker == "" {
			if roster == nil {
				roster = r.board.roster()
			}
			w, ok, err := r.pickWorker(ctx, &roster, taken, reserved)
			if err != nil {
				return nil, err
			}
			if !ok { // a worker is about to be free: the node waits for it
				continue
			}
			worker = w.ID
		}
		assignment := n.Assignment
		if assignment == "" {
			assignment = attemptID(r.id, n.ID, n.Attempts+1)
		}
		add(n.ID, worker, assignment, false)
	}
	return out, r.assignAll(ctx, out)
}

// attemptID names the assignment of node's attempt number attempt in run.
func attemptID(run, node string, attempt int) string {
	return fmt.Sprintf("%s.%s.%d", run, node, attempt)
}

// What to do with a node's assignment that is not running in this process.
const (
	leaveIt   = iota // nothing: it is running, ended here and waits for reconcile, or there is none
	runIt            // start it again: it was running when the process stopped, or the human answered its question
	collectIt        // collect it: it ended (its outcome is saved) before the process stopped
)

// resumption says what to do with n's assignment.
func (r *run) resumption(n Node) int {
	if n.Assignment == "" || r.pool.running(n.Assignment) {
		return leaveIt
	}
	switch n.Status {
	case NodeRunning, NodeAssigned:
		switch {
		case r.pool.hasEnded(n.Assignment):
			return leaveIt
		case r.hasOutcome(n):
			return collectIt
		}
		return runIt
	case NodeWaiting:
		if n.Question != "" && n.Answer != "" {
			return runIt
		}
	}
	return leaveIt
}

// revivable returns the node a worker's mail wakes it back into: an idle worker with mail,
// whose last assignment checkpointed its node.
func (r *run) revivable(w Worker) (Node, bool) {
	n, ok := r.asleep(w)
	return n, ok && r.bus.Pending(w.Name) > 0
}

// asleep returns the node an idle worker's mail would wake it back into: the node its last
// assignment checkpointed.
func (r *run) asleep(w Worker) (Node, bool) {
	if w.Status != WorkerIdle || w.Last == "" || w.overBudget() != "" {
		return Node{}, false
	}
	n, ok := r.board.nodeOf(w.Last)
	if ok && n.Assignment == w.Last && n.Status == NodeCheckpointed && !r.pool.running(w.Last) && n.overBudget() == "" {
		return n, true
	}
	return Node{}, false
}

// revivals returns the launches of the workers, but those taken, that their mail wakes back
// into their nodes in tick, in the roster's order: those whose mail has come, or, under a
// Sequencer, those it gives at the tick's PointRoute (asked when a worker is asleep).
func (r *run) revivals(ctx context.Context, tick int, taken map[string]bool) ([]launch, error) {
	var asleep []Worker
	for _, w := range r.board.roster() {
		if _, ok := r.asleep(w); ok && !taken[w.ID] {
			asleep = append(asleep, w)
		}
	}
	if len(asleep) == 0 {
		return nil, nil
	}
	ids, err := r.choose(ctx, Point{Tick: tick, At: PointRoute}, func() []string {
		var ids []string
		for _, w := range asleep {
			if r.bus.Pending(w.Name) > 0 {
				ids = append(ids, w.ID)
			}
		}
		return ids
	})
	var out []launch
	for _, w := range asleep {
		if n, ok := r.asleep(w); ok && slices.Contains(ids, w.ID) {
			out = append(out, launch{Node: n.ID, Worker: w.ID, Assignment: w.Last, Wake: true})
		}
	}
	return out, err
}

// ready reports whether n can start: pending, not waiting for sub-nodes, within its budget,
// dependencies done.
func ready(rd reader, n *Node) bool {
	if n.Status != NodePending || len(n.WaitingFor) > 0 || n.overBudget() != "" {
		return false
	}
	for _, d := range n.Deps {
		if dn := rd.node(d); dn == nil || !dn.Status.done() && dn.Status != NodeSkipped {
			return false
		}
	}
	return true
}

// pickWorker returns an idle harnessed worker no node waits for, or spawns one. When there is
// none but a worker whose assignment ended and is not yet applied (it is released at the next
// reconcile), it claims that one in taken and returns ok false: the node waits a tick for it
// rather than have the team grow by a worker whenever work ends between two ticks. roster is the
// board's workers, which pickWorker adds the worker it spawns to.
func (r *run) pickWorker(ctx context.Context, roster *[]Worker, taken, reserved map[string]bool) (_ Worker, ok bool, _ error) {
	workers := *roster
	for _, w := range workers {
		if w.Kind == Harnessed && w.Status == WorkerIdle && !taken[w.ID] && !reserved[w.ID] && w.overBudget() == "" {
			return w, true, nil
		}
	}
	for _, w := range workers {
		if w.Kind == Harnessed && w.Status == WorkerBusy && !taken[w.ID] && !reserved[w.ID] && r.pool.hasEnded(w.Last) {
			taken[w.ID] = true
			return Worker{}, false, nil
		}
	}
	name := ""
	for _, candidate := range r.cfg.names {
		if _, ok := r.board.worker(candidate); !ok {
			name = candidate
			break
		}
	}
	if name == "" {
		name = fmt.Sprintf("worker%d", len(workers)+1)
	}
	w, created, err := r.spawn(ctx, workerSpec{Name: name, Kind: Harnessed, Role: "worker"})
	if created {
		*roster = append(*roster, w)
	}
	return w, err == nil, err
}

// spawn adds a worker to the board and the bus.
func (r *run) spawn(ctx context.Context, nw workerSpec) (Worker, bool, error) {
	w, created, err := r.board.spawn(ctx, nw)
	if err != nil {
		return Worker{}, false, err
	}
	if err := r.bus.Join(bus.Participant{Name: w.Name, Role: w.Role}); err != nil {
		return Worker{}, false, err
	}
	r.spawned(ctx, w)
	return w, created, nil
}

// spawned logs the worker.spawned event of w, once: spawn logs it, and so does a resume, for a
// worker a crash left on the board before its event was logged.
func (r *run) spawned(ctx context.Context, w Worker) {
	e := eventlog.New(eventlog.WorkerSpawned, fmt.Sprintf("%s (%s)", w.Name, strings.TrimSpace(w.Kind+" "+w.Model)), w)
	e.Worker, e.Key = w.ID, "worker/"+w.ID+"/spawned"
	r.emit(ctx, e)
}

// assignAll records launches on the board, in one change: each node assigned, each worker busy.
func (r *run) assignAll(ctx context.Context, launches []launch) error {
	if len(launches) == 0 {
		return nil
	}
	tasks := make([]string, len(launches))
	err := r.board.change(ctx, func(t *tx) error {
		for i, l := range launches {
			n, err := t.node(l.Node, func(n *Node) error {
				if n.Assignment != l.Assignment {
					n.Attempts++
					n.Assignment = l.Assignment
				}
				n.Worker = l.Worker
				if n.Status != NodeWaiting { // a waiting node keeps its question until its answer is handed over
					n.Status, n.Applied, n.Woken = NodeRunning, "", l.Wake
				}
				return nil
			})
			if err != nil {
				return err
			}
			tasks[i] = n.Task
			if _, err := t.worker(l.Worker, func(w *Worker) {
				w.Status, w.Node, w.Last = WorkerBusy, l.Node, l.Assignment
			}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	for i, l := range launches {
		r.emit(ctx, eventlog.Event{Type: eventlog.NodeAssigned, Node: l.Node, Worker: l.Worker, Text: firstLine(tasks[i]), Key: l.Assignment + "/assigned"})
		r.emit(ctx, eventlog.Event{Type: eventlog.WorkerBusy, Node: l.Node, Worker: l.Worker, Key: l.Assignment + "/busy"})
	}
	return nil
}

// outcomeRecord is an assignment's outcome as saved in its node's folder.
type outcomeRecord struct {
	// ID names this outcome: an assignment woken again ends again with another. What is done
	// about an outcome (events, messages) is keyed by it, so it is done once.
	ID         string          `json:"id,omitempty"`
	Assignment string          `json:"assignment"`
	Outcome    runtime.Outcome `json:"outcome"`
	Error      string          `json:"error,omitempty"`
}

// key returns the key of what is done about the outcome.
func (rec outcomeRecord) key() string {
	if rec.ID != "" {
		return rec.ID
	}
	return rec.Assignment
}

// outcomeKey is the store's key of the outcome of the latest assignment of node.
func outcomeKey(run, node string) string { return "outcome/" + run + "/" + node }

// outcome returns the outcome of assignment id on node: from this process, else from the
// store. ok is false when there is none for id; a damaged record is an error naming it.
func (r *run) outcome(node, id string) (rec outcomeRecord, ok bool, err error) {
	if rec, ok := r.pool.outcome(id); ok {
		return rec, true, nil
	}
	d, err := r.s.store.Doc(context.Background(), outcomeKey(r.id, node))
	if err != nil || d.Value == nil {
		return rec, false, err
	}
	if err := json.Unmarshal(d.Value, &rec); err != nil {
		return rec, false, fmt.Errorf("the outcome of node %s, in the store as %s, is damaged: %w", node, d.Key, err)
	}
	return rec, rec.Assignment == id, nil
}

func (r *run) hasOutcome(n Node) bool {
	_, ok, err := r.outcome(n.ID, n.Assignment)
	return ok || err != nil // a damaged outcome is collected, to fail the node with it
}

// saveOutcome records how an assignment ended in the store, before the squad hears of it, so a
// restart finds it, and returns the record; the files a node published are kept in the store
// with it (see keepFiles), and a file the store cannot keep fails the node, its published files
// removed. When it cannot be
// written the squad still has it in memory (see pool); a restart then runs the assignment again.
func (r *run) saveOutcome(ctx context.Context, node, assignment string, o runtime.Outcome, err error) outcomeRecord {
	var ch store.Change
	if err == nil && o.Status == runtime.Published {
		var paths []string
		for _, f := range o.Published {
			paths = append(paths, filepath.Join(r.dir.Node(node).Published(), f))
		}
		if err = r.s.keep(&ch, paths...); err != nil {
			// Not published: the files go, so that the node's next attempt can publish its own.
			o.Status, o.Published = runtime.Failed, nil
			for _, p := range paths {
				if rerr := os.Remove(p); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
					err = errors.Join(err, rerr)
				}
			}
		}
	}
	rec := outcomeRecord{ID: fmt.Sprintf("%s@%d", assignment, time.Now().UnixNano()), Assignment: assignment, Outcome: o}
	if err != nil {
		rec.Error = err.Error()
		if o.Status == "" {
			rec.Outcome.Status = runtime.Failed
		}
	}
	werr := ch.Put(outcomeKey(r.id, node), rec)
	if werr == nil {
		werr = r.s.commit(ctx, ch, nil)
	}
	if werr != nil {
		r.cfg.logger.Error("outcome not saved", "run", r.id, "node", node, "assignment", assignment, "err", werr)
		r.emitAt(ctx, eventlog.Error, node, "", "the outcome of "+assignment+" was not saved: "+werr.Error(), nil, "")
	}
	return rec
}

// start begins a launch's assignment in the background.
func (r *run) start(ctx context.Context, l launch) error {
	n, ok := r.board.node(l.Node)
	if !ok {
		return fmt.Errorf("nodes: dispatch: node %q is not on the board", l.Node)
	}
	w, ok := r.board.worker(l.Worker)
	if !ok {
		return fmt.Errorf("nodes: dispatch: worker %q does not exist", l.Worker)
	}
	// A launch whose assignment is no longer its node's is not started: a resume in another home
	// gave the node its next attempt after the tick decided it (see restoreRun), and the frontier
	// starts that one.
	if n.Assignment != l.Assignment || r.pool.running(l.Assignment) {
		return nil
	}
	if n.Answer != "" {
		if err := r.heard(ctx, n.Asked, w.ID, n.Answer); err != nil {
			return err
		}
	}
	// A node assigned is running already (assignAll), but one that waited for the human's
	// answer: it is running from here, on disk before its assignment starts, so that a restart
	// collects the outcome it leaves rather than run it again (see resumption).
	if n.Status != NodeRunning || n.Applied != "" || n.Woken != l.Wake {
		if _, err := r.board.update(ctx, n.ID, func(n *Node) error {
			n.Status, n.Applied, n.Woken = NodeRunning, "", l.Wake
			return nil
		}); err != nil {
			return err
		}
	}
	started := fmt.Sprintf("%s (%s) on %s", w.Name, w.Kind, n.ID)
	policy := r.sandbox(n, w)
	if weak := proc.Weakness(policy); weak != "" {
		started += "; containment is weaker here: " + weak
	}
	r.emit(ctx, eventlog.Event{Type: eventlog.NodeStarted, Node: n.ID, Worker: w.ID, Text: started})
	timeout := r.board.runState().Contract.Timeout
	// The assignment is made by its own goroutine, not the tick's: a tick starting fifty of them
	// does not read fifty workers' files before its step commits.
	r.pool.start(r.ctx, l.Assignment, func(ctx context.Context) outcomeRecord {
		if timeout > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, timeout)
			defer cancel()
		}
		a, err := r.assignment(n, w, policy)
		var rt runtime.Runtime
		if err == nil {
			rt, err = r.runtimeFor(w)
		}
		if err == nil {
			err = a.Dir.Create() // its scratch/ and published/, for any runtime
		}
		if err != nil {
			return r.saveOutcome(ctx, n.ID, l.Assignment, runtime.Outcome{Status: runtime.Failed, Summary: err.Error()}, err)
		}
		a.ID, a.Wake = l.Assignment, l.Wake
		if len(w.MCP) > 0 && w.Kind == Harnessed {
			set, err := r.connectMCP(ctx, w.MCP)
			if err != nil {
				return r.saveOutcome(ctx, n.ID, l.Assignment, runtime.Outcome{Status: runtime.Failed, Summary: err.Error()}, err)
			}
			defer set.Close()
			a.Tools = append(slices.Clip(a.Tools), set.Tools()...)
		}
		sink, done := r.sink(r.dir.Worker(w.ID).Conversation(), n.ID, w.ID)
		defer done()
		o, err := rt.Run(ctx, a, sink)
		return r.saveOutcome(ctx, n.ID, l.Assignment, o, err)
	})
	return nil
}

// sink records an assignment's events in the agent's event log — a node's log is its events
// there, as the web UI shows them — and the worker's side of them in its conversation file (a
// worker's conversation.jsonl, readable by people; the conversation itself is checkpointed). A
// piece of the model's text goes to the event log's subscribers only, as a live TextDelta
// event: the model turn that follows records the text. The file stays open until done is
// called.
func (r *run) sink(convPath, node, worker string) (sink runtime.Sink, done func()) {
	var files workspace.Appender
	done = func() {
		if err := files.Close(); err != nil {
			r.cfg.logger.Error("conversation not written", "run", r.id, "node", node, "worker", worker, "err", err)
		}
	}
	return func(e runtime.Event) {
		if e.Kind == runtime.TextDelta {
			r.s.note(eventlog.Event{Type: eventlog.TextDelta, Time: e.Time, Run: r.id, Node: node, Worker: worker, Text: e.Text})
			return
		}
		if line, ok := conversationLine(e); ok {
			if err := files.AppendJSONL(convPath, line); err != nil {
				r.cfg.logger.Error("conversation not written", "run", r.id, "worker", worker, "err", err)
			}
		}
		// The coordinator's runtime starts at each of its turns, which say the same.
		if ev, ok := translate(e); ok && (node != "" || e.Kind != runtime.Started) {
			ev.Node, ev.Worker = node, worker
			ev.Run = r.id
			r.s.note(ev)
		}
	}, done
}

// convLine is a line of a worker's conversation.jsonl.
type convLine struct {
	Time    time.Time          `json:"time"`
	Node    string             `json:"node,omitempty"`
	Role    string             `json:"role"` // assistant, tool, message
	Content string             `json:"content,omitempty"`
	Tool    *runtime.ToolEvent `json:"tool,omitempty"`
	Message *runtime.Message   `json:"message,omitempty"`
}

// conversationLine returns the conversation line an event makes, if any.
func conversationLine(e runtime.Event) (convLine, bool) {
	l := convLine{Time: e.Time, Node: e.Node}
	switch e.Kind {
	case runtime.ModelTurn:
		l.Role, l.Content = "assistant", e.Text
	case runtime.ToolCalled:
		l.Role, l.Tool = "assistant", e.Tool
	case runtime.ToolResult:
		l.Role, l.Tool = "tool", e.Tool
	case runtime.MessageReceived, runtime.MessageSent:
		l.Role, l.Message = "message", e.Message
	case runtime.Compacted:
		l.Role, l.Content = "system", "compacted; the earlier turns are in "+e.Text
	default:
		return l, false
	}
	return l, true
}

// translate turns an assignment's event into the agent's, when it has one there (messages,
// questions and ends are reported by the bus and the board instead).
func translate(e runtime.Event) (eventlog.Event, bool) {
	switch e.Kind {
	case runtime.Started:
		return eventlog.New(eventlog.RuntimeStarted, e.Text, nil), true
	case runtime.ToolCalled:
		return eventlog.New(eventlog.ToolCalled, eventlog.ToolText(eventlog.ToolCalled, e.Tool.Name, string(e.Tool.Args)), e.Tool), true
	case runtime.ToolResult:
		return eventlog.New(eventlog.ToolResult, eventlog.ToolText(eventlog.ToolResult, e.Tool.Name, e.Tool.Result), e.Tool), true
	case runtime.Compacted:
		return eventlog.New(eventlog.MemoryCompacted, e.Text, nil), true
	case runtime.ModelTurn:
		return eventlog.New(eventlog.ModelTurn, eventlog.Clip(e.Text, 500), e.Usage), true
	case runtime.Retrying:
		return eventlog.New(eventlog.Retrying, e.Text, nil), true
	case runtime.Hooked:
		return eventlog.New(eventlog.Hooked, eventlog.Clip(e.Text, 500), nil), true
	case runtime.Output:
		return eventlog.New(eventlog.Output, eventlog.Clip(e.Text, 500), nil), true
	}
	return eventlog.Event{}, false
}

// refsText lists a node's refs for its worker.
func refsText(refs map[string]string) string {
	if len(refs) == 0 {
		return ""
	}
	b, _ := json.MarshalIndent(refs, "", "  ")
	return strings.TrimSpace(string(b))
}

// connectMCP connects the MCP servers of the given names, among WithMCPServers.
func (r *run) connectMCP(ctx context.Context, names []string) (*mcp.Set, error) {
	servers := make([]mcp.Server, 0, len(names))
	for _, name := range names {
		s, ok := r.cfg.mcp[name]
		if !ok {
			return nil, fmt.Errorf("nodes: no MCP server %q: the run offers %s", name, r.mcpNames())
		}
		servers = append(servers, s)
	}
	set, err := mcp.Connect(ctx, servers...)
	if err != nil {
		return nil, fmt.Errorf("nodes: %w", err)
	}
	return set, nil
}
