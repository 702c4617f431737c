// Package demo is a deterministic offline team: a scripted coordinator and scripted workers
// that play a small research project on any goal without a network or a key. The research
// example runs it when no model is configured, and the squad's tests use it.
//
// The coordinator puts three research nodes on the board (background, current state, open
// questions), answers the first worker's question, reconvenes when they are done, has a
// synthesis node write report.md from their published findings, and finishes with the report.
// Workers write findings.md (or, for the synthesis, report.md from their inputs) and publish.
// Both decide every turn from the conversation alone, so a run interrupted anywhere resumes.
package demo

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/agiraph/agiraph/models"
	"github.com/agiraph/agiraph/nodes"
	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/providers/scripted"
	"github.com/agiraph/agiraph/tools"
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

// Models returns the coordinator and the worker model.
func Models() []providers.Model {
	return []providers.Model{scripted.NewFunc("coordinator", coordinator), scripted.NewFunc("worker", worker)}
}

// Team returns the options that make a squad play the offline team: its models, served by name,
// for the coordinator and the workers.
func Team() []nodes.Option {
	return []nodes.Option{
		nodes.WithModel(WorkerModel), nodes.WithCoordinatorModel(CoordinatorModel),
		nodes.WithModelOptions(models.WithModels(Models()...)),
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

// last returns the text of the last message and the names of the tools whose results it holds.
func last(req providers.Request) (text string, results []tools.Result) {
	m := req.Messages[len(req.Messages)-1]
	for _, p := range m.Parts {
		switch p.Type {
		case providers.TextPart:
			text += p.Text
		case providers.ToolResultPart:
			results = append(results, *p.ToolResult)
		}
	}
	return text, results
}

// goal returns the goal of the coordinator's first message.
func goal(req providers.Request) string {
	return strings.TrimSpace(strings.TrimPrefix(req.Messages[0].Text(), "GOAL:"))
}

var fromWorker = regexp.MustCompile(`\[Message from ([^\]]+)\]: ` + regexp.QuoteMeta(Question))

func coordinator(_ context.Context, req providers.Request) (scripted.Turn, error) {
	text, results := last(req)
	g := goal(req)
	switch {
	case len(req.Messages) == 1:
		var calls []tools.Call
		for _, a := range Aspects {
			calls = append(calls, call("create_work_node", map[string]any{
				"task": fmt.Sprintf("Research the %s of: %s. Write your findings to findings.md in your scratch folder, then publish.", a, g),
			}))
		}
		calls = append(calls, call("write_file", map[string]string{"path": "_plan.md", "content": plan(g)}))
		return scripted.Turn{Text: "I'll split this into three research nodes, then a synthesis.", Calls: numbered(req, calls...)}, nil
	case len(results) == 1 && results[0].Name == "read_file" && !results[0].IsError:
		return scripted.Turn{Calls: numbered(req, call("finish", map[string]string{"output": stripLineNumbers(results[0].Content)}))}, nil
	case len(results) > 0:
		return scripted.Turn{Calls: numbered(req, call("wait", map[string]string{}))}, nil
	case strings.Contains(text, "Stage 1 is complete"):
		refs := map[string]string{}
		for i := range Aspects {
			refs[fmt.Sprintf("part%d", i+1)] = fmt.Sprintf("nodes/n%d/published/findings.md", i+1)
		}
		return scripted.Turn{Calls: numbered(req,
			call("reconvene", map[string]string{"assessment": "The three research nodes are done; synthesis next."}),
			call("create_work_node", map[string]any{
				"task": "Synthesize the findings of the three research nodes into report.md in your scratch folder, then publish.",
				"deps": []string{"n1", "n2", "n3"}, "refs": refs,
			}),
		)}, nil
	case strings.Contains(text, "Stage 2 is complete"):
		return scripted.Turn{Calls: numbered(req, call("read_file", map[string]string{"path": "nodes/n4/published/report.md"}))}, nil
	}
	if m := fromWorker.FindStringSubmatch(text); m != nil {
		return scripted.Turn{Calls: numbered(req,
			call("send_message", map[string]string{"to": m[1], "content": "Yes: name where each finding comes from."}),
		)}, nil
	}
	if strings.Contains(text, "[Message from human]") {
		return scripted.Turn{Text: "Noted. The team is on it; I will report when the stage is done."}, nil
	}
	return scripted.Turn{Calls: numbered(req, call("wait", map[string]string{}))}, nil
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

var nodeID = regexp.MustCompile(`on work node (n\d+)`)

func worker(_ context.Context, req providers.Request) (scripted.Turn, error) {
	node := "n0"
	if m := nodeID.FindStringSubmatch(req.System); m != nil {
		node = m[1]
	}
	task := req.Messages[0].Text()
	_, results := last(req)
	done := map[string]bool{}
	for _, m := range req.Messages {
		for _, c := range m.ToolCalls() {
			done[c.Name] = true
		}
	}
	scratch := "nodes/" + node + "/scratch/"
	if strings.HasPrefix(task, "# "+node+"\n\nSynthesize") || strings.Contains(task, "Synthesize the findings") {
		switch {
		case !done["read_file"]:
			var calls []tools.Call
			for i := range Aspects {
				calls = append(calls, call("read_file", map[string]string{"path": fmt.Sprintf("nodes/n%d/published/findings.md", i+1)}))
			}
			return scripted.Turn{Calls: numbered(req, calls...)}, nil
		case !done["write_file"]:
			var b strings.Builder
			b.WriteString("# Report\n")
			for _, r := range results {
				b.WriteString("\n")
				b.WriteString(stripLineNumbers(r.Content))
			}
			return scripted.Turn{Calls: numbered(req, call("write_file", map[string]string{"path": scratch + "report.md", "content": b.String()}))}, nil
		}
		return scripted.Turn{Calls: numbered(req, call("publish", map[string]string{"summary": "report.md brings the three findings together"}))}, nil
	}
	aspect := "the topic"
	for _, a := range Aspects {
		if strings.Contains(task, a) {
			aspect = a
		}
	}
	if !done["write_file"] {
		findings := fmt.Sprintf("## Findings: %s\n\n- A first finding on the %s.\n- A second finding on the %s.\n- Source: the offline demo team (no web access).\n", aspect, aspect, aspect)
		calls := []tools.Call{call("write_file", map[string]string{"path": scratch + "findings.md", "content": findings})}
		if aspect == Aspects[0] {
			calls = append(calls, call("send_message", map[string]string{"to": "coordinator", "content": Question}))
		}
		return scripted.Turn{Calls: numbered(req, calls...)}, nil
	}
	return scripted.Turn{Calls: numbered(req, call("publish", map[string]string{"summary": "findings.md on the " + aspect}))}, nil
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
