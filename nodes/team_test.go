package nodes_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strings"
	"sync"

	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/providers/scripted"
	"github.com/agiraph/agiraph/tools"
)

// A small team for the squad's tests: the coordinator puts two nodes on the board (n1 slow,
// n2 fast), replies to the human, and finishes when both are done; workers note their steps
// in a file (to count them across processes), write a file, and publish — the worker on n1
// calls "block" before publishing, which the test controls.

func teamCall(name string, args any) tools.Call {
	raw, _ := json.Marshal(args)
	return tools.Call{Name: name, Args: raw}
}

func teamTurns(req providers.Request) int {
	n := 0
	for _, m := range req.Messages {
		if m.Role == providers.Assistant {
			n++
		}
	}
	return n
}

func teamIDs(req providers.Request, calls ...tools.Call) []tools.Call {
	for i := range calls {
		calls[i].ID = fmt.Sprintf("c%d_%d", teamTurns(req), i)
	}
	return calls
}

func teamLastText(req providers.Request) string { return req.Messages[len(req.Messages)-1].Text() }

func teamLastResults(req providers.Request) []tools.Result {
	var rs []tools.Result
	for _, p := range req.Messages[len(req.Messages)-1].Parts {
		if p.ToolResult != nil {
			rs = append(rs, *p.ToolResult)
		}
	}
	return rs
}

// twoNodeCoordinator plays the coordinator of the two-node team.
// teamAllText returns every text and tool result of a request's conversation.
func teamAllText(req providers.Request) string {
	var b strings.Builder
	for _, m := range req.Messages {
		for _, p := range m.Parts {
			b.WriteString(p.Text + "\n")
			if p.ToolResult != nil {
				b.WriteString(p.ToolResult.Content + "\n")
			}
		}
	}
	return b.String()
}

func twoNodeCoordinator() *scripted.Model {
	return scripted.NewFunc("coord", func(_ context.Context, req providers.Request) (scripted.Turn, error) {
		text := teamLastText(req)
		switch {
		case strings.Contains(text, "[Message from human]"):
			return scripted.Turn{Text: "Status: the fast node is done, the slow one is still working."}, nil
		case len(req.Messages) == 1:
			return scripted.Turn{Calls: teamIDs(req,
				teamCall("create_work_node", map[string]string{"task": "slow: write a.md, then publish"}),
				teamCall("create_work_node", map[string]string{"task": "fast: write b.md, then publish"}),
				teamCall("wait", map[string]string{}))}, nil
		case len(teamLastResults(req)) > 0:
			if strings.Contains(teamLastResults(req)[0].Name, "finish") {
				return scripted.Turn{}, nil
			}
			return scripted.Turn{Calls: teamIDs(req, teamCall("wait", map[string]string{}))}, nil
		case strings.Contains(text, "Stage 1 is complete"):
			return scripted.Turn{Calls: teamIDs(req, teamCall("finish", map[string]string{"output": "both nodes are done"}))}, nil
		case strings.Contains(text, "Node n2") && strings.Contains(text, "completed"):
			return scripted.Turn{Calls: teamIDs(req, teamCall("send_message", map[string]string{"to": "human", "content": "n2 is done"}))}, nil
		}
		return scripted.Turn{Calls: teamIDs(req, teamCall("wait", map[string]string{}))}, nil
	})
}

var teamNode = regexp.MustCompile(`on work node (n\d+)`)

// twoNodeWorker plays the workers of the two-node team.
func twoNodeWorker() providers.Model {
	return scripted.NewFunc("worker", func(_ context.Context, req providers.Request) (scripted.Turn, error) {
		node := teamNode.FindStringSubmatch(req.System)[1]
		scratch := "nodes/" + node + "/scratch/"
		switch t := teamTurns(req); {
		case t == 0:
			return scripted.Turn{Calls: teamIDs(req,
				teamCall("note", map[string]string{"step": node + " wrote"}),
				teamCall("write_file", map[string]string{"path": scratch + node + ".md", "content": "work of " + node}))}, nil
		case t == 1 && strings.Contains(req.Messages[0].Text(), "slow"):
			return scripted.Turn{Calls: teamIDs(req, teamCall("block", map[string]string{}))}, nil
		}
		return scripted.Turn{Calls: teamIDs(req, teamCall("publish", map[string]string{"summary": node + " done"}))}, nil
	})
}

// effects records the steps workers take, in a file, so steps can be counted across processes.
type effects struct {
	path string
	mu   sync.Mutex
}

func (e *effects) note() tools.Tool {
	return tools.Func("note", "Note a step.", func(_ context.Context, a struct {
		Step string `json:"step"`
	}) (string, error) {
		e.mu.Lock()
		defer e.mu.Unlock()
		f, err := os.OpenFile(e.path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return "", err
		}
		defer f.Close()
		_, err = fmt.Fprintln(f, a.Step)
		return "noted", err
	})
}

func (e *effects) count(step string) int {
	b, _ := os.ReadFile(e.path)
	n := 0
	for _, l := range strings.Split(string(b), "\n") {
		if l == step {
			n++
		}
	}
	return n
}

// blocker is the "block" tool: it records that it ran, then waits for release (or the end of
// its context).
func blocker(fx *effects, release <-chan struct{}) tools.Tool {
	return tools.Func("block", "Wait for the go-ahead.", func(ctx context.Context, _ struct{}) (string, error) {
		note := fx.note()
		if _, err := note.Handler(ctx, json.RawMessage(`{"step":"block"}`)); err != nil {
			return "", err
		}
		select {
		case <-release:
			return "released", nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	})
}
