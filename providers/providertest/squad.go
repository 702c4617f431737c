package providertest

import (
	"encoding/json"
	"strings"

	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/tools"
)

// SquadScript answers the model calls of a one-node squad (package nodes) over the Messages API
// or Chat Completions, for a test that runs a whole squad over a provider's wire: the coordinator
// puts a node on the board, waits, and finishes with the output "hello.md is published" once the
// stage is complete; the worker writes hello.md and publishes. Each answer reports 100 input and
// 20 output tokens. Give it to NewAnthropicFunc or NewOpenAIFunc.
func SquadScript(r Request) Reply {
	if r.Path == "/v1/messages" {
		return script(anthropicSquadTurn(r))
	}
	return script(openAISquadTurn(r))
}

// squadTurn is what the fake server needs to know of a request to answer it: the system prompt,
// the text since the model last spoke, how many tool results came back, and whether it is the
// conversation's first request.
type squadTurn struct {
	system, last string
	results      int
	first        bool
}

// anthropicSquadTurn reads a Messages API request.
func anthropicSquadTurn(r Request) squadTurn {
	var w squadTurn
	switch sys := r.JSON["system"].(type) {
	case string:
		w.system = sys
	case []any:
		for _, b := range sys {
			if m, ok := b.(map[string]any); ok {
				s, _ := m["text"].(string)
				w.system += s
			}
		}
	}
	msgs := r.Messages()
	w.first = len(msgs) == 1
	switch c := msgs[len(msgs)-1]["content"].(type) {
	case string:
		w.last = c
	case []any:
		for _, b := range c {
			m, _ := b.(map[string]any)
			switch m["type"] {
			case "text":
				s, _ := m["text"].(string)
				w.last += s
			case "tool_result":
				w.results++
			}
		}
	}
	return w
}

// openAISquadTurn reads a Chat Completions request.
func openAISquadTurn(r Request) squadTurn {
	msgs := r.Messages()
	var w squadTurn
	w.system, _ = msgs[0]["content"].(string)
	w.first = len(msgs) == 2 // the system message and the goal
	for i := len(msgs) - 1; i >= 0 && msgs[i]["role"] != "assistant"; i-- {
		if msgs[i]["role"] == "tool" {
			w.results++
		}
		if c, ok := msgs[i]["content"].(string); ok {
			w.last = c + "\n" + w.last
		}
	}
	return w
}

func squadCall(name string, args any) tools.Call {
	raw, _ := json.Marshal(args)
	return tools.Call{Name: name, Args: raw}
}

// script plays a one-node squad: the coordinator puts a node on the board, waits, and
// finishes when the stage is complete; the worker writes hello.md and publishes.
func script(w squadTurn) Reply {
	reply := func(calls ...tools.Call) Reply {
		return Reply{Usage: providers.Usage{InputTokens: 100, OutputTokens: 20}, Calls: calls}
	}
	if !strings.Contains(w.system, "OPERATING RULES") { // a worker
		if w.results == 0 {
			return reply(squadCall("write_file", map[string]string{"path": "nodes/n1/scratch/hello.md", "content": "hello"}))
		}
		return reply(squadCall("publish", map[string]string{"summary": "said hello"}))
	}
	switch {
	case w.first:
		return reply(squadCall("create_work_node", map[string]string{"task": "Write hello.md saying hello, then publish."}))
	case strings.Contains(w.last, "Stage 1 is complete"):
		return reply(squadCall("finish", map[string]string{"output": "hello.md is published"}))
	case strings.Contains(w.last, "The run is ending"):
		r := reply()
		r.Text = "Nothing to store."
		return r
	}
	return reply(squadCall("wait", map[string]string{}))
}
