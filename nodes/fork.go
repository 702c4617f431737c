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
	"strconv"
	"strings"
	"time"

	"github.com/agiraph/agiraph/checkpoint"
	"github.com/agiraph/agiraph/graph"
	"github.com/agiraph/agiraph/nodes/bus"
	"github.com/agiraph/agiraph/nodes/store"
	"github.com/agiraph/agiraph/nodes/workspace"
	"github.com/agiraph/agiraph/providers"
)

// ForkOption changes what a forked run starts from (see Squad.Fork).
type ForkOption func(*forkConfig)

type forkConfig struct {
	id         string
	coordModel string
	models     map[string]string // a worker's name (or "" for every worker) → its model
	answer     *string
	tasks      map[string]string // a node's id → its task
}

// ForkWithRunID gives the fork this id rather than one made of the forked run's and the tick's.
func ForkWithRunID(id string) ForkOption { return func(c *forkConfig) { c.id = id } }

// ForkWithCoordinatorModel gives the fork's coordinator this model (a provider/model name).
func ForkWithCoordinatorModel(name string) ForkOption {
	return func(c *forkConfig) { c.coordModel = name }
}

// ForkWithWorkerModel gives the worker named worker this model in the fork; worker "" gives it
// to every worker.
func ForkWithWorkerModel(worker, model string) ForkOption {
	return func(c *forkConfig) {
		if c.models == nil {
			c.models = map[string]string{}
		}
		c.models[worker] = model
	}
}

// ForkWithAnswer answers, in the fork, the question the coordinator had asked the human at the
// tick, with text.
func ForkWithAnswer(text string) ForkOption { return func(c *forkConfig) { c.answer = &text } }

// ForkWithNodeTask gives node id this task in the fork. The node must not be done at the tick.
func ForkWithNodeTask(id, task string) ForkOption {
	return func(c *forkConfig) {
		if c.tasks == nil {
			c.tasks = map[string]string{}
		}
		c.tasks[id] = task
	}
}

// Fork starts a new run from tick n of run id (see Steps): it keeps what the run had when
// the tick ended — its state, its board, its messages, the coordinator's conversation, the files
// of its folder that nodes done by then published — and goes on from there, live, with what opts
// change. Nothing the run did after the tick is in the fork, and the run itself is not changed.
// The attempts in progress at the tick start again, as their nodes' next attempts. Fork returns
// the new run's handle, as Resume does (ctx bounds it; ErrRunning while a run is in progress);
// should the answer of ForkWithAnswer not be taken, the fork runs on, waiting for one, and Fork
// returns its handle with the error. The fork shares the agent's memory and event log as they
// are (see ForkAgent for a fork that rewinds them too).
func (s *Squad) Fork(ctx context.Context, id string, n int, opts ...ForkOption) (*Run, error) {
	c := newForkConfig(id, n, s.home, opts)
	if err := workspace.ValidID(c.id); err != nil {
		return nil, fmt.Errorf("nodes: fork's run id: %w", err)
	}
	if cur := s.cur.Load(); cur != nil {
		return nil, fmt.Errorf("%w: run %s; wait for it to end, or pause it, before forking", ErrRunning, cur.id)
	}
	err := func() error {
		at, err := s.endOfTick(ctx, id, n)
		if err != nil {
			return err
		}
		return s.fork(ctx, id, at, c, s.store, s.home)
	}()
	if err != nil {
		return nil, fmt.Errorf("nodes: fork run %s at tick %d: %w", id, n, err)
	}
	h, err := s.begin(ctx, c.id, "")
	if err != nil {
		return nil, err
	}
	if c.answer != nil {
		if err := h.Answer(bus.Coordinator, *c.answer); err != nil {
			return h, fmt.Errorf("nodes: fork %s: %w", c.id, err)
		}
	}
	return h, nil
}

// newForkConfig returns the configuration opts make of a fork of run id at tick n into home:
// its id, unless ForkWithRunID gives one, is made of the run's and the tick's, one home has not.
func newForkConfig(id string, n int, home workspace.Home, opts []ForkOption) forkConfig {
	var c forkConfig
	for _, o := range opts {
		o(&c)
	}
	if c.id == "" {
		c.id = fmt.Sprintf("%s.fork%d", id, n)
		for i := 2; fileExists(string(home.Run(c.id))); i++ {
			c.id = fmt.Sprintf("%s.fork%d-%d", id, n, i)
		}
	}
	return c
}

// tickThread returns the tick graph of run id whose checkpoints saver keeps, to read or write
// its thread.
func tickThread(saver checkpoint.Saver, id string) (*graph.Compiled[tick], error) {
	return (&run{}).tickGraph().Compile(graph.WithCheckpointer(saver), graph.WithThread("squad/"+id))
}

// endOfTick returns the checkpoint of run id at which tick n ended: the first whose tick is n.
func (s *Squad) endOfTick(ctx context.Context, id string, n int) (graph.Snapshot[tick], error) {
	g, err := tickThread(s.saver, id)
	if err != nil {
		return graph.Snapshot[tick]{}, err
	}
	hist, err := g.History(ctx, checkpoint.ListOptions{})
	if err != nil {
		return graph.Snapshot[tick]{}, err
	}
	if n < 1 {
		return graph.Snapshot[tick]{}, fmt.Errorf("no tick %d: ticks count from 1", n)
	}
	for i := len(hist) - 1; i >= 0; i-- {
		if hist[i].Values.Tick == n {
			if hist[i].Values.Board == 0 {
				return graph.Snapshot[tick]{}, errors.New("the tick was saved without the board's version, by an older version of the squad: it cannot be forked")
			}
			return hist[i], nil
		}
	}
	last := 0
	if len(hist) > 0 {
		last = hist[0].Values.Tick
	}
	return graph.Snapshot[tick]{}, fmt.Errorf("no tick %d: the run's last tick is %d", n, last)
}

// CheckFork returns the error Fork would return for what opts ask of a fork of run id at tick
// n — a tick the run has not, an answer where the coordinator had asked nothing, a node or a
// worker the tick had not, a new task for a node done by then — without forking.
func (s *Squad) CheckFork(ctx context.Context, id string, n int, opts ...ForkOption) error {
	var c forkConfig
	for _, o := range opts {
		o(&c)
	}
	at, err := s.endOfTick(ctx, id, n)
	if err == nil {
		_, err = s.forkedBoard(ctx, id, at, c)
	}
	if err != nil {
		return fmt.Errorf("nodes: fork run %s at tick %d: %w", id, n, err)
	}
	return nil
}

// forkedBoard returns the board run id had as the tick whose end is at ended, with c's changes.
func (s *Squad) forkedBoard(ctx context.Context, id string, at graph.Snapshot[tick], c forkConfig) (*forkBoard, error) {
	boards, err := s.boardsAt(ctx, id, []int64{at.Values.Board})
	if err != nil {
		return nil, err
	}
	b := boards[0]
	return b, b.change(c, id, at.Values.Board)
}

// fork makes run c.id, in the store st of the agent at home (the squad's own, or a new
// agent's), the copy of run id as the tick whose end is at ended, with c's changes: its
// documents in the store, its folder, and the checkpoints of its tick and of its coordinator.
func (s *Squad) fork(ctx context.Context, id string, at graph.Snapshot[tick], c forkConfig, st store.Store, home workspace.Home) error {
	if fileExists(string(home.Run(c.id))) {
		return fmt.Errorf("run %s already exists", c.id)
	}
	if d, err := st.Doc(ctx, runKey(c.id)); err != nil || d.Value != nil {
		return errors.Join(err, fmt.Errorf("run %s already exists", c.id))
	}
	b, err := s.forkedBoard(ctx, id, at, c)
	if err != nil {
		return err
	}
	ch, err := b.docs(c.id)
	if err != nil {
		return err
	}
	recs, err := s.store.Docs(ctx, "bus/"+id+"/")
	if err != nil {
		return err
	}
	for i, d := range recs[:min(at.Values.Bus, len(recs))] {
		ch.Docs = append(ch.Docs, store.Doc{Key: busKey(c.id, i+1), Value: d.Value})
	}
	// The checkpoints first, then the folder (beside the run's place), the store, and the folder
	// in its place: a fork cut short leaves no run that would resume without its checkpoints.
	if err := copyThread(ctx, s.saver, st.Saver(), id+".coordinator", c.id+".coordinator", at.Config.CheckpointID); err != nil {
		return fmt.Errorf("the coordinator's conversation: %w", err)
	}
	g, err := tickThread(st.Saver(), c.id)
	if err != nil {
		return err
	}
	t := at.Values
	t.Full, t.Launches, t.Done, t.Nudged = true, nil, nil, false
	// Saved as intake's update: its edge leads where decide_next's does, to route_frontier.
	if _, err := g.UpdateState(ctx, t, intakeNode); err != nil {
		return err
	}
	dir := home.Run(c.id)
	tmp := filepath.Join(filepath.Dir(string(dir)), "."+c.id+".fork")
	if err := os.RemoveAll(tmp); err != nil {
		return err
	}
	if err := b.copyFolder(s.home.Run(id), tmp); err != nil {
		return errors.Join(err, os.RemoveAll(tmp))
	}
	if err := st.Apply(ctx, ch); err != nil {
		return errors.Join(err, os.RemoveAll(tmp))
	}
	return os.Rename(tmp, string(dir))
}

// forkBoard is a run's board as a tick left it: its state, nodes and workers, and the version
// of each document.
type forkBoard struct {
	state   runState
	nodes   []*Node
	workers []*Worker
	version int64
	changed []string // the nodes and workers changed since the version before (see boardsAt)
}

// boardsAt reads the board of run id as it was at each of versions (in increasing order), from
// its records (see histKey).
func (s *Squad) boardsAt(ctx context.Context, id string, versions []int64) ([]*forkBoard, error) {
	recs, err := s.store.Docs(ctx, "hist/"+id+"/")
	if err != nil {
		return nil, err
	}
	docs := map[string]store.Doc{}
	var keys []string // in the order the documents were first put
	changed := map[string]bool{}
	var out []*forkBoard
	emit := func() error {
		b, err := readForkBoard(id, versions[len(out)], keys, docs, changed)
		out = append(out, b)
		changed = map[string]bool{}
		return err
	}
	hr := histReader{run: id}
	for _, r := range recs {
		var ds []store.Doc
		rv, err := strconv.ParseInt(strings.TrimPrefix(r.Key, "hist/"+id+"/"), 10, 64)
		if err == nil {
			ds, err = hr.read(rv, r.Value)
		}
		if err != nil {
			return nil, fmt.Errorf("the board's record %s is damaged: %w", r.Key, err)
		}
		for len(out) < len(versions) && rv > versions[len(out)] {
			if err := emit(); err != nil {
				return nil, err
			}
		}
		if len(out) == len(versions) {
			break
		}
		for _, d := range ds {
			if _, ok := docs[d.Key]; !ok {
				keys = append(keys, d.Key)
			}
			docs[d.Key], changed[d.Key] = d, true
		}
	}
	for len(out) < len(versions) {
		if err := emit(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// readForkBoard decodes the documents of run id's board at version v; changed are the keys of
// those put since the version before.
func readForkBoard(id string, v int64, keys []string, docs map[string]store.Doc, changed map[string]bool) (*forkBoard, error) {
	b := &forkBoard{version: v}
	for _, k := range keys {
		d := docs[k]
		var err error
		switch {
		case k == runKey(id):
			err = json.Unmarshal(d.Value, &b.state)
		case strings.HasPrefix(k, nodeKey(id, "")):
			n := new(Node)
			err = json.Unmarshal(d.Value, n)
			b.nodes = append(b.nodes, n)
			if changed[k] {
				b.changed = append(b.changed, n.ID)
			}
		case strings.HasPrefix(k, workerKey(id, "")):
			w := new(Worker)
			err = json.Unmarshal(d.Value, w)
			b.workers = append(b.workers, w)
			if changed[k] {
				b.changed = append(b.changed, w.ID)
			}
		}
		if err != nil {
			return nil, fmt.Errorf("the board's document %s is damaged: %w", k, err)
		}
	}
	if b.state.Goal == "" {
		return nil, fmt.Errorf("the run's state at version %d is not recorded", v)
	}
	slices.SortFunc(b.nodes, func(x, y *Node) int { return compareIDs(x.ID, y.ID) })
	return b, nil
}

// change makes c's changes to b, the board of the fork of run id, and starts again the
// attempts in progress at the tick (as restoreRun does), whose conversations are the run's.
func (b *forkBoard) change(c forkConfig, id string, v int64) error {
	b.state.Home, b.state.Updated = "", b.state.Updated.UTC()
	if c.coordModel != "" {
		b.state.CoordModel = c.coordModel
	}
	if c.answer != nil && b.state.Question == "" {
		return errors.New("the coordinator had asked the human nothing at the tick; fork at a tick where it had, to answer it otherwise")
	}
	last := map[string]string{} // an assignment started again → its new id
	for _, n := range b.nodes {
		if task, ok := c.tasks[n.ID]; ok {
			if n.Status.done() || n.Status == NodeFailed {
				return fmt.Errorf("node %s was %s at the tick: its task cannot change", n.ID, n.Status)
			}
			n.Task = task
		}
		asked := n.Status == NodeWaiting && n.Question != ""
		if n.Assignment == "" || n.Damaged != "" || !(asked || n.Status == NodeRunning || n.Status == NodeAssigned || n.Status == NodePending) {
			continue
		}
		again := attemptID(c.id, n.ID, n.Attempts+1)
		last[n.Assignment], n.Assignment = again, again
		n.Attempts++
		if asked {
			n.Status, n.Question, n.Answer, n.Asked = NodeRunning, "", "", ""
		}
	}
	for task := range c.tasks {
		if !slices.ContainsFunc(b.nodes, func(n *Node) bool { return n.ID == task }) {
			return fmt.Errorf("no node %s at the tick", task)
		}
	}
	for name := range c.models {
		if name != "" && !slices.ContainsFunc(b.workers, func(w *Worker) bool { return strings.EqualFold(w.Name, name) }) {
			return fmt.Errorf("no worker %s at the tick", name)
		}
	}
	for _, w := range b.workers {
		if m, ok := c.models[""]; ok {
			w.Model = m
		}
		for name, m := range c.models {
			if name != "" && strings.EqualFold(w.Name, name) {
				w.Model = m
			}
		}
		if again, ok := last[w.Last]; ok {
			w.Last = again
		}
	}
	return nil
}

// docs returns the change that puts b into the store as run id's board, with its record.
func (b *forkBoard) docs(id string) (store.Change, error) {
	var ch store.Change
	err := ch.PutVersion(runKey(id), b.version, b.state)
	for _, n := range b.nodes {
		err = errors.Join(err, ch.PutVersion(nodeKey(id, n.ID), b.version, n))
	}
	for _, w := range b.workers {
		err = errors.Join(err, ch.PutVersion(workerKey(id, w.ID), b.version, w))
	}
	if err == nil {
		rec := make([]histDoc, len(ch.Docs))
		for i, d := range ch.Docs {
			rec[i] = wholeDoc(id, d)
		}
		err = ch.Put(histKey(id, b.version), rec)
	}
	return ch, err
}

// copyFolder copies the folder of run from to the folder to, as b has the run: the folders
// of its nodes and workers, the coordinator's files and the plan, and of the nodes done at the
// tick, their files and what they published then. The views of the nodes are written as the
// fork opens; the bus's records are in the store.
func (b *forkBoard) copyFolder(from workspace.Run, to string) error {
	done := map[string]*Node{}
	for _, n := range b.nodes {
		if n.Status.done() || n.Status == NodeFailed {
			done[n.ID] = n
		} else if err := os.MkdirAll(filepath.Join(to, filepath.Base(from.Nodes()), n.ID), 0o755); err != nil {
			return err
		}
	}
	workers := map[string]bool{}
	for _, w := range b.workers {
		workers[w.ID] = true
	}
	return copyTree(string(from), to, func(rel string) bool { return b.keeps(from, rel, done, workers) })
}

// copyTree copies the folder from to the folder to: its folders, regular files and symbolic
// links whose path relative to from (slash-separated) keep reports true, and in a folder kept,
// what it keeps of it.
func copyTree(from, to string, keep func(rel string) bool) error {
	return filepath.WalkDir(from, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(from, path)
		if err != nil {
			return err
		}
		if !keep(filepath.ToSlash(rel)) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		dst := filepath.Join(to, rel)
		info, err := d.Info()
		switch {
		case err != nil:
			return err
		case d.IsDir():
			return os.MkdirAll(dst, info.Mode().Perm())
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(path)
			if err != nil {
				return err
			}
			return os.Symlink(target, dst)
		case !d.Type().IsRegular():
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return workspace.WriteFile(dst, data)
	})
}

// keeps reports whether a fork keeps the file or folder at rel, relative to the run's folder
// (see copyFolder).
func (b *forkBoard) keeps(from workspace.Run, rel string, done map[string]*Node, workers map[string]bool) bool {
	parts := strings.Split(rel, "/")
	switch parts[0] {
	case filepath.Base(from.Messages()):
		return len(parts) == 1
	case outputFile:
		return b.state.Output != ""
	case filepath.Base(from.Nodes()):
		if len(parts) == 1 {
			return true
		}
		n := done[parts[1]]
		if n == nil {
			return false
		}
		if len(parts) >= 4 && parts[2] == filepath.Base(from.Node(n.ID).Published()) {
			return slices.Contains(n.Published, strings.Join(parts[3:], "/"))
		}
		return true
	case filepath.Base(filepath.Dir(string(from.Worker("w")))):
		return len(parts) == 1 || workers[parts[1]]
	}
	return true
}

// copyThread copies the checkpoints of thread from, in src, made before the checkpoint before (a
// checkpoint of another thread: ids order checkpoints as they were made), with their writes,
// into thread to, in dst. The writes of the last one that may have come after it — an answer to a
// task's interrupt, an input, the update of a task that had paused — stay behind, as do the
// effects, which the store has applied.
func copyThread(ctx context.Context, src, dst checkpoint.Saver, from, to, before string) error {
	tuples, err := src.List(ctx, checkpoint.Config{ThreadID: from}, checkpoint.ListOptions{Before: before})
	if err != nil {
		return err
	}
	for i := len(tuples) - 1; i >= 0; i-- {
		t := tuples[i]
		cfg, err := dst.Put(ctx, checkpoint.Config{ThreadID: to}, t.Checkpoint)
		if err != nil {
			return err
		}
		paused := map[string]bool{}
		for _, w := range t.Writes {
			if w.Kind == checkpoint.WriteInterrupt {
				paused[w.TaskID] = true
			}
		}
		var writes []checkpoint.Write
		for _, w := range t.Writes {
			later := i == 0 && (w.Kind == checkpoint.WriteResume || w.Kind == checkpoint.WriteInput || paused[w.TaskID] && w.Kind != checkpoint.WriteInterrupt)
			if w.Kind != checkpoint.WriteEffect && !later {
				writes = append(writes, w)
			}
		}
		if len(writes) > 0 {
			if err := dst.PutWrites(ctx, cfg, writes); err != nil {
				return err
			}
		}
	}
	return nil
}

// Step is a run's state as one of its ticks ended (see Squad.Steps): what a fork from the tick
// starts from.
type Step struct {
	Tick int `json:"tick"`
	// Checkpoint is the id of the tick's checkpoint, Time when it was saved.
	Checkpoint string    `json:"checkpoint"`
	Time       time.Time `json:"time"`
	Stage      int       `json:"stage"`
	Finished   bool      `json:"finished,omitempty"`
	// Question is the coordinator's question to the human, pending at the tick.
	Question string          `json:"question,omitempty"`
	Output   string          `json:"output,omitempty"`
	Usage    providers.Usage `json:"usage"`
	// Messages counts the records of the run's bus (messages sent, read, participants joined).
	Messages int `json:"messages"`
	// Events is the Seq of the agent's last event when the tick ended (0 for a tick saved
	// before the squad recorded it): a fork into a new agent keeps the events up to it.
	Events  int64    `json:"events,omitempty"`
	Nodes   []Node   `json:"nodes"`
	Workers []Worker `json:"workers"`
	// Changed lists the nodes and workers changed during the tick (all of them at the first).
	Changed []string `json:"changed,omitempty"`
}

// Steps returns the steps of run id, one a tick, in order: the state of the run, its board and
// what changed in it, as each tick ended. A run started before the squad recorded them has none.
func (s *Squad) Steps(ctx context.Context, id string) ([]Step, error) {
	g, err := tickThread(s.saver, id)
	if err != nil {
		return nil, err
	}
	hist, err := g.History(ctx, checkpoint.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("nodes: steps of run %s: %w", id, err)
	}
	var ends []graph.Snapshot[tick]
	for i := len(hist) - 1; i >= 0; i-- {
		if v := hist[i].Values; v.Board > 0 && (len(ends) == 0 || ends[len(ends)-1].Values.Tick < v.Tick) {
			ends = append(ends, hist[i])
		}
	}
	versions := make([]int64, len(ends))
	for i, e := range ends {
		versions[i] = e.Values.Board
	}
	boards, err := s.boardsAt(ctx, id, versions)
	if err != nil {
		return nil, fmt.Errorf("nodes: steps of run %s: %w", id, err)
	}
	steps := make([]Step, len(ends))
	for i, e := range ends {
		b := boards[i]
		st := Step{Tick: e.Values.Tick, Checkpoint: e.Config.CheckpointID, Time: e.CreatedAt, Stage: b.state.Stage,
			Finished: b.state.Finished, Question: b.state.Question, Output: b.state.Output, Usage: e.Values.Usage,
			Messages: e.Values.Bus, Changed: b.changed}
		for _, n := range b.nodes {
			st.Nodes = append(st.Nodes, *n)
		}
		for _, w := range b.workers {
			st.Workers = append(st.Workers, *w)
		}
		steps[i] = st
	}
	return steps, nil
}
