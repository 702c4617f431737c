package nodes

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agiraph/agiraph/hooks"
	"github.com/agiraph/agiraph/internal/osfile"
	"github.com/agiraph/agiraph/nodes/eventlog"
	"github.com/agiraph/agiraph/nodes/store"
	"github.com/agiraph/agiraph/nodes/workspace"
	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/runtime"
)

// NodeStatus is where a work node is in its life.
type NodeStatus string

// The node statuses.
const (
	NodePending      NodeStatus = "pending"      // waiting for its dependencies or a worker
	NodeAssigned     NodeStatus = "assigned"     // a worker was chosen, not started yet: read from boards that have it; a launch makes a node running
	NodeRunning      NodeStatus = "running"      // a worker is on it
	NodeWaiting      NodeStatus = "waiting"      // its worker waits for the human, or for sub-nodes
	NodeCheckpointed NodeStatus = "checkpointed" // a stage of it is done; it may be picked up again
	NodeCompleted    NodeStatus = "completed"    // published
	NodeFailed       NodeStatus = "failed"
	NodeSkipped      NodeStatus = "skipped" // the human skipped it (Run.Skip): the nodes after it go on without it
)

// done reports whether a node with status s did its work: the nodes that depend on it read it.
func (s NodeStatus) done() bool { return s == NodeCompleted || s == NodeCheckpointed }

// ended reports whether a node with status s is over, done or not.
func (s NodeStatus) ended() bool { return s.done() || s == NodeFailed || s == NodeSkipped }

// Node is a work node: a piece of work with its own folder of truth.
type Node struct {
	ID   string `json:"id"`
	Task string `json:"task"`
	// Deps are the nodes that must be done before this one starts.
	Deps []string `json:"deps,omitempty"`
	// Refs name other nodes' published outputs this one reads: name → path relative to the run.
	Refs     map[string]string `json:"refs,omitempty"`
	Parent   string            `json:"parent,omitempty"`
	Children []string          `json:"children,omitempty"`
	Stage    int               `json:"stage"`
	Status   NodeStatus        `json:"status"`
	// Worker is the worker assigned to the node (chosen by the coordinator, or by the squad).
	Worker string `json:"worker,omitempty"`
	// Assignment names the node's current assignment; Attempts counts its assignments.
	Assignment string `json:"assignment,omitempty"`
	Attempts   int    `json:"attempts,omitempty"`
	// Applied is the last assignment whose outcome was applied to the node.
	Applied string `json:"applied,omitempty"`
	// Woken says the running assignment was woken by mail after it checkpointed; run again
	// after a crash, it is woken again.
	Woken     bool     `json:"woken,omitempty"`
	Summary   string   `json:"summary,omitempty"`
	Published []string `json:"published,omitempty"`
	// OutputSchema, when set, is the JSON Schema of the node's result: its worker publishes a
	// result valid against it, which Result then holds (and published/result.json too).
	OutputSchema json.RawMessage `json:"output_schema,omitempty"`
	Result       json.RawMessage `json:"result,omitempty"`
	// Question is what its worker asked the human, while waiting; Answer the human's answer,
	// until the worker has it. Asked names the outcome that asked, which keys the answer's
	// record.
	Question string `json:"question,omitempty"`
	Answer   string `json:"answer,omitempty"`
	Asked    string `json:"asked,omitempty"`
	// AnswerBy is when the question ends without an answer (WithAnswerTimeout), with Default
	// when the worker gave one.
	AnswerBy time.Time `json:"answer_by,omitzero"`
	Default  string    `json:"default,omitempty"`
	// Approval is the tool call the question asks the human to approve, when it is one (see
	// WithHooks).
	Approval *hooks.Approval `json:"approval,omitempty"`
	// WaitingFor lists the sub-nodes the node waits for, when it checkpointed to wait for them.
	WaitingFor []string `json:"waiting_for,omitempty"`
	// Budget bounds what the node's assignments spend (see Budget): past its limit the node
	// does not start again until the budget is raised. Spent is what they spent, counted as each
	// assignment's outcome is applied; Counted is what the assignment last applied had spent
	// then, since a woken assignment reports what it spent in all its runs (zero when it had
	// spent nothing: all it spends is then new).
	Budget    Budget          `json:"budget,omitzero"`
	Spent     providers.Usage `json:"spent,omitzero"`
	Counted   Spend           `json:"counted,omitzero"`
	CreatedBy string          `json:"created_by"`
	Key       string          `json:"key,omitempty"` // the tool call that created it, so a repeated call does not create it twice
	Created   time.Time       `json:"created"`
	Updated   time.Time       `json:"updated"`
	// Damaged says why the node's file could not be read, and how to repair it. A damaged node
	// is failed and left as it is: nothing runs it or writes it until it is repaired.
	Damaged string `json:"damaged,omitempty"`
}

// WorkerStatus is what a worker is doing.
type WorkerStatus string

// The worker statuses.
const (
	WorkerIdle    WorkerStatus = "idle"
	WorkerBusy    WorkerStatus = "busy"
	WorkerWaiting WorkerStatus = "waiting_for_human"
	WorkerStopped WorkerStatus = "stopped"
)

// The kinds of workers: how they run.
const (
	Harnessed  = "harnessed"   // an in-process ReAct loop over a model
	ClaudeCode = "claude-code" // the Claude Code CLI
	Autonomous = "autonomous"  // any CLI agent, through files
)

// Worker is an executor with its own identity, memory, notebook and history, independent of the
// nodes it works on.
type Worker struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	Role string `json:"role,omitempty"`
	// Kind says how it runs: Harnessed, ClaudeCode or Autonomous.
	Kind string `json:"kind"`
	// Model is the model of a harnessed worker ("anthropic/claude-sonnet-4-5") or of Claude Code.
	Model string `json:"model,omitempty"`
	// Command is an autonomous worker's command template.
	Command []string `json:"command,omitempty"`
	// Single makes a harnessed worker answer in one model call, without tools.
	Single bool `json:"single,omitempty"`
	// Memory lets the worker write to the agent's long-term memory.
	Memory bool `json:"agent_memory,omitempty"`
	// MCP names the MCP servers (among WithMCPServers) whose tools a harnessed worker gets.
	MCP []string `json:"mcp_servers,omitempty"`
	// Tools names the built-in tools it may use (see ToolNames); empty: the squad's.
	Tools  []string     `json:"tools,omitempty"`
	Status WorkerStatus `json:"status"`
	// Node is the node it works on, while busy or waiting.
	Node string `json:"node,omitempty"`
	// Last is its latest assignment, which a message can wake it back into.
	Last    string    `json:"last,omitempty"`
	Created time.Time `json:"created"`
	// Damaged says why the worker's file could not be read, and how to repair it; a damaged
	// worker is stopped and left as it is.
	Damaged string `json:"damaged,omitempty"`
	// Budget bounds what the worker spends across its nodes (see Budget): past its limit it is
	// given no work until the budget is raised. Spent is what it spent.
	Budget Budget          `json:"budget,omitzero"`
	Spent  providers.Usage `json:"spent,omitzero"`
}

// board is the run's work board: its nodes and workers, held in memory and kept in the squad's
// store, one document each ("node/<run>/<id>", "worker/<run>/<id>"). A change (see change) is
// made in memory at once and commits with the step that made it, or alone outside one (see
// Squad.commit); each has a version one greater than the last, so that the store keeps the
// newest of each document whatever order the steps commit in. The files agents and people read
// — a node's _spec.md, _refs.json and _status.md — are views of the store, written once a
// change commits (a node's status soon after, by the squad's writer: see viewsChanged), and
// rewritten when a run opens. A board is safe for concurrent use: changes
// are made one at a time (wmu), and a reader never waits for one (mu is held briefly).
type board struct {
	run  workspace.Run
	now  func() time.Time
	save func(ctx context.Context, ch store.Change, after func()) error // nil: a board only read
	keep func(ch *store.Change, paths ...string) error                  // adds files to a change (Squad.keep); nil: none

	wmu     sync.Mutex   // held by a change, from reading what it changes to making it in memory
	mu      sync.RWMutex // guards what follows; changed only by a holder of wmu
	nodes   map[string]*Node
	order   []*Node          // the nodes in creation order
	byRun   map[string]*Node // a node by an assignment it ran (Assignment, Applied)
	byKey   map[string]*Node // a node by the key of the call that created it
	workers map[string]*Worker
	seq     int      // for node ids
	state   runState // the run's own state (see runstate.go)
	// version is the version of the latest change of the board or of the run's state.
	version int64
	// recorded are the documents of the latest records committed (see record), by key.
	hmu      sync.Mutex
	recorded map[string]recordedDoc

	// The views the committed changes left to write (see flushViews): a node's id, and whether
	// its spec and refs are due as well as its status. viewsDue, when set, is told that some are.
	vmu      sync.Mutex
	due      map[string]bool
	viewsDue func()
	views    *workspace.Views // writes them
	// noted is what the store noted, when the board was read, of the views (see noteViews).
	noted viewsNote
}

// The store's keys of a run's documents.
func nodeKey(run, id string) string   { return "node/" + run + "/" + id }
func workerKey(run, id string) string { return "worker/" + run + "/" + id }
func viewsKey(run string) string      { return "views/" + run }

// A viewsNote says that the views of a run's nodes in the home Home said what its board did at
// Version (see noteViews). Home is the home's id, "" for a home whose store is its own.
type viewsNote struct {
	Version int64  `json:"version"`
	Home    string `json:"home"`
}

// The files a node's and a worker's records were kept in before the store held them.
const (
	nodeFile   = "_node.json"
	workerFile = "worker.json"
)

// openBoard reads the board of run from the store st, with the run's state. A run whose board
// the store does not have but whose folder does (kept in files before the store held boards)
// has it copied into the store first.
func openBoard(ctx context.Context, st store.Store, run workspace.Run, now func() time.Time) (*board, error) {
	b := &board{run: run, views: run.Views(), now: now, nodes: map[string]*Node{}, byRun: map[string]*Node{}, byKey: map[string]*Node{}, workers: map[string]*Worker{}, recorded: map[string]recordedDoc{}}
	// One read, so that the board is as one moment left it: a node waiting for the human's
	// answer with its worker, not the worker waiting beside the node as it was before.
	docs, err := st.Docs(ctx, runKey(run.ID()), nodeKey(run.ID(), ""), workerKey(run.ID(), ""), viewsKey(run.ID()))
	if err != nil {
		return nil, fmt.Errorf("nodes: run %s: %w", run.ID(), err)
	}
	stateDoc := store.Doc{Key: runKey(run.ID())}
	var nodes, workers []store.Doc
	for _, d := range docs {
		switch {
		case d.Key == stateDoc.Key:
			stateDoc = d
		case d.Key == viewsKey(run.ID()):
			_ = json.Unmarshal(d.Value, &b.noted) // a note that cannot be read notes nothing: the views are read back
		case strings.HasPrefix(d.Key, nodeKey(run.ID(), "")):
			nodes = append(nodes, d)
		case strings.HasPrefix(d.Key, workerKey(run.ID(), "")):
			workers = append(workers, d)
		} // another run's state, whose id starts with this one's
	}
	if b.state, b.version, err = decodeRunState(stateDoc, run); err != nil {
		return nil, err
	}
	if len(nodes) == 0 && len(workers) == 0 {
		if nodes, workers, err = importBoard(ctx, st, run, b.state, b.version); err != nil {
			return nil, err
		}
	}
	for _, d := range nodes {
		var n Node
		id := strings.TrimPrefix(d.Key, nodeKey(run.ID(), ""))
		if err := json.Unmarshal(d.Value, &n); err != nil || n.ID != id {
			n = Node{ID: id, Status: NodeFailed, Damaged: damage(err, id, "node", "its record in the store ("+d.Key+")")}
			n.Summary = n.Damaged
		}
		b.add(&n)
		b.seq = max(b.seq, nodeNumber(id))
		b.version = max(b.version, d.Version)
	}
	slices.SortFunc(b.order, func(x, y *Node) int { return compareIDs(x.ID, y.ID) })
	for _, d := range workers {
		var w Worker
		id := strings.TrimPrefix(d.Key, workerKey(run.ID(), ""))
		if err := json.Unmarshal(d.Value, &w); err != nil || w.ID != id {
			w = Worker{ID: id, Name: id, Status: WorkerStopped, Damaged: damage(err, id, "worker", "its record in the store ("+d.Key+")")}
		}
		b.workers[id] = &w
		b.version = max(b.version, d.Version)
	}
	return b, nil
}

// importBoard copies the board of run from its folder (_node.json, worker.json) into the store,
// with the run's state when that was read from its _run.json (version 0), and returns the
// board's documents; none when the folder has none.
func importBoard(ctx context.Context, st store.Store, run workspace.Run, state runState, version int64) (nodes, workers []store.Doc, err error) {
	var ch store.Change
	ids, err := run.NodeIDs()
	if err != nil {
		return nil, nil, err
	}
	for _, id := range ids {
		var n Node
		path := run.Node(id).Path(nodeFile)
		err := workspace.ReadJSON(path, &n)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil || n.ID != id {
			n = Node{ID: id, Status: NodeFailed, Damaged: damage(err, id, "node", path)}
			n.Summary = n.Damaged
		}
		if err := ch.PutVersion(nodeKey(run.ID(), id), 1, n); err != nil {
			return nil, nil, err
		}
	}
	nodes = ch.Docs
	ids, err = run.WorkerIDs()
	if err != nil {
		return nil, nil, err
	}
	for _, id := range ids {
		var w Worker
		path := filepath.Join(string(run.Worker(id)), workerFile)
		err := workspace.ReadJSON(path, &w)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil || w.ID != id {
			w = Worker{ID: id, Name: id, Status: WorkerStopped, Damaged: damage(err, id, "worker", path)}
		}
		if err := ch.PutVersion(workerKey(run.ID(), id), 1, w); err != nil {
			return nil, nil, err
		}
	}
	workers = ch.Docs[len(nodes):]
	if version == 0 && state.Goal != "" {
		if err := ch.PutVersion(runKey(run.ID()), 1, state); err != nil {
			return nil, nil, err
		}
	}
	if ch.Empty() {
		return nil, nil, nil
	}
	if err := st.Apply(ctx, ch); err != nil && !errors.Is(err, store.ErrReadOnly) { // read only: read from the files
		return nil, nil, fmt.Errorf("nodes: run %s: copy its board into the store: %w", run.ID(), err)
	}
	return nodes, workers, nil
}

// damage describes a node's or worker's record that cannot be read, and how to repair it.
func damage(err error, id, what, where string) string {
	if err == nil {
		err = fmt.Errorf("its id is not %q", id)
	}
	return fmt.Sprintf("%s %s is damaged: %v. Repair %s, then resume the run; the %s is left as it is.", what, id, err, where, what)
}

// nodeNumber returns n of a node id "nN", or 0.
func nodeNumber(id string) int {
	n, _ := workspace.Number(id, "n")
	return n
}

// compareIDs orders node ids by number, then as text.
func compareIDs(x, y string) int {
	if c := cmp.Compare(nodeNumber(x), nodeNumber(y)); c != 0 {
		return c
	}
	return strings.Compare(x, y)
}

// add puts a new node on the board, in memory; b.mu is held for writing (or the board is not
// shared yet).
func (b *board) add(n *Node) {
	b.nodes[n.ID] = n
	b.order = append(b.order, n)
	if n.Key != "" {
		b.byKey[n.Key] = n
	}
	b.index(n)
}

// index records the assignments n ran, for nodeOf; b.mu is held for writing.
func (b *board) index(n *Node) {
	for _, a := range []string{n.Assignment, n.Applied} {
		if a != "" {
			b.byRun[a] = n
		}
	}
}

// Snapshot is a copy of the board at one moment.
type Snapshot struct {
	Nodes   []Node   `json:"nodes"`
	Workers []Worker `json:"workers"`
	// Stage is the run's current stage (0 before the run began), and Stages every stage so
	// far, the current one last.
	Stage  int     `json:"stage"`
	Stages []Stage `json:"stages"`
}

// Stage is a stage of a run: the work between two of the coordinator's reconvenes.
type Stage struct {
	Number int `json:"number"`
	// Status is StageRunning for the current stage of a run not finished, else StageCompleted.
	Status string `json:"status"`
	// Nodes are the ids of the stage's nodes, in creation order.
	Nodes []string `json:"nodes"`
}

// The stages' statuses.
const (
	StageRunning   = "running"
	StageCompleted = "completed"
)

// Node returns the node with id, if there is one.
func (s Snapshot) Node(id string) (Node, bool) {
	for _, n := range s.Nodes {
		if n.ID == id {
			return n, true
		}
	}
	return Node{}, false
}

// Worker returns the worker with id or name, if there is one.
func (s Snapshot) Worker(idOrName string) (Worker, bool) {
	for _, w := range s.Workers {
		if w.ID == idOrName || strings.EqualFold(w.Name, idOrName) {
			return w, true
		}
	}
	return Worker{}, false
}

// Snapshot returns a copy of the board, nodes in creation order, workers in the order they
// were spawned. It copies every node: the squad's own work reads the board in place (read).
func (b *board) Snapshot() Snapshot {
	b.mu.RLock()
	defer b.mu.RUnlock()
	s := Snapshot{Nodes: make([]Node, len(b.order))}
	for i, n := range b.order {
		s.Nodes[i] = cloneNode(n)
	}
	s.Workers = b.sortedWorkers()
	s.Stage, s.Stages = b.state.Stage, stages(b.state, s.Nodes)
	return s
}

// stages lists the stages of a run in state st whose nodes are ns.
func stages(st runState, ns []Node) []Stage {
	out := make([]Stage, st.Stage)
	for i := range out {
		out[i] = Stage{Number: i + 1, Status: StageCompleted, Nodes: []string{}}
	}
	if st.Stage > 0 && !st.Finished {
		out[st.Stage-1].Status = StageRunning
	}
	for _, n := range ns {
		if n.Stage >= 1 && n.Stage <= st.Stage {
			out[n.Stage-1].Nodes = append(out[n.Stage-1].Nodes, n.ID)
		}
	}
	return out
}

// sortedWorkers returns copies of the workers in the order they were spawned; b.mu is held.
func (b *board) sortedWorkers() []Worker {
	ws := make([]Worker, 0, len(b.workers))
	for _, w := range b.workers {
		ws = append(ws, *w)
	}
	slices.SortFunc(ws, func(x, y Worker) int {
		if c := x.Created.Compare(y.Created); c != 0 {
			return c
		}
		return strings.Compare(x.ID, y.ID)
	})
	return ws
}

// reader reads the board in place, under its read lock (see board.read).
type reader struct{ b *board }

// read calls fn with a reader of the board, under the board's read lock: what fn reads is
// consistent, and costs no copy. fn must not keep or change what it reads, nor call the
// board's other methods.
func (b *board) read(fn func(rd reader)) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	fn(reader{b})
}

// nodes returns the nodes in creation order.
func (rd reader) nodes() []*Node { return rd.b.order }

// node returns node id, or nil.
func (rd reader) node(id string) *Node { return rd.b.nodes[id] }

// nodeOf returns the node that ran assignment id (its current or last applied one), or nil.
func (rd reader) nodeOf(id string) *Node {
	if n := rd.b.byRun[id]; n != nil && (n.Assignment == id || n.Applied == id) {
		return n
	}
	return nil
}

// worker returns the worker with id or name, or nil.
func (rd reader) worker(idOrName string) *Worker { return rd.b.findWorker(idOrName) }

// roster returns copies of the workers, in the order they were spawned.
func (rd reader) roster() []Worker { return rd.b.sortedWorkers() }

// node returns a copy of node id.
func (b *board) node(id string) (n Node, ok bool) {
	b.read(func(rd reader) {
		if p := rd.node(id); p != nil {
			n, ok = cloneNode(p), true
		}
	})
	return n, ok
}

// nodeOf returns a copy of the node that ran assignment id (see reader.nodeOf).
func (b *board) nodeOf(id string) (n Node, ok bool) {
	b.read(func(rd reader) {
		if p := rd.nodeOf(id); p != nil {
			n, ok = cloneNode(p), true
		}
	})
	return n, ok
}

// worker returns a copy of the worker with id or name.
func (b *board) worker(idOrName string) (w Worker, ok bool) {
	b.read(func(rd reader) {
		if p := rd.worker(idOrName); p != nil {
			w, ok = *p, true
		}
	})
	return w, ok
}

// unsettled returns copies of the nodes with an assignment that may need the squad's hand
// after a restart or an answer: running, assigned, or waiting (see run.resumption).
func (b *board) unsettled() []Node {
	var out []Node
	b.read(func(rd reader) {
		for _, n := range rd.nodes() {
			if n.Assignment != "" && (n.Status == NodeRunning || n.Status == NodeAssigned || n.Status == NodeWaiting) {
				out = append(out, cloneNode(n))
			}
		}
	})
	return out
}

// roster returns copies of the workers, in the order they were spawned.
func (b *board) roster() []Worker {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return b.sortedWorkers()
}

func cloneNode(n *Node) Node {
	c := *n
	c.Deps = slices.Clone(n.Deps)
	c.Children = slices.Clone(n.Children)
	c.Published = slices.Clone(n.Published)
	c.OutputSchema, c.Result = slices.Clone(n.OutputSchema), slices.Clone(n.Result)
	c.WaitingFor = slices.Clone(n.WaitingFor)
	if n.Refs != nil {
		c.Refs = make(map[string]string, len(n.Refs))
		for k, v := range n.Refs {
			c.Refs[k] = v
		}
	}
	return c
}

// nodeSpec is what a new work node needs.
type nodeSpec struct {
	Task   string
	Deps   []string
	Refs   map[string]string
	Parent string
	Worker string // a worker to assign it to (id or name), optional
	Stage  int
	By     string // who created it
	Key    string // an idempotency key: a second create with the same key returns the first node
	// OutputSchema is the JSON Schema of the node's result (none when nil).
	OutputSchema json.RawMessage
	Budget       Budget // none when zero
}

// adopt adds n to its parent's children in t, if it is not there yet.
func (t *tx) adopt(n *Node) error {
	if p := t.current(n.Parent); p == nil || slices.Contains(p.Children, n.ID) {
		return nil
	}
	_, err := t.node(n.Parent, func(p *Node) error {
		p.Children = append(p.Children, n.ID)
		return nil
	})
	return err
}

// create adds a node, with ctx's step (see change), and writes its folder; created is false
// when a node with the same key existed.
func (b *board) create(ctx context.Context, nn nodeSpec) (_ Node, created bool, err error) {
	if strings.TrimSpace(nn.Task) == "" {
		return Node{}, false, errors.New("the task is empty")
	}
	var n Node
	err = b.change(ctx, func(t *tx) error {
		n, created, err = t.create(nn)
		return err
	})
	if err != nil {
		return Node{}, false, err
	}
	return n, created, nil
}

// create is board.create, in t.
func (t *tx) create(nn nodeSpec) (_ Node, created bool, err error) {
	b := t.b
	if n := b.byKey[nn.Key]; nn.Key != "" && n != nil { // created before a crash, maybe not yet linked to its parent
		return cloneNode(n), false, t.adopt(n)
	}
	for _, d := range nn.Deps {
		if _, ok := b.nodes[d]; !ok {
			return Node{}, false, fmt.Errorf("dependency %q is not a node on the board (nodes: %s)", d, b.nodeList())
		}
	}
	if nn.Parent != "" {
		p, ok := b.nodes[nn.Parent]
		if !ok {
			return Node{}, false, fmt.Errorf("parent %q is not a node on the board", nn.Parent)
		}
		if p.Damaged != "" {
			return Node{}, false, errors.New(p.Damaged)
		}
	}
	for name, ref := range nn.Refs {
		if err := b.checkRef(ref); err != nil {
			return Node{}, false, fmt.Errorf("ref %q: %w", name, err)
		}
	}
	if nn.OutputSchema != nil {
		if err := providers.CheckSchema(nn.OutputSchema); err != nil {
			return Node{}, false, fmt.Errorf("output_schema: %w", err)
		}
	}
	if err := nn.Budget.Check(); err != nil {
		return Node{}, false, err
	}
	worker := ""
	if nn.Worker != "" {
		w := b.findWorker(nn.Worker)
		if w == nil {
			return Node{}, false, fmt.Errorf("worker %q does not exist (workers: %s)", nn.Worker, b.workerList())
		}
		worker = w.ID
	}
	now := b.now()
	node := &Node{
		ID: fmt.Sprintf("n%d", b.seq+1), Task: nn.Task, Deps: slices.Clone(nn.Deps), Refs: nn.Refs,
		Parent: nn.Parent, Stage: nn.Stage, Status: NodePending, Worker: worker,
		CreatedBy: nn.By, Key: nn.Key, Created: now, Updated: now, OutputSchema: nn.OutputSchema, Budget: nn.Budget,
	}
	// The node's folder, for its views; its scratch/ and published/ come with its first
	// assignment (see run.start), off the turn that may create a thousand nodes at once.
	dir := b.run.Node(node.ID)
	if err := os.Mkdir(string(dir), 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return Node{}, false, fmt.Errorf("nodes: node folder %s: %w", dir, err)
	}
	t.nodes = append(t.nodes, node)
	return cloneNode(node), true, t.adopt(node)
}

// checkRef checks that ref is a path to another node's published output.
func (b *board) checkRef(ref string) error {
	parts := strings.Split(strings.Trim(ref, "/"), "/")
	if len(parts) < 3 || parts[0] != "nodes" || parts[2] != "published" {
		return fmt.Errorf("%q is not a path of the form nodes/<node>/published[/file]", ref)
	}
	if _, ok := b.nodes[parts[1]]; !ok {
		return fmt.Errorf("%q names node %q, which is not on the board", ref, parts[1])
	}
	return nil
}

func specText(n *Node) string {
	var s strings.Builder
	fmt.Fprintf(&s, "# %s\n\n%s\n", n.ID, n.Task)
	if len(n.Deps) > 0 {
		fmt.Fprintf(&s, "\nDepends on: %s\n", strings.Join(n.Deps, ", "))
	}
	if n.Parent != "" {
		fmt.Fprintf(&s, "\nPart of: %s\n", n.Parent)
	}
	return s.String()
}

// update changes node id with fn, with ctx's step (see change).
func (b *board) update(ctx context.Context, id string, fn func(n *Node) error) (n Node, err error) {
	err = b.change(ctx, func(t *tx) error {
		n, err = t.node(id, fn)
		return err
	})
	return n, err
}

// tx is a change of several nodes and workers (see board.change).
type tx struct {
	b       *board
	nodes   []*Node // the new versions, and the new nodes
	workers []*Worker
	forgot  []string // the keys of other documents of the run the change deletes
	files   []string // the paths of files of the run the change keeps in the store
	events  []eventlog.Event
}

// emit logs e with the change: it commits with it, or not at all. Its key is the run's, as
// run.emit's.
func (t *tx) emit(e eventlog.Event) {
	e.Run = t.b.run.ID()
	if e.Key != "" {
		e.Key = e.Run + "/" + e.Key
	}
	t.events = append(t.events, e)
}

// forget deletes the store's document key with the change: a record of the run's that the
// change makes obsolete (an outcome it applied).
func (t *tx) forget(key string) { t.forgot = append(t.forgot, key) }

// keep keeps the files at paths in the store with the change, as they are when it is made (see
// keepFiles): files of the run's that its change wrote.
func (t *tx) keep(paths ...string) { t.files = append(t.files, paths...) }

// change runs fn, which changes nodes and workers through its tx, and makes the change: in
// memory, and in the store with ctx's step, or alone outside one (see Squad.commit). When fn
// fails, or the change cannot be committed (or attached to the step), nothing changes. Once the
// change has committed, the views of the nodes it changed (_spec.md, _refs.json, _status.md) are
// written, as the nodes are then.
func (b *board) change(ctx context.Context, fn func(t *tx) error) error {
	if b.save == nil {
		return errors.New("nodes: the board is only read")
	}
	b.wmu.Lock() // held to the commit: a change that fails is taken back before another is made
	defer b.wmu.Unlock()
	t := &tx{b: b}
	if err := fn(t); err != nil {
		return err
	}
	if len(t.nodes) == 0 && len(t.workers) == 0 && len(t.forgot) == 0 && len(t.files) == 0 && len(t.events) == 0 {
		return nil
	}
	ch := store.Change{Events: t.events}
	if b.keep != nil {
		if err := b.keep(&ch, t.files...); err != nil {
			return err
		}
	}
	b.version++
	views := map[string]bool{} // the nodes whose views change: created (true), or of a new status text
	for _, n := range t.nodes {
		if err := ch.PutVersion(nodeKey(b.run.ID(), n.ID), b.version, n); err != nil {
			return err
		}
		if old := b.nodes[n.ID]; old == nil || statusText(old) != statusText(n) {
			views[n.ID] = old == nil
		}
	}
	for _, w := range t.workers {
		if err := ch.PutVersion(workerKey(b.run.ID(), w.ID), b.version, w); err != nil {
			return err
		}
	}
	for _, k := range t.forgot {
		ch.Delete(k)
	}
	recorded, err := b.record(&ch)
	if err != nil {
		return err
	}
	undo := b.apply(t)
	if err := b.save(ctx, ch, func() { recorded(); b.viewsChanged(views) }); err != nil {
		undo()
		return err
	}
	return nil
}

// at returns the board's version: that of its latest change, or of the run's state's.
func (b *board) at() int64 {
	b.wmu.Lock()
	defer b.wmu.Unlock()
	return b.version
}

// apply makes t's change in memory and returns what takes it back; b.wmu is held.
func (b *board) apply(t *tx) (undo func()) {
	b.mu.Lock()
	defer b.mu.Unlock()
	seq := b.seq
	oldNodes, oldWorkers := map[string]Node{}, map[string]Worker{}
	for _, n := range t.nodes {
		if old := b.nodes[n.ID]; old != nil {
			oldNodes[n.ID] = cloneNode(old)
			*old = *n
			b.index(old)
		} else {
			b.add(n)
			b.seq = max(b.seq, nodeNumber(n.ID))
		}
	}
	for _, w := range t.workers {
		if old := b.workers[w.ID]; old != nil {
			oldWorkers[w.ID] = *old
			*old = *w
		} else {
			b.workers[w.ID] = w
		}
	}
	return func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		for _, n := range t.nodes {
			old, ok := oldNodes[n.ID]
			if ok {
				*b.nodes[n.ID] = old
				continue
			}
			delete(b.nodes, n.ID)
			b.order = slices.DeleteFunc(b.order, func(x *Node) bool { return x.ID == n.ID })
			if n.Key != "" {
				delete(b.byKey, n.Key)
			}
		}
		for id, n := range b.byRun { // a restored node's entries stay: nodeOf checks them
			if b.nodes[n.ID] != n {
				delete(b.byRun, id)
			}
		}
		for _, w := range t.workers {
			if old, ok := oldWorkers[w.ID]; ok {
				*b.workers[w.ID] = old
			} else {
				delete(b.workers, w.ID)
			}
		}
		b.seq = seq
	}
}

// viewsChanged has the views of the nodes in ids written: those of the nodes it says were
// created (their spec, refs and status) now, for a worker to read as soon as it starts; the status
// of the others by viewsDue's caller, soon, or now when there is none. A change of a node that
// leaves its status's text as it was (its attempts, its usage, its times) writes nothing.
func (b *board) viewsChanged(ids map[string]bool) {
	if len(ids) == 0 {
		return
	}
	var created []string
	b.vmu.Lock()
	if b.due == nil {
		b.due = map[string]bool{}
	}
	for id, c := range ids {
		b.due[id] = b.due[id] || c
		if c {
			created = append(created, id)
		}
	}
	b.vmu.Unlock()
	switch {
	case b.viewsDue == nil:
		b.flushViews()
	case len(created) > 0:
		b.flushViews(created...)
	}
	if b.viewsDue != nil && len(created) < len(ids) {
		b.viewsDue()
	}
}

// flushViews writes the views that committed changes left to write — of the nodes in ids, or of
// all when there are none — as the board has them now: a node's status that changed three times
// meanwhile is written once. One flush writes at a time, so a view never goes back to an older
// text. A view that cannot be written stays due: the next flush tries it again, and the run's
// views are not noted as written (see noteViews) until it is.
func (b *board) flushViews(ids ...string) {
	b.vmu.Lock()
	defer b.vmu.Unlock()
	if len(b.due) == 0 {
		return
	}
	todo := b.due
	if len(ids) > 0 {
		todo = map[string]bool{}
		for _, id := range ids {
			if created, ok := b.due[id]; ok {
				todo[id] = created
			}
		}
	}
	vs := map[string][]view{}
	b.read(func(rd reader) {
		for id, created := range todo {
			if n := rd.node(id); n != nil {
				vs[id] = nodeViews(b.run, created, n)
			}
			delete(b.due, id)
		}
	})
	for id, views := range vs {
		for _, v := range views {
			if err := b.views.Write(v.path, []byte(v.text)); err != nil {
				b.due[id] = b.due[id] || todo[id] // tried again at the next flush
			}
		}
	}
}

// view is a file written from the store for agents and people to read: a node's _spec.md,
// _refs.json and _status.md. Nothing reads it back as the board.
type view struct{ path, text string }

// nodeViews returns the views of node n: its status, and its spec and refs when all is set.
func nodeViews(run workspace.Run, all bool, n *Node) []view {
	dir := run.Node(n.ID)
	var vs []view
	if all {
		vs = append(vs, view{workspace.Spec(dir), specText(n)})
		if len(n.Refs) > 0 { // a file less for each node without inputs
			refs, _ := json.MarshalIndent(n.Refs, "", "  ") // a map of strings always marshals
			vs = append(vs, view{workspace.Refs(dir), string(refs) + "\n"})
		}
	}
	return append(vs, view{workspace.Status(dir), statusText(n)})
}

// current returns node id as t has it: its new version, or the board's.
func (t *tx) current(id string) *Node {
	for _, n := range t.nodes {
		if n.ID == id {
			return n
		}
	}
	return t.b.nodes[id]
}

// node changes node id with fn, in t, and returns its new version.
func (t *tx) node(id string, fn func(n *Node) error) (Node, error) {
	n := t.current(id)
	if n == nil {
		return Node{}, fmt.Errorf("node %q is not on the board (nodes: %s)", id, t.b.nodeList())
	}
	if n.Damaged != "" {
		return Node{}, errors.New(n.Damaged)
	}
	c := cloneNode(n)
	if err := fn(&c); err != nil {
		return Node{}, err
	}
	c.Updated = t.b.now()
	t.nodes = slices.DeleteFunc(t.nodes, func(x *Node) bool { return x.ID == id })
	t.nodes = append(t.nodes, &c)
	return cloneNode(&c), nil
}

// worker changes worker id (or name) with fn, in t, and returns its new version.
func (t *tx) worker(idOrName string, fn func(w *Worker)) (Worker, error) {
	w := t.b.findWorker(idOrName)
	if w == nil {
		return Worker{}, fmt.Errorf("worker %q does not exist (workers: %s)", idOrName, t.b.workerList())
	}
	if w.Damaged != "" {
		return Worker{}, errors.New(w.Damaged)
	}
	c := *w
	if i := slices.IndexFunc(t.workers, func(x *Worker) bool { return x.ID == w.ID }); i >= 0 {
		c = *t.workers[i]
		t.workers = slices.Delete(t.workers, i, i+1)
	}
	fn(&c)
	t.workers = append(t.workers, &c)
	return c, nil
}

// noteViews notes in the store that the views of the board's nodes in home say what the board
// does now, if none is left to write; it is for a run that has ended, no step of it in flight. A
// run opened again in the same home with the board at the same version need not read its views
// back (see repairViews); any change after the note gives the board a newer version.
func (b *board) noteViews(ctx context.Context, home string) error {
	if b.save == nil {
		return nil
	}
	version := b.at() // before the views due are looked at: a change after it is not noted
	b.vmu.Lock()
	due := len(b.due)
	b.vmu.Unlock()
	if due > 0 {
		return nil
	}
	var ch store.Change
	if err := ch.Put(viewsKey(b.run.ID()), viewsNote{Version: version, Home: home}); err != nil {
		return err
	}
	return b.save(ctx, ch, nil)
}

// repairViews rewrites the views of the nodes that do not say what their records in the store
// do: a crash may come between a change's commit and its views. It is for a run being opened in
// home, before its board changes. Views noted as written in home at the board's version (see
// noteViews) are not read back: a run paused and resumed starts without reading a file a node.
func (b *board) repairViews(home string) error {
	if b.noted.Version > 0 && b.noted.Home == home && b.noted.Version == b.version {
		return nil
	}
	var stale []view
	b.read(func(rd reader) {
		for _, n := range rd.nodes() {
			if n.Damaged != "" {
				continue
			}
			for _, v := range nodeViews(b.run, true, n) {
				if got, err := osfile.ReadFile(v.path); err != nil || string(got) != v.text {
					stale = append(stale, v)
				}
			}
		}
	})
	var err error
	for _, v := range stale {
		if merr := os.MkdirAll(filepath.Dir(v.path), 0o755); merr != nil {
			err = errors.Join(err, merr)
			continue
		}
		err = errors.Join(err, b.views.Write(v.path, []byte(v.text)))
	}
	return err
}

// statusText is the content of a node's _status.md.
func statusText(n *Node) string {
	status := strings.ToUpper(string(n.Status))
	if n.Worker != "" {
		status += " (worker " + n.Worker + ")"
	}
	if n.Summary != "" {
		status += "\n\n" + n.Summary
	}
	return status + "\n"
}

// workerSpec is what a new worker needs.
type workerSpec struct {
	Name, Role, Kind, Model string
	Command                 []string
	Single, Memory          bool
	Identity                string
	MCP                     []string
	Budget                  Budget
	Tools                   []string
}

// spawn adds a worker, with ctx's step (see change), and makes its folder; a worker of the
// same name is returned as it is.
func (b *board) spawn(ctx context.Context, nw workerSpec) (w Worker, created bool, err error) {
	name := strings.TrimSpace(nw.Name)
	if name == "" {
		return Worker{}, false, errors.New("the worker needs a name")
	}
	switch nw.Kind {
	case "":
		nw.Kind = Harnessed
	case Harnessed, ClaudeCode:
	case Autonomous:
		if len(nw.Command) == 0 {
			return Worker{}, false, errors.New("an autonomous worker needs a command")
		}
	default:
		return Worker{}, false, fmt.Errorf("unknown worker kind %q (kinds: %s, %s, %s)", nw.Kind, Harnessed, ClaudeCode, Autonomous)
	}
	id := strings.ToLower(strings.Join(strings.Fields(name), "_"))
	if err := workspace.ValidID(id); err != nil {
		return Worker{}, false, fmt.Errorf("worker name %q: %w", name, err)
	}
	if err := nw.Budget.Check(); err != nil {
		return Worker{}, false, err
	}
	err = b.change(ctx, func(t *tx) error {
		w, created, err = t.spawn(id, name, nw)
		return err
	})
	if err != nil {
		return Worker{}, false, err
	}
	return w, created, nil
}

// spawn is board.spawn, in t, for the worker id named name. The worker's files (identity,
// memory, notebook, history) are the worker's own: written here, never read back as the board.
func (t *tx) spawn(id, name string, nw workerSpec) (_ Worker, created bool, err error) {
	b := t.b
	if old := b.findWorker(name); old != nil {
		return *old, false, nil
	}
	if name == "coordinator" || name == "human" || name == "*" {
		return Worker{}, false, fmt.Errorf("%q is reserved", name)
	}
	wk := &Worker{ID: id, Name: name, Role: nw.Role, Kind: nw.Kind, Model: nw.Model, Command: nw.Command,
		Single: nw.Single, Memory: nw.Memory, MCP: nw.MCP, Tools: nw.Tools, Status: WorkerIdle, Created: b.now(), Budget: nw.Budget}
	dir := b.run.Worker(id)
	if err := dir.Create(); err != nil {
		return Worker{}, false, err
	}
	identity := nw.Identity
	if identity == "" {
		identity = fmt.Sprintf("You are %s", name)
		if nw.Role != "" {
			identity += ", the team's " + nw.Role
		}
		identity += "."
	}
	for _, f := range []struct{ path, content string }{
		{dir.Identity(), identity + "\n"}, {dir.Memory(), ""}, {dir.Notebook(), ""}, {dir.History(), ""},
	} {
		if _, err := os.Stat(f.path); err == nil {
			continue // made by a spawn a crash cut short, perhaps written to since
		}
		if err := workspace.WriteView(f.path, []byte(f.content)); err != nil {
			return Worker{}, false, err
		}
	}
	t.keep(dir.Identity())
	t.workers = append(t.workers, wk)
	return *wk, true, nil
}

// updateWorker changes worker id with fn, with ctx's step (see change).
func (b *board) updateWorker(ctx context.Context, id string, fn func(w *Worker)) (w Worker, err error) {
	err = b.change(ctx, func(t *tx) error {
		w, err = t.worker(id, fn)
		return err
	})
	return w, err
}

// findWorker finds a worker by id or name (case-insensitive); b.wmu or b.mu is held.
func (b *board) findWorker(idOrName string) *Worker {
	if w, ok := b.workers[idOrName]; ok {
		return w
	}
	for _, w := range b.workers {
		if strings.EqualFold(w.Name, idOrName) || strings.EqualFold(w.ID, idOrName) {
			return w
		}
	}
	return nil
}

func (b *board) nodeList() string {
	if len(b.nodes) == 0 {
		return "none yet"
	}
	ids := make([]string, 0, len(b.nodes))
	for id := range b.nodes {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return strings.Join(ids, ", ")
}

func (b *board) workerList() string {
	if len(b.workers) == 0 {
		return "none yet"
	}
	var names []string
	for _, w := range b.workers {
		names = append(names, w.Name)
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

// historyEntry is one line of a worker's history.jsonl.
type historyEntry struct {
	Node    string         `json:"node"`
	Task    string         `json:"task"`
	Status  runtime.Status `json:"status"`
	Summary string         `json:"summary,omitempty"`
	Time    time.Time      `json:"time"`
	// Outcome names the outcome the entry records, so it is recorded once.
	Outcome string `json:"outcome,omitempty"`
}
