package nodes

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/agiraph/agiraph/checkpoint"
	"github.com/agiraph/agiraph/graph"
	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/runtime"
	"github.com/agiraph/agiraph/runtime/bus"
	"github.com/agiraph/agiraph/runtime/eventlog"
	"github.com/agiraph/agiraph/runtime/triggers"
	"github.com/agiraph/agiraph/runtime/workspace"
)

// tick is the squad graph's state: what a run knows between ticks beyond its board (which is
// in its folder) and its messages (which are in the bus).
type tick struct {
	// Full marks an update that replaces the state; dispatch tasks return empty updates.
	Full     bool     `json:"full,omitempty"`
	Run      string   `json:"run"`
	Goal     string   `json:"goal"`
	Tick     int      `json:"tick"`
	Started  bool     `json:"started,omitempty"`
	Stage    int      `json:"stage"`
	Contract Contract `json:"contract"`
	// Announced is set once the coordinator was told the stage is complete.
	Announced bool            `json:"announced,omitempty"`
	Finished  bool            `json:"finished,omitempty"`
	Output    string          `json:"output,omitempty"`
	Nudged    bool            `json:"nudged,omitempty"` // the coordinator was told the board is idle
	Cycle     int             `json:"cycle,omitempty"`  // cycles an infinite run has finished
	Sleeping  bool            `json:"sleeping,omitempty"`
	Usage     providers.Usage `json:"usage"`
	// CoordQuestion is the coordinator's question to the human, until answered.
	CoordQuestion string `json:"coord_question,omitempty"`
	// CoordUsage is the coordinator's conversation's usage so far, to add only what is new.
	CoordUsage providers.Usage `json:"coord_usage"`
	Launches   []launch        `json:"launches,omitempty"`
	Done       []string        `json:"done,omitempty"`
	// Launch is the one launch of a dispatch task (a Send's argument).
	Launch *launch `json:"launch,omitempty"`
}

// launch is an assignment route_frontier decided to start.
type launch struct {
	Node       string `json:"node"`
	Worker     string `json:"worker"`
	Assignment string `json:"assignment"`
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

// run is one run in progress.
type run struct {
	s       *Squad
	cfg     config
	id      string
	goal    string
	dir     workspace.Run
	board   *board
	bus     *bus.Bus
	log     *eventlog.Log
	pool    *pool
	sched   *triggers.Scheduler
	g       *graph.Compiled[tick]
	ctx     context.Context // the run's context, which assignments run under
	started time.Time       // when this process took the run up
	wake    chan struct{}   // something the human did

	mu            sync.Mutex
	stopped       bool
	stage         int
	contract      Contract
	reconvened    bool
	finished      bool
	output        string
	coordAnswer   string
	coordQuestion string
	ending        bool
}

const (
	squadName   = "squad" // the sender of the squad's own notes to the coordinator
	outcomeFile = "_outcome.json"
	outputFile  = "_output.md"
)

// open prepares run id; a non-empty goal starts a new run, an empty one resumes.
func (s *Squad) open(id, goal string) (*run, error) {
	dir := s.home.Run(id)
	if goal == "" {
		if _, err := os.Stat(string(dir)); err != nil {
			return nil, fmt.Errorf("nodes: resume run %q: %w", id, err)
		}
	} else if _, err := os.Stat(string(dir)); err == nil {
		return nil, fmt.Errorf("nodes: run %q already exists; resume it instead", id)
	}
	if err := dir.Create(); err != nil {
		return nil, err
	}
	r := &run{s: s, cfg: s.cfg, id: id, goal: goal, dir: dir, log: s.log, pool: newPool(), wake: make(chan struct{}, 1), started: s.cfg.now()}
	board, err := openBoard(dir, s.cfg.now)
	if err != nil {
		return nil, err
	}
	r.board = board
	b, err := bus.Open(dir.Messages(), bus.WithClock(s.cfg.now), bus.WithObserver(r.observeMessage))
	if err != nil {
		return nil, fmt.Errorf("nodes: run %s: %w", id, err)
	}
	r.bus = b
	sched, err := triggers.Open(s.home.Triggers(), r.fire, triggers.WithClock(s.cfg.triggerClock))
	if err != nil {
		b.Close()
		return nil, fmt.Errorf("nodes: run %s: %w", id, err)
	}
	r.sched = sched
	if err := b.Join(bus.Participant{Name: squadName, Role: "system"}); err != nil {
		b.Close()
		return nil, err
	}
	for _, w := range board.Snapshot().Workers {
		if err := b.Join(bus.Participant{Name: w.Name, Role: w.Role}); err != nil {
			b.Close()
			return nil, err
		}
	}
	g := r.tickGraph()
	compiled, err := g.Compile(graph.WithCheckpointer(s.saver), graph.WithThread("squad/"+id), graph.WithRecursionLimit(1<<30))
	if err != nil {
		b.Close()
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
	g.AddRouter(routeNode, func(_ context.Context, st tick) graph.Next[tick] {
		if len(st.Launches) == 0 {
			return graph.Goto[tick](collectNode)
		}
		var next graph.Next[tick]
		for i := range st.Launches {
			next.Sends = append(next.Sends, graph.Send[tick]{Node: dispatchNode, Arg: tick{Launch: &st.Launches[i]}})
		}
		return next
	}, dispatchNode, collectNode)
	g.AddEdge(dispatchNode, collectNode)
	g.AddEdge(collectNode, reconcileNode)
	g.AddEdge(reconcileNode, decideNode)
	g.AddConditionalEdges(decideNode, func(_ context.Context, st tick) string {
		if st.Finished {
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

// execute runs or resumes the run's graph and reports how it ended.
func (r *run) execute(ctx context.Context) (res Result, err error) {
	r.ctx = ctx
	r.sched.Start(ctx)
	defer func() {
		err = errors.Join(err, r.sched.Close())
		r.pool.cancelAll()
		r.pool.wait()
		err = errors.Join(err, r.bus.Close())
	}()
	snap, serr := r.g.State(ctx)
	var final tick
	switch {
	case errors.Is(serr, checkpoint.ErrNotFound):
		if r.goal == "" {
			return Result{RunID: r.id}, fmt.Errorf("nodes: run %q has no saved tick to resume from", r.id)
		}
		final, err = r.g.Invoke(ctx, tick{})
	case serr != nil:
		return Result{RunID: r.id}, serr
	case len(snap.Next) == 0:
		final = snap.Values
	default:
		r.restore(snap.Values)
		r.emit(eventlog.Event{Type: eventlog.AgentResumed, Text: fmt.Sprintf("resumed at tick %d", snap.Values.Tick)})
		final, err = r.g.Resume(ctx, nil)
	}
	if err != nil {
		if snap, serr := r.g.State(context.WithoutCancel(ctx)); serr == nil {
			final = snap.Values
		}
	}
	res = Result{RunID: r.id, Output: final.Output, Board: r.board.Snapshot(), Usage: final.Usage}
	if p := filepath.Join(string(r.dir), outputFile); final.Finished && fileExists(p) {
		res.OutputPath = p
	}
	return res, err
}

// restore takes the run-level settings back from a saved tick.
func (r *run) restore(st tick) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.goal, r.stage, r.contract, r.coordQuestion = st.Goal, st.Stage, st.Contract, st.CoordQuestion
}

// next returns st as the base of a full update.
func next(st tick) tick {
	st.Full, st.Launch = true, nil
	return st
}

// intake starts the run: the goal, the first stage, and the events that say so.
func (r *run) intake(ctx context.Context, st tick) (tick, error) {
	n := next(st)
	if st.Started { // a run resumed from before its first tick was saved
		return n, nil
	}
	n.Run, n.Goal, n.Started, n.Stage, n.Contract = r.id, r.goal, true, 1, r.cfg.contract
	r.restore(n)
	if err := workspace.WriteFile(r.dir.Plan(), []byte("# Plan\n\nGoal: "+r.goal+"\n")); err != nil {
		return n, err
	}
	if err := r.converse("human", bus.Coordinator, r.goal); err != nil {
		return n, err
	}
	r.emit(eventlog.Event{Type: eventlog.AgentStarted, Text: r.goal})
	if err := r.s.mem.Log(squadName, fmt.Sprintf("run %s started: %s", r.id, firstLine(r.goal))); err != nil {
		return n, err
	}
	r.emit(eventlog.Event{Type: eventlog.StageStarted, Text: "stage 1"})
	return n, nil
}

// routeFrontier decides which assignments start now.
func (r *run) routeFrontier(ctx context.Context, st tick) (tick, error) {
	n := next(st)
	n.Launches = nil
	if r.isStopped() {
		return n, nil
	}
	launches, err := r.plan(st)
	if err != nil {
		return n, err
	}
	n.Launches = launches
	return n, nil
}

// dispatch starts one assignment; it runs on after the tick.
func (r *run) dispatch(ctx context.Context, st tick) (tick, error) {
	if st.Launch == nil {
		return tick{}, nil
	}
	return tick{}, r.start(*st.Launch)
}

// collect waits for the first thing that needs attention.
func (r *run) collect(ctx context.Context, st tick) (tick, error) {
	n := next(st)
	for {
		n.Done = append(n.Done, r.pool.drain()...)
		news := st.Tick == 0 || len(n.Done) > 0 || r.coordinatorHasNews() || r.workToRestart() || r.isEnding()
		if news {
			n.Nudged = false
			return n, nil
		}
		if r.idle() && !st.Nudged && !st.Sleeping && !r.isStopped() {
			n.Nudged = true
			_, err := r.bus.SendOnce(ctx, fmt.Sprintf("tick%d/idle", st.Tick), squadName, bus.Coordinator, "Nothing is running and no work is ready. Create work nodes, wait for the human, or finish.")
			return n, err
		}
		timer := time.NewTimer(r.cfg.tick)
		select {
		case <-ctx.Done():
			timer.Stop()
			return n, context.Cause(ctx)
		case <-r.pool.wake:
		case <-r.bus.Notify():
		case <-r.wake:
		case <-timer.C:
		}
		timer.Stop()
	}
}

// reconcile applies what ended to the board and tells the coordinator.
func (r *run) reconcile(ctx context.Context, st tick) (tick, error) {
	n := next(st)
	for _, id := range st.Done {
		u, err := r.apply(ctx, id, st.Stage)
		if err != nil {
			return n, err
		}
		n.Usage = n.Usage.Add(u)
	}
	n.Done = nil
	if err := r.wakeParents(ctx); err != nil {
		return n, err
	}
	if !st.Announced {
		if text, ok := r.stageComplete(st.Stage, st.Contract.Policy); ok {
			n.Announced = true
			if _, err := r.bus.Send(ctx, squadName, bus.Coordinator, text); err != nil {
				return n, err
			}
		}
	}
	return n, nil
}

// decideNext lets the coordinator react, when there is something to react to.
func (r *run) decideNext(ctx context.Context, st tick) (tick, error) {
	n := next(st)
	n.Tick++
	if r.isEnding() {
		n.Finished = true
		if out := strings.TrimSpace(readText(filepath.Join(string(r.dir), outputFile))); out != "" {
			n.Output = out
		}
		r.emit(eventlog.Event{Type: eventlog.AgentCompleted, Text: "ended: " + firstLine(n.Output)})
		return n, nil
	}
	if st.Tick > 0 && !r.coordinatorHasNews() {
		return n, nil
	}
	n.Sleeping = false
	n.CoordQuestion = ""
	o, err := r.coordinate(ctx, st.Goal)
	n.Usage = n.Usage.Add(usageSince(o.Usage, st.CoordUsage))
	n.CoordUsage = o.Usage
	if err != nil {
		return n, err
	}
	r.mu.Lock()
	if r.reconvened {
		n.Stage, n.Contract, n.Announced = r.stage, r.contract, false
		r.reconvened = false
	}
	finished, output := r.finished, r.output
	r.mu.Unlock()
	if out := filepath.Join(string(r.dir), outputFile); !finished && fileExists(out) {
		finished, output = true, strings.TrimSpace(readText(out)) // finished before a restart
	}
	if finished {
		// A last turn to store what is worth remembering, before the run (or cycle) ends.
		key := fmt.Sprintf("flush/cycle%d", n.Cycle)
		if _, err := r.bus.SendOnce(ctx, key, squadName, bus.Coordinator, flushNote); err != nil {
			return n, err
		}
		fo, err := r.coordinate(ctx, st.Goal)
		n.Usage = n.Usage.Add(usageSince(fo.Usage, o.Usage))
		n.CoordUsage = fo.Usage
		if err != nil {
			return n, err
		}
		r.mu.Lock()
		r.finished = false // a finish during the flush turn changes nothing
		r.mu.Unlock()
	}
	switch {
	case finished && r.cfg.mode == Infinite:
		r.mu.Lock()
		r.finished = false
		r.mu.Unlock()
		n.Cycle++
		n.Output, n.Sleeping = output, true
		if err := r.converse(bus.Coordinator, bus.Human, output); err != nil {
			return n, err
		}
		if err := os.Rename(filepath.Join(string(r.dir), outputFile), filepath.Join(string(r.dir), fmt.Sprintf("_output.cycle%03d.md", n.Cycle))); err != nil {
			return n, fmt.Errorf("nodes: cycle %d: %w", n.Cycle, err)
		}
		r.emit(eventlog.Event{Type: "x.cycle_completed", Text: fmt.Sprintf("cycle %d: %s", n.Cycle, firstLine(output))})
		if err := r.s.mem.Log(squadName, fmt.Sprintf("run %s cycle %d: %s", r.id, n.Cycle, firstLine(output))); err != nil {
			return n, err
		}
	case finished:
		n.Finished, n.Output = true, output
		if err := r.converse(bus.Coordinator, bus.Human, output); err != nil {
			return n, err
		}
		if err := r.s.mem.Log(squadName, fmt.Sprintf("run %s finished: %s", r.id, firstLine(output))); err != nil {
			return n, err
		}
		r.emit(eventlog.Event{Type: eventlog.StageCompleted, Text: fmt.Sprintf("stage %d", n.Stage)})
		r.emit(eventlog.Event{Type: eventlog.AgentCompleted, Text: firstLine(output)})
	case o.Status == runtime.Waiting:
		n.CoordQuestion = o.Question
		r.mu.Lock()
		r.coordQuestion = o.Question
		r.mu.Unlock()
		if err := r.toHuman(fmt.Sprintf("coordinator%d/question", o.Turns), bus.Coordinator, o.Question); err != nil {
			return n, err
		}
		r.emit(eventlog.Event{Type: eventlog.HumanQuestion, Worker: bus.Coordinator, Text: o.Question})
	case strings.TrimSpace(o.Summary) != "":
		if err := r.toHuman(fmt.Sprintf("coordinator%d/reply", o.Turns), bus.Coordinator, o.Summary); err != nil {
			return n, err
		}
	}
	return n, nil
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
// re-run after a crash sends nothing again), and adds it to the conversation.
func (r *run) toHuman(key, from, body string) error {
	sent, err := r.bus.SendOnce(r.ctxOrBackground(), key, from, bus.Human, body)
	if err != nil {
		return err
	}
	if len(sent) > 0 && sent[0].Time.Before(r.started) { // sent before a restart, and logged then
		return nil
	}
	return r.converse(from, bus.Human, body)
}

// converse appends a message of the human ↔ coordinator conversation to the agent's
// conversation.jsonl.
func (r *run) converse(from, to, body string) error {
	return r.s.conv.add(r.id, from, to, body)
}

func (r *run) ctxOrBackground() context.Context {
	if r.ctx != nil {
		return r.ctx
	}
	return context.Background()
}

// emitAt appends an event about a node and a worker, with details.
func (r *run) emitAt(t eventlog.Type, node, worker, text string, data any) {
	e := eventlog.New(t, text, data)
	e.Node, e.Worker = node, worker
	r.emit(e)
}

// emit appends an event of the run to the agent's log, and shows it to the triggers.
func (r *run) emit(e eventlog.Event) {
	e.Run = r.id
	e, err := r.log.Append(e)
	if err != nil {
		fmt.Fprintf(os.Stderr, "nodes: run %s: event %s: %v\n", r.id, e.Type, err)
		return
	}
	r.sched.Observe(e)
}

// observeMessage turns the bus's deliveries into events.
func (r *run) observeMessage(e bus.Event) {
	t := eventlog.MessageSent
	if e.Kind == bus.Received {
		t = eventlog.MessageReceived
	}
	ev := eventlog.New(t, e.Message.Body, e.Message)
	ev.Worker = e.Message.From
	if e.Kind == bus.Received {
		ev.Worker = e.Message.To
	}
	r.emit(ev)
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
