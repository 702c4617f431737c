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

// wireText returns the text of a request's system prompt, and of its last message: its text
// blocks and its tool results' contents.
func wireText(r providertest.Request) (system, last string, results int) {
	switch sys := r.JSON["system"].(type) {
	case string:
		system = sys
	case []any:
		for _, b := range sys {
			if m, ok := b.(map[string]any); ok {
				s, _ := m["text"].(string)
				system += s
			}
		}
	}
	msgs := r.Messages()
	content := msgs[len(msgs)-1]["content"]
	switch c := content.(type) {
	case string:
		last = c
	case []any:
		for _, b := range c {
			m, _ := b.(map[string]any)
			switch m["type"] {
			case "text":
				s, _ := m["text"].(string)
				last += s
			case "tool_result":
				results++
				raw, _ := json.Marshal(m["content"])
				last += string(raw)
			}
		}
	}
	return system, last, results
}

func wireCall(name string, args any) tools.Call {
	raw, _ := json.Marshal(args)
	return tools.Call{Name: name, Args: raw}
}

// A whole squad over the Anthropic Messages API: the coordinator and the worker are
// anthropic/* models from models.New, talking real HTTP to a fake server that speaks the API's
// wire format (streaming off, tool_use and tool_result blocks, usage).
func TestSquadOverTheAnthropicWire(t *testing.T) {
	srv := providertest.NewAnthropicFunc(t, func(r providertest.Request) providertest.Reply {
		system, last, results := wireText(r)
		usage := providers.Usage{InputTokens: 100, OutputTokens: 20}
		switch {
		case strings.Contains(system, "OPERATING RULES"): // the coordinator
			switch {
			case len(r.Messages()) == 1:
				return providertest.Reply{Text: "One node will do.", Usage: usage, Calls: []tools.Call{
					wireCall("create_work_node", map[string]string{"task": "Write hello.md saying hello, then publish."}),
				}}
			case strings.Contains(last, "Stage 1 is complete"):
				return providertest.Reply{Usage: usage, Calls: []tools.Call{wireCall("finish", map[string]string{"output": "hello.md is published"})}}
			case strings.Contains(last, "The run is ending"):
				return providertest.Reply{Text: "Nothing to store.", Usage: usage}
			case results > 0:
				return providertest.Reply{Usage: usage, Calls: []tools.Call{wireCall("wait", map[string]string{})}}
			}
			return providertest.Reply{Usage: usage, Calls: []tools.Call{wireCall("wait", map[string]string{})}}
		default: // the worker
			if results == 0 {
				return providertest.Reply{Usage: usage, Calls: []tools.Call{wireCall("write_file", map[string]string{"path": "nodes/n1/scratch/hello.md", "content": "hello"})}}
			}
			return providertest.Reply{Usage: usage, Calls: []tools.Call{wireCall("publish", map[string]string{"summary": "said hello"})}}
		}
	})
	s, err := nodes.New(
		nodes.WithHome(t.TempDir()),
		nodes.WithModel("anthropic/claude-sonnet-4-5"),
		nodes.WithModelOptions(models.WithAPIKey("test-key"), models.WithBaseURL(srv.URL())),
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
	srv := providertest.NewOpenAIFunc(t, func(r providertest.Request) providertest.Reply {
		msgs := r.Messages()
		system, _ := msgs[0]["content"].(string)
		var last string
		results := 0
		for i := len(msgs) - 1; i >= 0 && msgs[i]["role"] != "assistant"; i-- {
			if msgs[i]["role"] == "tool" {
				results++
			}
			if c, ok := msgs[i]["content"].(string); ok {
				last = c + "\n" + last
			}
		}
		usage := providers.Usage{InputTokens: 100, OutputTokens: 20}
		if strings.Contains(system, "OPERATING RULES") {
			switch {
			case len(msgs) == 2:
				return providertest.Reply{Usage: usage, Calls: []tools.Call{wireCall("create_work_node", map[string]string{"task": "Write hello.md saying hello, then publish."})}}
			case strings.Contains(last, "Stage 1 is complete"):
				return providertest.Reply{Usage: usage, Calls: []tools.Call{wireCall("finish", map[string]string{"output": "hello.md is published"})}}
			case strings.Contains(last, "The run is ending"):
				return providertest.Reply{Text: "Nothing to store.", Usage: usage}
			}
			return providertest.Reply{Usage: usage, Calls: []tools.Call{wireCall("wait", map[string]string{})}}
		}
		if results == 0 {
			return providertest.Reply{Usage: usage, Calls: []tools.Call{wireCall("write_file", map[string]string{"path": "nodes/n1/scratch/hello.md", "content": "hello"})}}
		}
		return providertest.Reply{Usage: usage, Calls: []tools.Call{wireCall("publish", map[string]string{"summary": "said hello"})}}
	})
	s, err := nodes.New(
		nodes.WithHome(t.TempDir()),
		nodes.WithModel("openai/gpt-4o"),
		nodes.WithModelOptions(models.WithAPIKey("test-key"), models.WithBaseURL(srv.URL())),
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
	if res.Usage.CostUSD == 0 {
		t.Fatalf("usage %+v: want a cost from the priced model", res.Usage)
	}
	for _, r := range srv.Requests() {
		if r.Header.Get("Authorization") != "Bearer test-key" || r.Model != "gpt-4o" {
			t.Fatalf("request %d: auth %q model %q", r.Index, r.Header.Get("Authorization"), r.Model)
		}
	}
}
