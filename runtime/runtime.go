// Package runtime is the port through which a squad runs work: a Runtime takes one Assignment
// (a work node's spec and folder, for one worker) and returns an Outcome, reporting what happens
// on the way as Events. Adapters live in sub-packages:
//
//   - runtime/harnessed: an in-process ReAct loop over a providers.Model and tools, checkpointed
//     turn by turn so an interrupted worker continues its conversation.
//   - runtime/claudecode: the Claude Code CLI, driven through its stream-json output.
//   - runtime/autonomous: any CLI agent, driven through files in its working directory.
//
// Whatever the adapter, an assignment works in its node's scratch directory and finishes by
// publishing (scratch files move to published/, see NodeDir.Publish) or by checkpointing (a stage
// of the work is done; the node stays open). Cancelling the context or passing its deadline ends
// a Run promptly and leaves no process or goroutine behind; Watch adds a liveness watchdog.
//
// It is the port only: what adapters share is in runtime/adapter, the adapters in its
// subpackages; none imports the squad (internal/layers checks this).
package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/agiraph/agiraph/hooks"
	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/sandbox"
	"github.com/agiraph/agiraph/tools"
)

// Runtime runs assignments. Implementations are safe for concurrent use: one Runtime may run
// several assignments at once.
type Runtime interface {
	// Run runs a to its end and returns the outcome. It reports events to sink (which may be
	// nil) in order, from the goroutine that calls Run or from others, never concurrently.
	// err is nil when the assignment published, checkpointed or stopped to wait for a human;
	// otherwise the outcome's status says why it ended (failed, timed out, stalled, cancelled)
	// and err gives the cause. The outcome carries usage and files either way.
	Run(ctx context.Context, a Assignment, sink Sink) (Outcome, error)
}

// Assignment is one piece of work for one worker.
type Assignment struct {
	// ID names this assignment of this node to this worker. It is stable across restarts: a
	// runtime that checkpoints keys its state by it, so running the same ID again continues.
	ID string
	// Run, Node and Worker identify the run, the work node and the worker.
	Run, Node, Worker string
	// Task is the node's spec: what to do.
	Task string
	// System is the worker's standing instructions: identity, memory, rules, the refs it may
	// read. The runtime adds its own protocol (how to publish, how messages arrive) to it.
	System string
	// Dir is the node's folder of truth; the worker works in Dir.Scratch().
	Dir NodeDir
	// Tools are the tools the worker may call beside the work tools: all of them for a runtime
	// that calls tools itself (harnessed); a CLI agent, which brings its own file and shell
	// tools, gets those it is given here over MCP with the work tools (claudecode, and
	// autonomous templates that take MCP).
	Tools []tools.Tool
	// Sandbox is what the processes of a runtime that starts them (a CLI agent and what it
	// starts) may reach; the runtime adds what it needs itself (its working directory, its
	// configuration folder, its API key). The zero Policy is the strictest: read-only but for
	// those, no secrets from the environment. Runtimes that call tools themselves (harnessed)
	// ignore it: their Tools carry their own.
	Sandbox sandbox.Policy
	// Mailbox carries messages to and from the worker while it runs; nil for none.
	Mailbox Mailbox
	// Session continues an earlier session of a runtime that has them (Outcome.Session).
	Session string
	// Answer is the human's answer to the question an earlier Run of this ID stopped on
	// (Outcome.Question).
	Answer string
	// OutputSchema, when set, is the JSON Schema (its root an object) of the node's result: the
	// worker's publish then takes a result, refused until it matches (see Outcome.Result).
	OutputSchema json.RawMessage
	// Wake runs an assignment that ended (checkpointed) again, for the messages waiting in its
	// mailbox, in runtimes that can. Without it, a Run of an assignment that ended returns how
	// it ended and leaves the mail: its caller lost that outcome (a crash) and asks again.
	Wake bool
}

// Status is how an assignment ended.
type Status string

// The statuses.
const (
	Published    Status = "published"    // the work is done and its outputs are in published/
	Checkpointed Status = "checkpointed" // a stage is done; the node stays open for more work
	Waiting      Status = "waiting"      // stopped to ask the human (Outcome.Question); run again with Answer
	Failed       Status = "failed"       // the agent failed or gave up
	TimedOut     Status = "timed_out"    // the context's deadline passed
	Stalled      Status = "stalled"      // no sign of progress for too long (see Watch)
	Cancelled    Status = "cancelled"    // the context was cancelled
)

// Outcome is what an assignment produced. Its JSON leaves out the fields that are zero.
type Outcome struct {
	Status  Status          `json:",omitempty"`
	Summary string          `json:",omitempty"` // the worker's summary of what it did, or why it failed
	Usage   providers.Usage `json:",omitzero"`
	// Published lists the files moved to published/, relative to it, sorted.
	Published []string `json:",omitempty"`
	// Result is the result the worker published, valid against Assignment.OutputSchema; nil
	// when the assignment has none. It is also published, as ResultFile.
	Result json.RawMessage `json:",omitempty"`
	// Suggestions are follow-up work the worker proposes to the coordinator.
	Suggestions []string `json:",omitempty"`
	// SubNodes are sub-tasks the worker asked for; it checkpoints to wait for them.
	SubNodes []SubNode `json:",omitempty"`
	// Question is what the worker asked the human, when Status is Waiting; Default, the answer
	// the worker goes on with should the human not answer in time, when it gave one.
	Question string `json:",omitempty"`
	Default  string `json:",omitempty"`
	// Approval, when the worker waits for the human's approval of a tool call, is that call;
	// Question then asks for it in words.
	Approval *hooks.Approval `json:",omitempty"`
	// Session, when the runtime has sessions, continues this one (Assignment.Session).
	Session string `json:",omitempty"`
	// Turns counts the model turns the assignment took, where the runtime knows.
	Turns int `json:",omitempty"`
	// Unread are messages the worker received but had no turn left to read: they arrived as
	// its last turn ended. Whoever runs it next should hand them over again.
	Unread []Message `json:",omitempty"`
}

// ResultFile is the file in published/ that holds a node's result (Outcome.Result), for the
// nodes that read it through refs.
const ResultFile = "result.json"

// SubNode is a sub-task a worker asks for.
type SubNode struct {
	Task string `json:"task"`
	// Refs name other nodes' published outputs the sub-task needs: ref name → path.
	Refs map[string]string `json:"refs,omitempty"`
	// Worker names the worker the sub-task should go to, when the asker has one in mind.
	Worker string `json:"worker,omitempty"`
}

// Message is a message between participants of a run: workers, the coordinator, the human.
type Message struct {
	ID   string    `json:"id,omitempty"`
	From string    `json:"from"`
	To   string    `json:"to"`
	Body string    `json:"body"`
	Time time.Time `json:"time"`
}

// Mailbox is a running worker's connection to the message bus.
type Mailbox interface {
	// Receive returns the messages that arrived for the worker since the last call, oldest
	// first, without waiting. Each message is returned once — but a call with the same
	// non-empty key as an earlier one returns what that one returned, even after a restart:
	// a runtime that saves what it received only at the end of a step receives with a key
	// derived from the step, so a step run again after a crash gets the same messages.
	Receive(key string) []Message
	// Send posts a message from the worker to a recipient (a worker's name or role, the
	// coordinator, "human", or "*" for everyone). A non-empty key makes the send happen once:
	// a send with the key of an earlier one (before a restart too) sends nothing, so a tool
	// call run again after a crash does not send twice.
	Send(ctx context.Context, key, to, body string) error
}

// Errors an Outcome's status is derived from; Run's error wraps one of them when it ends early.
var (
	ErrStalled  = errors.New("no progress")
	ErrNoResult = errors.New("the agent ended without a result")
)

// StatusOf returns the status a Run that ended with err has: TimedOut for a passed deadline,
// Cancelled for a cancelled context, Stalled for ErrStalled, Failed otherwise.
func StatusOf(ctx context.Context, err error) Status {
	cause := context.Cause(ctx)
	switch {
	case errors.Is(err, ErrStalled) || errors.Is(cause, ErrStalled):
		return Stalled
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(cause, context.DeadlineExceeded):
		return TimedOut
	case errors.Is(err, context.Canceled) || ctx.Err() != nil:
		return Cancelled
	}
	return Failed
}
