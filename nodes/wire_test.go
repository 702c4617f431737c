package nodes_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/agiraph/agiraph/models"
	"github.com/agiraph/agiraph/nodes"
	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/providers/providertest"
	"github.com/agiraph/agiraph/tools"
)

// wireTurn is what the fake server needs to know of a request to answer it: the system prompt,
// the text since the model last spoke, how many tool results came back, and whether it is the
// conversation's first request.
type wireTurn struct {
	system, last string
	results      int
	first        bool
}

// anthropicTurn reads a Messages API request.
func anthropicTurn(r providertest.Request) wireTurn {
	var w wireTurn
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

// openAITurn reads a Chat Completions request.
func openAITurn(r providertest.Request) wireTurn {
	msgs := r.Messages()
	var w wireTurn
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

func wireCall(name string, args any) tools.Call {
	raw, _ := json.Marshal(args)
	return tools.Call{Name: name, Args: raw}
}

// wireScript plays a one-node squad: the coordinator puts a node on the board, waits, and
// finishes when the stage is complete; the worker writes hello.md and publishes.
func wireScript(w wireTurn) providertest.Reply {
	reply := func(calls ...tools.Call) providertest.Reply {
		return providertest.Reply{Usage: providers.Usage{InputTokens: 100, OutputTokens: 20}, Calls: calls}
	}
	if !strings.Contains(w.system, "OPERATING RULES") { // a worker
		if w.results == 0 {
			return reply(wireCall("write_file", map[string]string{"path": "nodes/n1/scratch/hello.md", "content": "hello"}))
		}
		return reply(wireCall("publish", map[string]string{"summary": "said hello"}))
	}
	switch {
	case w.first:
		return reply(wireCall("create_work_node", map[string]string{"task": "Write hello.md saying hello, then publish."}))
	case strings.Contains(w.last, "Stage 1 is complete"):
		return reply(wireCall("finish", map[string]string{"output": "hello.md is published"}))
	case strings.Contains(w.last, "The run is ending"):
		r := reply()
		r.Text = "Nothing to store."
		return r
	}
	return reply(wireCall("wait", map[string]string{}))
}

// runOverTheWire runs the one-node squad with model (coordinator and workers) against a fake
// server at baseURL, and checks its result.
func runOverTheWire(t *testing.T, model, baseURL string) {
	t.Helper()
	s, err := nodes.New(
		nodes.WithHome(t.TempDir()),
		nodes.WithModel(model),
		nodes.WithModelOptions(models.WithAPIKey("test-key"), models.WithBaseURL(baseURL)),
		nodes.WithTick(20*time.Millisecond),
	)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := s.Run(ctx, "Say hello in a file.")
	if err != nil {
		dump(t, s)
		t.Fatal(err)
	}
	if res.Output != "hello.md is published" {
		t.Fatalf("output %q", res.Output)
	}
	if n1, _ := res.Board.Node("n1"); n1.Status != nodes.NodeCompleted || len(n1.Published) != 1 {
		t.Fatalf("n1 %+v", n1)
	}
	if res.Usage.InputTokens == 0 || res.Usage.CostUSD == 0 {
		t.Fatalf("usage %+v: want tokens and a cost from the priced model", res.Usage)
	}
}

// A whole squad over the Anthropic Messages API: the coordinator and the worker are
// anthropic/* models from models.New, talking real HTTP to a fake server that speaks the API's
// wire format (tool_use and tool_result blocks, usage).
func TestSquadOverTheAnthropicWire(t *testing.T) {
	srv := providertest.NewAnthropicFunc(t, func(r providertest.Request) providertest.Reply { return wireScript(anthropicTurn(r)) })
	runOverTheWire(t, "anthropic/claude-sonnet-4-5", srv.URL())
	for _, r := range srv.Requests() {
		if r.Header.Get("x-api-key") != "test-key" || r.Model != "claude-sonnet-4-5" {
			t.Fatalf("request %d: key %q model %q", r.Index, r.Header.Get("x-api-key"), r.Model)
		}
		if _, ok := r.JSON["tools"]; !ok {
			t.Fatalf("request %d carries no tools", r.Index)
		}
	}
}

// The same squad over OpenAI Chat Completions (langchaingo's client behind the bridge), with
// the coordinator and the worker as openai/* models.
func TestSquadOverTheOpenAIWire(t *testing.T) {
	srv := providertest.NewOpenAIFunc(t, func(r providertest.Request) providertest.Reply { return wireScript(openAITurn(r)) })
	runOverTheWire(t, "openai/gpt-4o", srv.URL())
	for _, r := range srv.Requests() {
		if r.Header.Get("Authorization") != "Bearer test-key" || r.Model != "gpt-4o" {
			t.Fatalf("request %d: auth %q model %q", r.Index, r.Header.Get("Authorization"), r.Model)
		}
	}
}
