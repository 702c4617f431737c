// Package demo is a deterministic offline team: a scripted coordinator and scripted workers
// that play a small research project on any goal without a network or a key. The research
// example runs it when no model is configured, and the squad's tests use it.
//
// The coordinator puts three research nodes on the board (background, current state, open
// questions), answers the first worker's question, reconvenes when they are done, has a
// synthesis node write report.md from their published findings, and finishes with the report.
// Workers write findings.md (or, for the synthesis, report.md from their inputs) and publish.
//
// Options add work that crosses the squad's other paths: with WithSubNodes the worker on the
// current state asks for a sub-node (create_work_node), checkpoints to wait for it, and
// integrates its details when it gets its node back; with WithHumanQuestion the worker on the
// open questions asks the human (ask_human) and writes the answer into its findings.
//
// The team answers at once, as the tests want it. WithPace gives it a pace a person can follow:
// each model waits that long before each answer (Pace is the examples' choice), and a
// cancelled run stops at once.
//
// Every model decides each turn from its whole conversation — what it has done (its earlier
// tool calls and their results) and everything it was told — never from the last message
// alone, and never does a thing twice: news that arrive together, or beside tool results, are
// all seen, and a run interrupted anywhere resumes.
package demo

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/agiraph/agiraph/models"
	"github.com/agiraph/agiraph/nodes"
	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/providers/scripted"
	"github.com/agiraph/agiraph/tools"
	"golang.org/x/term"
)

// The names under which the models are served (see models.WithModels).
const (
	CoordinatorModel = "scripted/coordinator"
	WorkerModel      = "scripted/worker"
)

// Aspects are the research nodes' topics, in order.
var Aspects = []string{"background and history", "current state", "open questions and outlook"}

// Question is what the first researcher asks the coordinator.
const Question = "Should my findings cite sources?"

// HumanQuestion is what the researcher on the open questions asks the human, with
// WithHumanQuestion.
const HumanQuestion = "Should the findings on the open questions include an outlook for the next five years?"

// Reply is the coordinator's reply to a message from the human.
const Reply = "Noted. The team is on it; I will report when the stage is done."

// Option chooses a variant of the team.
type Option func(*config)

type config struct {
	subNodes      bool
	humanQuestion bool
	pace          time.Duration
}

// WithSubNodes makes the researcher on the current state (Aspects[1]) ask for a sub-node that
// collects details, give it to itself, checkpoint to wait for it, and integrate its details.md
// into its findings when its node comes back with the sub-node's results.
func WithSubNodes() Option { return func(c *config) { c.subNodes = true } }

// WithHumanQuestion makes the researcher on the open questions (Aspects[2]) ask the human
// HumanQuestion with ask_human before it writes; the answer goes into its findings.
func WithHumanQuestion() Option { return func(c *config) { c.humanQuestion = true } }

// Pace is the pace of a team a person watches: time to read each event as it comes, to type a
// message to the coordinator, or to stop the run and resume it.
const Pace = 2 * time.Second

// PaceAt returns the pace of a team whose command reads and writes the given streams: Pace when
// every one is a file open on a terminal, where a person follows the run; else 0, so that a
// script or a test — its streams a pipe, a file or /dev/null — gets its result at once.
func PaceAt(streams ...any) time.Duration {
	for _, s := range streams {
		f, ok := s.(*os.File)
		if !ok || !term.IsTerminal(int(f.Fd())) {
			return 0
		}
	}
	return Pace
}

// WithPace makes every model of the team wait d before each answer (see scripted.Model.Paced);
// 0, the default, answers at once.
func WithPace(d time.Duration) Option { return func(c *config) { c.pace = d } }

func configure(opts []Option) config {
	var c config
	for _, o := range opts {
		o(&c)
	}
	return c
}

// Models returns the coordinator and the worker model, of the variant opts choose.
func Models(opts ...Option) []providers.Model {
	c := configure(opts)
	return []providers.Model{
		scripted.NewFunc("coordinator", coordinator).Paced(c.pace),
		scripted.NewFunc("worker", c.worker).Paced(c.pace),
	}
}

// Team returns the options that make a squad play the offline team: its models, served by name,
// for the coordinator and the workers.
func Team(opts ...Option) []nodes.Option {
	return []nodes.Option{
		nodes.WithModel(WorkerModel), nodes.WithCoordinatorModel(CoordinatorModel),
		nodes.WithModelOptions(models.WithModels(Models(opts...)...)),
	}
}

func call(name string, args any) tools.Call {
	raw, _ := json.Marshal(args)
	return tools.Call{Name: name, Args: raw}
}

// numbered gives calls ids unique in the conversation.
func numbered(req providers.Request, calls ...tools.Call) []tools.Call {
	turn := 0
	for _, m := range req.Messages {
		if m.Role == providers.Assistant {
			turn++
		}
	}
	for i := range calls {
		calls[i].ID = fmt.Sprintf("call_%d_%d", turn, i+1)
	}
	return calls
}

// history is what a conversation holds, read whole: the calls made, in order, with their
// results; the news received (the text of every user message after the task, text beside tool
// results included); and how many messages from the human came after the last reply in text.
type history struct {
	calls      []tools.Call
	results    map[string]tools.Result // by call id
	news       string
	unanswered int
}

func read(req providers.Request) history {
	h := history{results: map[string]tools.Result{}}
	var news strings.Builder
	for i, m := range req.Messages {
		switch m.Role {
		case providers.Assistant:
			calls := m.ToolCalls()
			h.calls = append(h.calls, calls...)
			if len(calls) == 0 && strings.TrimSpace(m.Text()) != "" {
				h.unanswered = 0 // a reply in text answers every message before it
			}
		default:
			for _, p := range m.Parts {
				if p.Type == providers.ToolResultPart && p.ToolResult != nil {
					h.results[p.ToolResult.CallID] = *p.ToolResult
				}
			}
			if i == 0 {
				continue // the task, not news
			}
			text := m.Text()
			news.WriteString(text)
			news.WriteString("\n")
			h.unanswered += strings.Count(text, "[Message from human]")
		}
	}
	h.news = news.String()
	return h
}

// called returns the calls of the named tool, in order.
func (h history) called(name string) []tools.Call {
	var out []tools.Call
	for _, c := range h.calls {
		if c.Name == name {
			out = append(out, c)
		}
	}
	return out
}

// result returns the result of call c, if it came.
func (h history) result(c tools.Call) (tools.Result, bool) {
	r, ok := h.results[c.ID]
	return r, ok
}

// arg returns the string argument key of call c.
func arg(c tools.Call, key string) string {
	var args map[string]any
	_ = json.Unmarshal(c.Args, &args)
	s, _ := args[key].(string)
	return s
}

// goal returns the goal of the coordinator's first message.
func goal(req providers.Request) string {
	return strings.TrimSpace(strings.TrimPrefix(req.Messages[0].Text(), "GOAL:"))
}

var (
	fromWorker = regexp.MustCompile(`\[Message from ([^\]]+)\]: ` + regexp.QuoteMeta(Question))
	createdID  = regexp.MustCompile(`Created node (n\d+)`)
)

const synthesisTask = "Synthesize the findings of the three research nodes into report.md in your scratch folder, then publish."

// coordinator plays the coordinator: each turn it does the first thing due, from the whole
// conversation.
func coordinator(_ context.Context, req providers.Request) (scripted.Turn, error) {
	h := read(req)
	g := goal(req)
	turn := func(calls ...tools.Call) (scripted.Turn, error) {
		return scripted.Turn{Calls: numbered(req, calls...)}, nil
	}
	if len(h.called("create_work_node")) == 0 {
		var calls []tools.Call
		for _, a := range Aspects {
			calls = append(calls, call("create_work_node", map[string]any{
				"task": fmt.Sprintf("Research the %s of: %s. Write your findings to findings.md in your scratch folder, then publish.", a, g),
			}))
		}
		calls = append(calls, call("write_file", map[string]string{"path": "_plan.md", "content": plan(g)}))
		return scripted.Turn{Text: "I'll split this into three research nodes, then a synthesis.", Calls: numbered(req, calls...)}, nil
	}
	if len(h.called("finish")) > 0 { // the run is over: a turn to store notes, nothing more to do
		return turn(call("wait", map[string]string{}))
	}
	// Questions from workers, each answered once.
	answered := map[string]bool{}
	for _, c := range h.called("send_message") {
		answered[strings.ToLower(arg(c, "to"))] = true
	}
	var answers []tools.Call
	for _, m := range fromWorker.FindAllStringSubmatch(h.news, -1) {
		if who := m[1]; !answered[strings.ToLower(who)] {
			answered[strings.ToLower(who)] = true
			answers = append(answers, call("send_message", map[string]string{"to": who, "content": "Yes: name where each finding comes from."}))
		}
	}
	if len(answers) > 0 {
		return turn(answers...)
	}
	// Stage 1 done: reconvene, and the synthesis.
	if strings.Contains(h.news, "Stage 1 is complete") && len(h.called("reconvene")) == 0 {
		refs := map[string]string{}
		for i := range Aspects {
			refs[fmt.Sprintf("part%d", i+1)] = fmt.Sprintf("nodes/n%d/published/findings.md", i+1)
		}
		return turn(
			call("reconvene", map[string]string{"assessment": "The three research nodes are done; synthesis next."}),
			call("create_work_node", map[string]any{"task": synthesisTask, "deps": []string{"n1", "n2", "n3"}, "refs": refs}),
		)
	}
	// Stage 2 done: read the synthesis' report.
	if strings.Contains(h.news, "Stage 2 is complete") && len(h.called("read_file")) == 0 {
		if id := synthesisNode(h); id != "" {
			return turn(call("read_file", map[string]string{"path": "nodes/" + id + "/published/report.md"}))
		}
	}
	// The report read: finish with it.
	for _, c := range h.called("read_file") {
		if r, ok := h.result(c); ok && !r.IsError {
			return turn(call("finish", map[string]string{"output": stripLineNumbers(r.Content)}))
		}
	}
	if h.unanswered > 0 { // a reply in text ends the turn: last, once nothing else is due
		return scripted.Turn{Text: Reply}, nil
	}
	return turn(call("wait", map[string]string{}))
}

// synthesisNode returns the id of the synthesis node, from the result of the call that
// created it.
func synthesisNode(h history) string {
	for _, c := range h.called("create_work_node") {
		if arg(c, "task") != synthesisTask {
			continue
		}
		if r, ok := h.result(c); ok && !r.IsError {
			if m := createdID.FindStringSubmatch(r.Content); m != nil {
				return m[1]
			}
		}
	}
	return ""
}

func plan(goal string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Plan\n\nGoal: %s\n\nStage 1: research, in parallel:\n", goal)
	for i, a := range Aspects {
		fmt.Fprintf(&b, "- n%d: %s\n", i+1, a)
	}
	b.WriteString("\nStage 2: synthesis of the three into report.md.\n")
	return b.String()
}

var (
	nodeID      = regexp.MustCompile(`on work node (n\d+)`)
	workerName  = regexp.MustCompile(`^You are ([^.\s]+)\.`)
	researchOf  = regexp.MustCompile(`Research the (.+?) of: `)
	subResults  = regexp.MustCompile(`(?m)^\s+(nodes/n\d+/published/\S+)$`)
	subTaskHead = "Collect the details of the "
)

// worker plays every worker: a research node, a sub-node, or the synthesis, each turn doing the
// first step not yet done.
func (c config) worker(_ context.Context, req providers.Request) (scripted.Turn, error) {
	node := "n0"
	if m := nodeID.FindStringSubmatch(req.System); m != nil {
		node = m[1]
	}
	name := ""
	if m := workerName.FindStringSubmatch(req.System); m != nil {
		name = m[1]
	}
	task := req.Messages[0].Text()
	h := read(req)
	did := func(tool string) bool { return len(h.called(tool)) > 0 }
	turn := func(calls ...tools.Call) (scripted.Turn, error) {
		return scripted.Turn{Calls: numbered(req, calls...)}, nil
	}
	scratch := "nodes/" + node + "/scratch/"
	// readAll returns the contents the read_file calls returned, in the order of the calls.
	readAll := func() []string {
		var out []string
		for _, rc := range h.called("read_file") {
			if r, ok := h.result(rc); ok && !r.IsError {
				out = append(out, stripLineNumbers(r.Content))
			}
		}
		return out
	}
	publish := func(summary string) (scripted.Turn, error) {
		if did("publish") {
			return scripted.Turn{Text: "My work on " + node + " is published; nothing is left to do."}, nil
		}
		return turn(call("publish", map[string]string{"summary": summary}))
	}

	switch {
	case strings.Contains(task, "Synthesize the findings"):
		switch {
		case !did("read_file"):
			var calls []tools.Call
			for i := range Aspects {
				calls = append(calls, call("read_file", map[string]string{"path": fmt.Sprintf("nodes/n%d/published/findings.md", i+1)}))
			}
			return turn(calls...)
		case !did("write_file"):
			var b strings.Builder
			b.WriteString("# Report\n")
			for _, content := range readAll() {
				b.WriteString("\n")
				b.WriteString(content)
			}
			return turn(call("write_file", map[string]string{"path": scratch + "report.md", "content": b.String()}))
		}
		return publish("report.md brings the three findings together")

	case strings.Contains(task, subTaskHead):
		aspect := "the topic"
		if i := strings.Index(task, subTaskHead); i >= 0 {
			rest := task[i+len(subTaskHead):]
			if j := strings.Index(rest, " of: "); j >= 0 {
				aspect = rest[:j]
			}
		}
		if !did("write_file") {
			details := fmt.Sprintf("### Details on the %s\n\n- A detail a sub-node collected on the %s.\n", aspect, aspect)
			return turn(call("write_file", map[string]string{"path": scratch + "details.md", "content": details}))
		}
		return publish("details.md on the " + aspect)
	}

	aspect := "the topic"
	if m := researchOf.FindStringSubmatch(task); m != nil {
		aspect = m[1]
	}
	split := c.subNodes && aspect == Aspects[1]
	ask := c.humanQuestion && aspect == Aspects[2]
	integrate := strings.Contains(task, "Your sub-tasks have ended")

	switch {
	case ask && !did("ask_human"):
		return turn(call("ask_human", map[string]string{"question": HumanQuestion}))
	case split && !integrate && !did("create_work_node"):
		g := task
		if i := strings.Index(task, " of: "); i >= 0 {
			g = task[i+len(" of: "):]
			if j := strings.Index(g, ". Write your findings"); j >= 0 {
				g = g[:j]
			}
		}
		args := map[string]string{
			"task": fmt.Sprintf("%s%s of: %s. Write them to details.md in your scratch folder, then publish.", subTaskHead, aspect, g),
		}
		if name != "" {
			args["worker"] = name // the worker takes its sub-node itself, once it has checkpointed
		}
		return turn(call("create_work_node", args))
	case split && !integrate && !did("checkpoint"):
		return turn(call("checkpoint", map[string]string{"summary": "Asked for a sub-node to collect the details of the " + aspect + "; the findings follow once it is done."}))
	case split && !integrate:
		return scripted.Turn{Text: "I wait for my sub-node."}, nil
	case integrate && !did("read_file"):
		var calls []tools.Call
		for _, m := range subResults.FindAllStringSubmatch(task, -1) {
			calls = append(calls, call("read_file", map[string]string{"path": m[1]}))
		}
		if len(calls) > 0 {
			return turn(calls...)
		}
	}
	if !did("write_file") {
		var b strings.Builder
		fmt.Fprintf(&b, "## Findings: %s\n\n- A first finding on the %s.\n- A second finding on the %s.\n- Source: the offline demo team (no web access).\n", aspect, aspect, aspect)
		for _, ac := range h.called("ask_human") {
			if r, ok := h.result(ac); ok {
				fmt.Fprintf(&b, "- Asked the human: %s %s\n", arg(ac, "question"), r.Content)
			}
		}
		if integrate {
			for _, d := range readAll() {
				b.WriteString("\n")
				b.WriteString(strings.TrimSpace(d))
				b.WriteString("\n")
			}
		}
		calls := []tools.Call{call("write_file", map[string]string{"path": scratch + "findings.md", "content": b.String()})}
		if aspect == Aspects[0] && !did("send_message") {
			calls = append(calls, call("send_message", map[string]string{"to": "coordinator", "content": Question}))
		}
		return turn(calls...)
	}
	return publish("findings.md on the " + aspect)
}

// stripLineNumbers undoes read_file's numbering ("   1\ttext"), when it has one.
func stripLineNumbers(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if tab := strings.IndexByte(l, '\t'); tab > 0 && strings.TrimSpace(l[:tab]) != "" && strings.Trim(l[:tab], " 0123456789") == "" {
			lines[i] = l[tab+1:]
		}
	}
	return strings.Join(lines, "\n")
}
