package host

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agiraph/agiraph/hooks"
	"github.com/agiraph/agiraph/internal/rootlock"
	"github.com/agiraph/agiraph/nodes"
	"github.com/agiraph/agiraph/nodes/bus"
	"github.com/agiraph/agiraph/nodes/eventlog"
	"github.com/agiraph/agiraph/nodes/workspace"
)

// The statuses of an agent (see [Summary]).
const (
	StatusIdle        = "idle"              // no run yet (or none the host knows of)
	StatusWorking     = "working"           // a run is in progress
	StatusWaiting     = "waiting_for_human" // a run is in progress and waits for the human's answer
	StatusQueued      = "queued"            // a run waits for a place among the runs in progress (WithMaxRuns)
	StatusInterrupted = "interrupted"       // the last run was paused before it finished: it can be resumed
	StatusPaused      = "paused"            // the human paused the last run (Agent.Pause): it can be resumed
	StatusComplete    = "completed"         // the last run finished
	StatusFailed      = "failed"            // the last run ended with an error
	StatusOverBudget  = "over_budget"       // the last run reached a limit of its budget (Summary.Error says which): raise it (Agent.SetBudget), then resume it
	StatusDamaged     = "damaged"           // the agent's files could not be opened (Summary.Error says which and why)
)

// Option configures a Host.
type Option func(*config)

type config struct {
	root      string
	squadOpts func(agentID string) []nodes.Option
	now       func() time.Time
	logger    *slog.Logger
	noResume  bool
	record    bool
	maxRuns   int
	baseURL   string
	webhook   nodes.Webhook
	// A fleet's (fleet.go).
	pgURL     string
	pgPool    *pgxpool.Pool
	leaseTTL  time.Duration
	heartbeat time.Duration
	watch     time.Duration
}

// WithRecordRuns records every new run of every agent into a cassette, as
// [Agent.RunRecorded] does.
func WithRecordRuns() Option { return func(c *config) { c.record = true } }

// DefaultMaxRuns is the default number of runs in progress at once.
const DefaultMaxRuns = 16

// WithRoot sets the folder the host keeps its agents in: each lives in <root>/agents/<id>/
// (default ".agiraph/server").
func WithRoot(dir string) Option { return func(c *config) { c.root = dir } }

// WithSquadOptions gives each agent's squad extra options, chosen by the agent's id: models,
// tick, limits. The host adds the home folder, and the model and mode [Host.Create] names.
func WithSquadOptions(fn func(agentID string) []nodes.Option) Option {
	return func(c *config) { c.squadOpts = fn }
}

// WithLogger sets where the host, and the agents' squads (nodes.WithLogger), report what
// they cannot answer or log as events: a file they could not write, a run that failed, a
// trigger that could not wake its agent. The default discards it.
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.logger = l } }

// WithMaxRuns sets how many runs may be in progress at once (default [DefaultMaxRuns]); a run
// started beyond it is "queued" until another ends.
func WithMaxRuns(n int) Option { return func(c *config) { c.maxRuns = n } }

// WithBaseURL sets the URL the host is served at ("http://10.0.0.5:8080"), if it is: a second
// host started on the same root names it, and in a fleet ([WithPostgres]) the other replicas
// send there the requests on the runs this one holds (see [Host.Holder]). server.New sets it
// from server.WithAddr.
func WithBaseURL(u string) Option { return func(c *config) { c.baseURL = u } }

// WithWebhook posts the questions the agents' workers and coordinators ask the human to w.URL
// too (nodes.WithWebhook), each naming its agent (nodes.Question.Agent); the answer comes back
// through the API (POST /agents/{id}/respond).
func WithWebhook(w nodes.Webhook) Option { return func(c *config) { c.webhook = w } }

// WithoutResume keeps New from resuming the runs that were in progress when the host last
// stopped (see [New]): they stay "interrupted" until [Agent.Resume]. In a fleet
// ([WithPostgres]) it does not apply: a run whose replica is gone is the fleet's to go on with,
// and the replicas' watchdogs resume it.
func WithoutResume() Option { return func(c *config) { c.noResume = true } }

// Host keeps agents under its root and runs them in the background. It is safe for concurrent
// use.
type Host struct {
	cfg     config
	lock    *rootlock.Lock
	fleet   *fleet        // nil unless WithPostgres
	slots   chan struct{} // one per run in progress
	closing chan struct{} // closed by Close: event streams end
	ctx     context.Context
	stop    context.CancelFunc // ends ctx, with Close
	wg      sync.WaitGroup

	mu        sync.Mutex
	agents    map[string]*Agent
	closed    bool
	closeErrs []error // met closing squads while the host closes

	alarmMu      sync.Mutex
	alarms       []clockAlarm // one per trigger clock: most often one
	alarmsClosed bool
}

// New returns a host over the agents found under the root folder, and resumes, in the
// background, the runs that were in progress when the host stopped (those it paused when it
// closed, and those a crash left working or waiting for the human), unless [WithoutResume] is
// given. Runs that finished or failed are left as they are. An agent with no run in progress
// costs the host no open file and no goroutine: New reads its agent.json and its triggers,
// and opens its squad only to run it, or when one of its triggers comes due; its other files are
// checked when it is first shown or used.
func New(opts ...Option) (*Host, error) {
	c := config{root: filepath.Join(".agiraph", "server"), now: time.Now, maxRuns: DefaultMaxRuns}
	for _, o := range opts {
		o(&c)
	}
	if c.logger == nil {
		c.logger = slog.New(slog.DiscardHandler)
	}
	if c.webhook.URL != "" {
		if err := c.webhook.Check(); err != nil {
			return nil, fmt.Errorf("host: WithWebhook: %w", err)
		}
	}
	h := &Host{cfg: c, slots: make(chan struct{}, max(c.maxRuns, 1)), closing: make(chan struct{}), agents: map[string]*Agent{}}
	h.ctx, h.stop = context.WithCancel(context.Background())
	fl, err := openFleet(h.ctx, c)
	if err != nil {
		h.stop()
		return nil, err
	}
	h.fleet = fl
	var lock *rootlock.Lock
	if fl == nil { // replicas share their root
		lock, err = rootlock.Acquire(c.root, c.baseURL)
	}
	switch {
	case errors.Is(err, errors.ErrUnsupported):
		c.logger.Warn("two hosts on one root cannot be prevented here", "err", err)
	case errors.Is(err, rootlock.ErrLocked):
		h.stop()
		return nil, fmt.Errorf("host: %w; stop it, or use another root", err)
	case err != nil:
		h.stop()
		return nil, fmt.Errorf("host: %w", err)
	}
	h.lock = lock
	ok := false
	defer func() {
		if !ok {
			_ = h.Close() // the error before is the one to report
		}
	}()
	if err := os.MkdirAll(h.agentsDir(), 0o755); err != nil {
		return nil, fmt.Errorf("host: %w", err)
	}
	ids, err := h.agentIDs()
	if err != nil {
		return nil, fmt.Errorf("host: %w", err)
	}
	next := map[*Agent]time.Time{}
	for _, id := range ids {
		a, at := h.load(id)
		if a == nil {
			continue
		}
		if !at.IsZero() {
			next[a] = at
		}
		h.agents[a.id] = a
	}
	ok = true
	for a, at := range next {
		a.alarm.Set(a.id, at)
	}
	if fl != nil {
		h.wg.Add(1)
		go h.watchFleet() // a fleet's runs in progress are resumed by its replicas' watchdogs
	}
	if !c.noResume && fl == nil {
		for _, a := range h.agents {
			a.mu.Lock()
			run, status := a.meta.Run, a.meta.Status
			a.mu.Unlock()
			if status != StatusInterrupted || run == "" {
				continue
			}
			h.cfg.logger.Info("resuming the run in progress when the host stopped", "agent", a.id, "run", run)
			if _, err := h.start(a, "", run, true); err != nil {
				h.cfg.logger.Error("cannot resume run", "agent", a.id, "run", run, "err", err)
			}
		}
	}
	return h, nil
}

// Root returns the folder the host keeps its agents in (see [WithRoot]).
func (h *Host) Root() string { return h.cfg.root }

func (h *Host) agentsDir() string { return filepath.Join(h.cfg.root, "agents") }

// agentIDs returns the ids of the agents the host takes up: the folders under the root, or a
// fleet's, those of its registry.
func (h *Host) agentIDs() ([]string, error) {
	if h.fleet != nil {
		return h.fleet.ids(h.ctx)
	}
	entries, err := os.ReadDir(h.agentsDir())
	var ids []string
	for _, e := range entries {
		if e.IsDir() {
			ids = append(ids, e.Name())
		}
	}
	return ids, err
}

// load opens agent id from its files — damaged when they cannot be read, nil when it is not an
// agent's or was deleted — and returns when its next trigger is due (zero: none).
func (h *Host) load(id string) (*Agent, time.Time) {
	if workspace.ValidID(id) != nil {
		return nil, time.Time{}
	}
	a, err := h.reopen(id)
	if err != nil {
		a = h.damagedAgent(id, err)
	}
	if a == nil || a.damage() != "" {
		return a, time.Time{}
	}
	at, err := a.files.NextTrigger()
	if err != nil {
		a.markDamaged(err)
	}
	return a, at
}

// agentDir returns the home of agent id.
func (h *Host) agentDir(id string) string { return filepath.Join(h.agentsDir(), id) }

// Close pauses the runs in progress (their contexts end), waits for them to return and for
// the agents' squads to close, and ends the event streams ([Agent.Follow]). The runs are
// "interrupted": a host started again on the same root resumes them. The host answers
// [ErrClosed] afterwards.
func (h *Host) Close() error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil
	}
	h.closed = true
	close(h.closing)
	var all []*Agent
	for _, a := range h.agents {
		all = append(all, a)
	}
	h.mu.Unlock()
	h.closeAlarms()
	h.stop()
	var wg sync.WaitGroup
	for _, a := range all {
		wg.Add(1)
		go func() { defer wg.Done(); a.finish() }()
	}
	wg.Wait()
	h.wg.Wait()
	for _, a := range all {
		a.waitClosed() // after the requests that held it open
	}
	h.mu.Lock()
	errs := h.closeErrs
	h.mu.Unlock()
	if h.lock != nil {
		errs = append(errs, h.lock.Release())
	}
	if h.fleet != nil {
		errs = append(errs, h.fleet.close())
	}
	return errors.Join(errs...)
}

// meta is what the host keeps of an agent: in its home, in agent.json, or in a fleet, in the
// registry (see readMeta).
type meta struct {
	ID    string   `json:"id"`
	Goal  string   `json:"goal,omitempty"`
	Model string   `json:"model,omitempty"`
	Mode  string   `json:"mode,omitempty"`
	Tools []string `json:"tools,omitempty"`
	// Approvals is the agent's approval policy (hooks.Approvals), when it has one.
	Approvals *hooks.Policy `json:"approvals,omitempty"`
	// Budget is every run's budget (nodes.WithBudget), unless the run was given its own.
	Budget  nodes.Budget `json:"budget,omitzero"`
	Run     string       `json:"run,omitempty"`
	Status  string       `json:"status"`
	Error   string       `json:"error,omitempty"`
	Output  string       `json:"output,omitempty"`
	Created time.Time    `json:"created"`
	Updated time.Time    `json:"updated"`
	// Nodes and Workers count the board of run Counted as it ended: the summary of an agent at
	// rest reads no board.
	Counted string `json:"counted,omitempty"`
	Nodes   int    `json:"nodes,omitempty"`
	Workers int    `json:"workers,omitempty"`
	Stage   int    `json:"stage,omitempty"`
	// Deleted marks an agent DELETE forgot: its files stay, and the host does not open it
	// again (nor resume its run). A fleet's registry says it too (and is what the replicas read).
	Deleted bool `json:"deleted,omitempty"`
}

const metaFile = "agent.json"

// readMeta reads the meta of agent id: from its agent.json, or in a fleet, from the registry,
// which the replicas share, whatever their folders (an agent of a fleet whose registry kept no
// meta yet, made when the replicas shared their folder, has its agent.json read until the
// registry has its meta). fs.ErrNotExist when there is none.
func (h *Host) readMeta(id string) (meta, error) {
	if h.fleet != nil {
		m, err := h.fleet.meta(id)
		if !errors.Is(err, fs.ErrNotExist) {
			return m, err
		}
	}
	var m meta
	err := workspace.ReadJSON(filepath.Join(h.agentDir(id), metaFile), &m)
	return m, err
}

// squadOptions returns the options of an agent's squad.
func (h *Host) squadOptions(a *Agent, m meta) []nodes.Option {
	id := a.id
	opts := []nodes.Option{nodes.WithLogger(h.cfg.logger.With("agent", id))}
	if h.cfg.squadOpts != nil {
		opts = append(opts, h.cfg.squadOpts(id)...)
	}
	if m.Model != "" {
		opts = append(opts, nodes.WithModel(m.Model), nodes.WithCoordinatorModel(m.Model))
	}
	if m.Mode == string(nodes.Infinite) {
		opts = append(opts, nodes.WithMode(nodes.Infinite))
	}
	if m.Budget != (nodes.Budget{}) {
		opts = append(opts, nodes.WithBudget(m.Budget))
	}
	if len(m.Tools) > 0 {
		opts = append(opts, nodes.WithTools(m.Tools...))
	}
	if m.Approvals != nil {
		opts = append(opts, nodes.WithHooks(hooks.Approvals(*m.Approvals)))
	}
	if w := h.cfg.webhook; w.URL != "" {
		w.Agent = id
		opts = append(opts, nodes.WithWebhook(w))
	}
	if h.fleet != nil {
		// An agent's id names its folder: never empty, never with a "/", which Agent refuses.
		st, err := h.fleet.agentStore(id)
		if err != nil {
			panic(fmt.Sprintf("host: agent %q: %v", id, err))
		}
		opts = append(opts, nodes.WithStore(st))
	}
	return append(opts, nodes.WithHome(h.agentDir(id)), nodes.WithUpSince(a.upSince), nodes.WithRecorder(&a.recs),
		nodes.WithWake(func(runID string) { h.wake(id, runID) }))
}

// wake resumes the run runID of agent id, which one of its triggers came due in while no run was
// in progress: the start of Agent.Resume, unless the human paused the run. It does
// not wait for the run.
func (h *Host) wake(id, runID string) {
	h.mu.Lock()
	a, ok := h.agents[id]
	closed := h.closed
	h.mu.Unlock()
	if !ok || closed {
		return
	}
	a.mu.Lock()
	paused := a.meta.Status == StatusPaused && a.meta.Run == runID
	a.mu.Unlock()
	if paused { // what fired waits in the run for Agent.Resume
		h.cfg.logger.Info("a trigger fired into the paused run, which stays paused", "agent", id, "run", runID)
		return
	}
	h.cfg.logger.Info("a trigger wakes the run", "agent", id, "run", runID)
	if _, err := h.start(a, "", runID, true); err != nil {
		h.cfg.logger.Warn("a trigger could not wake the run", "agent", id, "run", runID, "err", err)
	}
}

// reopen takes up the agent id found under root (or in a fleet's registry), at rest, from its
// meta; nil for an agent that was deleted.
func (h *Host) reopen(id string) (*Agent, error) {
	home := workspace.Home(h.agentDir(id))
	m, err := h.readMeta(id)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		m = meta{Status: StatusIdle}
		if st, err := os.Stat(string(home)); err == nil {
			m.Created, m.Updated = st.ModTime().UTC(), st.ModTime().UTC()
		}
		if runs, _ := home.Runs(); len(runs) > 0 {
			m.Run = runs[len(runs)-1]
		}
	case err != nil:
		return nil, err
	case m.Deleted:
		return nil, nil
	}
	m.ID = id
	// In a fleet, the replica that holds the agent says whether its run is in progress.
	crashed := h.fleet == nil && (m.Status == StatusWorking || m.Status == StatusWaiting || m.Status == StatusQueued)
	switch {
	case crashed:
		m.Status = StatusInterrupted // the host stopped without pausing it (a crash): it can be resumed
	case m.Status == "":
		m.Status = StatusIdle
	}
	a := h.newAgent(id, m)
	if crashed {
		a.log.Info("the run was in progress when the host stopped", "run", m.Run)
		a.save()
	}
	return a, nil
}

// damagedAgent stands for agent id, whose files could not be opened (err), unless its meta
// says it was deleted.
func (h *Host) damagedAgent(id string, err error) *Agent {
	m, merr := h.readMeta(id)
	if merr == nil && m.Deleted {
		return nil
	}
	m.ID = id
	a := h.newAgent(id, m)
	a.markDamaged(err)
	return a
}

// closed returns a closed channel: the ready of an agent that is ready from the start.
func closed() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}

// save writes the agent's meta, logging a failure.
func (a *Agent) save() {
	if err := a.write(); err != nil {
		a.log.Error("cannot save the agent's state", "file", metaFile, "err", err)
	}
}

// write writes the agent's meta as it is now: to agent.json, or in a fleet, to the registry
// (see readMeta). The caller does not hold a.mu, so that nothing that reads the agent waits for
// the disk. Writes are made one at a time, each of the meta as it is when its turn comes: the
// file ends with the latest.
func (a *Agent) write() error {
	a.saveMu.Lock()
	defer a.saveMu.Unlock()
	a.mu.Lock()
	m := a.meta
	a.mu.Unlock()
	if f := a.host.fleet; f != nil {
		return f.setMeta(a.id, m)
	}
	return writeMeta(filepath.Join(string(a.home), metaFile), m)
}

// writeMeta writes an agent.json: a variable, so that a test can make the disk fail.
var writeMeta = workspace.WriteJSON

// errGone is start's refusal for an agent deleted meanwhile.
var errGone = mark(ErrNotFound, errors.New("the agent was deleted"))

// start starts a run in the background: a new one toward goal (with id runID, or a new id when
// it is empty), or, with resume, the run runID. A run to resume whose folder was never made
// (the host stopped before the squad began it) begins anew toward the agent's goal. The run
// holds the agent's squad open while it lasts: the squad open now, if it is (a trigger's firing
// woke the run), else one it opens once it has its place among the runs in progress. It returns
// the agent's meta as the run started ("working" or "queued"): the run may have ended since.
func (h *Host) start(a *Agent, goal, runID string, resume bool) (meta, error) {
	return h.startWith(a, goal, runID, resume, nil)
}

// launch begins a run of a squad other than by Run or Resume (Squad.Fork).
type launch func(ctx context.Context, sq *nodes.Squad) (*nodes.Run, error)

// startWith is start; a run it begins with begin, when it is set.
func (h *Host) startWith(a *Agent, goal, runID string, resume bool, begin launch) (meta, error) {
	if err := a.hold(); err != nil { // in a fleet, only the replica holding the agent runs it
		return meta{}, err
	}
	started, err := h.startHeld(a, goal, runID, resume, begin)
	if err != nil {
		a.unhold()
		return meta{}, err
	}
	a.save()
	return started, nil
}

// startHeld is start, once the agent's lease is held; the run lets it go when it ends.
func (h *Host) startHeld(a *Agent, goal, runID string, resume bool, begin launch) (meta, error) {
	// What the agent's runs are is asked before a.mu, which readers of the agent take: in a fleet
	// it is a query of the database. Two starts that race get one id; the second finds the first
	// running.
	id, began := runID, true
	var err error
	switch {
	case id == "":
		if id, err = a.newRunID(); err != nil {
			return meta{}, err
		}
	case resume:
		if began, err = a.hasRun(id); err != nil {
			began = true // not known to be unbegun: resumed, and the squad says what is wrong
		}
	}
	if h.cfg.record && !resume && begin == nil {
		a.recs.Record(id, a.cassette(id))
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.damaged != "" {
		return meta{}, fmt.Errorf("%w: %s", ErrDamaged, a.damaged)
	}
	if a.gone {
		return meta{}, errGone
	}
	if a.running {
		return meta{}, ErrBusy
	}
	if resume && a.unbegun(id, began) {
		goal, resume = a.meta.Goal, false
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	a.running, a.done, a.cancel, a.ended, a.pausing = true, done, cancel, nil, false
	a.starts++
	a.meta.Run, a.meta.Status, a.meta.Error, a.meta.Output = id, StatusWorking, "", ""
	a.meta.Counted, a.meta.Nodes, a.meta.Workers, a.meta.Stage = "", 0, 0, 0
	if goal != "" {
		a.meta.Goal = goal
	}
	queued := false
	select {
	case h.slots <- struct{}{}:
	default:
		a.meta.Status, queued = StatusQueued, true
	}
	var sq *nodes.Squad
	if !queued && a.squad != nil {
		sq = a.squad
		a.refs++
	}
	a.meta.Updated = a.now().UTC()
	started := a.meta
	again := a.meta.Goal // to start a run again that a stop cut short before it began
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		defer close(done)
		defer a.unhold()
		defer cancel()
		a.markRun(id) // a database write: not under a.mu
		var res nodes.Result
		var err error
		if queued {
			err = h.wait(ctx, a)
		}
		if err == nil {
			defer func() { <-h.slots }()
		}
		if err == nil && sq == nil {
			sq, err = h.open(ctx, a)
		}
		switch {
		case err != nil:
		case begin != nil:
			var run *nodes.Run
			if run, err = begin(ctx, sq); err == nil {
				res, err = run.Wait()
			}
		case resume:
			var run *nodes.Run
			run, err = sq.Resume(ctx, id)
			if errors.Is(err, nodes.ErrNotStarted) && again != "" {
				run, err = sq.Start(ctx, again, nodes.WithRunID(id))
			}
			if err == nil {
				res, err = run.Wait()
			}
		default:
			res, err = sq.Run(ctx, goal, nodes.WithRunID(id))
		}
		if sq != nil {
			if rerr := a.recs.Finish(sq, id, res, err); rerr != nil {
				a.log.Error("the run's recording failed", "run", id, "err", rerr)
			}
		}
		a.mu.Lock()
		a.running = false
		lost := a.lost()
		switch {
		case lost: // another replica may be resuming it: it writes the agent's files now
			a.log.Info("run stopped: the agent's lease was lost", "run", id)
		case errors.Is(err, ErrDamaged):
		case err == nil && res.Finished:
			a.meta.Status, a.meta.Output = StatusComplete, res.Output
			a.log.Info("run completed", "run", id)
		case errors.Is(err, nodes.ErrOverBudget):
			a.meta.Status, a.meta.Error = StatusOverBudget, failure(a.id, err)
			a.log.Info("run paused over its budget", "run", id, "err", err)
		case (err == nil || errors.Is(err, nodes.ErrInterrupted) || errors.Is(err, context.Canceled)) && a.pausing:
			a.meta.Status = StatusPaused
			a.log.Info("run paused", "run", id)
		case err == nil, errors.Is(err, nodes.ErrInterrupted), ctx.Err() != nil && errors.Is(err, context.Canceled):
			a.meta.Status = StatusInterrupted
			a.log.Info("run interrupted", "run", id)
		default:
			a.meta.Status, a.meta.Error = StatusFailed, failure(a.id, err)
			a.log.Error("run failed", "run", id, "err", err)
		}
		if err == nil {
			a.meta.Counted, a.meta.Nodes, a.meta.Workers, a.meta.Stage = id, len(res.Board.Nodes), len(res.Board.Workers), res.Board.Stage
		}
		save := !errors.Is(err, ErrDamaged) && !lost
		if save {
			a.meta.Updated = a.now().UTC()
		}
		handover := a.meta.Status == StatusInterrupted && h.ctx.Err() != nil // the host closes: another replica resumes it
		a.mu.Unlock()
		if save {
			a.save()
		}
		if !lost && !handover {
			a.markRun("")
		}
		if sq != nil {
			a.release() // the run's events are all logged: its squad closes, unless something else holds it
		}
	}()
	return started, nil
}

// open opens the squad of a run of a, once its files are checked; ctx's error if ctx ended
// (the host closes), ErrDamaged if the files are damaged.
func (h *Host) open(ctx context.Context, a *Agent) (*nodes.Squad, error) {
	a.check()
	if msg := a.damage(); msg != "" {
		return nil, fmt.Errorf("%w: %s", ErrDamaged, msg)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return a.acquireChecked()
}

// wait waits, for a queued run of a, until a place among the runs in progress frees, and takes
// it; it returns ctx's error if ctx ends first.
func (h *Host) wait(ctx context.Context, a *Agent) error {
	select {
	case h.slots <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	a.mu.Lock()
	a.meta.Status, a.meta.Updated = StatusWorking, a.now().UTC()
	a.mu.Unlock()
	a.save()
	return nil
}

// unbegun reports whether run id, which began or not (hasRun), is the agent's last run and was
// never begun: the host recorded it, with its goal, but stopped before the squad began it. The
// caller holds a.mu.
func (a *Agent) unbegun(id string, began bool) bool {
	return !began && a.meta.Run == id && a.meta.Goal != ""
}

// resumable reports whether the agent has a run id to resume: one that began, or its last run
// never begun.
func (a *Agent) resumable(id string) bool {
	if has, err := a.hasRun(id); err != nil || has {
		return has
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.unbegun(id, false)
}

// hasRun reports whether the agent has run id: its folder (or anything in its place), or in a
// fleet, whose replicas may not share their folders, a run begun in the agent's store.
func (a *Agent) hasRun(id string) (bool, error) {
	_, err := os.Lstat(string(a.home.Run(id)))
	switch {
	case err == nil:
		return true, nil
	case !errors.Is(err, fs.ErrNotExist):
		return false, err
	case a.host.fleet != nil:
		return a.files.Began(id)
	}
	return false, nil
}

// maxRunsASecond bounds the runs of an agent newRunID gives ids to in one second.
const maxRunsASecond = 1000

// newRunID returns an id for a new run, from the time, not yet used. It fails when the agent's runs cannot be looked at (runs/ is a file, say, or cannot be read).
func (a *Agent) newRunID() (string, error) {
	base := a.now().UTC().Format("20060102-150405")
	id := base
	for i := 2; i <= maxRunsASecond; i++ {
		has, err := a.hasRun(id)
		if err != nil {
			return "", fmt.Errorf("cannot choose the new run's id: %w", err)
		}
		if !has {
			return id, nil
		}
		id = fmt.Sprintf("%s-%d", base, i)
	}
	return "", fmt.Errorf("cannot choose the new run's id: %d runs began in the second %s", maxRunsASecond, base)
}

// Pause pauses the agent's run in progress, as the host's Close does, and waits for it to
// return (or ctx to end): the run is "paused" until [Agent.Resume] continues it. nodes.ErrNoRun
// when no run is in progress.
func (a *Agent) Pause(ctx context.Context) error {
	a.mu.Lock()
	if !a.running {
		a.mu.Unlock()
		return nodes.ErrNoRun
	}
	a.pausing = true
	done, cancel := a.done, a.cancel
	a.mu.Unlock()
	cancel()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// finish pauses the agent's run, if one is in progress (its context ends: the run is
// interrupted, and can be resumed), waits for it, and refuses further runs and triggers.
func (a *Agent) finish() {
	a.mu.Lock()
	a.gone = true
	a.alarm.Set(a.id, time.Time{})
	running, done, cancel := a.running, a.done, a.cancel
	a.mu.Unlock()
	if !running {
		return
	}
	cancel()
	<-done
}

// scan follows the agent's events, for the coordinator's question, what a stalled run waits on
// and the time of the last event. While the agent works, it reads the events logged since the
// last scan (all of them the first time, for a question asked before a restart); at rest, only
// the last event, once each time the squad has closed: listing many agents at rest costs no
// reading of their histories.
func (a *Agent) scan() {
	a.scanMu.Lock()
	defer a.scanMu.Unlock()
	a.mu.Lock()
	rest := !a.running && a.squad == nil && a.busy == nil
	moved := a.moved
	a.mu.Unlock()
	if rest {
		if a.restSeen == moved {
			return // nothing was logged since
		}
		e, ok, err := a.files.LastEvent()
		if err != nil {
			return
		}
		a.restSeen = moved
		if ok {
			a.saw(e)
		}
		return
	}
	a.restSeen = nil
	evs, _ := a.Events(a.scanned, 0)
	for _, e := range evs {
		a.scanned = e.Seq
		a.saw(e)
		switch {
		case e.Type == eventlog.HumanQuestion && e.Worker == bus.Coordinator:
			a.asking, a.approval = e.Text, nil
			if e.Decode(&a.approval) != nil {
				a.approval = nil
			}
		case e.Type == eventlog.HumanResponse && e.Worker == bus.Coordinator,
			e.Type == eventlog.AgentStarted, e.Type == eventlog.AgentCompleted:
			a.asking, a.approval = "", nil
		}
	}
}

// saw takes e, the agent's latest event, for the last event's time and what a stalled run
// waits on; the caller holds a.scanMu.
func (a *Agent) saw(e eventlog.Event) {
	if e.Time.After(a.lastTime) {
		a.lastTime = e.Time
	}
	if e.Type == eventlog.AgentWaiting {
		a.stalled = e.Text
	} else {
		a.stalled = ""
	}
}

// Board returns the board of the run in progress, or the last run's read from its folder, and
// the run's id ("" when the agent has no run yet).
func (a *Agent) Board() (nodes.Snapshot, string, error) {
	a.mu.Lock()
	run := a.meta.Run
	a.mu.Unlock()
	if sq := a.borrow(); sq != nil {
		b, err := nodes.Snapshot{}, nodes.ErrNoRun
		if cur := sq.Current(); cur != nil {
			b, err = cur.Board()
		}
		a.release()
		if err == nil {
			return b, run, nil
		}
	}
	if run == "" {
		return nodes.Snapshot{}, "", nil
	}
	if a.host.fleet == nil { // a fleet's boards are in its database, whatever the replicas' folders
		root, err := a.OpenRun(run) // not through a link
		if errors.Is(err, fs.ErrNotExist) {
			return nodes.Snapshot{}, run, nil
		}
		if err != nil {
			return nodes.Snapshot{}, run, err
		}
		root.Close()
	}
	b, err := a.files.Board(run)
	return b, run, err
}

// summaryBoard returns the board for a summary: the run's in progress, else the last run's,
// read once and kept until a run starts (a summary of every agent is cheap).
func (a *Agent) summaryBoard(running bool) nodes.Snapshot {
	if running {
		b, _, _ := a.Board()
		return b
	}
	a.mu.Lock()
	ended, starts := a.ended, a.starts
	a.mu.Unlock()
	if ended != nil {
		return *ended
	}
	b, _, err := a.Board()
	if err == nil {
		a.mu.Lock()
		if !a.running && a.starts == starts {
			a.ended = &b
		}
		a.mu.Unlock()
	}
	return b
}

// waiting returns who waits for the human's answer on the board, and the question, with the
// tool call it asks to approve if it does: a worker, or the coordinator; "" when no one does.
func (a *Agent) waiting(b nodes.Snapshot) (who, question string, approval *hooks.Approval) {
	for _, n := range b.Nodes {
		if n.Status == nodes.NodeWaiting && n.Question != "" && n.Worker != "" {
			return n.Worker, n.Question, n.Approval
		}
	}
	for _, w := range b.Workers {
		if w.Status == nodes.WorkerWaiting {
			return w.ID, "", nil
		}
	}
	a.scanMu.Lock()
	defer a.scanMu.Unlock()
	if a.asking != "" {
		return bus.Coordinator, a.asking, a.approval
	}
	return "", "", nil
}

// Summary describes an agent (and is what GET /agents/{id} of package server answers).
type Summary struct {
	ID string `json:"id"`
	// Status is "idle", "working", "waiting_for_human", "paused" (Agent.Pause paused the last
	// run: Agent.Resume continues it), "interrupted" (the last run was paused before it
	// finished, by the host's Close or a crash: Agent.Resume continues it, and a host started
	// again on the root does so by itself), "over_budget" (the last run reached a limit of its
	// budget: Agent.SetBudget raises it, Agent.Resume continues the run), "completed", "failed",
	// "queued" or "damaged".
	Status string `json:"status"`
	// Run is the id of the run in progress, or of the last run.
	Run   string `json:"run,omitempty"`
	Goal  string `json:"goal,omitempty"`
	Model string `json:"model,omitempty"`
	// Mode is "finite" or "infinite".
	Mode string `json:"mode"`
	// Tools are the built-in tools the agent's workers may use; empty: all of them.
	Tools   []string `json:"tools,omitempty"`
	Nodes   int      `json:"nodes"`
	Workers int      `json:"workers"`
	// Stage is the current stage of the run in progress, or the last stage of the last run (0
	// before a run began); the board (GET /agents/{id}/board) lists every stage and its nodes.
	Stage int `json:"stage"`
	// WaitingFor names who waits for the human's answer (a worker's id, or "coordinator"),
	// and Question what was asked, while the status is waiting_for_human.
	WaitingFor string `json:"waiting_for,omitempty"`
	Question   string `json:"question,omitempty"`
	// Approval, when the question asks the human to approve a tool call, is the call: the
	// tool, its arguments and who calls (see nodes.WithHooks).
	Approval *hooks.Approval `json:"approval,omitempty"`
	// Stalled says what the run waits on when nothing moved in it for a while (the text of
	// its latest agent.waiting event, until another event comes).
	Stalled string `json:"stalled,omitempty"`
	// Error is why the last run failed; Output is the last run's output.
	Error   string    `json:"error,omitempty"`
	Output  string    `json:"output,omitempty"`
	Created time.Time `json:"created"`
	Updated time.Time `json:"updated"`
}

// summary describes the agent.
func (a *Agent) summary() Summary {
	select {
	case <-a.ready:
	default: // being set up
		a.mu.Lock()
		defer a.mu.Unlock()
		return Summary{ID: a.id, Status: a.meta.Status, Run: a.meta.Run, Goal: a.meta.Goal, Model: a.meta.Model, Tools: a.meta.Tools, Error: a.meta.Error,
			Mode: cmp.Or(a.meta.Mode, string(nodes.Finite)), Created: a.meta.Created, Updated: a.meta.Updated}
	}
	held := a.held() // always, without a fleet
	if !held {
		a.reload() // as the replica holding it wrote it
	}
	a.check()
	if msg := a.damage(); msg != "" {
		a.mu.Lock()
		defer a.mu.Unlock()
		return Summary{ID: a.id, Status: a.meta.Status, Error: msg, Goal: a.meta.Goal, Run: a.meta.Run, Model: a.meta.Model, Tools: a.meta.Tools,
			Mode: cmp.Or(a.meta.Mode, string(nodes.Finite)), Created: a.meta.Created, Updated: a.meta.Updated}
	}
	a.scan()
	a.mu.Lock()
	m, running := a.meta, a.running
	a.mu.Unlock()
	// A run in progress here, or in the replica of the fleet that holds the agent: its board is
	// read as it is now.
	return a.describe(m, running || !held && (m.Status == StatusWorking || m.Status == StatusWaiting))
}

// describe is the summary of the agent whose meta is m, with its run in progress (live) or not.
func (a *Agent) describe(m meta, live bool) Summary {
	sum := Summary{ID: a.id, Status: m.Status, Run: m.Run, Goal: m.Goal, Model: m.Model, Mode: m.Mode, Tools: m.Tools,
		Error: m.Error, Output: m.Output, Created: m.Created, Updated: m.Updated}
	if sum.Mode == "" {
		sum.Mode = string(nodes.Finite)
	}
	if sum.Status == "" {
		sum.Status = StatusIdle
	}
	var b nodes.Snapshot
	if !live && m.Run != "" && m.Counted == m.Run {
		sum.Nodes, sum.Workers, sum.Stage = m.Nodes, m.Workers, m.Stage
	} else {
		b = a.summaryBoard(live)
		sum.Nodes, sum.Workers, sum.Stage = len(b.Nodes), len(b.Workers), b.Stage
	}
	if live && m.Status != StatusQueued {
		sum.Status = StatusWorking
		if who, q, ap := a.waiting(b); who != "" {
			sum.Status, sum.WaitingFor, sum.Question, sum.Approval = StatusWaiting, who, q, ap
		}
	}
	a.scanMu.Lock()
	if a.lastTime.After(sum.Updated) {
		sum.Updated = a.lastTime.UTC()
	}
	sum.Stalled = a.stalled
	a.scanMu.Unlock()
	return sum
}

// newAgentID returns a fresh agent id.
func newAgentID() string {
	b := make([]byte, 5)
	_, _ = rand.Read(b)
	return "agent-" + hex.EncodeToString(b)
}

// A CreateOption configures an agent Create makes.
type CreateOption func(*meta)

// WithAgentBudget gives every run of the agent budget b (see nodes.Budget), unless
// Agent.SetBudget gives a run its own.
func WithAgentBudget(b nodes.Budget) CreateOption { return func(m *meta) { m.Budget = b } }

// WithAgentApprovals holds the tool calls policy p covers for the human's approval, in every run
// of the agent (nodes.WithHooks(hooks.Approvals(p)), beside the hooks of the squad's options).
func WithAgentApprovals(p hooks.Policy) CreateOption { return func(m *meta) { m.Approvals = &p } }

// WithAgentTools makes tools the built-in tools the agent's workers may use (nodes.WithTools;
// by default all of them).
func WithAgentTools(tools ...string) CreateOption { return func(m *meta) { m.Tools = tools } }

// Create creates agent id (a new id when empty), and starts its first run toward goal; model,
// if not empty, is its squad's model (nodes.WithModel), and mode is nodes.Finite (the default)
// or nodes.Infinite; opts give it a budget (WithAgentBudget), its workers' tools
// (WithAgentTools) or an approval policy (WithAgentApprovals). It returns the agent's summary as the run started. The agent is listed at once,
// "working"; its squad is set up in the background, so that neither this call nor the host
// waits for it: [Host.Agent] waits until it is ready, and its summary is served meanwhile.
func (h *Host) Create(id, goal, model string, mode nodes.Mode, opts ...CreateOption) (Summary, error) {
	c := meta{ID: id, Goal: goal, Model: model, Mode: string(mode)}
	for _, o := range opts {
		o(&c)
	}
	return h.create(c, nil)
}

// create is Create, of the agent c describes. With fork set, the agent's folder is the one fork
// makes (returning the launch that begins the run of its meta), and its first run is that one.
func (h *Host) create(c meta, fork func(a *Agent) (launch, error)) (Summary, error) {
	id, goal := c.ID, c.Goal
	if err := checkNew(id, goal, nodes.Mode(c.Mode), c.Tools); err != nil {
		return Summary{}, mark(ErrInvalid, err)
	}
	if err := c.Budget.Check(); err != nil {
		return Summary{}, mark(ErrInvalid, err)
	}
	if c.Approvals != nil {
		if err := c.Approvals.Check(); err != nil {
			return Summary{}, mark(ErrInvalid, fmt.Errorf("approvals: %w", err))
		}
	}
	a, err := h.add(c)
	if err != nil {
		return Summary{}, err
	}
	undo := func() { // the agent is not made
		h.mu.Lock()
		delete(h.agents, a.id)
		h.mu.Unlock()
		h.wg.Done()
	}
	if h.fleet != nil {
		ok, err := h.fleet.register(a.id)
		switch {
		case err != nil:
			err = mark(ErrUnavailable, err)
		case !ok:
			err = mark(ErrExists, fmt.Errorf("agent %q already exists", a.id))
		}
		if err != nil {
			undo()
			return Summary{}, err
		}
	}
	// Held from the answer on: the other replicas forward the requests on its run here. A new
	// agent's lease is free; should taking it fail, setUp fails the agent.
	holdErr := a.hold()
	// Before the answer, agent.json: a host killed now finds the agent, and starts its run.
	made := false
	var begin launch
	err = os.MkdirAll(h.agentsDir(), 0o755)
	if err == nil {
		if fork != nil {
			begin, err = fork(a) // it makes the folder only when it has it all
		} else {
			err = os.Mkdir(string(a.home), 0o755)
		}
		if errors.Is(err, fs.ErrExist) { // since add looked: another's, not to be removed
			err = mark(ErrExists, errors.New("already exists (its folder was made meanwhile)"))
		}
		made = err == nil
	}
	if err == nil {
		err = a.write()
	}
	if err != nil { // nothing is left behind: no folder, no lease, no row in a fleet's registry
		if ioFailure(err) {
			err = mark(ErrUnavailable, fmt.Errorf("%w (an I/O failure: nothing was made; try again once the disk is fixed)", err))
		}
		if made {
			err = errors.Join(err, os.RemoveAll(string(a.home)))
		}
		if holdErr == nil {
			a.unhold()
		}
		if h.fleet != nil {
			err = errors.Join(err, h.fleet.unregister(a.id))
		}
		undo()
		return Summary{}, fmt.Errorf("agent %q: %w", a.id, err)
	}
	started := a.summary() // as written: the run may have ended by the time the answer is
	go h.setUp(a, goal, holdErr, begin)
	return started, nil
}

// checkNew checks what Create is given.
func checkNew(id, goal string, mode nodes.Mode, tools []string) error {
	if id != "" {
		if err := workspace.ValidID(id); err != nil {
			return fmt.Errorf("bad agent id: %s", strings.TrimPrefix(err.Error(), "workspace: "))
		}
	}
	if strings.TrimSpace(goal) == "" {
		return errors.New("the goal is blank")
	}
	switch mode {
	case "", nodes.Finite, nodes.Infinite:
	default:
		return fmt.Errorf("bad mode %q: want %q or %q", mode, nodes.Finite, nodes.Infinite)
	}
	return nodes.CheckTools(tools)
}

// add adds the agent m describes (a new id when m.ID is empty) to the host, not yet set up, and
// counts its setUp in h.wg.
func (h *Host) add(m meta) (*Agent, error) {
	id := m.ID
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, ErrClosed
	}
	if id == "" {
		for id = newAgentID(); h.agents[id] != nil; id = newAgentID() {
		}
	}
	if _, ok := h.agents[id]; ok {
		return nil, mark(ErrExists, fmt.Errorf("agent %q already exists", id))
	}
	dir := h.agentDir(id)
	if _, err := os.Lstat(dir); err == nil {
		return nil, mark(ErrExists, fmt.Errorf("agent %q already exists (its folder %s is there)", id, dir))
	}
	now := h.cfg.now().UTC()
	m.ID, m.Status, m.Created, m.Updated = id, StatusWorking, now, now
	a := h.newAgent(id, m)
	a.ready = make(chan struct{})
	a.checked.Do(func() {}) // its files are the squad's own, from the start
	run, err := a.newRunID()
	if err != nil {
		return nil, fmt.Errorf("agent %q: %w", id, err)
	}
	a.meta.Run = run
	h.agents[id] = a
	h.wg.Add(1)
	return a, nil
}

// setUp makes the squad of an agent Create made, and starts its first run toward goal (with
// begin, the run of its meta, which begin resumes: a fork's). An agent whose squad cannot be made (a model that cannot be resolved, say), or whose lease
// Create could not take (holdErr), is failed with the error.
func (h *Host) setUp(a *Agent, goal string, holdErr error, begin launch) {
	defer h.wg.Done()
	if holdErr == nil {
		defer a.unhold()
	}
	err := holdErr
	if err == nil {
		_, err = a.acquire()
	}
	a.mu.Lock()
	m := a.meta
	if err != nil { // failed, not damaged: a resume tries again
		a.meta.Status, a.meta.Error = StatusFailed, "the agent could not be set up: "+failure(a.id, err)
		a.log.Error("agent not set up", "err", err)
	}
	a.mu.Unlock()
	a.save()
	if err != nil {
		close(a.ready)
		return
	}
	if _, err := h.startWith(a, goal, m.Run, begin != nil, begin); err != nil && !errors.Is(err, errGone) {
		a.mu.Lock()
		a.meta.Status, a.meta.Error = StatusFailed, failure(a.id, err)
		a.mu.Unlock()
		a.save()
	}
	close(a.ready) // once the first run started: a call then finds it in progress
	a.release()    // the run holds the squad now (or, queued, opens it again when its turn comes)
}

// lookup returns the agent id; in a fleet, as the registry has it.
func (h *Host) lookup(id string) (*Agent, error) {
	if h.fleet != nil {
		listed, err := h.fleet.listed(h.ctx, id)
		switch {
		case err != nil:
			return nil, mark(ErrUnavailable, fmt.Errorf("agent %q: the fleet's database: %w", id, err))
		case listed:
			h.takeUp(id)
		default:
			h.mu.Lock()
			if a, ok := h.agents[id]; ok && isClosed(a.ready) {
				delete(h.agents, id) // another replica deleted it
			}
			h.mu.Unlock()
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, ErrClosed
	}
	a, ok := h.agents[id]
	if !ok {
		return nil, notFound(id)
	}
	return a, nil
}

// notFound is the error for agent id, which the host does not have.
func notFound(id string) error { return mark(ErrNotFound, fmt.Errorf("no agent %q", id)) }

// Summary returns the summary of agent id, even while it is being set up, and of a damaged one.
func (h *Host) Summary(id string) (Summary, error) {
	a, err := h.lookup(id)
	if err != nil {
		return Summary{}, err
	}
	return a.summary(), nil
}

// Agent returns agent id, once it is set up (or ctx ends); [ErrDamaged] for an agent whose
// files could not be opened, which serves its summary only.
func (h *Host) Agent(ctx context.Context, id string) (*Agent, error) {
	a, err := h.lookup(id)
	if err != nil {
		return nil, err
	}
	select {
	case <-a.ready:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	a.check()
	if msg := a.damage(); msg != "" {
		a.mu.Lock()
		status := a.meta.Status
		a.mu.Unlock()
		return nil, mark(ErrDamaged, fmt.Errorf("agent %q is %s: %s", a.id, status, msg))
	}
	return a, nil
}

// List returns the summaries of the agents, by creation time then id; in a fleet, as the
// registry has them.
func (h *Host) List() ([]Summary, error) {
	h.mu.Lock()
	closed := h.closed
	h.mu.Unlock()
	if closed {
		return nil, ErrClosed
	}
	if h.fleet != nil {
		if err := h.sync(h.ctx); err != nil {
			h.cfg.logger.Warn("cannot read the fleet's registry", "err", err)
		}
	}
	h.mu.Lock()
	var all []*Agent
	for _, a := range h.agents {
		all = append(all, a)
	}
	h.mu.Unlock()
	slices.SortFunc(all, func(x, y *Agent) int {
		if c := x.created.Compare(y.created); c != 0 {
			return c
		}
		return strings.Compare(x.id, y.id)
	})
	sums := make([]Summary, 0, len(all))
	for _, a := range all {
		sums = append(sums, a.summary())
	}
	return sums, nil
}

// Busy returns the ids of the agents whose last recorded status is a run not ended — working,
// waiting for the human, queued or interrupted —, read from what the host holds in memory, not
// from the agents' files: the agents at rest are not opened.
func (h *Host) Busy() []string {
	h.mu.Lock()
	all := make([]*Agent, 0, len(h.agents))
	for _, a := range h.agents {
		all = append(all, a)
	}
	h.mu.Unlock()
	var ids []string
	for _, a := range all {
		switch status, _ := a.State(); status {
		case StatusWorking, StatusWaiting, StatusQueued, StatusInterrupted:
			ids = append(ids, a.id)
		}
	}
	slices.Sort(ids)
	return ids
}

// Delete forgets agent id, pausing its run (its squad then closes) and ending its event
// streams; its agent.json says so, for the hosts opened later. Its files stay.
func (h *Host) Delete(id string) error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return ErrClosed
	}
	a, ok := h.agents[id]
	if !ok {
		h.mu.Unlock()
		return notFound(id)
	}
	delete(h.agents, id)
	h.mu.Unlock()
	a.finish()
	<-a.ready
	if h.fleet != nil {
		if err := h.fleet.forget(id); err != nil {
			return mark(ErrUnavailable, fmt.Errorf("agent %q: the fleet's database: %w", id, err))
		}
	}
	a.mu.Lock()
	a.meta.Deleted, a.meta.Updated = true, a.now().UTC()
	a.mu.Unlock()
	a.save()
	close(a.forgotten)
	a.waitClosed()
	return nil
}
