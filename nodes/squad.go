// Package nodes runs a squad: a coordinator that grows a work board while the run goes on, and
// workers of any runtime that do the work, talk to each other and to a human, and publish.
//
// [New] opens a [Squad] on an agent's home ([WithHome]; [WithModel] for its models), and
// [Squad.Run] runs it toward a goal; [Squad.Start] does so in the background, returning the
// run's handle, a [Run]. A run is a graph whose superstep is a tick (intake, route_frontier,
// dispatch, collect, reconcile_inbox, decide_next; [Mermaid] draws it), and each step commits
// with its checkpoint in the squad's store (package nodes/store). Only the coordinator's finish
// completes a run: [Run.Pause] and a cancelled context pause it, and [Squad.Resume] continues it
// by its id, after a crash too, without redoing finished work.
//
// The tick, workers, messages, memory and triggers are in docs/squad.md; the store in
// docs/store.md.
//
// Nothing here imports the server or runner, which are built on it (internal/layers checks this).
package nodes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agiraph/agiraph/checkpoint"
	"github.com/agiraph/agiraph/hooks"
	"github.com/agiraph/agiraph/internal/rootlock"
	"github.com/agiraph/agiraph/models"
	"github.com/agiraph/agiraph/nodes/eventlog"
	"github.com/agiraph/agiraph/nodes/memory"
	"github.com/agiraph/agiraph/nodes/memory/index"
	"github.com/agiraph/agiraph/nodes/store"
	"github.com/agiraph/agiraph/nodes/store/sqlitestore"
	"github.com/agiraph/agiraph/nodes/triggers"
	"github.com/agiraph/agiraph/nodes/workspace"
	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/runtime"
	"github.com/agiraph/agiraph/runtime/autonomous"
	"github.com/agiraph/agiraph/runtime/claudecode"
	"github.com/agiraph/agiraph/sandbox"
	"github.com/agiraph/agiraph/tools"
	"github.com/agiraph/agiraph/tools/files"
	"github.com/agiraph/agiraph/tools/mcp"
)

// Contract bounds the work of a stage.
type Contract struct {
	// MaxIterations bounds each harnessed assignment's model turns (default 30).
	MaxIterations int
	// Timeout bounds each assignment (0: none).
	Timeout time.Duration
	// Policy says when a stage is complete: "all" of its nodes done (the default), a
	// "majority", or "any" one.
	Policy string
}

// Mode says whether a run ends when the coordinator finishes.
type Mode string

// The modes.
const (
	// Finite runs end when the coordinator calls finish.
	Finite Mode = "finite"
	// Infinite runs work in cycles: finish ends a cycle, and the agent sleeps until a trigger or
	// the human wakes it for the next. They end when paused (Run.Pause) or their context ends.
	Infinite Mode = "infinite"
)

// Option configures a Squad.
type Option func(*config)

type config struct {
	mcp           map[string]mcp.Server // WithMCPServers, by name
	coordMCP      []mcp.Server          // WithCoordinatorMCP
	home          string
	model         string
	coordModel    string
	roleModels    map[string]string
	resolve       func(name string) (providers.Model, error)
	modelOpts     []models.Option
	embedder      string // WithEmbedder
	store         store.Store
	maxConcurrent int
	tick          time.Duration
	stall         time.Duration
	contract      Contract
	budget        Budget
	maxAttempts   int
	tools         func(w Worker, n Node) []tools.Tool
	toolNames     []string
	answerTimeout time.Duration
	webhook       Webhook
	sandbox       func(w Worker, n Node, scope sandbox.Policy) sandbox.Policy
	claude        []claudecode.Option
	auto          []autonomous.Option
	runtimes      map[string]func(w Worker) (runtime.Runtime, error)
	now           func() time.Time
	names         []string
	mode          Mode
	contextLimit  int
	triggerClock  triggers.Clock
	upSince       time.Time
	coordTools    []tools.Tool
	outputSchema  json.RawMessage
	logger        *slog.Logger
	wake          func(runID string)
	recorder      Recorder     // WithRecorder
	hooks         []hooks.Hook // WithHooks
	eventsFile    bool         // WithEventsFile
}

// WithHome sets the agent's home folder (default ".agiraph/agent").
func WithHome(dir string) Option { return func(c *config) { c.home = dir } }

// WithModel sets the model of the coordinator and of harnessed workers that name none, as
// "provider/model" (default "anthropic/claude-sonnet-4-5").
func WithModel(name string) Option { return func(c *config) { c.model = name } }

// WithCoordinatorModel sets the coordinator's model, when it differs from WithModel's.
func WithCoordinatorModel(name string) Option { return func(c *config) { c.coordModel = name } }

// WithRoleModel sets the model of harnessed workers with the given role that name none
// ("researcher" → "openai/gpt-4o"), ahead of WithModel's.
func WithRoleModel(role, model string) Option {
	return func(c *config) { c.roleModels[role] = model }
}

// WithModelOptions passes options to models.New when model names are resolved, and to
// models.NewEmbedder for WithEmbedder's (for example models.WithModels to serve scripted models
// by name).
func WithModelOptions(opts ...models.Option) Option {
	return func(c *config) { c.modelOpts = append(c.modelOpts, opts...) }
}

// WithEmbedder has memory search rank sections by meaning as well as by their words, with the
// embedder of that name ("openai/text-embedding-3-small", "gemini/text-embedding-004",
// "ollama/nomic-embed-text"; see models.NewEmbedder, which gets WithModelOptions' options). Without
// it memory search ranks by full text (BM25), which needs no key; see package nodes/memory/index.
func WithEmbedder(name string) Option { return func(c *config) { c.embedder = name } }

// WithModelResolver replaces models.New for turning model names into models.
func WithModelResolver(fn func(name string) (providers.Model, error)) Option {
	return func(c *config) { c.resolve = fn }
}

// WithStore sets where the squad keeps its runs' state, events and conversation, and where its
// graphs (the ticks, the harnessed conversations) save their checkpoints, each step's changes
// with its checkpoint (default: SQLite in the home folder, state.db; see package
// nodes/store/sqlitestore). The squad does not close a store given here.
func WithStore(st store.Store) Option { return func(c *config) { c.store = st } }

// WithMaxConcurrent bounds the assignments running at once (default 4).
func WithMaxConcurrent(n int) Option { return func(c *config) { c.maxConcurrent = n } }

// WithTick sets how long collect waits at most before looking again (default 1s); it also
// wakes at once for anything that needs attention.
func WithTick(d time.Duration) Option { return func(c *config) { c.tick = d } }

// WithMCPServers offers MCP servers to the run's workers: the coordinator names them in
// spawn_worker (mcp_servers), and a harnessed worker given one gets its tools (named
// "<server>__<tool>") for each assignment, connected when the assignment starts and closed when
// it ends (see package tools/mcp). A server that cannot be reached fails the assignment, naming
// it. Claude Code workers get the team's own tools over MCP instead (runtime/claudecode).
func WithMCPServers(servers ...mcp.Server) Option {
	return func(c *config) {
		if c.mcp == nil {
			c.mcp = map[string]mcp.Server{}
		}
		for _, s := range servers {
			c.mcp[s.Name] = s
		}
	}
}

// WithStall stops an assignment that shows no sign of progress for d (see runtime.Watch;
// default 10 minutes; 0 turns the watchdog off).
func WithStall(d time.Duration) Option { return func(c *config) { c.stall = d } }

// WithContract sets the first stage's contract; the coordinator may set another at reconvene.
func WithContract(ct Contract) Option { return func(c *config) { c.contract = ct } }

// WithMaxAttempts sets how many times a failing node is tried (default 2: one retry).
func WithMaxAttempts(n int) Option { return func(c *config) { c.maxAttempts = n } }

// WithWorkerTools gives harnessed workers tools beyond the built-in ones (files, bash, web,
// the work tools), chosen per worker and node.
func WithWorkerTools(fn func(w Worker, n Node) []tools.Tool) Option {
	return func(c *config) { c.tools = fn }
}

// WithClaudeCode passes options to the Claude Code runtime of claude-code workers.
func WithClaudeCode(opts ...claudecode.Option) Option {
	return func(c *config) { c.claude = append(c.claude, opts...) }
}

// WithAutonomous passes options to the runtime of autonomous workers.
func WithAutonomous(opts ...autonomous.Option) Option {
	return func(c *config) { c.auto = append(c.auto, opts...) }
}

// WithRuntime makes workers of kind run on the runtime fn returns for them, in place of the
// built-in one (or for a kind of one's own).
func WithRuntime(kind string, fn func(w Worker) (runtime.Runtime, error)) Option {
	return func(c *config) { c.runtimes[kind] = fn }
}

// WithClock sets the clock of events, messages and the board.
func WithClock(now func() time.Time) Option { return func(c *config) { c.now = now } }

// WithMode sets whether runs are finite (the default) or infinite (see Mode).
func WithMode(m Mode) Option { return func(c *config) { c.mode = m } }

// WithContextLimit sets the context window, in tokens, of harnessed workers; their
// conversations are compacted near it (default: the harnessed runtime's).
func WithContextLimit(tokens int) Option { return func(c *config) { c.contextLimit = tokens } }

// WithTriggerClock sets the clock triggers run on (default: the real one); tests pass a
// triggers.FakeClock to make time pass at will.
func WithTriggerClock(c triggers.Clock) Option { return func(c2 *config) { c2.triggerClock = c } }

// WithUpSince says that the program has kept the agent since t (read on the trigger clock),
// closing its squad while it rests and opening it again when its next trigger comes due
// (Files.NextTrigger), as package server does: a trigger that came due since t fires as on
// time, and only those that came due before t count as having come due while the agent was
// down (triggers.Firing.Late). By default, late means due before the squad opened.
func WithUpSince(t time.Time) Option { return func(c *config) { c.upSince = t } }

// WithCoordinatorMCP gives the coordinator the tools of these MCP servers (named
// "<server>__<tool>", see package tools/mcp) beside its own. They are connected when the
// coordinator first thinks in a run, and closed, their commands ended, when the run returns; a
// server that cannot be connected fails the run, naming it (Resume tries again). To offer
// servers to workers instead, see WithMCPServers.
func WithCoordinatorMCP(servers ...mcp.Server) Option {
	return func(c *config) { c.coordMCP = append(c.coordMCP, servers...) }
}

// WithCoordinatorTools gives the coordinator tools beyond its own.
func WithCoordinatorTools(ts ...tools.Tool) Option {
	return func(c *config) { c.coordTools = append(c.coordTools, ts...) }
}

// WithHooks runs these hooks around every model call and tool call of the coordinator and the
// harnessed workers (see package hooks and harnessed.WithHooks): guardrails that rewrite or
// refuse, and approvals. A tool call held for approval ([hooks.Approvals]) is a question to the
// human like ask_human's, kept across restarts: its node waits (the coordinator's run, for the
// coordinator's calls) with Node.Approval the call, and Run.Answer (or Send) takes the human's
// verdict — hooks.Approve(), hooks.Edit(arguments), hooks.Reject(reason) — refusing, naming the
// tool, edited arguments its schema does not accept.
func WithHooks(hs ...hooks.Hook) Option {
	return func(c *config) { c.hooks = append(c.hooks, hs...) }
}

// WithOutputSchema gives a run's final output a JSON Schema (its root an object; see
// providers.SchemaFor to derive one from a Go type): the coordinator's finish then takes a
// result, refused with what is wrong until it matches, and Result.Value holds it (Result.Decode
// decodes it). New fails on a schema that is not usable.
func WithOutputSchema(schema json.RawMessage) Option {
	return func(c *config) { c.outputSchema = schema }
}

// WithLogger sets where the squad reports what it cannot tell through a run's events (a log
// file it could not write, a trigger it could not deliver). The default discards them.
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.logger = l } }

// WithEventsFile has the squad write the agent's events to events.jsonl in its home as well,
// as they commit, for programs that follow the file (tail -f, a log shipper): one JSON line an
// event, numbered as in the store. A file that lags behind the store — left by a squad opened
// without this option — is brought up to it as the squad opens. By default the events are in the
// store only: Squad.Events, Subscribe and Files.Events read them there.
func WithEventsFile() Option { return func(c *config) { c.eventsFile = true } }

// WithWake sets what to do when one of the agent's triggers comes due while no run is in
// progress: the firing has been delivered to the agent's latest run, runID, and fn should
// resume it (Resume). fn is called from the squad's scheduler and must not block; without
// it, such firings wait in the run for its next Resume.
func WithWake(fn func(runID string)) Option { return func(c *config) { c.wake = fn } }

// WithSandbox chooses what a worker's processes may reach on a node (see package sandbox): a
// harnessed worker's bash commands, or a CLI worker's agent and what it starts (the runtime
// adds what the CLI needs: its configuration folder, its API key). fn gets the default —
// writable: the node's scratch folder and the worker's own folder (notes, memory), and a /tmp
// of their own; the run folder readable; the network; no secrets in the environment — and
// returns the policy to use: the default changed (say NoNetwork, or an API key kept), or
// sandbox.Policy{Off: true}. A CLI worker needs the network: NoNetwork fails its runs. fn is
// called once for each assignment: the node.started event names what the policy it returned
// leaves weaker than asked, and the worker runs under it.
func WithSandbox(fn func(w Worker, n Node, scope sandbox.Policy) sandbox.Policy) Option {
	return func(c *config) { c.sandbox = fn }
}

// WithWorkerNames sets the names given to workers the squad spawns by itself.
func WithWorkerNames(names ...string) Option { return func(c *config) { c.names = names } }

// Squad runs an agent's work: one run at a time, each toward a goal. Start (or Resume) begins a
// run and returns its handle, a [Run], which waits for it and acts on it; Run is Start and Wait
// in one. What the Squad's own methods read or change is the agent's, whichever run it was in:
// its events (Events, Subscribe), its conversation, its memory, its triggers, the board of any
// of its runs (ReadBoard). Its methods are safe for concurrent use.
type Squad struct {
	cfg    config
	home   workspace.Home
	homeID string         // see homeID
	lock   *rootlock.Lock // the home's, until Close; nil where folders cannot be locked
	store  store.Store
	saver  checkpoint.Saver // the store's
	owned  bool             // the squad opened the store and closes it
	pub    sync.Mutex       // held while the views are brought up to the store
	// The events noted (see note), and the writer that commits them and brings up the views.
	notesMu, flushMu    sync.Mutex
	notes               []eventlog.Event
	newEvents, newLines atomic.Bool // committed since the views were last brought up
	boardsMu            sync.Mutex
	boardsDue           map[*board]bool // boards with views to write (see viewsDue)
	wake                chan struct{}
	stopWriter          func()
	log                 *eventlog.Log // the view of the store's events, for the subscribers (and events.jsonl: WithEventsFile)
	conv                *conversation // the view of the store's conversation: conversation.jsonl
	mem                 *memory.Store
	memIndex            *index.Index
	// sched fires the agent's triggers, into the run in progress or, when there is none, into
	// the latest run (see fire).
	sched     *triggers.Scheduler
	stopSched context.CancelFunc
	hooks     *webhooks // nil without WithWebhook
	// budgets are the runs' budgets SetBudget kept, as read from the store or set (nil: none),
	// so that a run's ticks do not read the store for it: the squad is the home's one writer.
	budgetsMu sync.Mutex
	budgets   map[string]*Budget

	// mu is held while a run starts or ends, or a trigger fires: it decides whether a run is in
	// progress. cur is the run in progress, read without mu, so that what reads or acts on the run
	// never waits for a start's or an end's files.
	mu  sync.Mutex
	cur atomic.Pointer[run]
}

// newConfig returns the configuration opts make of the defaults.
func newConfig(opts []Option) config {
	c := config{
		home: filepath.Join(".agiraph", "agent"), model: "anthropic/claude-sonnet-4-5",
		maxConcurrent: 4, tick: time.Second, stall: 10 * time.Minute, maxAttempts: 2,
		contract: Contract{MaxIterations: 30, Policy: "all"}, mode: Finite, triggerClock: triggers.RealClock(),
		runtimes: map[string]func(Worker) (runtime.Runtime, error){}, now: time.Now, roleModels: map[string]string{},
		names: []string{"Alice", "Bob", "Carol", "Dave", "Erin", "Frank", "Grace", "Heidi", "Ivan", "Judy"},
	}
	for _, o := range opts {
		o(&c)
	}
	return c
}

// New returns a squad working from the agent's home folder (created if needed). It holds the
// agent's files open (its state.db, its event log) and runs its triggers' scheduler until Close;
// Files reads an agent's home without opening a squad.
//
// One squad at a time works from a home: New locks it (an OS lock the system drops when the
// process ends, however it ends) until Close. While another squad has it open, in this process
// or another, New fails at once with an error wrapping ErrHomeInUse that names the holder's
// process id and since when it holds the home.
func New(opts ...Option) (*Squad, error) {
	c := newConfig(opts)
	if c.logger == nil {
		c.logger = slog.New(slog.DiscardHandler)
	}
	if c.coordModel == "" {
		c.coordModel = c.model
	}
	if c.resolve == nil {
		modelOpts := c.modelOpts
		c.resolve = func(name string) (providers.Model, error) { return models.New(name, modelOpts...) }
	}
	if rec, resolve := c.recorder, c.resolve; rec != nil {
		c.resolve = func(name string) (providers.Model, error) {
			m, err := resolve(name)
			if err != nil {
				return nil, err
			}
			return rec.Model(m), nil
		}
	}
	if c.contract.MaxIterations <= 0 {
		c.contract.MaxIterations = 30
	}
	if c.contract.Policy == "" {
		c.contract.Policy = "all"
	}
	for _, name := range []string{c.coordModel, c.model} {
		if _, err := c.resolve(name); err != nil {
			return nil, fmt.Errorf("nodes: %w", err)
		}
	}
	if err := CheckTools(c.toolNames); err != nil {
		return nil, fmt.Errorf("nodes: WithTools: %w", err)
	}
	if c.outputSchema != nil {
		if err := providers.CheckSchema(c.outputSchema); err != nil {
			return nil, fmt.Errorf("nodes: WithOutputSchema: %w", err)
		}
	}
	var hooks *webhooks
	if c.webhook.URL != "" {
		var err error
		if hooks, err = newWebhooks(c.webhook); err != nil {
			return nil, err
		}
	}
	s := &Squad{cfg: c, home: workspace.Home(c.home), hooks: hooks, budgets: map[string]*Budget{}}
	if err := s.home.Create(); err != nil {
		return nil, err
	}
	lock, err := rootlock.Acquire(c.home, "")
	switch {
	case errors.Is(err, errors.ErrUnsupported):
		c.logger.Warn("two squads on one home cannot be prevented here", "home", c.home, "err", err)
	case err != nil:
		return nil, fmt.Errorf("nodes: %w; close the squad open on it, or use another home", err)
	}
	s.lock = lock
	ok := false
	defer func() {
		if !ok {
			_ = s.Close() // New's error is the one to report
		}
	}()
	s.store = c.store
	if s.store != nil { // shared, perhaps, with other homes (see restoreRun)
		if s.homeID, err = homeID(s.home); err != nil {
			return nil, err
		}
	} else {
		st, err := sqlitestore.Open(filepath.Join(c.home, "state.db"))
		if err != nil {
			return nil, fmt.Errorf("nodes: %w", err)
		}
		s.store, s.owned = st, true
	}
	s.saver = s.store.Saver()
	if err := s.openViews(context.Background()); err != nil {
		return nil, err
	}
	s.wake = make(chan struct{}, 1)
	stop, done := make(chan struct{}), make(chan struct{})
	go s.write(stop, done)
	s.stopWriter = func() {
		close(stop)
		<-done
	}
	for _, p := range []string{s.home.Memory(), s.home.MemoryDir()} {
		if s.owned {
			break // the store keeps no files (see keep)
		}
		if _, err := restoreFiles(context.Background(), s.store, s.home, p, p); err != nil {
			return nil, err
		}
	}
	if s.memIndex, err = openMemoryIndex(s.home, c); err != nil {
		return nil, fmt.Errorf("nodes: %w", err)
	}
	mem, err := memory.Open(s.home, memory.WithClock(c.now), memory.WithObserver(s.memoryWritten), memory.WithIndex(s.memIndex))
	if err != nil {
		return nil, fmt.Errorf("nodes: %w", err)
	}
	s.mem = mem
	sched, err := triggers.Open(s.home.Triggers(), s.fire, triggers.WithClock(c.triggerClock), triggers.WithUpSince(c.upSince),
		triggers.WithKeeper(triggerKeeper{st: s.store, file: s.home.Triggers()}))
	if err != nil {
		return nil, fmt.Errorf("nodes: %w", err)
	}
	s.sched = sched
	if s.log.Last() == 0 {
		// The agent's name, its home folder's: where the agent lives is its host's business.
		name := c.home
		if abs, err := filepath.Abs(c.home); err == nil {
			name = filepath.Base(abs)
		}
		if err := s.commit(context.Background(), store.Change{Events: []eventlog.Event{{Type: eventlog.AgentCreated, Text: name}}}, nil); err != nil {
			return nil, fmt.Errorf("nodes: %w", err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.stopSched = cancel
	sched.Start(ctx)
	ok = true
	return s, nil
}

// fileOptions are the options of the agents' file tools: with a store whose commits survive a
// power failure (checkpoint.SyncsCommits), each file a tool writes is synced before its step
// commits, so that no step the store keeps names a file the failure lost; with the default
// store, whose latest commits a power failure may lose, files are left to the system to write
// out, as the commits are (see docs/store.md).
func (s *Squad) fileOptions() []files.Option {
	if checkpoint.SyncsCommits(s.saver) {
		return []files.Option{files.Synced()}
	}
	return nil
}

// Close pauses the run in progress, if there is one, and waits for it to end (see Run.Pause:
// Resume continues it), then releases the squad's files and stops its triggers.
func (s *Squad) Close() error {
	if r := s.Current(); r != nil {
		_ = r.Pause() // ErrNoRun: it is ending by itself
		<-r.Done()
	}
	var errs []error
	if s.hooks != nil {
		s.hooks.close()
	}
	if s.stopWriter != nil { // first: the events it shows the triggers move those that wait for idleness
		s.stopWriter()
		s.stopWriter = nil
		s.settle()
	}
	if s.sched != nil {
		s.stopSched()
		errs = append(errs, s.sched.Close())
	}
	if s.log != nil {
		errs = append(errs, s.log.Close())
	}
	if s.memIndex != nil {
		errs = append(errs, s.memIndex.Close())
	}
	if s.owned {
		errs = append(errs, s.store.Close())
	}
	if s.lock != nil {
		errs = append(errs, s.lock.Release())
	}
	return errors.Join(errs...)
}

// memoryWritten turns a write to the agent's memory into an event of the run in progress,
// committed with the file as it is now (see keepFiles).
func (s *Squad) memoryWritten(w memory.Write) {
	e := eventlog.New(eventlog.MemoryWritten, w.Path, w)
	e.Worker = w.By
	if r := s.cur.Load(); r != nil {
		e.Run = r.id
	}
	ch := store.Change{Events: []eventlog.Event{e}}
	path := filepath.Join(s.home.MemoryDir(), w.Path)
	if w.Path == filepath.Base(s.home.Memory()) {
		path = s.home.Memory()
	}
	if err := s.keep(&ch, path); err != nil {
		s.cfg.logger.Error("memory file not kept in the store", "file", w.Path, "err", err)
	}
	if err := s.commit(context.Background(), ch, nil); err != nil {
		s.cfg.logger.Error("event not logged", "type", e.Type, "err", err)
	}
}

// openMemoryIndex opens the index of the agent's memory, with the embedder of WithEmbedder.
func openMemoryIndex(home workspace.Home, c config) (*index.Index, error) {
	var opts []index.Option
	if c.embedder != "" {
		e, err := models.NewEmbedder(c.embedder, c.modelOpts...)
		if err != nil {
			return nil, err
		}
		opts = append(opts, index.WithEmbedder(e))
	}
	return index.Open(home, opts...)
}

// Memory returns the agent's long-term memory.
func (s *Squad) Memory() *memory.Store { return s.mem }

// Home returns the agent's home folder.
func (s *Squad) Home() workspace.Home { return s.home }

// Store returns the agent's store (see WithStore): its documents beside the squad's are its
// embedder's to keep, under keys of their own (the A2A server's: "a2a/…").
func (s *Squad) Store() store.Store { return s.store }

// Result is how a run ended.
type Result struct {
	RunID string
	// Output is the coordinator's final answer, also in the run's _output.md.
	Output     string
	OutputPath string
	// Value is the result finish gave with the output, valid against WithOutputSchema's
	// schema; nil without one.
	Value json.RawMessage
	Board Snapshot
	Usage providers.Usage
	// Finished is true when the coordinator called finish: the run is complete. A run that
	// returns without it was paused (Pause, or its context ended) and can be resumed.
	Finished bool
}

// Decode decodes the run's result (Value) into v, which should be a pointer to the type the
// output schema was derived from. It fails when the run has no result.
func (r Result) Decode(v any) error {
	if r.Value == nil {
		return fmt.Errorf("nodes: run %s has no result (finished: %t; is WithOutputSchema set?)", r.RunID, r.Finished)
	}
	if err := json.Unmarshal(r.Value, v); err != nil {
		return fmt.Errorf("nodes: run %s: decoding its result: %w", r.RunID, err)
	}
	return nil
}

// ErrHomeInUse is wrapped by the error New returns when another squad, in this process or
// another, has the agent's home open.
var ErrHomeInUse = rootlock.ErrLocked

// ErrRunning is wrapped by the error Start and Resume return while another run is in progress;
// the error names that run.
var ErrRunning = errors.New("nodes: a run is already in progress")

// ErrInterrupted is wrapped by the error a run ends with (Wait, Run) when its context ends before
// the run finishes: the run is paused, not ended, and Resume continues it.
var ErrInterrupted = errors.New("nodes: run interrupted")

// ErrNotStarted is wrapped by the error Resume returns for a run whose start a stop cut short,
// before its goal was saved: start it again, with WithRunID and the same id.
var ErrNotStarted = errors.New("nodes: the run never started")

// ErrNoRun is wrapped by the error a Run's verbs (Send, Answer, Stop, Pause, Inbox, Board) return
// once its run is no longer in progress: it ended, or, for Send, Answer, Stop and Pause, its
// coordinator finished a finite run. A handle acts on its own run only, never on a later one.
var ErrNoRun = errors.New("nodes: no run in progress")

// ReadBoard reads the board of any run of the agent, in progress or not (a Run's Board reads
// its own run's, while it is in progress).
func (s *Squad) ReadBoard(runID string) (Snapshot, error) {
	b, err := openBoard(context.Background(), s.store, s.home.Run(runID), s.cfg.now)
	if err != nil {
		return Snapshot{}, err
	}
	return b.Snapshot(), nil
}

// openBoard opens the board of the run in dir, to change it.
func (s *Squad) openBoard(ctx context.Context, dir workspace.Run) (*board, error) {
	b, err := openBoard(ctx, s.store, dir, s.cfg.now)
	if err != nil {
		return nil, err
	}
	b.save, b.keep, b.viewsDue = s.commit, s.keep, func() { s.viewsDue(b) }
	return b, nil
}

// Triggers returns the agent's triggers.
func (s *Squad) Triggers() ([]triggers.Trigger, error) {
	return s.sched.List(), nil
}

// SettleTriggers waits until the agent's triggers due by now have fired, each firing delivered:
// into the run in progress, or into the agent's latest run, which WithWake was then asked to
// resume. The squad fires its triggers by itself; a program that opened it because a trigger
// came due (Files.NextTrigger) settles them before it closes the squad again.
func (s *Squad) SettleTriggers(ctx context.Context) error {
	return s.sched.Settle(ctx)
}

// Subscribe returns the agent's events after seq, in order: first those already logged, then
// new ones as they happen, until the returned func is called or the squad is closed (the new
// ones that came before it closed are still received, then the channel closes). Among the new
// ones come the models' answers as they are generated, a piece at a time: eventlog.TextDelta
// events, with the piece in Text and the Worker and Node whose model wrote it. They are live
// only — Seq 0, not in the log, not seen by Events or a later Subscribe — so a program that
// remembers where it got to keeps the Seq of the last logged event, not of a delta.
func (s *Squad) Subscribe(after int64) (<-chan eventlog.Event, func()) {
	return s.log.Subscribe(after)
}

// Events returns the logged events after seq, up to limit (0: all).
func (s *Squad) Events(after int64, limit int) ([]eventlog.Event, error) {
	s.settle()
	return s.log.Read(after, limit)
}
