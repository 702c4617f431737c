package nodes

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agiraph/agiraph/internal/fsync"
	"github.com/agiraph/agiraph/internal/osfile"
	"github.com/agiraph/agiraph/runtime"
	"github.com/agiraph/agiraph/runtime/workspace"
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
)

// done reports whether a node with status s satisfies the nodes that depend on it.
func (s NodeStatus) done() bool { return s == NodeCompleted || s == NodeCheckpointed }

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
	// Question is what its worker asked the human, while waiting; Answer the human's answer,
	// until the worker has it. Asked names the outcome that asked, which keys the answer's
	// record.
	Question string `json:"question,omitempty"`
	Answer   string `json:"answer,omitempty"`
	Asked    string `json:"asked,omitempty"`
	// WaitingFor lists the sub-nodes the node waits for, when it checkpointed to wait for them.
	WaitingFor []string  `json:"waiting_for,omitempty"`
	CreatedBy  string    `json:"created_by"`
	Key        string    `json:"key,omitempty"` // the tool call that created it, so a repeated call does not create it twice
	Created    time.Time `json:"created"`
	Updated    time.Time `json:"updated"`
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
	MCP    []string     `json:"mcp_servers,omitempty"`
	Status WorkerStatus `json:"status"`
	// Node is the node it works on, while busy or waiting.
	Node string `json:"node,omitempty"`
	// Last is its latest assignment, which a message can wake it back into.
	Last    string    `json:"last,omitempty"`
	Created time.Time `json:"created"`
	// Damaged says why the worker's file could not be read, and how to repair it; a damaged
	// worker is stopped and left as it is.
	Damaged string `json:"damaged,omitempty"`
}

// board is the run's work board: its nodes and workers. Every change is written through to the
// run's folder (nodes/{id}/_node.json with _spec.md, _refs.json and _status.md beside it;
// workers/{id}/worker.json), so the folder is the board's truth and a restarted process reads it
// back. A board is safe for concurrent use. Changes are made one at a time (wmu): each writes its
// files beside their paths and is made in memory (under mu, briefly), so a reader never waits
// for a write; then, the lock released, its files are synced — with those of the changes made
// meanwhile, by one sync — and put in place in the order the changes were made (see pending).
// A change returns once it is on disk (its renames made durable by the next sync; see
// placeAll); a deferred one (see deferred) later.
type board struct {
	run workspace.Run
	now func() time.Time

	// The changes being placed: tickets are handed out in the order of wmu, and placed in it.
	pmu     sync.Mutex
	placing sync.Cond
	tickets uint64     // handed out
	placed  uint64     // placed, or given up
	broken  error      // a change that could not be placed: the board on disk is behind, for good
	later   []*pending // deferred changes not yet being placed, in ticket order (see deferred)

	wmu     sync.Mutex   // held by a change, from reading what it changes to its staged write
	mu      sync.RWMutex // guards what follows; changed only by a holder of wmu
	nodes   map[string]*Node
	order   []*Node          // the nodes in creation order
	byRun   map[string]*Node // a node by an assignment it ran (Assignment, Applied)
	byKey   map[string]*Node // a node by the key of the call that created it
	workers map[string]*Worker
	seq     int      // for node ids
	state   runState // the run's own state (see runstate.go)
}

const (
	nodeFile   = "_node.json"
	workerFile = "worker.json"
)

// openBoard reads the board of run from its folder.
func openBoard(run workspace.Run, now func() time.Time) (*board, error) {
	b := &board{run: run, now: now, nodes: map[string]*Node{}, byRun: map[string]*Node{}, byKey: map[string]*Node{}, workers: map[string]*Worker{}}
	b.placing.L = &b.pmu
	ids, err := run.NodeIDs()
	if err != nil {
		return nil, err
	}
	for _, id := range ids {
		var n Node
		err := workspace.ReadJSON(run.Node(id).Path(nodeFile), &n)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil || n.ID != id {
			n = Node{ID: id, Status: NodeFailed, Damaged: damage(err, id, "node", run.Node(id).Path(nodeFile))}
			n.Summary = n.Damaged
		}
		b.add(&n)
		b.seq = max(b.seq, nodeNumber(id))
	}
	slices.SortFunc(b.order, func(x, y *Node) int { return compareIDs(x.ID, y.ID) })
	ids, err = run.WorkerIDs()
	if err != nil {
		return nil, err
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
		b.workers[id] = &w
	}
	st, err := readRunState(run)
	if err != nil {
		return nil, err
	}
	b.state = st
	return b, nil
}

// damage describes a node's or worker's file that cannot be read, and how to repair it.
func damage(err error, id, what, path string) string {
	if err == nil {
		err = fmt.Errorf("its id is not %q", id)
	}
	return fmt.Sprintf("%s %s is damaged: %v. Repair %s (or delete the %s's folder to drop it), then resume the run.", what, id, err, path, what)
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
}

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
	return s
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

// set makes a change in memory whose files are written (see pending); b.wmu is held.
func (b *board) set(change func()) {
	b.mu.Lock()
	defer b.mu.Unlock()
	change()
}

// create adds a node, writes its folder and returns it; created is false when a node with the
// same key existed.
func (b *board) create(nn nodeSpec) (Node, bool, error) { return b.createBy(nn, b.locked) }

// createDeferred is create, returning before the node is on disk (see deferred).
func (b *board) createDeferred(nn nodeSpec) (Node, bool, error) {
	return b.createBy(nn, b.deferred)
}

// createBy is create, with the change made by change: locked, or deferred.
func (b *board) createBy(nn nodeSpec, change func(func() (*pending, error)) error) (_ Node, created bool, err error) {
	if strings.TrimSpace(nn.Task) == "" {
		return Node{}, false, errors.New("the task is empty")
	}
	var n Node
	err = change(func() (p *pending, err error) {
		n, created, p, err = b.createLocked(nn)
		return p, err
	})
	if err != nil {
		return Node{}, false, err
	}
	return n, created, nil
}

// createLocked is create; b.wmu is held. The node is on disk once the change returned is placed.
func (b *board) createLocked(nn nodeSpec) (_ Node, created bool, _ *pending, err error) {
	if n := b.byKey[nn.Key]; nn.Key != "" && n != nil { // created before a crash, maybe not yet linked to its parent
		p, err := b.commit(func(t *tx) error { return t.adopt(n) })
		return cloneNode(n), false, p, err
	}
	for _, d := range nn.Deps {
		if _, ok := b.nodes[d]; !ok {
			return Node{}, false, nil, fmt.Errorf("dependency %q is not a node on the board (nodes: %s)", d, b.nodeList())
		}
	}
	if nn.Parent != "" {
		p, ok := b.nodes[nn.Parent]
		if !ok {
			return Node{}, false, nil, fmt.Errorf("parent %q is not a node on the board", nn.Parent)
		}
		if p.Damaged != "" {
			return Node{}, false, nil, errors.New(p.Damaged)
		}
	}
	for name, ref := range nn.Refs {
		if err := b.checkRef(ref); err != nil {
			return Node{}, false, nil, fmt.Errorf("ref %q: %w", name, err)
		}
	}
	worker := ""
	if nn.Worker != "" {
		w := b.findWorker(nn.Worker)
		if w == nil {
			return Node{}, false, nil, fmt.Errorf("worker %q does not exist (workers: %s)", nn.Worker, b.workerList())
		}
		worker = w.ID
	}
	b.seq++
	now := b.now()
	node := &Node{
		ID: fmt.Sprintf("n%d", b.seq), Task: nn.Task, Deps: slices.Clone(nn.Deps), Refs: nn.Refs,
		Parent: nn.Parent, Stage: nn.Stage, Status: NodePending, Worker: worker,
		CreatedBy: nn.By, Key: nn.Key, Created: now, Updated: now,
	}
	dir := b.run.Node(node.ID)
	if err := dir.Create(); err != nil {
		return Node{}, false, nil, err
	}
	p, err := b.commit(func(t *tx) error {
		if err := t.batch.Add(workspace.Spec(dir), []byte(specText(node))); err != nil {
			return err
		}
		if len(node.Refs) > 0 { // a file less for each node without inputs
			if err := t.batch.AddJSON(workspace.Refs(dir), node.Refs); err != nil {
				return err
			}
		}
		t.nodes = append(t.nodes, node)
		return t.adopt(node)
	})
	if err != nil {
		return Node{}, false, nil, err
	}
	return cloneNode(node), true, p, nil
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

// update changes node id with fn and writes it back, with _status.md.
func (b *board) update(id string, fn func(n *Node) error) (n Node, err error) {
	err = b.change(func(t *tx) error {
		n, err = t.node(id, fn)
		return err
	})
	return n, err
}

// tx is a change of several nodes and workers, written in one batch (see board.change).
type tx struct {
	b       *board
	batch   workspace.Batch
	nodes   []*Node // the new versions, and the new nodes
	workers []*Worker
}

// change runs fn, which changes nodes and workers through its tx, then writes them all in one
// batch (workspace.Batch), makes the changes in memory, and returns once they are on disk. When
// fn or staging the files fails, nothing changes; when the files cannot be placed the board is
// broken (see pending.place).
func (b *board) change(fn func(t *tx) error) error {
	return b.locked(func() (*pending, error) { return b.commit(fn) })
}

// changeAlong is change, with along run while the change is placed, so that both wait for one
// sync: for a write that need not follow the change on disk — one that nothing outside the run
// acts on before the change is placed, keyed so that when a crash kept it and lost the change,
// the change made again does not make it twice.
func (b *board) changeAlong(fn func(t *tx) error, along func() error) error {
	b.wmu.Lock()
	p, err := b.commit(fn)
	b.wmu.Unlock()
	if err != nil {
		return err
	}
	placed := make(chan error, 1)
	go func() { placed <- p.place() }()
	err = along()
	return errors.Join(<-placed, err)
}

// locked runs fn, which makes a change, under b.wmu, and returns once the change is placed.
func (b *board) locked(fn func() (*pending, error)) error {
	b.wmu.Lock()
	p, err := fn()
	b.wmu.Unlock()
	if err != nil {
		return err
	}
	return p.place()
}

// maxDeferred is how many deferred changes may wait to be placed: the next one places them.
const maxDeferred = 256

// deferred runs fn, which makes a change, under b.wmu, and returns at once: the change is made
// in memory, its files are written beside their paths, and it is put in place — with the other
// deferred changes, by one sync of each kind — by flush, by the next change that is placed, or
// once maxDeferred wait. It is for a caller that makes many changes in a row and orders its own
// record of them after a flush: the coordinator, whose tool calls create nodes and whose
// conversation is saved after a flush (see flushFirst). A crash may lose a deferred change.
func (b *board) deferred(fn func() (*pending, error)) error {
	b.wmu.Lock()
	p, err := fn()
	full := false
	if err == nil && p != nil {
		b.pmu.Lock()
		b.later = append(b.later, p)
		full, err = len(b.later) >= maxDeferred, b.broken
		b.pmu.Unlock()
	}
	b.wmu.Unlock()
	if err != nil || !full {
		return err
	}
	return b.flush()
}

// flush puts the deferred changes in place, and returns once they, and every change made
// before the call, are on disk — also those another change is placing (see pending.place).
func (b *board) flush() error {
	_, err := b.flushAll()
	return err
}

// flushAll is flush; it reports whether any change made before the call was not yet placed.
func (b *board) flushAll() (waited bool, err error) {
	b.pmu.Lock()
	upto, waited := b.tickets, b.placed < b.tickets
	b.pmu.Unlock()
	err = b.placeAll(b.takeLater(math.MaxUint64))
	b.pmu.Lock()
	defer b.pmu.Unlock()
	for b.placed < upto {
		b.placing.Wait()
	}
	if err == nil {
		err = b.broken
	}
	return waited, err
}

// flushDurable is flush, and makes the renames of what it placed durable before it returns
// rather than with the next sync (see placeAll): for a caller whose record of the changes is
// kept where a crash of the system does not order it after them (a saver on another file
// system or server: the coordinator's conversation, which says which nodes it created).
func (b *board) flushDurable() error {
	waited, err := b.flushAll()
	if waited {
		b.syncPlaced()
	}
	return err
}

// syncPlaced makes the renames of the changes placed so far durable now, rather than with the
// next sync (see placeAll): for a run that returns.
func (b *board) syncPlaced() { fsync.Dirs([]string{string(b.run)}) }

// takeLater takes the deferred changes with a ticket before t, to be placed by its caller.
func (b *board) takeLater(t uint64) []*pending {
	b.pmu.Lock()
	defer b.pmu.Unlock()
	i := 0
	for i < len(b.later) && b.later[i].ticket < t {
		i++
	}
	ps := slices.Clone(b.later[:i])
	b.later = slices.Delete(b.later, 0, i)
	return ps
}

// placeAll puts changes in place, given in ticket order: their files synced together (the syncs
// of concurrent writers are shared), placed in ticket order once the changes before them are;
// the renames are made durable by the next sync of the file system (the next change's, or
// another writer's; at the latest a second later), not waited for. A crash of the process loses
// no change placed; a crash of the system keeps the changes up to some point, in order, each
// file whole (its content was synced before it was put in place).
func (b *board) placeAll(ps []*pending) error {
	if len(ps) == 0 {
		return nil
	}
	synced := make([]error, len(ps))
	var wg sync.WaitGroup
	for i, p := range ps {
		wg.Go(func() { synced[i] = p.batch.Sync() })
	}
	wg.Wait()
	var err error
	for i, p := range ps {
		err = errors.Join(err, p.put(synced[i]))
	}
	for _, p := range ps {
		p.batch.SyncPlacedSoon()
	}
	return err
}

// commit runs fn, stages the files of its change and makes it in memory; b.wmu is held. The
// change is on disk once the pending change returned is placed, which its caller does after it
// released b.wmu.
func (b *board) commit(fn func(t *tx) error) (*pending, error) {
	if err := b.failed(); err != nil {
		return nil, err
	}
	t := &tx{b: b}
	if err := fn(t); err != nil {
		t.batch.Discard()
		return nil, err
	}
	for _, n := range t.nodes {
		if err := t.batch.AddJSON(b.run.Node(n.ID).Path(nodeFile), n); err != nil {
			t.batch.Discard()
			return nil, err
		}
	}
	for _, w := range t.workers {
		if err := t.batch.AddJSON(filepath.Join(string(b.run.Worker(w.ID)), workerFile), w); err != nil {
			t.batch.Discard()
			return nil, err
		}
	}
	p := b.pend(&t.batch)
	for _, n := range t.nodes { // _status.md, a view of _node.json
		if old := b.nodes[n.ID]; old == nil || statusText(old) != statusText(n) {
			p.views = append(p.views, view{workspace.Status(b.run.Node(n.ID)), statusText(n)})
		}
	}
	b.set(func() {
		for _, n := range t.nodes {
			if old := b.nodes[n.ID]; old != nil {
				*old = *n
				b.index(old)
			} else {
				b.add(n)
			}
		}
		for _, w := range t.workers {
			if old := b.workers[w.ID]; old != nil {
				*old = *w
			} else {
				b.workers[w.ID] = w
			}
		}
	})
	return p, nil
}

// pending is a change made in memory whose files are written beside their paths: place puts
// them in place.
type pending struct {
	b      *board
	batch  *workspace.Batch
	views  []view // written once the files are in place
	ticket uint64 // the change's place in the order of changes
}

// view is a file derived from others (a node's _status.md), written without a sync.
type view struct{ path, text string }

// pend takes a ticket for the change whose files batch holds; b.wmu is held.
func (b *board) pend(batch *workspace.Batch) *pending {
	b.pmu.Lock()
	defer b.pmu.Unlock()
	p := &pending{b: b, batch: batch, ticket: b.tickets}
	b.tickets++
	return p
}

// place syncs the change's files — with those of the deferred changes made before it, which go
// first, and of the changes pending beside it (workspace groups the syncs) — puts them in place
// once the changes before it are, and writes its views (see placeAll). A change that cannot
// be placed leaves the board broken: its change, and those made in memory after it, cannot be
// placed either, so every change from then on fails (the run stops; resumed, it reads the board
// from disk). A nil change is placed.
func (p *pending) place() error {
	if p == nil {
		return nil
	}
	return p.b.placeAll(append(p.b.takeLater(p.ticket), p))
}

// put puts the change's files, synced with the error synced, in place once the changes before
// it are, and writes its views; a change that cannot be placed breaks the board.
func (p *pending) put(synced error) error {
	b, err := p.b, synced
	b.pmu.Lock()
	for b.placed != p.ticket {
		b.placing.Wait()
	}
	switch {
	case b.broken != nil:
		p.batch.Discard()
		err = b.broken
	case err == nil:
		err = p.batch.Place()
	}
	var views error
	if err == nil {
		for _, v := range p.views {
			views = errors.Join(views, workspace.WriteView(v.path, []byte(v.text)))
		}
	} else if b.broken == nil {
		b.broken = fmt.Errorf("nodes: the board could not be written, and is behind on disk (resume the run to go on from it): %w", err)
	}
	b.placed++
	b.placing.Broadcast()
	b.pmu.Unlock()
	return errors.Join(err, views)
}

// failed returns the error that broke the board, if one did.
func (b *board) failed() error {
	b.pmu.Lock()
	defer b.pmu.Unlock()
	return b.broken
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

// repairViews rewrites the nodes' _status.md that do not say what their records do: a crash of
// the system may leave a view behind its record, or damaged (see workspace.WriteView). It is
// for a run being opened, before its board changes.
func (b *board) repairViews() error {
	var stale []view
	b.read(func(rd reader) {
		for _, n := range rd.nodes() {
			if n.Damaged != "" {
				continue
			}
			v := view{workspace.Status(b.run.Node(n.ID)), statusText(n)}
			if got, err := osfile.ReadFile(v.path); err != nil || string(got) != v.text {
				stale = append(stale, v)
			}
		}
	})
	var err error
	for _, v := range stale {
		err = errors.Join(err, workspace.WriteView(v.path, []byte(v.text)))
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
}

// spawn adds a worker and makes its folder; a worker of the same name is returned as it is.
func (b *board) spawn(nw workerSpec) (w Worker, created bool, err error) {
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
	err = b.locked(func() (p *pending, err error) {
		w, created, p, err = b.spawnLocked(id, name, nw)
		return p, err
	})
	if err != nil {
		return Worker{}, false, err
	}
	return w, created, nil
}

// spawnLocked is spawn, for the worker id named name; b.wmu is held. The worker is on disk once
// the change returned is placed (none when it existed).
func (b *board) spawnLocked(id, name string, nw workerSpec) (_ Worker, created bool, _ *pending, err error) {
	if old := b.findWorker(name); old != nil {
		return *old, false, nil, nil
	}
	if name == "coordinator" || name == "human" || name == "*" {
		return Worker{}, false, nil, fmt.Errorf("%q is reserved", name)
	}
	wk := &Worker{ID: id, Name: name, Role: nw.Role, Kind: nw.Kind, Model: nw.Model, Command: nw.Command,
		Single: nw.Single, Memory: nw.Memory, MCP: nw.MCP, Status: WorkerIdle, Created: b.now()}
	dir := b.run.Worker(id)
	if err := dir.Create(); err != nil {
		return Worker{}, false, nil, err
	}
	identity := nw.Identity
	if identity == "" {
		identity = fmt.Sprintf("You are %s", name)
		if nw.Role != "" {
			identity += ", the team's " + nw.Role
		}
		identity += "."
	}
	p, err := b.commit(func(t *tx) error {
		for _, f := range []struct{ path, content string }{
			{dir.Identity(), identity + "\n"}, {dir.Memory(), ""}, {dir.Notebook(), ""}, {dir.History(), ""},
		} {
			if err := t.batch.Add(f.path, []byte(f.content)); err != nil {
				return err
			}
		}
		t.workers = append(t.workers, wk)
		return nil
	})
	if err != nil {
		return Worker{}, false, nil, err
	}
	return *wk, true, p, nil
}

// updateWorker changes worker id with fn and writes it back.
func (b *board) updateWorker(id string, fn func(w *Worker)) (w Worker, err error) {
	err = b.change(func(t *tx) error {
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
