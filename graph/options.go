package graph

import (
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/agiraph/agiraph/checkpoint"
)

// Option configures runs. Options given to Compile are the defaults of every run of the compiled
// graph; options given to Invoke, Resume or Stream override them for that run.
type Option func(*config)

type config struct {
	saver           checkpoint.Saver
	serde           checkpoint.Serializer
	thread          string
	runID           string
	recursionLimit  int
	maxConcurrency  int
	snapshotEvery   int
	modes           Mode
	subgraphs       bool
	interruptBefore map[string]bool
	interruptAfter  map[string]bool
	durability      Durability
	inputAside      bool // WithInputSavedAside
	checkpointID    string
	cache           any // a *StateCache[S] (WithStateCache)
	nodeCache       NodeCache
	tracer          trace.Tracer // WithTracerProvider's; nil for the global provider
	calls           bool         // the graph is an entrypoint, whose node calls tasks (see Task)
}

// DefaultRecursionLimit is the number of supersteps a run may take unless WithRecursionLimit says
// otherwise.
const DefaultRecursionLimit = 1000

func defaultConfig() config {
	return config{
		serde:          checkpoint.JSON{},
		recursionLimit: DefaultRecursionLimit,
	}
}

func (c config) with(opts []Option) config {
	c.interruptBefore = cloneSet(c.interruptBefore)
	c.interruptAfter = cloneSet(c.interruptAfter)
	for _, o := range opts {
		o(&c)
	}
	return c
}

func cloneSet(m map[string]bool) map[string]bool {
	if m == nil {
		return nil
	}
	out := make(map[string]bool, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// WithCheckpointer saves every superstep of runs that have a thread ID (see WithThread). It is
// needed for Interrupt, InterruptBefore/After and Resume.
func WithCheckpointer(s checkpoint.Saver) Option { return func(c *config) { c.saver = s } }

// WithSerializer sets how states, updates and resume values are encoded in checkpoints
// (default: checkpoint.JSON).
func WithSerializer(s checkpoint.Serializer) Option { return func(c *config) { c.serde = s } }

// WithThread names the thread a run belongs to; its checkpoints are saved under it.
func WithThread(id string) Option { return func(c *config) { c.thread = id } }

// WithCheckpointID makes a run, State or UpdateState start from the given checkpoint of the thread
// instead of its latest one: time travel. Invoke merges its input into the state of that checkpoint;
// Resume re-runs that checkpoint's next tasks from scratch on a new branch (the old one stays);
// UpdateState forks from it.
func WithCheckpointID(id string) Option { return func(c *config) { c.checkpointID = id } }

// WithRunID labels the checkpoints a run writes (default: a fresh ID per run).
func WithRunID(id string) Option { return func(c *config) { c.runID = id } }

// WithRecursionLimit bounds the number of supersteps of one run; past it the run fails with a
// *RecursionLimitError.
func WithRecursionLimit(n int) Option { return func(c *config) { c.recursionLimit = n } }

// WithMaxConcurrency bounds how many tasks of a superstep run at once (0, the default: no bound).
func WithMaxConcurrency(n int) Option { return func(c *config) { c.maxConcurrency = n } }

// WithSnapshotEvery makes every n-th checkpoint store the full state; the others store what
// changed (each task's update, an input). By default snapshots are placed by size instead: a
// checkpoint stores the full state once the bytes saved since the last snapshot reach twice that
// snapshot's size, so snapshots take at most half of what the rest takes (plus one state),
// whatever the state's size. A fixed interval bounds how many updates rebuilding a state replays,
// but a state that keeps growing is then written whole every n steps: storage grows with the
// square of its history. Use it for states that stay small.
func WithSnapshotEvery(n int) Option {
	return func(c *config) {
		if n < 1 {
			n = 1
		}
		c.snapshotEvery = n
	}
}

// WithStreamMode chooses what Stream yields (default ModeValues). Modes can be combined with |.
func WithStreamMode(m Mode) Option { return func(c *config) { c.modes = m } }

// WithSubgraphs makes Stream also yield the events of subgraphs, with their Namespace set. Without
// it, of a subgraph's events only its nodes' custom events (Emit) are yielded, as in LangGraph.
// Given to State or History, it adds to each task of a subgraph the subgraph's snapshot
// (TaskState.Subgraph).
func WithSubgraphs() Option { return func(c *config) { c.subgraphs = true } }

// WithInterruptBefore pauses a run before any of the named nodes runs. Resume continues it.
func WithInterruptBefore(nodes ...string) Option {
	return func(c *config) { c.interruptBefore = addSet(c.interruptBefore, nodes) }
}

// WithInterruptAfter pauses a run after a superstep in which any of the named nodes ran.
func WithInterruptAfter(nodes ...string) Option {
	return func(c *config) { c.interruptAfter = addSet(c.interruptAfter, nodes) }
}

func addSet(m map[string]bool, keys []string) map[string]bool {
	if m == nil {
		m = map[string]bool{}
	}
	for _, k := range keys {
		m[k] = true
	}
	return m
}

// NodeOption configures one node.
type NodeOption func(*nodeConfig)

type nodeConfig struct {
	retry        *RetryPolicy
	timeout      time.Duration
	destinations []string
	deferred     bool
	cache        *CachePolicy
}

// WithRetry retries the node's failures as the policy says.
func WithRetry(p RetryPolicy) NodeOption { return func(c *nodeConfig) { c.retry = &p } }

// WithTimeout bounds each attempt of the node. An attempt that has not returned by then fails with
// a *TimeoutError, even if the node ignores its context.
func WithTimeout(d time.Duration) NodeOption { return func(c *nodeConfig) { c.timeout = d } }

// Defer holds the node back until no other node is left to run through an edge: while the frontier
// holds tasks of other nodes made by edges, routers, joins or gotos, the deferred node's task (made
// the same ways) waits, and a node that leads to it again meanwhile adds nothing; it runs once no
// such task is left. Sends do not count: a Send to a deferred node runs at once, and Sends to
// other nodes pending beside it do not hold it back. It suits a node that gathers the results of
// branches of different lengths, which an edge from each branch would run once per branch. New
// input given to a paused thread (Invoke) keeps it waiting.
// LangGraph's add_node(..., defer=True), which behaves the same.
func Defer() NodeOption { return func(c *nodeConfig) { c.deferred = true } }

// Destinations declares where a command node may go (for validation and drawing).
func Destinations(nodes ...string) NodeOption {
	return func(c *nodeConfig) { c.destinations = append(c.destinations, nodes...) }
}
