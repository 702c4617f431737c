// Package harnessed runs a worker in process: a ReAct loop in which a providers.Model thinks and
// the assignment's tools act, until the worker publishes or checkpoints.
//
// [New] makes a [Runtime] over a model. The loop is itself a graph run on a checkpoint.Saver,
// one thread per assignment, so every model turn and every tool call is saved as it finishes,
// and running an assignment again after a crash continues its conversation. Around the model
// and the tools, the loop delivers messages at yield points, gives the work tools and
// ask_human, compacts a conversation near the context limit, and fails with notes when a model
// call fails. [WithMCP] adds the tools of MCP servers; [WithSingleInference] makes one call
// without tools.
//
// How the loop saves, yields, compacts and fails is in docs/runtimes.md (Harnessed workers).
package harnessed

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"go.opentelemetry.io/otel/trace"

	"github.com/agiraph/agiraph/checkpoint"
	"github.com/agiraph/agiraph/graph"
	"github.com/agiraph/agiraph/hooks"
	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/runtime"
	"github.com/agiraph/agiraph/runtime/adapter"
	"github.com/agiraph/agiraph/tools"
	"github.com/agiraph/agiraph/tools/mcp"
)

// ErrMaxIterations is the cause of an assignment that used up its model turns.
var ErrMaxIterations = errors.New("harnessed: reached the maximum number of model turns without finishing")

// Runtime runs assignments with one model. It is safe for concurrent use.
type Runtime struct {
	model  providers.Model
	cfg    config
	tracer trace.Tracer // of the model and tool spans (see WithTracerProvider)
}

type config struct {
	saver         checkpoint.Saver
	maxIterations int
	single        bool
	contextLimit  int
	compactAt     float64
	keepMessages  int
	maxTokens     int
	maxOutput     int
	textEndsTurn  bool
	ownTools      bool
	noStream      bool
	cache         *ConversationCache
	mcp           []mcp.Server
	// tracerProvider and traceArgs are WithTracerProvider's and WithTracedArguments'.
	tracerProvider trace.TracerProvider
	traceArgs      bool
	hooks          hooks.Chain
}

// Option configures a Runtime.
type Option func(*config)

// WithSaver sets where the worker's conversation is checkpointed (default: in memory, which
// survives a cancelled or failed run but not the process).
func WithSaver(s checkpoint.Saver) Option { return func(c *config) { c.saver = s } }

// WithMaxIterations bounds the model turns of an assignment (default 50), and those of each
// wake-up of an assignment that had ended (see Runtime.Run).
func WithMaxIterations(n int) Option { return func(c *config) { c.maxIterations = n } }

// ConversationCache keeps the conversations of the assignments that ran last in memory, as their
// runs left them, so that an assignment run again — woken by mail, a coordinator's next turn —
// starts from it instead of rebuilding it from its checkpoints: a wake-up then costs what it adds,
// however long the conversation. The checkpoints stay the truth (see graph.StateCache). One cache
// may serve several runtimes; it is safe for concurrent use.
type ConversationCache struct{ states *graph.StateCache[state] }

// NewConversationCache returns a cache for the conversations of up to n assignments.
func NewConversationCache(n int) *ConversationCache {
	return &ConversationCache{graph.NewStateCache[state](n)}
}

// WithConversationCache sets the runtime's cache (default: its own, for 16 assignments): a runtime
// made for each run, or runtimes that take turns on the same assignments, share one to benefit from
// it.
func WithConversationCache(c *ConversationCache) Option { return func(cfg *config) { cfg.cache = c } }

// WithSingleInference makes every assignment one model call without tools; the answer is
// published as result.md.
func WithSingleInference() Option { return func(c *config) { c.single = true } }

// WithContextLimit sets the model's context window in tokens (default 200,000). The conversation
// is compacted when it reaches 80% of it.
func WithContextLimit(tokens int) Option { return func(c *config) { c.contextLimit = tokens } }

// WithKeepMessages sets how many of the latest messages survive a compaction (default 6).
func WithKeepMessages(n int) Option { return func(c *config) { c.keepMessages = n } }

// WithMaxTokens bounds each answer of the model (default: the model adapter's).
func WithMaxTokens(n int) Option { return func(c *config) { c.maxTokens = n } }

// WithMaxToolOutput caps what one tool call returns to the model, in bytes (default 32 KiB).
func WithMaxToolOutput(n int) Option { return func(c *config) { c.maxOutput = n } }

// WithTextEndsTurn makes an answer without tool calls end the assignment (status Checkpointed,
// the answer as its summary) instead of reminding the worker to publish: for a conversational
// agent, such as a coordinator, whose text is its reply.
func WithTextEndsTurn() Option { return func(c *config) { c.textEndsTurn = true } }

// WithoutStreaming makes the model's calls without Request.OnText, so that they do not stream
// (unless the adapter must) and report no TextDelta events: for a model or a proxy that streams
// badly. By default every call streams its text as TextDelta events.
func WithoutStreaming() Option { return func(c *config) { c.noStream = true } }

// WithoutWorkTools leaves out adapter.WorkTools: the worker gets only the assignment's tools and
// ask_human, and its tools end the assignment through adapter.ReportFrom (a coordinator, say).
func WithoutWorkTools() Option { return func(c *config) { c.ownTools = true } }

// WithMCP gives every assignment the tools of these MCP servers (see package tools/mcp), named
// "<server>__<tool>": they are connected when an assignment runs — a server that cannot be
// connected fails the run, naming it — and closed, their commands ended, when the run ends.
func WithMCP(servers ...mcp.Server) Option {
	return func(c *config) { c.mcp = append(c.mcp, servers...) }
}

// New returns a runtime whose workers think with model.
func New(model providers.Model, opts ...Option) *Runtime {
	c := config{maxIterations: 50, contextLimit: 200_000, compactAt: 0.8, keepMessages: 6, maxOutput: 32 << 10}
	for _, o := range opts {
		o(&c)
	}
	if c.saver == nil {
		c.saver = checkpoint.NewMemory()
	}
	if c.cache == nil {
		c.cache = NewConversationCache(16)
	}
	return &Runtime{model: model, cfg: c, tracer: tracerOf(c.tracerProvider)}
}

// Run runs a to its end, or continues it from its last saved step when a.ID has run before.
//
// An assignment that already ended returns its outcome again without running — unless its
// mailbox holds new messages: then the worker wakes up with them, in the same conversation, and
// works until it ends again (a mailbox revive). The outcome's usage and turns count the whole
// conversation.
func (rt *Runtime) Run(ctx context.Context, a runtime.Assignment, sink runtime.Sink) (runtime.Outcome, error) {
	if a.ID == "" {
		return runtime.Outcome{Status: runtime.Failed}, errors.New("harnessed: assignment has no ID")
	}
	rep := adapter.NewEmitter(a, sink)
	w, err := rt.worker(ctx, a, rep)
	if w != nil && w.mcp != nil {
		defer w.mcp.Close()
	}
	if err != nil {
		return rep.End(runtime.Outcome{Status: runtime.StatusOf(ctx, err), Summary: err.Error()}, err)
	}
	return w.run(ctx)
}

// worker prepares one Run: the saved state, the report, the tools and the graph. When it fails
// after connecting MCP servers it returns the worker all the same, for Run to close them.
func (rt *Runtime) worker(ctx context.Context, a runtime.Assignment, rep *adapter.Emitter) (*worker, error) {
	w := &worker{rt: rt, a: a, rep: rep}
	if err := a.Dir.Create(); err != nil {
		return nil, err
	}
	g, err := w.graph()
	if err != nil {
		return nil, err
	}
	w.g = g
	snap, err := g.State(ctx)
	switch {
	case errors.Is(err, checkpoint.ErrNotFound):
		w.fresh = true
	case err != nil:
		return nil, fmt.Errorf("harnessed: assignment %s: %w", a.ID, err)
	default:
		w.snap = snap
	}
	w.report = adapter.NewReport(w.snap.Values.Report)
	if !w.fresh && len(w.snap.Tasks) == 0 && a.Wake {
		if w.revive = w.receive(fmt.Sprintf("turn%d/wake", w.snap.Values.Turns)); len(w.revive) > 0 {
			w.report = adapter.NewReport(runtime.Outcome{})
		}
	}
	if rt.cfg.single {
		w.prompt = w.system()
		return w, nil
	}
	ts := []tools.Tool{askHuman}
	if !rt.cfg.ownTools {
		ts = append(ts, adapter.WorkTools(a, w.report, rep)...)
	}
	ts = append(ts, a.Tools...)
	if len(rt.cfg.mcp) > 0 && w.runs() {
		if w.mcp, err = mcp.Connect(ctx, rt.cfg.mcp...); err != nil {
			return w, fmt.Errorf("harnessed: assignment %s: %w", a.ID, err)
		}
		ts = append(ts, w.mcp.Tools()...)
	}
	w.reg, err = tools.NewRegistry(rt.traceTools(ts), tools.WithMaxOutput(rt.cfg.maxOutput), tools.WithAttachments())
	if err != nil {
		return w, fmt.Errorf("harnessed: assignment %s: %w", a.ID, err)
	}
	w.prompt, w.specs = w.system(), providers.Specs(w.reg.Tools())
	return w, nil
}

// worker is one Run of one assignment.
type worker struct {
	rt     *Runtime
	a      runtime.Assignment
	rep    *adapter.Emitter
	report *adapter.Report
	reg    *tools.Registry
	g      *graph.Compiled[state]
	fresh  bool
	snap   graph.Snapshot[state]
	revive []runtime.Message // messages that wake an ended assignment
	// unsaved are messages a failed step received and no saved step holds: the outcome
	// hands them back as unread.
	unsaved []runtime.Message
	prompt  string // the system prompt
	specs   []providers.ToolSpec
	// result is the valid result of a single-inference answer to an assignment with an output
	// schema, set by the model turn that publishes it.
	result json.RawMessage
	mcp    *mcp.Set // the MCP servers' tools, closed when the run ends
	// files are the bytes of the files attached to the conversation, by digest (see withFiles);
	// refused, why the model refused some of them (see generateShowing).
	files   map[string][]byte
	refused map[string]string
}

// runs reports whether this Run works on the assignment, rather than only reporting how it
// ended or that it still waits for an answer (see run).
func (w *worker) runs() bool {
	return w.fresh || len(w.revive) > 0 || len(w.snap.Tasks) > 0 && (len(w.snap.Interrupts) == 0 || w.a.Answer != "")
}

func (w *worker) run(ctx context.Context) (runtime.Outcome, error) {
	var (
		final state
		err   error
	)
	switch {
	case w.fresh:
		w.rep.Emit(runtime.Event{Kind: runtime.Started, Text: "model " + w.rt.model.Name()})
		input := state{}.update()
		input.Conversation = []providers.Message{providers.UserText(w.a.Task)}
		final, err = w.g.Invoke(ctx, input)
	case len(w.snap.Tasks) == 0 && len(w.revive) > 0:
		w.rep.Emit(runtime.Event{Kind: runtime.Started, Text: fmt.Sprintf("model %s, woken by %d message(s) after %d turns", w.rt.model.Name(), len(w.revive), w.snap.Values.Turns)})
		input := w.snap.Values.update()
		input.Woken, input.Since = true, w.snap.Values.Turns
		input.Conversation = []providers.Message{providers.UserText(adapter.FormatMessages(w.revive))}
		final, err = w.g.Invoke(ctx, input)
	case len(w.snap.Tasks) == 0:
		return w.outcome(ctx, w.snap.Values, nil) // it ended before
	case len(w.snap.Interrupts) > 0 && w.a.Answer == "":
		return w.outcome(ctx, w.snap.Values, &graph.Interrupted{Interrupts: w.snap.Interrupts}) // still waiting
	default:
		w.rep.Emit(runtime.Event{Kind: runtime.Started, Text: fmt.Sprintf("model %s, resumed after %d turns", w.rt.model.Name(), w.snap.Values.Turns)})
		var answer any
		if len(w.snap.Interrupts) > 0 {
			answer = w.a.Answer
			w.rep.Emit(runtime.Event{Kind: runtime.MessageReceived, Message: &runtime.Message{From: "human", To: w.a.Worker, Body: w.a.Answer}})
		}
		final, err = w.g.Resume(ctx, answer)
	}
	var in *graph.Interrupted
	if err != nil && !errors.As(err, &in) {
		final = w.saved(ctx) // the run's state may hold a step that was not saved
	}
	return w.outcome(ctx, final, err)
}

// saved reads the assignment's saved state, or the zero state when it cannot (after a run that
// failed, whose error the outcome reports).
func (w *worker) saved(ctx context.Context) state {
	snap, _ := w.g.State(context.WithoutCancel(ctx))
	return snap.Values
}

// outcome reports how the run ended, from runErr and s, the assignment's saved state (which a run
// that ended or paused returns).
func (w *worker) outcome(ctx context.Context, s state, runErr error) (runtime.Outcome, error) {
	o := s.Report
	o.Usage, o.Turns, o.Session = s.Usage, s.Turns, w.a.ID
	var in *graph.Interrupted
	switch {
	case errors.As(runErr, &in):
		o.Status, o.Question = runtime.Waiting, fmt.Sprint(in.Interrupts[0].Value)
		if q, ok := questionOf(in.Interrupts[0].Value); ok {
			o.Question, o.Default = q.Question, q.Default
		}
		if o.Approval = approvalOf(in.Interrupts[0].Value); o.Approval != nil {
			o.Question = o.Approval.Question()
		}
		return w.rep.End(o, nil)
	case runErr != nil:
		o.Status = runtime.StatusOf(ctx, runErr)
		o.Summary = runErr.Error()
		o.Unread = append(o.Unread, w.unsaved...)
		return w.rep.End(o, fmt.Errorf("harnessed: assignment %s: %w", w.a.ID, runErr))
	}
	return w.rep.End(o, nil)
}
