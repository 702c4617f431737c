package server

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agiraph/agiraph/internal/rootlock"
	"github.com/agiraph/agiraph/nodes"
	"github.com/agiraph/agiraph/nodes/bus"
	"github.com/agiraph/agiraph/nodes/eventlog"
	"github.com/agiraph/agiraph/nodes/workspace"
)

// The statuses of an agent (see [Summary]).
const (
	StatusIdle        = "idle"              // no run yet (or none the server knows of)
	StatusWorking     = "working"           // a run is in progress
	StatusWaiting     = "waiting_for_human" // a run is in progress and waits for the human's answer
	StatusQueued      = "queued"            // a run waits for a place among the runs in progress (WithMaxRuns)
	StatusInterrupted = "interrupted"       // the last run was paused before it finished: it can be resumed
	StatusPaused      = "paused"            // the human paused the last run (POST /pause): it can be resumed
	StatusComplete    = "completed"         // the last run finished
	StatusFailed      = "failed"            // the last run ended with an error
	StatusDamaged     = "damaged"           // the agent's files could not be opened (Summary.Error says which and why)
)

// Option configures a Server.
type Option func(*config)

type config struct {
	root      string
	squadOpts func(agentID string) []nodes.Option
	now       func() time.Time
	logger    *slog.Logger
	noResume  bool
	token     string
	noAuth    bool
	hosts     []string
	origins   []string
	models    []string
	maxText   int
	maxRuns   int
	addr      string
	// A fleet's (fleet.go).
	pgURL     string
	pgPool    *pgxpool.Pool
	leaseTTL  time.Duration
	heartbeat time.Duration
	watch     time.Duration
	baseURL   string
}

// DefaultMaxText is the default limit on a goal, a message or an answer, in bytes.
const DefaultMaxText = 64 << 10

// DefaultMaxRuns is the default number of runs in progress at once.
const DefaultMaxRuns = 16

// WithRoot sets the folder the server keeps its agents in: each lives in <root>/agents/<id>/
// (default ".agiraph/server").
func WithRoot(dir string) Option { return func(c *config) { c.root = dir } }

// WithSquadOptions gives each agent's squad extra options, chosen by the agent's id: models,
// tick, limits. The server adds the home folder, and the model and mode a request names.
func WithSquadOptions(fn func(agentID string) []nodes.Option) Option {
	return func(c *config) { c.squadOpts = fn }
}

// WithLogger sets where the server, and the agents' squads (nodes.WithLogger), report what
// they cannot answer or log as events: a file they could not write, a run that failed, a
// trigger that could not wake its agent. The default discards it.
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.logger = l } }

// WithToken sets the token every request must carry (as "Authorization: Bearer <token>", or in
// the cookie the login URL sets; see [Server.LoginURL]). Without it the server makes a random
// one on first start and keeps it in <root>/token (mode 0600).
func WithToken(token string) Option { return func(c *config) { c.token = token } }

// WithoutAuth serves requests without a token: for a program that embeds the server behind its
// own authentication. The host, origin and content-type checks still apply.
func WithoutAuth() Option { return func(c *config) { c.noAuth = true } }

// WithAllowedHosts adds to the names a request's Host may have (the loopback names localhost,
// 127.0.0.1 and ::1 are always allowed): the names, or name:port, the server is reached under
// when it is not reached as localhost — behind a proxy, or on another interface. Requests for
// other names are refused, so that a web page cannot rebind its own name to the server.
func WithAllowedHosts(hosts ...string) Option {
	return func(c *config) { c.hosts = append(c.hosts, hosts...) }
}

// WithAllowedOrigins allows cross-origin requests from these origins ("https://app.example"),
// with CORS. Requests from other origins are refused, except those of pages the server serves.
func WithAllowedOrigins(origins ...string) Option {
	return func(c *config) { c.origins = append(c.origins, origins...) }
}

// WithModels sets the models a request may name for its agent (POST /agents "model"). By
// default a request may name none: agents use the models of [WithSquadOptions].
func WithModels(names ...string) Option {
	return func(c *config) { c.models = append(c.models, names...) }
}

// WithMaxText sets the largest goal, message or answer a request may carry, in bytes (default
// [DefaultMaxText]); a larger one is refused with 413.
func WithMaxText(n int) Option { return func(c *config) { c.maxText = n } }

// WithMaxRuns sets how many runs may be in progress at once (default [DefaultMaxRuns]); a run
// started beyond it is "queued" until another ends.
func WithMaxRuns(n int) Option { return func(c *config) { c.maxRuns = n } }

// WithAddr tells the server the address it is served on ("127.0.0.1:8080"): its host is allowed
// (see [WithAllowedHosts]; an unspecified one such as 0.0.0.0 is not), and a second server
// started on the same root names it.
func WithAddr(addr string) Option { return func(c *config) { c.addr = addr } }

// WithoutResume keeps New from resuming the runs that were in progress when the server last
// stopped (see [New]): they stay "interrupted" until POST /agents/{id}/resume. In a fleet
// ([WithPostgres]) it does not apply: a run whose replica is gone is the fleet's to go on with,
// and the replicas' watchdogs resume it.
func WithoutResume() Option { return func(c *config) { c.noResume = true } }

// Server serves the API (its routes are in docs/server.md). It is an http.Handler, safe for
// concurrent use.
type Server struct {
	cfg     config
	mux     *http.ServeMux
	handler http.Handler // the mux behind the guard
	token   string       // "" without auth
	lock    *rootlock.Lock
	fleet   *fleet        // nil unless WithPostgres
	slots   chan struct{} // one per run in progress
	closing chan struct{} // closed by Close: event streams end
	ctx     context.Context
	stop    context.CancelFunc // ends ctx, with Close
	wg      sync.WaitGroup

	mu        sync.Mutex
	agents    map[string]*agent
	closed    bool
	closeErrs []error // met closing squads while the server closes

	alarmMu      sync.Mutex
	alarms       []clockAlarm // one per trigger clock: most often one
	alarmsClosed bool
}

// New returns a server over the agents found under the root folder, and resumes, in the
// background, the runs that were in progress when the server stopped (those it paused when it
// closed, and those a crash left working or waiting for the human), unless [WithoutResume] is
// given. Runs that finished or failed are left as they are. An agent with no run in progress
// costs the server no open file and no goroutine: New reads its agent.json and its triggers,
// and opens its squad only to run it, or when one of its triggers comes due; its other files are
// checked when it is first shown or used.
func New(opts ...Option) (*Server, error) {
	c := config{root: filepath.Join(".agiraph", "server"), now: time.Now, maxText: DefaultMaxText, maxRuns: DefaultMaxRuns}
	for _, o := range opts {
		o(&c)
	}
	if c.logger == nil {
		c.logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{cfg: c, mux: http.NewServeMux(), slots: make(chan struct{}, max(c.maxRuns, 1)), closing: make(chan struct{}),
		agents: map[string]*agent{}}
	s.ctx, s.stop = context.WithCancel(context.Background())
	s.handler = s.guard(http.HandlerFunc(s.serveMux))
	if host, _, err := net.SplitHostPort(c.addr); err == nil && host != "" && !net.ParseIP(strings.Trim(host, "[]")).IsUnspecified() {
		s.cfg.hosts = append(s.cfg.hosts, c.addr)
	}
	fl, err := openFleet(s.ctx, c)
	if err != nil {
		s.stop()
		return nil, err
	}
	s.fleet = fl
	var lock *rootlock.Lock
	if fl == nil { // replicas share their root
		lock, err = rootlock.Acquire(c.root, c.addr)
	}
	switch {
	case errors.Is(err, errors.ErrUnsupported):
		c.logger.Warn("two servers on one root cannot be prevented here", "err", err)
	case errors.Is(err, rootlock.ErrLocked):
		s.stop()
		return nil, fmt.Errorf("server: %w; stop it, or use another root", err)
	case err != nil:
		s.stop()
		return nil, fmt.Errorf("server: %w", err)
	}
	s.lock = lock
	ok := false
	defer func() {
		if !ok {
			_ = s.Close() // the error before is the one to report
		}
	}()
	if err := os.MkdirAll(s.agentsDir(), 0o755); err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	if !c.noAuth {
		tok, err := loadToken(c.root, c.token)
		if err != nil {
			return nil, err
		}
		s.token = tok
	}
	ids, err := s.agentIDs()
	if err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	next := map[*agent]time.Time{}
	for _, id := range ids {
		a, at := s.load(id)
		if a == nil {
			continue
		}
		if !at.IsZero() {
			next[a] = at
		}
		s.agents[a.id] = a
	}
	s.routes()
	ok = true
	for a, at := range next {
		a.alarm.Set(a.id, at)
	}
	if fl != nil {
		s.wg.Add(1)
		go s.watchFleet() // a fleet's runs in progress are resumed by its replicas' watchdogs
	}
	if !c.noResume && fl == nil {
		for _, a := range s.agents {
			a.mu.Lock()
			run, status := a.meta.Run, a.meta.Status
			a.mu.Unlock()
			if status != StatusInterrupted || run == "" {
				continue
			}
			s.cfg.logger.Info("resuming the run in progress when the server stopped", "agent", a.id, "run", run)
			if _, err := s.start(a, "", run, true); err != nil {
				s.cfg.logger.Error("cannot resume run", "agent", a.id, "run", run, "err", err)
			}
		}
	}
	return s, nil
}

func (s *Server) agentsDir() string { return filepath.Join(s.cfg.root, "agents") }

// agentIDs returns the ids of the agents the server takes up: the folders under the root, or a
// fleet's, those of its registry.
func (s *Server) agentIDs() ([]string, error) {
	if s.fleet != nil {
		return s.fleet.ids(s.ctx)
	}
	entries, err := os.ReadDir(s.agentsDir())
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
func (s *Server) load(id string) (*agent, time.Time) {
	if workspace.ValidID(id) != nil {
		return nil, time.Time{}
	}
	a, err := s.reopen(id)
	if err != nil {
		a = s.damagedAgent(id, err)
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
func (s *Server) agentDir(id string) string { return filepath.Join(s.agentsDir(), id) }

// ServeHTTP serves a request of the API.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }

// Close pauses the runs in progress (their contexts end), waits for them to return and for
// the agents' squads to close, and ends the event streams. The runs are "interrupted": a
// server started again on the same root resumes them. The server answers 503 afterwards.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	close(s.closing)
	var all []*agent
	for _, a := range s.agents {
		all = append(all, a)
	}
	s.mu.Unlock()
	s.closeAlarms()
	s.stop()
	var wg sync.WaitGroup
	for _, a := range all {
		wg.Add(1)
		go func() { defer wg.Done(); a.finish() }()
	}
	wg.Wait()
	s.wg.Wait()
	for _, a := range all {
		a.waitClosed() // after the requests that held it open
	}
	s.mu.Lock()
	errs := s.closeErrs
	s.mu.Unlock()
	if s.lock != nil {
		errs = append(errs, s.lock.Release())
	}
	if s.fleet != nil {
		errs = append(errs, s.fleet.close())
	}
	return errors.Join(errs...)
}

// meta is what the server keeps of an agent: in its home, in agent.json, or in a fleet, in the
// registry (see readMeta).
type meta struct {
	ID      string    `json:"id"`
	Goal    string    `json:"goal,omitempty"`
	Model   string    `json:"model,omitempty"`
	Mode    string    `json:"mode,omitempty"`
	Run     string    `json:"run,omitempty"`
	Status  string    `json:"status"`
	Error   string    `json:"error,omitempty"`
	Output  string    `json:"output,omitempty"`
	Created time.Time `json:"created"`
	Updated time.Time `json:"updated"`
	// Nodes and Workers count the board of run Counted as it ended: the summary of an agent at
	// rest reads no board.
	Counted string `json:"counted,omitempty"`
	Nodes   int    `json:"nodes,omitempty"`
	Workers int    `json:"workers,omitempty"`
	// Deleted marks an agent DELETE forgot: its files stay, and the server does not open it
	// again (nor resume its run). A fleet's registry says it too (and is what the replicas read).
	Deleted bool `json:"deleted,omitempty"`
}

const metaFile = "agent.json"

// readMeta reads the meta of agent id: from its agent.json, or in a fleet, from the registry,
// which the replicas share, whatever their folders (an agent of a fleet whose registry kept no
// meta yet, made when the replicas shared their folder, has its agent.json read until the
// registry has its meta). fs.ErrNotExist when there is none.
func (s *Server) readMeta(id string) (meta, error) {
	if s.fleet != nil {
		m, err := s.fleet.meta(id)
		if !errors.Is(err, fs.ErrNotExist) {
			return m, err
		}
	}
	var m meta
	err := workspace.ReadJSON(filepath.Join(s.agentDir(id), metaFile), &m)
	return m, err
}

// squadOptions returns the options of an agent's squad.
func (s *Server) squadOptions(a *agent, m meta) []nodes.Option {
	id := a.id
	opts := []nodes.Option{nodes.WithLogger(s.cfg.logger.With("agent", id))}
	if s.cfg.squadOpts != nil {
		opts = append(opts, s.cfg.squadOpts(id)...)
	}
	if m.Model != "" {
		opts = append(opts, nodes.WithModel(m.Model), nodes.WithCoordinatorModel(m.Model))
	}
	if m.Mode == string(nodes.Infinite) {
		opts = append(opts, nodes.WithMode(nodes.Infinite))
	}
	if s.fleet != nil {
		// An agent's id names its folder: never empty, never with a "/", which Agent refuses.
		st, err := s.fleet.agentStore(id)
		if err != nil {
			panic(fmt.Sprintf("server: agent %q: %v", id, err))
		}
		opts = append(opts, nodes.WithStore(st))
	}
	return append(opts, nodes.WithHome(s.agentDir(id)), nodes.WithUpSince(a.upSince),
		nodes.WithWake(func(runID string) { s.wake(id, runID) }))
}

// wake resumes the run runID of agent id, which one of its triggers came due in while no run was
// in progress: the start of POST /agents/{id}/resume, unless the human paused the run. It does
// not wait for the run.
func (s *Server) wake(id, runID string) {
	s.mu.Lock()
	a, ok := s.agents[id]
	closed := s.closed
	s.mu.Unlock()
	if !ok || closed {
		return
	}
	a.mu.Lock()
	paused := a.meta.Status == StatusPaused && a.meta.Run == runID
	a.mu.Unlock()
	if paused { // what fired waits in the run for POST /resume
		s.cfg.logger.Info("a trigger fired into the paused run, which stays paused", "agent", id, "run", runID)
		return
	}
	s.cfg.logger.Info("a trigger wakes the run", "agent", id, "run", runID)
	if _, err := s.start(a, "", runID, true); err != nil {
		s.cfg.logger.Warn("a trigger could not wake the run", "agent", id, "run", runID, "err", err)
	}
}

// reopen takes up the agent id found under root (or in a fleet's registry), at rest, from its
// meta; nil for an agent that was deleted.
func (s *Server) reopen(id string) (*agent, error) {
	home := workspace.Home(s.agentDir(id))
	m, err := s.readMeta(id)
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
	crashed := s.fleet == nil && (m.Status == StatusWorking || m.Status == StatusWaiting || m.Status == StatusQueued)
	switch {
	case crashed:
		m.Status = StatusInterrupted // the server stopped without pausing it (a crash): it can be resumed
	case m.Status == "":
		m.Status = StatusIdle
	}
	a := s.newAgent(id, m)
	if crashed {
		a.log.Info("the run was in progress when the server stopped", "run", m.Run)
		a.save()
	}
	return a, nil
}

// damagedAgent stands for agent id, whose files could not be opened (err), unless its meta
// says it was deleted.
func (s *Server) damagedAgent(id string, err error) *agent {
	m, merr := s.readMeta(id)
	if merr == nil && m.Deleted {
		return nil
	}
	m.ID = id
	a := s.newAgent(id, m)
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
func (a *agent) save() {
	if err := a.write(); err != nil {
		a.log.Error("cannot save the agent's state", "file", metaFile, "err", err)
	}
}

// write writes the agent's meta as it is now: to agent.json, or in a fleet, to the registry
// (see readMeta). The caller does not hold a.mu, so that nothing that reads the agent waits for
// the disk. Writes are made one at a time, each of the meta as it is when its turn comes: the
// file ends with the latest.
func (a *agent) write() error {
	a.saveMu.Lock()
	defer a.saveMu.Unlock()
	a.mu.Lock()
	m := a.meta
	a.mu.Unlock()
	if f := a.srv.fleet; f != nil {
		return f.setMeta(a.id, m)
	}
	return writeMeta(filepath.Join(string(a.home), metaFile), m)
}

// writeMeta writes an agent.json: a variable, so that a test can make the disk fail.
var writeMeta = workspace.WriteJSON

// errRunning and errGone are start's refusals.
var (
	errRunning = errors.New("a run is already in progress")
	errGone    = errors.New("the agent was deleted")
	errDamaged = errors.New("the agent is damaged")
)

// start starts a run in the background: a new one toward goal (with id runID, or a new id when
// it is empty), or, with resume, the run runID. A run to resume whose folder was never made
// (the server stopped before the squad began it) begins anew toward the agent's goal. The run
// holds the agent's squad open while it lasts: the squad open now, if it is (a trigger's firing
// woke the run), else one it opens once it has its place among the runs in progress. It returns
// the agent's meta as the run started ("working" or "queued"): the run may have ended since.
func (s *Server) start(a *agent, goal, runID string, resume bool) (meta, error) {
	if err := a.hold(); err != nil { // in a fleet, only the replica holding the agent runs it
		return meta{}, err
	}
	started, err := s.startHeld(a, goal, runID, resume)
	if err != nil {
		a.unhold()
		return meta{}, err
	}
	a.save()
	return started, nil
}

// startHeld is start, once the agent's lease is held; the run lets it go when it ends.
func (s *Server) startHeld(a *agent, goal, runID string, resume bool) (meta, error) {
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
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.damaged != "" {
		return meta{}, fmt.Errorf("%w: %s", errDamaged, a.damaged)
	}
	if a.gone {
		return meta{}, errGone
	}
	if a.running {
		return meta{}, errRunning
	}
	if resume && a.unbegun(id, began) {
		goal, resume = a.meta.Goal, false
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	a.running, a.done, a.cancel, a.ended, a.pausing = true, done, cancel, nil, false
	a.starts++
	a.meta.Run, a.meta.Status, a.meta.Error, a.meta.Output = id, StatusWorking, "", ""
	a.meta.Counted, a.meta.Nodes, a.meta.Workers = "", 0, 0
	if goal != "" {
		a.meta.Goal = goal
	}
	queued := false
	select {
	case s.slots <- struct{}{}:
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
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer close(done)
		defer a.unhold()
		defer cancel()
		a.markRun(id) // a database write: not under a.mu
		var res nodes.Result
		var err error
		if queued {
			err = s.wait(ctx, a)
		}
		if err == nil {
			defer func() { <-s.slots }()
		}
		if err == nil && sq == nil {
			sq, err = s.open(ctx, a)
		}
		switch {
		case err != nil:
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
		a.mu.Lock()
		a.running = false
		lost := a.lost()
		switch {
		case lost: // another replica may be resuming it: it writes the agent's files now
			a.log.Info("run stopped: the agent's lease was lost", "run", id)
		case errors.Is(err, errDamaged):
		case err == nil && res.Finished:
			a.meta.Status, a.meta.Output = StatusComplete, res.Output
			a.log.Info("run completed", "run", id)
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
			a.meta.Counted, a.meta.Nodes, a.meta.Workers = id, len(res.Board.Nodes), len(res.Board.Workers)
		}
		save := !errors.Is(err, errDamaged) && !lost
		if save {
			a.meta.Updated = a.now().UTC()
		}
		handover := a.meta.Status == StatusInterrupted && s.ctx.Err() != nil // the server closes: another replica resumes it
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
// (the server closes), errDamaged if the files are damaged.
func (s *Server) open(ctx context.Context, a *agent) (*nodes.Squad, error) {
	a.check()
	if msg := a.damage(); msg != "" {
		return nil, fmt.Errorf("%w: %s", errDamaged, msg)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return a.acquireChecked()
}

// wait waits, for a queued run of a, until a place among the runs in progress frees, and takes
// it; it returns ctx's error if ctx ends first.
func (s *Server) wait(ctx context.Context, a *agent) error {
	select {
	case s.slots <- struct{}{}:
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
// never begun: the server recorded it, with its goal, but stopped before the squad began it. The
// caller holds a.mu.
func (a *agent) unbegun(id string, began bool) bool {
	return !began && a.meta.Run == id && a.meta.Goal != ""
}

// resumable reports whether the agent has a run id to resume: one that began, or its last run
// never begun.
func (a *agent) resumable(id string) bool {
	if has, err := a.hasRun(id); err != nil || has {
		return has
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.unbegun(id, false)
}

// hasRun reports whether the agent has run id: its folder (or anything in its place), or in a
// fleet, whose replicas may not share their folders, a run begun in the agent's store.
func (a *agent) hasRun(id string) (bool, error) {
	_, err := os.Lstat(string(a.home.Run(id)))
	switch {
	case err == nil:
		return true, nil
	case !errors.Is(err, fs.ErrNotExist):
		return false, err
	case a.srv.fleet != nil:
		return a.files.Began(id)
	}
	return false, nil
}

// maxRunsASecond bounds the runs of an agent newRunID gives ids to in one second.
const maxRunsASecond = 1000

// newRunID returns an id for a new run, from the time, not yet used. It fails when the agent's runs cannot be looked at (runs/ is a file, say, or cannot be read).
func (a *agent) newRunID() (string, error) {
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

// pause pauses the agent's run in progress, as the server's Close does, and waits for it to
// return: the run is "paused" until POST /resume continues it. nodes.ErrNoRun when no run is in
// progress.
func (a *agent) pause(ctx context.Context) error {
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
func (a *agent) finish() {
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
func (a *agent) scan() {
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
	a.scanned, _ = a.files.EventsFrom(a.scanned, func(e eventlog.Event) bool {
		a.saw(e)
		switch {
		case e.Type == eventlog.HumanQuestion && e.Worker == bus.Coordinator:
			a.asking = e.Text
		case e.Type == eventlog.HumanResponse && e.Worker == bus.Coordinator,
			e.Type == eventlog.AgentStarted, e.Type == eventlog.AgentCompleted:
			a.asking = ""
		}
		return true
	})
}

// saw takes e, the agent's latest event, for the last event's time and what a stalled run
// waits on; the caller holds a.scanMu.
func (a *agent) saw(e eventlog.Event) {
	if e.Time.After(a.lastTime) {
		a.lastTime = e.Time
	}
	if e.Type == eventlog.AgentWaiting {
		a.stalled = e.Text
	} else {
		a.stalled = ""
	}
}

// board returns the board of the run in progress, or the last run's read from its folder.
func (a *agent) board() (nodes.Snapshot, string, error) {
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
	if a.srv.fleet == nil { // a fleet's boards are in its database, whatever the replicas' folders
		root, err := a.runRoot(run) // not through a link
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
func (a *agent) summaryBoard(running bool) nodes.Snapshot {
	if running {
		b, _, _ := a.board()
		return b
	}
	a.mu.Lock()
	ended, starts := a.ended, a.starts
	a.mu.Unlock()
	if ended != nil {
		return *ended
	}
	b, _, err := a.board()
	if err == nil {
		a.mu.Lock()
		if !a.running && a.starts == starts {
			a.ended = &b
		}
		a.mu.Unlock()
	}
	return b
}

// waiting returns who waits for the human's answer on the board, and the question: a worker,
// or the coordinator; "" when no one does.
func (a *agent) waiting(b nodes.Snapshot) (who, question string) {
	for _, n := range b.Nodes {
		if n.Status == nodes.NodeWaiting && n.Question != "" && n.Worker != "" {
			return n.Worker, n.Question
		}
	}
	for _, w := range b.Workers {
		if w.Status == nodes.WorkerWaiting {
			return w.ID, ""
		}
	}
	a.scanMu.Lock()
	defer a.scanMu.Unlock()
	if a.asking != "" {
		return bus.Coordinator, a.asking
	}
	return "", ""
}

// Summary is what GET /agents/{id} answers about an agent.
type Summary struct {
	ID string `json:"id"`
	// Status is "idle", "working", "waiting_for_human", "paused" (POST /pause paused the last
	// run: POST /resume continues it), "interrupted" (the last run was paused before it
	// finished, by the server's Close or a crash: POST /resume continues it, and a server
	// started again on the root does so by itself), "completed", "failed", "queued" or "damaged".
	Status string `json:"status"`
	// Run is the id of the run in progress, or of the last run.
	Run   string `json:"run,omitempty"`
	Goal  string `json:"goal,omitempty"`
	Model string `json:"model,omitempty"`
	// Mode is "finite" or "infinite".
	Mode    string `json:"mode"`
	Nodes   int    `json:"nodes"`
	Workers int    `json:"workers"`
	// WaitingFor names who waits for the human's answer (a worker's id, or "coordinator"),
	// and Question what was asked, while the status is waiting_for_human.
	WaitingFor string `json:"waiting_for,omitempty"`
	Question   string `json:"question,omitempty"`
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
func (a *agent) summary() Summary {
	select {
	case <-a.ready:
	default: // being set up
		a.mu.Lock()
		defer a.mu.Unlock()
		return Summary{ID: a.id, Status: a.meta.Status, Run: a.meta.Run, Goal: a.meta.Goal, Model: a.meta.Model, Error: a.meta.Error,
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
		return Summary{ID: a.id, Status: a.meta.Status, Error: msg, Goal: a.meta.Goal, Run: a.meta.Run, Model: a.meta.Model,
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
func (a *agent) describe(m meta, live bool) Summary {
	sum := Summary{ID: a.id, Status: m.Status, Run: m.Run, Goal: m.Goal, Model: m.Model, Mode: m.Mode,
		Error: m.Error, Output: m.Output, Created: m.Created, Updated: m.Updated}
	if sum.Mode == "" {
		sum.Mode = string(nodes.Finite)
	}
	if sum.Status == "" {
		sum.Status = StatusIdle
	}
	var b nodes.Snapshot
	if !live && m.Run != "" && m.Counted == m.Run {
		sum.Nodes, sum.Workers = m.Nodes, m.Workers
	} else {
		b = a.summaryBoard(live)
		sum.Nodes, sum.Workers = len(b.Nodes), len(b.Workers)
	}
	if live && m.Status != StatusQueued {
		sum.Status = StatusWorking
		if who, q := a.waiting(b); who != "" {
			sum.Status, sum.WaitingFor, sum.Question = StatusWaiting, who, q
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

// create creates the agent of a POST /agents request, starts its run, and returns the agent's
// summary as it started. The agent is listed at once, "working"; its squad is set up in the
// background (setUp), so that neither this request nor the server waits for it: requests for
// the agent wait until it is ready, and its summary is served meanwhile.
func (s *Server) create(id, goal, model, mode string) (Summary, int, error) {
	a, status, err := s.add(id, goal, model, mode)
	if err != nil {
		return Summary{}, status, err
	}
	undo := func() { // the agent is not made
		s.mu.Lock()
		delete(s.agents, a.id)
		s.mu.Unlock()
		s.wg.Done()
	}
	if s.fleet != nil {
		ok, err := s.fleet.register(a.id)
		if err == nil && !ok {
			status, err = http.StatusConflict, fmt.Errorf("agent %q already exists", a.id)
		}
		if err != nil {
			undo()
			return Summary{}, cmp.Or(status, http.StatusServiceUnavailable), err
		}
	}
	// Held from the answer on: the other replicas forward the requests on its run here. A new
	// agent's lease is free; should taking it fail, setUp fails the agent.
	holdErr := a.hold()
	// Before the answer, agent.json: a server killed now finds the agent, and starts its run.
	made, status := false, http.StatusInternalServerError
	err = os.MkdirAll(s.agentsDir(), 0o755)
	if err == nil {
		err = os.Mkdir(string(a.home), 0o755)
		if errors.Is(err, fs.ErrExist) { // since add looked: another's, not to be removed
			status, err = http.StatusConflict, errors.New("already exists (its folder was made meanwhile)")
		}
		made = err == nil
	}
	if err == nil {
		err = a.write()
	}
	if err != nil { // nothing is left behind: no folder, no lease, no row in a fleet's registry
		if ioFailure(err) {
			status, err = http.StatusServiceUnavailable, fmt.Errorf("%w (an I/O failure: nothing was made; try again once the disk is fixed)", err)
		}
		if made {
			err = errors.Join(err, os.RemoveAll(string(a.home)))
		}
		if holdErr == nil {
			a.unhold()
		}
		if s.fleet != nil {
			err = errors.Join(err, s.fleet.unregister(a.id))
		}
		undo()
		return Summary{}, status, fmt.Errorf("agent %q: %w", a.id, err)
	}
	started := a.summary() // as written: the run may have ended by the time the answer is
	go s.setUp(a, goal, holdErr)
	return started, 0, nil
}

// add adds agent id (a new id when empty) to the server, not yet set up, and counts its setUp
// in s.wg.
func (s *Server) add(id, goal, model, mode string) (*agent, int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, http.StatusServiceUnavailable, errClosed
	}
	if id == "" {
		for id = newAgentID(); s.agents[id] != nil; id = newAgentID() {
		}
	}
	if _, ok := s.agents[id]; ok {
		return nil, http.StatusConflict, fmt.Errorf("agent %q already exists", id)
	}
	dir := s.agentDir(id)
	if _, err := os.Lstat(dir); err == nil {
		return nil, http.StatusConflict, fmt.Errorf("agent %q already exists (its folder %s is there)", id, dir)
	}
	now := s.cfg.now().UTC()
	a := s.newAgent(id, meta{ID: id, Goal: goal, Model: model, Mode: mode, Status: StatusWorking, Created: now, Updated: now})
	a.ready = make(chan struct{})
	a.checked.Do(func() {}) // its files are the squad's own, from the start
	run, err := a.newRunID()
	if err != nil {
		return nil, http.StatusInternalServerError, fmt.Errorf("agent %q: %w", id, err)
	}
	a.meta.Run = run
	s.agents[id] = a
	s.wg.Add(1)
	return a, 0, nil
}

// setUp makes the squad of an agent create made, and starts its first run toward goal. An
// agent whose squad cannot be made (a model that cannot be resolved, say), or whose lease
// create could not take (holdErr), is failed with the error.
func (s *Server) setUp(a *agent, goal string, holdErr error) {
	defer s.wg.Done()
	if holdErr == nil {
		defer a.unhold()
	}
	err := holdErr
	if err == nil {
		_, err = a.acquire()
	}
	a.mu.Lock()
	m := a.meta
	if err != nil { // failed, not damaged: POST /resume tries again
		a.meta.Status, a.meta.Error = StatusFailed, "the agent could not be set up: "+failure(a.id, err)
		a.log.Error("agent not set up", "err", err)
	}
	a.mu.Unlock()
	a.save()
	if err != nil {
		close(a.ready)
		return
	}
	if _, err := s.start(a, goal, m.Run, false); err != nil && !errors.Is(err, errGone) {
		a.mu.Lock()
		a.meta.Status, a.meta.Error = StatusFailed, failure(a.id, err)
		a.mu.Unlock()
		a.save()
	}
	close(a.ready) // once the first run started: a request then finds it in progress
	a.release()    // the run holds the squad now (or, queued, opens it again when its turn comes)
}

var errClosed = errors.New("the server is closed")

// lookup returns the agent id; in a fleet, as the registry has it.
func (s *Server) lookup(id string) (*agent, int, error) {
	if s.fleet != nil {
		listed, err := s.fleet.listed(s.ctx, id)
		switch {
		case err != nil:
			return nil, http.StatusServiceUnavailable, fmt.Errorf("agent %q: the fleet's database: %w", id, err)
		case listed:
			s.takeUp(id)
		default:
			s.mu.Lock()
			if a, ok := s.agents[id]; ok && isClosed(a.ready) {
				delete(s.agents, id) // another replica deleted it
			}
			s.mu.Unlock()
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, http.StatusServiceUnavailable, errClosed
	}
	a, ok := s.agents[id]
	if !ok {
		return nil, http.StatusNotFound, fmt.Errorf("no agent %q", id)
	}
	return a, 0, nil
}

// list returns the agents, by creation time then id; in a fleet, as the registry has them.
func (s *Server) list() []*agent {
	if s.fleet != nil {
		if err := s.sync(s.ctx); err != nil {
			s.cfg.logger.Warn("cannot read the fleet's registry", "err", err)
		}
	}
	s.mu.Lock()
	var all []*agent
	for _, a := range s.agents {
		all = append(all, a)
	}
	s.mu.Unlock()
	slices.SortFunc(all, func(x, y *agent) int {
		if c := x.created.Compare(y.created); c != 0 {
			return c
		}
		return strings.Compare(x.id, y.id)
	})
	return all
}

// remove forgets the agent id, pausing its run (its squad then closes) and ending its event
// streams; its agent.json says so, for the servers opened later.
func (s *Server) remove(id string) (int, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return http.StatusServiceUnavailable, errClosed
	}
	a, ok := s.agents[id]
	if !ok {
		s.mu.Unlock()
		return http.StatusNotFound, fmt.Errorf("no agent %q", id)
	}
	delete(s.agents, id)
	s.mu.Unlock()
	a.finish()
	<-a.ready
	if s.fleet != nil {
		if err := s.fleet.forget(id); err != nil {
			return http.StatusServiceUnavailable, fmt.Errorf("agent %q: the fleet's database: %w", id, err)
		}
	}
	a.mu.Lock()
	a.meta.Deleted, a.meta.Updated = true, a.now().UTC()
	a.mu.Unlock()
	a.save()
	close(a.forgotten)
	a.waitClosed()
	return 0, nil
}
