package nodes

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agiraph/agiraph/checkpoint"
	"github.com/agiraph/agiraph/graph"
	"github.com/agiraph/agiraph/nodes/bus"
	"github.com/agiraph/agiraph/nodes/eventlog"
	"github.com/agiraph/agiraph/nodes/store"
	"github.com/agiraph/agiraph/nodes/triggers"
	"github.com/agiraph/agiraph/nodes/workspace"
	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/runtime"
	"github.com/agiraph/agiraph/runtime/harnessed"
	"github.com/agiraph/agiraph/tools/mcp"
)

// tick is the squad graph's state: what a tick passes to the next. The run's own facts (goal,
// stage, contract, output, the coordinator's question) live in its runState, its work in its
// board (both in its folder) and its messages in the bus.
type tick struct {
	// Full marks an update that replaces the state; dispatch returns an empty update.
	// Its JSON, kept with each of the tick graph's steps, leaves out the fields that are zero.
	Full bool `json:"full,omitempty"`
	Tick int  `json:"tick,omitempty"`
	// Nudged is set once the coordinator was told the board is idle.
	Nudged   bool            `json:"nudged,omitempty"`
	Sleeping bool            `json:"sleeping,omitempty"` // an infinite run between cycles
	Usage    providers.Usage `json:"usage,omitzero"`
	// CoordUsage is the coordinator's conversation's usage so far, to add only what is new.
	CoordUsage providers.Usage `json:"coord_usage,omitzero"`
	// Launches are the assignments route_frontier starts (see next).
	Launches []launch `json:"launches,omitempty"`
	Done     []string `json:"done,omitempty"`
	// Board and Bus say how far the run's board (its version: see board.at) and its bus (the
	// records it kept) were when decide_next ended the tick: what a fork from the tick keeps.
	// Events and Lines say how far the agent's event log and its conversation with the human
	// were (their last Seq) when decide_next ended the tick, before what it committed itself,
	// with the tick's checkpoint: the last of which LastEvent and LastLine name (see logCut).
	Board     int64    `json:"board,omitempty"`
	Bus       int      `json:"bus,omitempty"`
	Events    int64    `json:"events,omitempty"`
	Lines     int64    `json:"lines,omitempty"`
	LastEvent *logMark `json:"last_event,omitempty"`
	LastLine  *logMark `json:"last_line,omitempty"`
}

// launch is an assignment route_frontier decided to start.
type launch struct {
	Node       string `json:"node"`
	Worker     string `json:"worker"`
	Assignment string `json:"assignment"`
	Wake       bool   `json:"wake,omitempty"` // the assignment checkpointed: its mail wakes it
}

func reduceTick(cur, u tick) tick {
	if !u.Full {
		return cur
	}
	return u
}

// The squad graph's nodes.
const (
	intakeNode    = "intake"
	routeNode     = "route_frontier"
	dispatchNode  = "dispatch"
	collectNode   = "collect"
	reconcileNode = "reconcile_inbox"
	decideNode    = "decide_next"
)

// tickSnapshotEvery is how many of the tick's checkpoints there are to one that stores its state
// whole. The state stays small (a tick's launches and ends) and each step's update replaces it
// whole, so a step's write holds it already: placed by size, as by default, a snapshot of a
// state this small would be due at each step, storing it twice.
const tickSnapshotEvery = 64

// run is one run in progress.
type run struct {
	s       *Squad
	cfg     config
	id      string
	dir     workspace.Run
	board   *board
	bus     *bus.Bus
	journal *busJournal // the bus's journal, when it is the store's
	log     *eventlog.Log
	pool    *pool
	sched   *triggers.Scheduler
	g       *graph.Compiled[tick]
	ctx     context.Context         // the run's context, which assignments run under
	cancel  context.CancelCauseFunc // ends the run's context: Pause, or the run returning
	started time.Time               // when this process took the run up
	wake    chan struct{}           // something the human did
	// operated says the human changed the board (Retry, Skip): the frontier is routed again.
	operated atomic.Bool
	// takeUp is set when the run resumes at decide_next, which a crash or a pause cut short:
	// perhaps in a coordinator turn (see decideNext).
	takeUp bool
	// The conversations of the coordinator and of the harnessed workers as their last runs left
	// them, so that a wake-up does not rebuild them from checkpoints (see harnessed.ConversationCache); the
	// coordinator's is kept apart, where the workers' do not push it out.
	coordConv, workerConvs *harnessed.ConversationCache
	coordMCP               *mcp.Set // the coordinator's MCP servers, once its first turn connected them
	// seq is the run's Sequencer, if it has one (see config.sequencer).
	seq Sequencer
	// untaken are the assignments that ended and no point of a tick took yet (see take): the
	// tick's own, read and written by its steps only.
	untaken []string

	mu      sync.Mutex // guards the signals from outside
	stopped bool

	// endMu is held for reading while a handle acts on the run (see Run.act), and for writing
	// as the run ends, setting ended.
	endMu sync.RWMutex
	ended bool
	// done is closed when the run has ended, how it ended in res and err (see Run.Wait).
	done chan struct{}
	res  Result
	err  error
}

// errEnded is the cause with which Pause ends a run's context.
var errEnded = errors.New("nodes: the run was ended")

const (
	squadName  = "squad" // the sender of the squad's own notes to the coordinator
	outputFile = "_output.md"
)

// open prepares run id; a non-empty goal starts a new run, an empty one resumes.
func (s *Squad) open(id, goal string) (*run, error) {
	dir := s.home.Run(id)
	_, err := os.Stat(string(dir))
	lost := errors.Is(err, fs.ErrNotExist) // a folder this home never had, or lost: the store may have the run
	if err != nil && !lost && goal == "" {
		return nil, fmt.Errorf("nodes: resume run %q: %w", id, err)
	}
	ctx := context.Background()
	board, err := s.openBoard(ctx, dir)
	if err != nil {
		return nil, err
	}
	prev := board.runState()
	if !lost && goal == "" && prev.Home != "" && prev.Home != s.homeID {
		// The run went on in another home since this one's folder of it was last used: the folder
		// is behind the store, and set aside for one rebuilt from it.
		aside := filepath.Join(filepath.Dir(string(dir)), "."+id+".stale")
		err := os.RemoveAll(aside)
		if err == nil {
			err = os.Rename(string(dir), aside)
		}
		if err != nil {
			return nil, fmt.Errorf("nodes: resume run %q: set aside its folder, which another home's is ahead of: %w", id, err)
		}
		lost = true
	}
	if lost && goal == "" && prev.Goal != "" && !s.owned { // a store of the home's own keeps no files
		if err := s.restoreRun(ctx, board); err != nil {
			return nil, fmt.Errorf("nodes: resume run %q: %w", id, err)
		}
	}
	switch _, serr := os.Stat(dir.Nodes()); {
	case goal != "" && prev.Goal != "":
		return nil, fmt.Errorf("nodes: run %q already exists; resume it instead", id)
	case goal == "" && prev.Goal == "":
		return nil, fmt.Errorf("%w: run %q (its state is missing); start it again with its id and goal", ErrNotStarted, id)
	case goal == "" && serr != nil: // made as the run began
		return nil, fmt.Errorf("nodes: run %q is damaged: its nodes cannot be read (%w); restore the folder from a backup, or start a new run", id, serr)
	}
	if err := dir.Create(); err != nil {
		return nil, err
	}
	seq := s.cfg.sequencer(id)
	r := &run{s: s, cfg: s.cfg, id: id, dir: dir, log: s.log, seq: seq, pool: newPool(seq != nil), wake: make(chan struct{}, 1), started: s.cfg.now(),
		coordConv: harnessed.NewConversationCache(1), workerConvs: harnessed.NewConversationCache(max(s.cfg.maxConcurrent, 1))}
	if lost { // the views went with the folder, whatever the store noted of them
		board.noted = viewsNote{}
	}
	if err := board.repairViews(s.homeID); err != nil {
		return nil, fmt.Errorf("nodes: run %s: %w", id, err)
	}
	r.board = board
	if goal != "" || prev.Home != s.homeID {
		if _, err := r.updateRun(ctx, func(st *runState) {
			if goal != "" {
				st.Goal = goal
			}
			st.Home = s.homeID
		}); err != nil {
			return nil, err
		}
	}
	// The goal opens the run's part of the conversation: it is added before the run is in
	// progress, so no message of the human's comes before it (once: a run whose intake a crash
	// cut short adds it when it resumes, if it was not added then).
	if st := board.runState(); st.Stage == 0 {
		if err := r.converse(ctx, "goal", bus.Human, bus.Coordinator, st.Goal); err != nil {
			return nil, err
		}
	}
	b, err := s.openBus(r)
	if err != nil {
		return nil, err
	}
	r.bus = b
	r.sched = s.sched
	if err := b.Join(bus.Participant{Name: squadName, Role: "system"}); err != nil {
		_ = b.Close() // the error before is the one to report
		return nil, err
	}
	for _, w := range board.roster() {
		if w.Damaged != "" {
			continue
		}
		if err := b.Join(bus.Participant{Name: w.Name, Role: w.Role}); err != nil {
			_ = b.Close() // the error before is the one to report
			return nil, err
		}
	}
	g := r.tickGraph()
	compiled, err := g.Compile(graph.WithCheckpointer(s.saver), graph.WithThread("squad/"+id), graph.WithRecursionLimit(1<<30),
		graph.WithSnapshotEvery(tickSnapshotEvery))
	if err != nil {
		_ = b.Close() // the error before is the one to report
		return nil, err
	}
	r.g = compiled
	return r, nil
}

// tickGraph builds the run's graph: the tick.
func (r *run) tickGraph() *graph.StateGraph[tick] {
	g := graph.New[tick]()
	g.SetReducer(reduceTick)
	g.AddNode(intakeNode, r.intake)
	g.AddNode(routeNode, r.routeFrontier)
	g.AddNode(dispatchNode, r.dispatch)
	g.AddNode(collectNode, r.collect)
	g.AddNode(reconcileNode, r.reconcile)
	g.AddNode(decideNode, r.decideNext)
	g.AddEdge(graph.START, intakeNode)
	g.AddEdge(intakeNode, routeNode)
	g.AddConditionalEdges(routeNode, func(_ context.Context, st tick) string {
		if len(st.Launches) == 0 {
			return collectNode
		}
		return dispatchNode
	}, dispatchNode, collectNode)
	g.AddEdge(dispatchNode, collectNode)
	g.AddEdge(collectNode, reconcileNode)
	g.AddEdge(reconcileNode, decideNode)
	g.AddConditionalEdges(decideNode, func(context.Context, tick) string {
		if r.complete() {
			return graph.END
		}
		return routeNode
	}, routeNode, graph.END)
	return g
}

// Mermaid draws the squad's tick graph as a Mermaid flowchart.
func Mermaid() string {
	g, err := (&run{}).tickGraph().Compile()
	if err != nil {
		panic(err) // the graph is fixed: a build error is a bug
	}
	return g.Mermaid()
}

// execute runs or resumes the run's graph and reports how it ended: finished, or paused by
// Pause or by ctx (ErrInterrupted), resumable either way.
func (r *run) execute() (res Result, err error) {
	ctx := r.ctx
	defer r.cancel(nil)
	defer func() {
		r.pool.cancelAll()
		r.pool.wait()
		if r.coordMCP != nil {
			r.coordMCP.Close()
		}
	}()
	for _, e := range r.bus.Events() { // what a crash kept from the log: logged now, once
		r.observeMessage(e)
	}
	for _, w := range r.board.roster() {
		if w.Damaged == "" {
			r.spawned(ctx, w)
		}
	}
	var snap graph.Snapshot[tick]
	if err = r.reportDamage(ctx); err == nil {
		snap, err = r.g.State(ctx)
	}
	switch { // an error before the graph runs (its context ended, say) ends the run as one in it
	case errors.Is(err, checkpoint.ErrNotFound):
		_, err = r.g.Invoke(ctx, tick{})
	case err != nil:
	case len(snap.Tasks) == 0: // it ended before
	default:
		r.emit(ctx, eventlog.Event{Type: eventlog.AgentResumed, Text: fmt.Sprintf("resumed at tick %d", snap.Values.Tick)})
		r.takeUp = slices.ContainsFunc(snap.Tasks, func(t graph.TaskState) bool { return t.Node == decideNode && !t.Done })
		_, err = r.g.Resume(ctx, nil)
	}
	var over *BudgetError
	switch cause := context.Cause(ctx); {
	case err == nil:
	case errors.As(cause, &over):
		err = over
		r.emit(ctx, eventlog.Event{Type: eventlog.AgentPaused, Text: over.Error()})
	case errors.Is(cause, errEnded):
		err = nil
		r.emit(ctx, eventlog.Event{Type: eventlog.AgentPaused, Text: "ended; resume the run to go on"})
	case ctx.Err() != nil:
		err = fmt.Errorf("%w: %w", ErrInterrupted, cause)
		r.emit(ctx, eventlog.Event{Type: eventlog.AgentPaused, Text: "interrupted: " + cause.Error()})
	default:
		r.emit(ctx, eventlog.Event{Type: eventlog.AgentFailed, Text: err.Error()})
	}
	st := r.board.runState()
	res = Result{RunID: r.id, Output: st.Output, Value: st.Result, Board: r.board.Snapshot(), Finished: r.complete()}
	if snap, serr := r.g.State(context.WithoutCancel(ctx)); serr == nil {
		res.Usage = snap.Values.Usage
	}
	if p := filepath.Join(string(r.dir), outputFile); res.Finished && fileExists(p) {
		res.OutputPath = p
	}
	r.s.settle() // what the run logged and changed is in the views when it returns
	return res, err
}

// complete reports whether the run is over: finish was called in a finite run.
func (r *run) complete() bool {
	return r.cfg.mode != Infinite && r.board.runState().Finished
}

// reportDamage tells the coordinator (once) about nodes and workers whose files are damaged.
func (r *run) reportDamage(ctx context.Context) error {
	snap := r.board.Snapshot()
	var lines []string
	for _, n := range snap.Nodes {
		if n.Damaged != "" {
			lines = append(lines, "- "+n.Damaged)
			r.emit(ctx, eventlog.Event{Type: eventlog.NodeFailed, Node: n.ID, Text: n.Damaged, Key: "damaged/" + n.ID})
		}
	}
	for _, w := range snap.Workers {
		if w.Damaged != "" {
			lines = append(lines, "- "+w.Damaged)
			r.emit(ctx, eventlog.Event{Type: eventlog.WorkerStopped, Worker: w.ID, Text: w.Damaged, Key: "damaged/" + w.ID})
		}
	}
	if len(lines) == 0 {
		return nil
	}
	text := "Some of the run's files are damaged; those nodes and workers are left as they are:\n" + strings.Join(lines, "\n")
	_, err := r.bus.SendOnce(ctx, "damaged/"+strings.Join(lines, "|"), squadName, bus.Coordinator, text)
	return err
}

// next returns st as the base of a full update. It holds no launches: route_frontier's are for
// the dispatch step after it, not for the steps after that.
func next(st tick) tick {
	st.Full, st.Launches = true, nil
	return st
}

// intake starts the run: the first stage, and the events that say so (the goal is in the
// conversation already: see open). Run again after a crash, it does what the first run left
// undone, once.
func (r *run) intake(ctx context.Context, st tick) (tick, error) {
	n := next(st)
	rs := r.board.runState()
	if rs.Stage > 0 {
		return n, nil
	}
	if err := workspace.WriteFile(r.dir.Plan(), []byte("# Plan\n\nGoal: "+rs.Goal+"\n")); err != nil {
		return n, err
	}
	r.emit(ctx, eventlog.Event{Type: eventlog.AgentStarted, Text: rs.Goal, Key: "started"})
	if err := r.s.mem.LogOnce(squadName, fmt.Sprintf("run %s started: %s", r.id, firstLine(rs.Goal))); err != nil {
		return n, err
	}
	r.emit(ctx, eventlog.Event{Type: eventlog.StageStarted, Text: "stage 1", Key: "stage1/started"})
	_, err := r.updateRun(ctx, func(s *runState) { s.Stage, s.Contract = 1, r.cfg.contract })
	return n, err
}

// routeFrontier decides which assignments start now. It first applies what ended while the
// last tick's coordinator turn ran (decide_next collected it), so that a worker that finished
// then starts again in this tick, not the next.
func (r *run) routeFrontier(ctx context.Context, st tick) (tick, error) {
	n := next(st)
	n.Events, n.Lines, n.LastEvent, n.LastLine = 0, 0, nil, nil // the tick's end keeps them
	if r.isStopped() {
		return n, nil
	}
	if err := r.checkBudget(ctx, st.Usage); err != nil {
		return n, err
	}
	if len(st.Done) > 0 {
		u, err := r.apply(ctx, st.Done, r.board.runState().Stage)
		if err != nil {
			return n, err
		}
		n.Usage, n.Done = n.Usage.Add(u), nil
	}
	launches, err := r.plan(ctx, st)
	if err != nil {
		return n, err
	}
	n.Launches = launches
	return n, nil
}

// dispatch starts the tick's assignments, one after the other, in one task, whose update and
// events commit with its step in one transaction; the assignments run on after the tick.
// Starting one is quick (its worker runs on its own), and a crash before the step is saved
// starts them again: an attempt already running is resumed where its checkpoints left it. A
// dispatch task without launches (one of a run saved when dispatch was a task a launch, whose
// launch was its argument) starts none: the next route_frontier starts the attempts its board
// says are running and no worker runs (see resumption).
func (r *run) dispatch(ctx context.Context, st tick) (tick, error) {
	for _, l := range st.Launches {
		if err := r.start(ctx, l); err != nil {
			return tick{}, err
		}
	}
	return tick{}, nil
}

// collect waits for the first thing that needs attention. When nothing moves for the stall
// window it says so, and what the run waits on, in an agent.waiting event.
func (r *run) collect(ctx context.Context, st tick) (tick, error) {
	n := next(st)
	seq, quiet, told := r.log.Last(), time.Now(), false
	for {
		r.expireQuestions()
		took, move := r.take(Point{Tick: st.Tick, At: PointCollect}, func() Move {
			switch {
			case st.Tick == 0 || len(n.Done)+len(r.untaken) > 0 || r.coordinatorHasNews() || r.workToStart() || r.operated.Swap(false):
				return MoveGo
			// No nudge while the coordinator waits for the human's answer: it could do nothing
			// with one but read it, stale, beside the answer.
			case r.idle() && !r.coordinatorWaiting() && !st.Nudged && !st.Sleeping && !r.isStopped():
				return MoveNudge
			}
			return MoveWait
		})
		n.Done = append(n.Done, took...)
		switch move {
		case MoveGo:
			n.Nudged = false
			return n, nil
		case MoveNudge:
			n.Nudged = true
			_, err := r.bus.SendOnce(ctx, fmt.Sprintf("tick%d/idle", st.Tick), squadName, bus.Coordinator, "Nothing is running and no work is ready. Create work nodes, wait for the human, or finish.")
			return n, err
		}
		if last := r.log.Last(); last != seq {
			seq, quiet, told = last, time.Now(), false
		} else if r.cfg.stall > 0 && !told && time.Since(quiet) >= r.cfg.stall {
			// Shown now, not with the step, which may wait on for long.
			r.emit(context.Background(), eventlog.Event{Type: eventlog.AgentWaiting, Text: r.waitsOn()})
			seq, told = r.log.Last(), true
		}
		if err := r.pause(ctx); err != nil {
			return n, err
		}
	}
}

// reconcile applies what ended to the board and tells the coordinator.
func (r *run) reconcile(ctx context.Context, st tick) (tick, error) {
	n := next(st)
	rs := r.board.runState()
	u, err := r.apply(ctx, st.Done, rs.Stage)
	if err != nil {
		return n, err
	}
	n.Usage, n.Done = n.Usage.Add(u), nil
	if err := r.wakeParents(ctx); err != nil {
		return n, err
	}
	if rs.Announced < rs.Stage {
		if text, ok := r.stageComplete(rs.Stage, rs.Contract.Policy); ok {
			if _, err := r.bus.SendOnce(ctx, fmt.Sprintf("stage%d/complete", rs.Stage), squadName, bus.Coordinator, text); err != nil {
				return n, err
			}
			if _, err := r.updateRun(ctx, func(s *runState) { s.Announced = max(s.Announced, rs.Stage) }); err != nil {
				return n, err
			}
		}
	}
	return n, nil
}

// decideNext lets the coordinator react, when there is something to react to, and closes the
// run (or an infinite run's cycle) once the coordinator has called finish. A coordinator turn
// runs only here, so a run that resumes elsewhere has none a crash or a pause cut short; one
// that resumes here takes it up (takeUp): the turn goes on, or how it ended is made known
// (once: see turn), before new mail is taken; then a turn that took mail and was cut short
// before saving its first step takes it again (the mailbox gives the same messages back under
// the turn's key), or the coordinator reads what is new.
func (r *run) decideNext(ctx context.Context, st tick) (n tick, err error) {
	n = next(st)
	n.Tick++
	if err := r.checkBudget(ctx, st.Usage); err != nil {
		return n, err
	}
	ctx, marks := withStepMarks(ctx)
	defer func() {
		if err == nil { // what ended meanwhile, for route_frontier to apply
			var took []string
			took, _, err = r.await(ctx, Point{Tick: st.Tick, At: PointDecided}, func() Move { return MoveGo })
			n.Done = append(n.Done, took...)
		}
		n.Board, n.Bus = r.board.at(), r.journal.kept()
		var lerr error
		if n.Events, n.Lines, lerr = r.s.logged(ctx); err == nil {
			err = lerr
		}
		n.LastEvent, n.LastLine = marks.last()
	}()
	takeUp := r.takeUp
	r.takeUp = false
	_, turn, err := r.await(ctx, Point{Tick: st.Tick, At: PointDecide}, func() Move {
		if st.Tick == 0 || r.coordinatorHasNews() || r.board.runState().Finished {
			return MoveGo
		}
		return MoveSkip
	})
	if err != nil {
		return n, err
	}
	news := turn == MoveGo
	if !news && !takeUp {
		return n, nil
	}
	if news {
		n.Sleeping = false
		if r.board.runState().Until != "" { // the coordinator hears of every node again, until it waits
			if _, err := r.updateRun(ctx, func(s *runState) { s.Until = "" }); err != nil {
				return n, err
			}
		}
	}
	if takeUp && !r.board.runState().Finished {
		if err := r.turn(ctx, &n, false); err != nil {
			return n, err
		}
	}
	if !r.board.runState().Finished {
		if err := r.turn(ctx, &n, true); err != nil {
			return n, err
		}
	}
	if r.board.runState().Finished {
		return n, r.close(ctx, &n)
	}
	return n, nil
}

// turn gives the coordinator a turn (see coordinate) and makes known how it ended: its question
// to the human, or its reply — once, however often a crash makes it run again.
func (r *run) turn(ctx context.Context, n *tick, wake bool) error {
	o, err := r.coordinate(ctx, wake)
	n.Usage = n.Usage.Add(usageSince(o.Usage, n.CoordUsage))
	n.CoordUsage = o.Usage
	if err != nil {
		return err
	}
	switch {
	case r.board.runState().Finished:
	case o.Status == runtime.Waiting:
		key := fmt.Sprintf("coordinator%d/question", o.Turns)
		st, err := r.updateRun(ctx, func(s *runState) {
			s.Question, s.Approval, s.Answer, s.Asked, s.AnswerBy, s.Default = o.Question, o.Approval, "", key, time.Time{}, ""
			if o.Approval == nil { // a tool call waits for its verdict
				s.AnswerBy, s.Default = r.answerBy(), o.Default
			}
		})
		if err != nil {
			return err
		}
		if err := r.toHuman(ctx, key, bus.Coordinator, o.Question); err != nil {
			return err
		}
		r.asked(Question{Key: key, Worker: bus.Coordinator, Question: o.Question, Approval: o.Approval, Default: st.Default}, st.AnswerBy)
		r.emitAt(ctx, eventlog.HumanQuestion, "", bus.Coordinator, o.Question, o.Approval, key)
	case strings.TrimSpace(o.Summary) != "":
		if err := r.toHuman(ctx, fmt.Sprintf("coordinator%d/reply", o.Turns), bus.Coordinator, o.Summary); err != nil {
			return err
		}
	}
	return nil
}

// close ends the run, or an infinite run's cycle, after finish: the coordinator's last turn to
// store what is worth remembering, the output to the human, the events. Run again after a
// crash, it does what the first run left undone, once.
func (r *run) close(ctx context.Context, n *tick) error {
	rs := r.board.runState()
	if _, err := r.bus.SendOnce(ctx, fmt.Sprintf("flush/cycle%d", rs.Cycle), squadName, bus.Coordinator, flushNote); err != nil {
		return err
	}
	o, err := r.coordinate(ctx, true)
	n.Usage = n.Usage.Add(usageSince(o.Usage, n.CoordUsage))
	n.CoordUsage = o.Usage
	if err != nil {
		return err
	}
	if r.cfg.mode != Infinite {
		if err := r.converse(ctx, "output", bus.Coordinator, bus.Human, rs.Output); err != nil {
			return err
		}
		if err := r.s.mem.LogOnce(squadName, fmt.Sprintf("run %s finished: %s", r.id, firstLine(rs.Output))); err != nil {
			return err
		}
		r.emit(ctx, eventlog.Event{Type: eventlog.StageCompleted, Text: fmt.Sprintf("stage %d", rs.Stage), Key: fmt.Sprintf("stage%d/completed", rs.Stage)})
		r.emit(ctx, eventlog.Event{Type: eventlog.AgentCompleted, Text: firstLine(rs.Output), Key: "completed"})
		return nil
	}
	cycle := rs.Cycle + 1
	key := fmt.Sprintf("cycle%d", cycle)
	if err := r.converse(ctx, key+"/output", bus.Coordinator, bus.Human, rs.Output); err != nil {
		return err
	}
	from, to := filepath.Join(string(r.dir), outputFile), filepath.Join(string(r.dir), fmt.Sprintf("_output.cycle%03d.md", cycle))
	if fileExists(from) {
		if err := os.Rename(from, to); err != nil {
			return fmt.Errorf("nodes: cycle %d: %w", cycle, err)
		}
	}
	if err := r.s.mem.LogOnce(squadName, fmt.Sprintf("run %s cycle %d: %s", r.id, cycle, firstLine(rs.Output))); err != nil {
		return err
	}
	r.emit(ctx, eventlog.Event{Type: eventlog.CycleCompleted, Text: fmt.Sprintf("cycle %d: %s", cycle, firstLine(rs.Output)), Key: key})
	if _, err := r.updateRun(ctx, func(s *runState) { s.Cycle, s.Finished = cycle, false }); err != nil {
		return err
	}
	n.Sleeping = true
	return nil
}

// flushNote asks the coordinator to store durable notes before its run or cycle ends.
const flushNote = "The run is ending. Store what is worth remembering for future runs — facts in knowledge/, what worked or did not in experiences/, the essentials in MEMORY.md — with memory_write, then reply with one line."

// usageSince returns now minus before: what a growing total added.
func usageSince(now, before providers.Usage) providers.Usage {
	return providers.Usage{
		InputTokens: now.InputTokens - before.InputTokens, OutputTokens: now.OutputTokens - before.OutputTokens,
		CacheReadTokens: now.CacheReadTokens - before.CacheReadTokens, CacheWriteTokens: now.CacheWriteTokens - before.CacheWriteTokens,
		CostUSD: now.CostUSD - before.CostUSD,
	}
}

// toHuman sends a message from the coordinator or a worker to the human, once per key (a step
// re-run after a crash sends nothing again), and adds it to the conversation, with ctx's step.
func (r *run) toHuman(ctx context.Context, key, from, body string) error {
	if _, err := r.bus.SendOnce(r.ctxOrBackground(), key, from, bus.Human, body); err != nil {
		return err
	}
	return r.converse(ctx, key, from, bus.Human, body)
}

// converse adds a message of the human ↔ coordinator conversation, with ctx's step (see
// Squad.commit); a non-empty key (unique in the run) adds it once.
func (r *run) converse(ctx context.Context, key, from, to, body string) error {
	if key != "" {
		key = r.id + "/" + key
	}
	return r.s.commit(ctx, store.Change{Lines: []store.Line{{Time: r.cfg.now().UTC(), Run: r.id, From: from, To: to, Content: body, Key: key}}}, nil)
}

func (r *run) ctxOrBackground() context.Context {
	if r.ctx != nil {
		return r.ctx
	}
	return context.Background()
}

// emitAt logs an event about a node and a worker, with details; key as for emit.
func (r *run) emitAt(ctx context.Context, t eventlog.Type, node, worker, text string, data any, key string) {
	e := eventlog.New(t, text, data)
	e.Node, e.Worker, e.Key = node, worker, key
	r.emit(ctx, e)
}

// emit logs an event of the run, with ctx's step (see Squad.commit): a step's events commit
// with it, or not at all. An event with a key (unique in the run) is logged once.
func (r *run) emit(ctx context.Context, e eventlog.Event) {
	e.Run = r.id
	if e.Key != "" {
		e.Key = r.id + "/" + e.Key
	}
	if err := r.s.commit(ctx, store.Change{Events: []eventlog.Event{e}}, nil); err != nil {
		r.cfg.logger.Error("event not logged", "run", r.id, "type", e.Type, "err", err)
	}
}

// observeMessage turns the bus's deliveries into events.
func (r *run) observeMessage(e bus.Event) {
	t := eventlog.MessageSent
	if e.Kind == bus.Received {
		t = eventlog.MessageReceived
	}
	ev := eventlog.New(t, e.Message.Body, e.Message)
	ev.Key = "message/" + e.Message.ID + "/" + e.Kind
	ev.Worker = e.Message.From
	if e.Kind == bus.Received {
		ev.Worker = e.Message.To
	}
	ev.Run, ev.Key = r.id, r.id+"/"+ev.Key
	r.s.note(ev) // the bus's log has the message already: its event follows
}

func (r *run) isStopped() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stopped
}

func (r *run) signal() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}
