package adapter

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/agiraph/agiraph/runtime"
	"github.com/agiraph/agiraph/tools"
)

// Report collects, through the work tools, how a worker ends its assignment and what it asks of
// the coordinator. It is safe for concurrent use.
type Report struct {
	mu sync.Mutex
	o  runtime.Outcome
}

// NewReport returns a report that starts from what an earlier part of the same assignment
// reported (its Status, Summary, Published, Result, Suggestions and SubNodes), for a worker that
// resumes.
func NewReport(prev runtime.Outcome) *Report {
	r := &Report{}
	r.Restore(prev)
	return r
}

// Restore makes the report what prev reported (its Status, Summary, Published, Result,
// Suggestions and SubNodes): a runtime that saves the report with each step restores it from the step's input,
// which may hold what a step saved before a crash and was not re-run.
func (r *Report) Restore(prev runtime.Outcome) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.o = runtime.Outcome{
		Status: prev.Status, Summary: prev.Summary, Result: prev.Result,
		Published:   append([]string(nil), prev.Published...),
		Suggestions: append([]string(nil), prev.Suggestions...),
		SubNodes:    append([]runtime.SubNode(nil), prev.SubNodes...),
	}
}

// Outcome returns what the worker reported so far.
func (r *Report) Outcome() runtime.Outcome {
	r.mu.Lock()
	defer r.mu.Unlock()
	o := r.o
	o.Published = append([]string(nil), o.Published...)
	o.Suggestions = append([]string(nil), o.Suggestions...)
	o.SubNodes = append([]runtime.SubNode(nil), o.SubNodes...)
	return o
}

// Done reports whether the worker published or checkpointed.
func (r *Report) Done() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.o.Status == runtime.Published || r.o.Status == runtime.Checkpointed
}

// End records that the worker ended its assignment with status s (Published or Checkpointed)
// and a summary; it fails if the worker already ended. Runtimes stop the assignment once it has.
func (r *Report) End(s runtime.Status, summary string) error { return r.end(s, summary, nil, nil) }

func (r *Report) end(s runtime.Status, summary string, published []string, result json.RawMessage) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.o.Status == runtime.Published || r.o.Status == runtime.Checkpointed {
		return fmt.Errorf("this assignment already ended (%s)", r.o.Status)
	}
	r.o.Status, r.o.Summary, r.o.Published, r.o.Result = s, summary, published, result
	return nil
}

// Ask records that the worker stopped to ask the human question: the assignment ends Waiting,
// to be run again with the answer. It fails if the worker already ended.
func (r *Report) Ask(question string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.o.Status == runtime.Published || r.o.Status == runtime.Checkpointed {
		return fmt.Errorf("this assignment already ended (%s)", r.o.Status)
	}
	r.o.Status, r.o.Question = runtime.Waiting, question
	return nil
}

type reportKey struct{}

// WithReport returns ctx carrying r, the report of the assignment a tool runs for; runtimes that
// call tools themselves pass it to them, so tools built before the assignment (a coordinator's,
// say) can end it.
func WithReport(ctx context.Context, r *Report) context.Context {
	return context.WithValue(ctx, reportKey{}, r)
}

// ReportFrom returns the report WithReport put in ctx.
func ReportFrom(ctx context.Context) (*Report, bool) {
	r, ok := ctx.Value(reportKey{}).(*Report)
	return r, ok
}

// The arguments of the work tools.
type (
	// PublishArgs are publish's arguments.
	PublishArgs struct {
		Summary string `json:"summary" jsonschema_description:"What you produced and where it is, in a few sentences"`
	}
	// PublishResultArgs are publish's arguments on a node with an output schema.
	PublishResultArgs struct {
		Summary string          `json:"summary" jsonschema_description:"What you produced and where it is, in a few sentences"`
		Result  json.RawMessage `json:"result" jsonschema_description:"The node's result: a JSON object of the node's output schema"`
	}
	// CheckpointArgs are checkpoint's arguments.
	CheckpointArgs struct {
		Summary string `json:"summary" jsonschema_description:"What this stage achieved and what remains"`
	}
	// SuggestArgs are suggest_next's arguments.
	SuggestArgs struct {
		Suggestion string `json:"suggestion" jsonschema_description:"What work should be done next and why"`
	}
	// SubNodeArgs are create_work_node's arguments.
	SubNodeArgs struct {
		Task   string            `json:"task" jsonschema_description:"The sub-task: what to do and what to produce"`
		Refs   map[string]string `json:"refs,omitempty" jsonschema_description:"Inputs it needs: a name for each and the path of another node's published output"`
		Worker string            `json:"worker,omitempty" jsonschema_description:"The worker to give it to, by name (default: whoever is free)"`
	}
	// SendArgs are send_message's arguments.
	SendArgs struct {
		To      string `json:"to" jsonschema_description:"The recipient: a worker's name or role, coordinator, human, or * for everyone"`
		Content string `json:"content"`
	}
	// NoArgs are the arguments of a tool that takes none.
	NoArgs struct{}
)

// WorkTools returns the tools through which a worker ends its assignment and talks to the rest
// of the run: publish, checkpoint, suggest_next and create_work_node report into r; and the
// MessageTools.
func WorkTools(a runtime.Assignment, r *Report, rep *Emitter) []tools.Tool {
	ts := []tools.Tool{
		publishTool(a, r),
		tools.Func("checkpoint", "End this stage of the work with a summary; the node stays open and may be assigned again.",
			func(ctx context.Context, args CheckpointArgs) (string, error) {
				if err := r.end(runtime.Checkpointed, args.Summary, nil, nil); err != nil {
					return "", err
				}
				return "Checkpointed.", nil
			},
			tools.WithGuidance("Call checkpoint instead of publish when a stage is done but the work is not: for example after asking for sub-tasks with create_work_node, to wait for them.")),
		tools.Func("suggest_next", "Suggest follow-up work to the coordinator, who decides whether to do it.",
			func(ctx context.Context, args SuggestArgs) (string, error) {
				r.mu.Lock()
				r.o.Suggestions = append(r.o.Suggestions, args.Suggestion)
				r.mu.Unlock()
				return "Noted; the coordinator will see it when this assignment ends.", nil
			},
			tools.WithGuidance("Use suggest_next when you find work beyond your task that should be done (a lead to follow, a gap, a check): say what and why. The coordinator decides; do not do that work yourself.")),
		tools.Func("create_work_node", "Ask for a sub-task to be put on the work board and picked up by a worker.",
			func(ctx context.Context, args SubNodeArgs) (string, error) {
				if strings.TrimSpace(args.Task) == "" {
					return "", errors.New("task is empty")
				}
				r.mu.Lock()
				r.o.SubNodes = append(r.o.SubNodes, runtime.SubNode(args))
				n := len(r.o.SubNodes)
				r.mu.Unlock()
				return fmt.Sprintf("Sub-task %d requested; it is created when this assignment ends. Checkpoint to wait for its result.", n), nil
			},
			tools.WithGuidance("When your task is too big for one worker, split it: call create_work_node once per self-contained sub-task (say what to produce), then checkpoint. You get the node back with the sub-tasks' results listed, to integrate them and publish.")),
	}
	return append(ts, MessageTools(a, rep)...)
}

// publishTool returns the publish tool of a: it publishes the worker's outputs and ends the
// assignment. When a has an output schema, it takes a result, refused with what is wrong until
// it matches, then saved in the outcome and published as runtime.ResultFile.
func publishTool(a runtime.Assignment, r *Report) tools.Tool {
	const desc = "Finish this assignment: move your outputs from scratch/ to published/, where other nodes can read them."
	publish := func(summary string, result json.RawMessage) (string, error) {
		if r.Done() {
			return "", errors.New("this assignment already ended")
		}
		if a.OutputSchema != nil {
			if err := CheckResult(a.OutputSchema, result, "publish"); err != nil {
				return "", err
			}
			var compact bytes.Buffer
			if err := json.Compact(&compact, result); err != nil {
				return "", err
			}
			result = compact.Bytes()
			if err := stageResult(a.Dir, result); err != nil {
				return "", err
			}
		}
		files, err := a.Dir.Publish()
		if err != nil {
			return "", err
		}
		if err := r.end(runtime.Published, summary, files, result); err != nil {
			return "", err
		}
		if len(files) == 0 {
			return "Published (scratch/ held no files).", nil
		}
		return "Published: " + strings.Join(files, ", "), nil
	}
	guidance := "Call publish once, when your outputs are complete and written to files in your scratch directory; the assignment ends with it. Published files cannot be changed afterwards."
	if a.OutputSchema == nil {
		return tools.Func("publish", desc, func(ctx context.Context, args PublishArgs) (string, error) {
			return publish(args.Summary, nil)
		}, tools.WithGuidance(guidance))
	}
	t := tools.Func("publish", desc, func(ctx context.Context, args PublishResultArgs) (string, error) {
		return publish(args.Summary, args.Result)
	}, tools.WithGuidance(guidance+" This node has an output schema: give publish your result as a JSON object of it (see publish's result parameter); it is published as "+runtime.ResultFile+"."))
	t.Schema = ResultSchema(t.Schema, a.OutputSchema)
	return t
}

// ResultSchema returns the schema of a tool that takes a result (publish; a coordinator's
// finish) with its "result" property given by schema, so that the model sees the result's
// schema where it writes it. A schema that is not JSON leaves the tool's as it is, for
// CheckResult to refuse what the model sends.
func ResultSchema(tool, schema json.RawMessage) json.RawMessage {
	var s map[string]any
	if json.Unmarshal(tool, &s) != nil {
		return tool
	}
	if props, ok := s["properties"].(map[string]any); ok {
		props["result"] = json.RawMessage(schema)
	}
	b, err := json.Marshal(s)
	if err != nil {
		return tool
	}
	return b
}

// CheckResult validates result against schema. Its error is for the model to fix the result
// by: what is wrong, path by path, and that it should call tool again.
func CheckResult(schema, result json.RawMessage, tool string) error {
	if err := tools.ValidateAt(schema, result, "result"); err != nil {
		return fmt.Errorf("the result does not match the output schema: %w. Fix it and call %s again", err, tool)
	}
	return nil
}

// stageResult writes result to scratch/ for Publish to publish as runtime.ResultFile, unless a
// publish that came before a crash published it already.
func stageResult(d runtime.NodeDir, result json.RawMessage) error {
	if _, err := os.Lstat(filepath.Join(d.Published(), runtime.ResultFile)); err == nil {
		return nil
	}
	var b bytes.Buffer
	if err := json.Indent(&b, result, "", "  "); err != nil {
		return err
	}
	b.WriteByte('\n')
	if err := os.MkdirAll(d.Scratch(), 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(d.Scratch(), runtime.ResultFile), b.Bytes(), 0o644)
}

// MessageTools returns send_message and check_messages over a.Mailbox (none when it is nil);
// events for the messages go to rep.
func MessageTools(a runtime.Assignment, rep *Emitter) []tools.Tool {
	if a.Mailbox == nil {
		return nil
	}
	return []tools.Tool{
		tools.Func("send_message", "Send a message to another worker, the coordinator or the human.",
			func(ctx context.Context, args SendArgs) (string, error) {
				if err := a.Mailbox.Send(ctx, callKey(ctx, a), args.To, args.Content); err != nil {
					return "", err
				}
				rep.Emit(runtime.Event{Kind: runtime.MessageSent, Message: &runtime.Message{From: a.Worker, To: args.To, Body: args.Content}})
				return "Sent to " + args.To + ".", nil
			},
			tools.WithGuidance("Messages sent to you appear in the conversation as they arrive, marked [Message from NAME]; check_messages fetches any that came in meanwhile.")),
		tools.Func("check_messages", "Fetch messages that arrived for you.",
			func(ctx context.Context, _ NoArgs) (string, error) {
				msgs := a.Mailbox.Receive(callKey(ctx, a))
				if len(msgs) == 0 {
					return "No new messages.", nil
				}
				for i := range msgs {
					rep.Emit(runtime.Event{Kind: runtime.MessageReceived, Message: &msgs[i]})
				}
				return FormatMessages(msgs), nil
			}, tools.Safe(),
			tools.WithGuidance("You rarely need check_messages: messages are shown to you between turns. Call it when you are waiting for an answer from someone.")),
	}
}

// callKey returns the key of the tool call in ctx, within assignment a ("" when the call has
// no id): a call run again after a crash sends nothing twice and receives what the first run
// received.
func callKey(ctx context.Context, a runtime.Assignment) string {
	if c, ok := tools.CallFrom(ctx); ok && c.ID != "" && a.ID != "" {
		return a.ID + "/" + c.ID
	}
	return ""
}

// FormatMessages renders messages the way workers see them: "[Message from NAME]: body", one
// per paragraph.
func FormatMessages(msgs []runtime.Message) string {
	var b strings.Builder
	for i, m := range msgs {
		if i > 0 {
			b.WriteString("\n\n")
		}
		fmt.Fprintf(&b, "[Message from %s]: %s", m.From, m.Body)
	}
	return b.String()
}
