package harnessed

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/agiraph/agiraph/graph"
	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/runtime"
	"github.com/agiraph/agiraph/runtime/adapter"
	"github.com/agiraph/agiraph/tools"
)

const (
	modelNode = "model"
	toolsNode = "tools"
)

func (w *worker) graph() (*graph.Compiled[state], error) {
	g := graph.New[state]()
	g.SetReducer(reduce)
	g.AddNode(modelNode, w.think)
	g.AddNode(toolsNode, w.act)
	g.AddEdge(graph.START, modelNode)
	next := func(_ context.Context, s state) string {
		switch {
		case len(s.Pending) > 0:
			return toolsNode
		case s.Report.Status != "":
			return graph.END
		}
		return modelNode
	}
	g.AddConditionalEdges(modelNode, next, toolsNode, modelNode, graph.END)
	g.AddConditionalEdges(toolsNode, next, toolsNode, modelNode, graph.END)
	// An assignment's input is saved while its first model turn runs: a crash before it is saved
	// starts the assignment again from its input (see Runtime.worker), as a crash in that turn would.
	return g.Compile(graph.WithCheckpointer(w.rt.cfg.saver), graph.WithThread(w.a.ID), graph.WithInputSavedAside(),
		graph.WithRecursionLimit(1<<30), graph.WithStateCache(w.rt.cfg.cache.states), graph.WithTracerProvider(w.rt.cfg.tracerProvider))
}

// think is the model node: a yield point, a compaction if one is due, then one model turn.
func (w *worker) think(ctx context.Context, s state) (state, error) {
	w.report.Restore(s.Report) // the state is the truth: it holds steps saved and not re-run
	next := s.update()
	if s.Turns-s.Since >= w.rt.cfg.maxIterations {
		return next, fmt.Errorf("%w (%d)", ErrMaxIterations, w.rt.cfg.maxIterations)
	}
	var add []providers.Message
	msgs := w.receive(fmt.Sprintf("turn%d", s.Turns))
	if len(msgs) > 0 {
		add = append(add, providers.UserText(adapter.FormatMessages(msgs)))
	}
	conv := append(slices.Clip(s.Conversation), add...)
	if w.over(s, add) {
		if !s.Flushing {
			add = append(add, providers.UserText(flushRequest))
			conv = append(conv, add[len(add)-1])
			next.Flushing = true
		} else {
			rebuilt, err := w.compact(s, conv)
			if err != nil {
				return next, err
			}
			conv, add = rebuilt, rebuilt
			next.Reset, next.Flushing = true, false
			next.Compactions++
		}
	}

	resp, err := w.generate(ctx, conv)
	if err != nil {
		w.unsaved = msgs // no step saves them: the outcome hands them back
		return next, err
	}
	add = append(add, resp.Message)
	next.Conversation = add
	next.Turns++
	next.Usage = s.Usage.Add(resp.Usage)
	next.LastContext = resp.Usage.InputTokens + resp.Usage.CacheReadTokens + resp.Usage.CacheWriteTokens + resp.Usage.OutputTokens
	u := resp.Usage
	w.rep.Emit(runtime.Event{Kind: runtime.ModelTurn, Text: resp.Message.Text(), Usage: &u})
	calls := resp.Message.ToolCalls()
	next.Asks = len(calls) > 0 // the message, saved once, holds them
	for _, c := range calls {
		w.rep.Emit(runtime.Event{Kind: runtime.ToolCalled, Tool: &runtime.ToolEvent{ID: c.ID, Name: c.Name, Args: c.Args}})
	}
	switch {
	case w.rt.cfg.single:
		o, err := w.publishAnswer(resp.Message.Text())
		if err != nil {
			return next, err
		}
		next.Report = o
	case len(calls) == 0 && w.rt.cfg.textEndsTurn && !next.Flushing:
		if err := w.report.End(runtime.Checkpointed, resp.Message.Text()); err != nil {
			return next, err
		}
		next.Report, next.Flushing = reported(s.Report, w.report.Outcome()), false
	case len(calls) == 0 && !next.Flushing:
		next.Conversation = append(next.Conversation, providers.UserText(nudge))
	}
	return next, nil
}

// act is the tools node: it runs the next pending call (or the next run of calls that are safe
// to run together), then a yield point. When the turn's calls are all answered their results
// become one message, followed by any messages that arrived meanwhile. Its update holds what it
// adds: the calls it ran, their results and the messages it received.
func (w *worker) act(ctx context.Context, s state) (state, error) {
	w.report.Restore(s.Report) // the state is the truth: it holds steps saved and not re-run
	next := s.update()
	results, err := w.call(ctx, w.batch(s.Pending))
	if err != nil {
		return next, err
	}
	report := w.report.Outcome()
	next.Ran, next.Report = len(results), reported(s.Report, report)
	var held []runtime.Message
	if !w.report.Done() { // a worker that has ended leaves its mail for its next turn
		held = w.receive(fmt.Sprintf("turn%d/result%d", s.Turns, len(s.Results)+len(results)))
	}
	if len(results) < len(s.Pending) {
		next.Results, next.Held = results, held
		return next, nil
	}
	held = slices.Concat(s.Held, held)
	msg := providers.ToolResults(slices.Concat(s.Results, results))
	switch {
	case len(held) > 0 && report.Status != "":
		next.Report.Unread = held // the turn ended: no model call will see them
	case len(held) > 0:
		msg.Parts = append(msg.Parts, providers.Text(adapter.FormatMessages(held)))
	}
	next.Conversation = []providers.Message{msg}
	return next, nil
}

// call runs a batch of calls and reports their results; ask_human, which comes alone, is
// answered by the human.
func (w *worker) call(ctx context.Context, batch []tools.Call) ([]tools.Result, error) {
	var results []tools.Result
	if batch[0].Name == askHuman.Name {
		r, err := w.ask(ctx, batch[0])
		if err != nil {
			return nil, err
		}
		results = []tools.Result{r}
	} else {
		var err error
		if results, err = w.runCalls(ctx, batch); err != nil {
			return nil, err
		}
	}
	for _, r := range results {
		w.rep.Emit(runtime.Event{Kind: runtime.ToolResult, Tool: &runtime.ToolEvent{ID: r.CallID, Name: r.Name, Result: r.Content, IsError: r.IsError}})
	}
	return results, nil
}

// runCalls runs the calls of batch that the hooks let run now (see guard), and returns their
// results, the hooks' rejections among them.
func (w *worker) runCalls(ctx context.Context, batch []tools.Call) ([]tools.Result, error) {
	calls, done, err := w.guard(ctx, batch)
	if err != nil {
		return nil, err
	}
	var todo []tools.Call
	for i, c := range calls {
		if done[i] == nil {
			todo = append(todo, c)
		}
	}
	ran := w.reg.Run(adapter.WithReport(ctx, w.report), todo)
	if err := ctx.Err(); err != nil {
		return nil, context.Cause(ctx) // do not save results cut short by cancellation
	}
	results := make([]tools.Result, len(calls))
	for i, c := range calls {
		if done[i] != nil {
			results[i] = *done[i]
			continue
		}
		if results[i], err = w.afterTool(ctx, c, ran[0]); err != nil {
			return nil, err
		}
		ran = ran[1:]
	}
	return results, nil
}

// batch returns the calls to run next, in one step: the leading run of calls that are safe to
// run together, else the leading run of calls of idempotent tools (run one after another; a
// crash runs them again), or else the first call alone.
func (w *worker) batch(pending []tools.Call) []tools.Call {
	leading := func(ok func(tools.Tool) bool) int {
		n := 0
		for _, c := range pending {
			if t, found := w.reg.Get(c.Name); !found || !ok(t) {
				break
			}
			n++
		}
		return n
	}
	n := leading(func(t tools.Tool) bool { return t.Safe })
	if n == 0 {
		n = leading(func(t tools.Tool) bool { return t.Idempotent })
	}
	return pending[:max(n, 1)]
}

// receive drains the mailbox: a yield point. step names the step of the assignment that
// receives (the model turn, or the tool results so far, it comes before), so a step run again
// after a crash, before its update was saved, gets the same messages back.
func (w *worker) receive(step string) []runtime.Message {
	if w.a.Mailbox == nil {
		return nil
	}
	msgs := w.a.Mailbox.Receive(w.a.ID + "/" + step)
	for i := range msgs {
		w.rep.Emit(runtime.Event{Kind: runtime.MessageReceived, Message: &msgs[i]})
	}
	return msgs
}

// generate asks the model for the next turn, once: retrying is the model's own (see
// providers.WithRetry), whose retries, and a fallback chain's moves to its next model, are
// reported as Retrying events. The answer's text is
// reported as it comes, in TextDelta events (unless WithoutStreaming), and to the messages stream
// of a graph whose node runs the worker (graph.OnText). When the call fails, the worker's notes on
// the failure go to failure_notes.md.
func (w *worker) generate(ctx context.Context, conv []providers.Message) (providers.Response, error) {
	req := providers.Request{System: w.prompt, Messages: w.withFiles(conv), MaxTokens: w.rt.cfg.maxTokens, Tools: w.specs}
	if !w.rt.cfg.noStream {
		toGraph := graph.OnText(ctx, w.rt.model.Name())
		req.OnText = func(delta string) {
			if delta != "" {
				w.rep.Emit(runtime.Event{Kind: runtime.TextDelta, Text: delta})
				if toGraph != nil {
					toGraph(delta)
				}
			}
		}
	}
	if err := w.beforeModel(ctx, &req); err != nil {
		return providers.Response{}, err
	}
	ctx, span := w.traceModel(ctx, req)
	ctx = providers.OnRetry(ctx, func(attempt int, err error, wait time.Duration) {
		w.rep.Emit(runtime.Event{Kind: runtime.Retrying, Text: fmt.Sprintf("attempt %d failed, trying again in %v: %v", attempt, wait.Round(time.Millisecond), err)})
		traceRetry(span, attempt, err)
	})
	ctx = providers.OnFallback(ctx, func(from string, err error, to string) {
		w.rep.Emit(runtime.Event{Kind: runtime.Retrying, Text: fmt.Sprintf("%s failed, falling back to %s: %v", from, to, err)})
		traceFallback(span, from, err, to)
	})
	var resp providers.Response
	var err error
	if w.rt.cfg.single && w.a.OutputSchema != nil {
		req.Output = &providers.Output{Schema: w.a.OutputSchema}
		w.result, resp, err = providers.GenerateJSON(ctx, w.rt.model, req)
	} else {
		resp, err = w.generateShowing(ctx, req, conv)
	}
	if err == nil {
		err = w.afterModel(ctx, &req, &resp)
	}
	endModel(span, resp, err)
	if err == nil || ctx.Err() != nil {
		return resp, err
	}
	if werr := w.writeFailureNotes(req, err); werr != nil {
		return resp, errors.Join(err, werr)
	}
	return resp, err
}

// system is the system prompt: the assignment's, the runtime's protocol and the tools' guidance.
func (w *worker) system() string {
	var b strings.Builder
	var guidance string
	if !w.rt.cfg.single {
		guidance = w.reg.Guidance()
	}
	b.Grow(len(w.a.System) + 2 + len(protocol) + len(w.a.Dir.Scratch()) + 2 + len(guidance)) // one allocation
	if w.a.System != "" {
		b.WriteString(w.a.System)
		b.WriteString("\n\n")
	}
	if w.rt.cfg.single {
		b.WriteString("Answer the task in one reply; your reply is published as the result.")
		return b.String()
	}
	if !w.rt.cfg.ownTools {
		fmt.Fprintf(&b, protocol, w.a.Dir.Scratch())
		b.WriteString("\n\n")
	}
	b.WriteString(guidance)
	return b.String()
}

const protocol = `HOW YOU WORK
Your scratch directory is %s: write your work in progress and your outputs there.
When the work is done, call publish with a summary: your outputs move to published/, where other nodes read them, and the assignment ends. To end a stage without publishing, call checkpoint.
Messages from others appear as [Message from NAME]: ... between turns.`

const nudge = "You answered without calling a tool. Continue the work, or call publish (or checkpoint) when it is done."

const flushRequest = "Your conversation is about to be compacted: the earlier turns will be archived and replaced by a summary of your files. Write anything you need to keep (findings, decisions, what is left to do) to files now — your scratch directory, and memory_write for what should outlast this work if you have it — then reply."

// askHuman is the tool through which a worker asks the human; the runtime answers it itself
// (see ask), so its handler is never called.
var askHuman = tools.Func("ask_human", "Ask the human a question. Your work pauses until they answer.",
	func(context.Context, askArgs) (string, error) {
		return "", errors.New("ask_human is answered by the runtime")
	},
	tools.WithGuidance("Use ask_human sparingly, only for what you cannot decide or find out yourself."))

type askArgs struct {
	Question string `json:"question" jsonschema_description:"The question, with the context the human needs to answer it"`
	Default  string `json:"default,omitempty" jsonschema_description:"The answer to go on with should the human not answer in time"`
}

// question is what a question with a default interrupts the assignment with (one without
// interrupts with its text).
type question struct {
	Question string `json:"question"`
	Default  string `json:"default"`
}

// questionOf returns the question with a default that v, an interrupt's value (read back from a
// checkpoint, a JSON object), is, if it is one.
func questionOf(v any) (question, bool) {
	switch v := v.(type) {
	case question:
		return v, true
	case string, nil:
		return question{}, false
	}
	b, err := json.Marshal(v)
	if err != nil {
		return question{}, false
	}
	var fields map[string]json.RawMessage
	var q question
	if json.Unmarshal(b, &fields) != nil || len(fields) != 2 || json.Unmarshal(b, &q) != nil {
		return question{}, false
	}
	return q, q.Question != "" && q.Default != ""
}

// ask stops the assignment to wait for the human's answer to c; run again with the answer, it
// returns the answer as c's result.
func (w *worker) ask(ctx context.Context, c tools.Call) (tools.Result, error) {
	var args askArgs
	if err := tools.Validate(askHuman.Schema, c.Args); err != nil {
		return tools.Result{CallID: c.ID, Name: c.Name, Content: err.Error(), IsError: true}, nil
	}
	if err := json.Unmarshal(c.Args, &args); err != nil {
		return tools.Result{CallID: c.ID, Name: c.Name, Content: err.Error(), IsError: true}, nil
	}
	var asked any = args.Question
	if args.Default != "" {
		asked = question(args)
	}
	answer, err := graph.Interrupt[string](ctx, asked)
	if err != nil {
		w.rep.Emit(runtime.Event{Kind: runtime.AskedHuman, Text: args.Question})
		return tools.Result{}, err
	}
	return tools.Result{CallID: c.ID, Name: c.Name, Content: "The human answered: " + answer}, nil
}

// publishAnswer publishes a single-inference answer as result.md; or, for an assignment with an
// output schema, its result (asked for as structured output and valid) as runtime.ResultFile.
func (w *worker) publishAnswer(text string) (runtime.Outcome, error) {
	name, content := "result.md", []byte(text)
	if w.result != nil {
		name, content = runtime.ResultFile, w.result
	}
	if err := os.WriteFile(filepath.Join(w.a.Dir.Scratch(), name), content, 0o644); err != nil {
		return runtime.Outcome{}, fmt.Errorf("harnessed: %w", err)
	}
	files, err := w.a.Dir.Publish()
	if err != nil {
		return runtime.Outcome{}, err
	}
	return runtime.Outcome{Status: runtime.Published, Summary: text, Published: files, Result: w.result}, nil
}
