package anthropic_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/providers/anthropic"
	"github.com/agiraph/agiraph/providers/providertest"
	"github.com/agiraph/agiraph/tools"
)

var (
	weatherSchema = `{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`
	timeSchema    = `{"type":"object","properties":{"tz":{"type":"string"}}}`
	toolSpecs     = []providers.ToolSpec{
		{Name: "get_weather", Description: "Current weather of a city.", Schema: json.RawMessage(weatherSchema)},
		{Name: "get_time", Description: "Current time in a time zone.", Schema: json.RawMessage(timeSchema)},
	}
)

// TestToolConversation plays a two-turn conversation with two parallel tool calls, one of which
// fails, and checks the canonical answers and what went over the wire.
func TestToolConversation(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode.name, func(t *testing.T) {
			s := providertest.NewAnthropic(t,
				providertest.Reply{
					Text: "Let me check both.",
					Calls: []tools.Call{
						{ID: "toolu_1", Name: "get_weather", Args: json.RawMessage(`{"city":"Paris"}`)},
						{ID: "toolu_2", Name: "get_time", Args: json.RawMessage(`{"tz":"Mars/Olympus"}`)},
					},
					Usage: providers.Usage{InputTokens: 100, OutputTokens: 20, CacheReadTokens: 50, CacheWriteTokens: 30},
				},
				providertest.Reply{
					Text:  "It is sunny in Paris; I could not read the time.",
					Usage: providers.Usage{InputTokens: 10, OutputTokens: 5, CacheReadTokens: 130},
				},
			)
			m := newModel(t, s)
			eq(t, "name", m.Name(), "anthropic/claude-sonnet-4-5")

			req := providers.Request{
				System:   "You are a helpful assistant.",
				Messages: []providers.Message{providers.UserText("Weather and time in Paris?")},
				Tools:    toolSpecs,
			}
			seen := watch(&req, mode.stream)
			resp, err := m.Generate(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			eq(t, "text 1", resp.Message.Text(), "Let me check both.")
			if mode.stream {
				eq(t, "streamed text 1", seen(), "Let me check both.")
			}
			eq(t, "role", resp.Message.Role, providers.Assistant)
			eq(t, "stop 1", resp.StopReason, providers.StopToolUse)
			eq(t, "model", resp.Model, testModel)
			calls := resp.Message.ToolCalls()
			if len(calls) != 2 {
				t.Fatalf("calls = %+v, want 2", calls)
			}
			eq(t, "call 1 id", calls[0].ID, "toolu_1")
			eq(t, "call 1 name", calls[0].Name, "get_weather")
			jsonEq(t, "call 1 args", calls[0].Args, `{"city":"Paris"}`)
			eq(t, "call 2 id", calls[1].ID, "toolu_2")
			eq(t, "call 2 name", calls[1].Name, "get_time")
			jsonEq(t, "call 2 args", calls[1].Args, `{"tz":"Mars/Olympus"}`)
			u := resp.Usage
			eq(t, "usage tokens", [4]int{u.InputTokens, u.OutputTokens, u.CacheReadTokens, u.CacheWriteTokens}, [4]int{100, 20, 50, 30})
			// Sonnet: $3 in, $15 out, $0.30 cache read, $3.75 cache write per million tokens.
			wantCost := (100*3 + 20*15 + 50*0.3 + 30*3.75) / 1e6
			if math.Abs(u.CostUSD-wantCost) > 1e-12 {
				t.Errorf("cost = %v, want %v", u.CostUSD, wantCost)
			}

			req.Messages = append(req.Messages, resp.Message, providers.ToolResults([]tools.Result{
				{CallID: "toolu_1", Name: "get_weather", Content: "sunny, 21°C"},
				{CallID: "toolu_2", Name: "get_time", Content: "unknown time zone", IsError: true},
			}))
			seen = watch(&req, mode.stream)
			resp, err = m.Generate(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			eq(t, "text 2", resp.Message.Text(), "It is sunny in Paris; I could not read the time.")
			if mode.stream {
				eq(t, "streamed text 2", seen(), "It is sunny in Paris; I could not read the time.")
			}
			eq(t, "stop 2", resp.StopReason, providers.StopEnd)
			eq(t, "calls 2", len(resp.Message.ToolCalls()), 0)
			eq(t, "cache read 2", resp.Usage.CacheReadTokens, 130)

			reqs := requests(t, s, 2)
			for i, r := range reqs {
				eq(t, "stream flag", r.Stream, mode.stream)
				if _, ok := r.JSON["stream"]; ok != mode.stream {
					t.Errorf("request %d: stream field present = %v", i, ok)
				}
				eq(t, "model", r.Model, testModel)
				eq(t, "max_tokens", r.JSON["max_tokens"], any(float64(anthropic.DefaultMaxTokens)))
				jsonEq(t, "system", r.JSON["system"], `[{"type":"text","text":"You are a helpful assistant.","cache_control":{"type":"ephemeral"}}]`)
				jsonEq(t, "tools", r.JSON["tools"], `[
					{"name":"get_weather","description":"Current weather of a city.","input_schema":`+weatherSchema+`},
					{"name":"get_time","description":"Current time in a time zone.","input_schema":`+timeSchema+`,"cache_control":{"type":"ephemeral"}}]`)
				jsonEq(t, "tool_choice", r.JSON["tool_choice"], `{"type":"auto"}`)
				eq(t, "cache breakpoints", strings.Count(string(r.Body), `"cache_control"`), 3)
				if _, ok := r.JSON["temperature"]; ok {
					t.Errorf("temperature sent though not set")
				}
			}
			jsonEq(t, "first messages", reqs[0].JSON["messages"], `[{"role":"user","content":[
				{"type":"text","text":"Weather and time in Paris?","cache_control":{"type":"ephemeral"}}]}]`)
			jsonEq(t, "second messages", reqs[1].JSON["messages"], `[
				{"role":"user","content":[{"type":"text","text":"Weather and time in Paris?"}]},
				{"role":"assistant","content":[
					{"type":"text","text":"Let me check both."},
					{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"city":"Paris"}},
					{"type":"tool_use","id":"toolu_2","name":"get_time","input":{"tz":"Mars/Olympus"}}]},
				{"role":"user","content":[
					{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"sunny, 21°C"}]},
					{"type":"tool_result","tool_use_id":"toolu_2","content":[{"type":"text","text":"unknown time zone"}],"is_error":true,
					 "cache_control":{"type":"ephemeral"}}]}]`)
		})
	}
}

// Raw blocks of the kinds the API sends back for thinking and server web search.
var (
	thinkingBlock = json.RawMessage(`{"type":"thinking","thinking":"I should look it up.","signature":"EqQBCkYIARgCIkD="}`)
	searchBlock   = json.RawMessage(`{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{"query":"paris weather"}}`)
	resultBlock   = json.RawMessage(`{"type":"web_search_tool_result","tool_use_id":"srvtoolu_1","content":[{"type":"web_search_result","url":"https://example.com/paris","title":"Paris weather","encrypted_content":"EpcBCioIAhgB","page_age":null}]}`)
)

// TestOpaqueBlocks checks that blocks the adapter does not interpret come back as opaque parts
// holding their JSON, are sent back unchanged, and that opaque parts of other providers are not.
func TestOpaqueBlocks(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode.name, func(t *testing.T) {
			s := providertest.NewAnthropic(t,
				providertest.Reply{Blocks: []json.RawMessage{thinkingBlock, searchBlock, resultBlock}, Text: "Sunny."},
				providertest.Reply{Text: "You are welcome."},
			)
			m := newModel(t, s, anthropic.WithWebSearch(anthropic.WebSearch{MaxUses: 3, AllowedDomains: []string{"example.com"}}))
			req := providers.Request{Messages: []providers.Message{providers.UserText("Weather in Paris?")}}
			watch(&req, mode.stream)
			resp, err := m.Generate(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			parts := resp.Message.Parts
			if len(parts) != 4 {
				t.Fatalf("parts = %+v, want 3 opaque and a text", parts)
			}
			for i, want := range []json.RawMessage{thinkingBlock, searchBlock, resultBlock} {
				eq(t, "opaque type", parts[i].Type, providers.OpaquePart)
				eq(t, "opaque provider", parts[i].Provider, "anthropic")
				jsonEq(t, "opaque raw", parts[i].Raw, string(want))
			}
			eq(t, "text", parts[3], providers.Text("Sunny."))

			foreign := providers.Part{Type: providers.OpaquePart, Provider: "openai", Raw: json.RawMessage(`{"type":"reasoning"}`)}
			req.Messages = append(req.Messages, resp.Message,
				providers.Message{Role: providers.Assistant, Parts: []providers.Part{foreign}},
				providers.UserText("Thanks!"))
			if _, err := m.Generate(context.Background(), req); err != nil {
				t.Fatal(err)
			}
			reqs := requests(t, s, 2)
			jsonEq(t, "web search tool", reqs[0].JSON["tools"], `[{"type":"web_search_20250305","name":"web_search",
				"max_uses":3,"allowed_domains":["example.com"],"cache_control":{"type":"ephemeral"}}]`)
			jsonEq(t, "tool_choice", reqs[0].JSON["tool_choice"], `{"type":"auto"}`)
			msgs := reqs[1].Messages()
			eq(t, "messages", len(msgs), 3)
			eq(t, "assistant role", get(msgs[1], "role"), any("assistant"))
			content, _ := msgs[1]["content"].([]any)
			if len(content) != 4 {
				t.Fatalf("assistant content = %v, want the 3 raw blocks and the text (the foreign part dropped)", content)
			}
			for i, want := range []json.RawMessage{thinkingBlock, searchBlock, resultBlock} {
				jsonEq(t, "block sent back", content[i], string(want))
			}
			jsonEq(t, "text sent back", content[3], `{"type":"text","text":"Sunny."}`)
		})
	}
}

// TestPauseTurn checks that a paused turn is continued with the paused content and returned as
// one answer.
func TestPauseTurn(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode.name, func(t *testing.T) {
			s := providertest.NewAnthropic(t,
				providertest.Reply{Blocks: []json.RawMessage{searchBlock, resultBlock}, Stop: "pause_turn",
					Usage: providers.Usage{InputTokens: 100, OutputTokens: 10}},
				providertest.Reply{Text: "It is sunny.", Usage: providers.Usage{InputTokens: 200, OutputTokens: 5, CacheReadTokens: 90}},
			)
			m := newModel(t, s, anthropic.WithWebSearch(anthropic.WebSearch{}))
			req := providers.Request{Messages: []providers.Message{providers.UserText("Weather in Paris?")}}
			seen := watch(&req, mode.stream)
			resp, err := m.Generate(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			eq(t, "stop", resp.StopReason, providers.StopEnd)
			eq(t, "parts", len(resp.Message.Parts), 3)
			jsonEq(t, "first block", resp.Message.Parts[0].Raw, string(searchBlock))
			jsonEq(t, "second block", resp.Message.Parts[1].Raw, string(resultBlock))
			eq(t, "text", resp.Message.Text(), "It is sunny.")
			if mode.stream {
				eq(t, "streamed", seen(), "It is sunny.")
			}
			u := resp.Usage
			eq(t, "summed usage", [3]int{u.InputTokens, u.OutputTokens, u.CacheReadTokens}, [3]int{300, 15, 90})
			wantCost := (300*3 + 15*15 + 90*0.3) / 1e6
			if math.Abs(u.CostUSD-wantCost) > 1e-12 {
				t.Errorf("cost = %v, want %v", u.CostUSD, wantCost)
			}

			reqs := requests(t, s, 2)
			msgs := reqs[1].Messages()
			eq(t, "continued messages", len(msgs), 2)
			jsonEq(t, "user message", msgs[0], `{"role":"user","content":[{"type":"text","text":"Weather in Paris?"}]}`)
			jsonEq(t, "paused content", msgs[1], `{"role":"assistant","content":[`+string(searchBlock)+`,`+string(resultBlock)+`]}`)
		})
	}
}

// TestPauseTurnLimit checks that continuing stops after five continuations, with StopPause.
func TestPauseTurnLimit(t *testing.T) {
	s := providertest.NewAnthropicFunc(t, func(r providertest.Request) providertest.Reply {
		return providertest.Reply{Text: "more ", Stop: "pause_turn", Usage: providers.Usage{OutputTokens: 1}}
	})
	resp, err := newModel(t, s).Generate(context.Background(), providers.Request{Messages: []providers.Message{providers.UserText("go")}})
	if err != nil {
		t.Fatal(err)
	}
	reqs := requests(t, s, 6)
	eq(t, "stop", resp.StopReason, providers.StopPause)
	eq(t, "text", resp.Message.Text(), strings.Repeat("more ", 6))
	eq(t, "output tokens", resp.Usage.OutputTokens, 6)
	jsonEq(t, "last request's paused content", reqs[5].Messages()[1],
		`{"role":"assistant","content":[{"type":"text","text":"`+strings.Repeat("more ", 5)+`","cache_control":{"type":"ephemeral"}}]}`)
}

// TestRequestOptions checks tool choices, sampling options, defaults and caching options on the wire.
func TestRequestOptions(t *testing.T) {
	temp := 0.25
	cases := []struct {
		name  string
		opts  []anthropic.Option
		req   providers.Request
		check func(t *testing.T, r providertest.Request)
	}{
		{"choice any", nil, providers.Request{Tools: toolSpecs, Choice: providers.ToolChoice{Mode: providers.ChooseAny}},
			func(t *testing.T, r providertest.Request) {
				jsonEq(t, "tool_choice", r.JSON["tool_choice"], `{"type":"any"}`)
			}},
		{"choice none", nil, providers.Request{Tools: toolSpecs, Choice: providers.ToolChoice{Mode: providers.ChooseNone}},
			func(t *testing.T, r providertest.Request) {
				jsonEq(t, "tool_choice", r.JSON["tool_choice"], `{"type":"none"}`)
			}},
		{"choice tool", nil, providers.Request{Tools: toolSpecs, Choice: providers.ToolChoice{Mode: providers.ChooseTool, Name: "get_time"}},
			func(t *testing.T, r providertest.Request) {
				jsonEq(t, "tool_choice", r.JSON["tool_choice"], `{"type":"tool","name":"get_time"}`)
			}},
		{"no tools", nil, providers.Request{Choice: providers.ToolChoice{Mode: providers.ChooseAny}},
			func(t *testing.T, r providertest.Request) {
				for _, k := range []string{"tools", "tool_choice", "system", "stop_sequences"} {
					if _, ok := r.JSON[k]; ok {
						t.Errorf("%s sent: %v", k, r.JSON[k])
					}
				}
			}},
		{"temperature stop max tokens", nil, providers.Request{Temperature: &temp, Stop: []string{"END", "\n\nHuman:"}, MaxTokens: 100},
			func(t *testing.T, r providertest.Request) {
				eq(t, "temperature", r.JSON["temperature"], any(0.25))
				jsonEq(t, "stop_sequences", r.JSON["stop_sequences"], `["END","\n\nHuman:"]`)
				eq(t, "max_tokens", r.JSON["max_tokens"], any(100.0))
			}},
		{"WithMaxTokens", []anthropic.Option{anthropic.WithMaxTokens(512)}, providers.Request{},
			func(t *testing.T, r providertest.Request) { eq(t, "max_tokens", r.JSON["max_tokens"], any(512.0)) }},
		{"WithoutPromptCaching", []anthropic.Option{anthropic.WithoutPromptCaching()}, providers.Request{System: "sys", Tools: toolSpecs},
			func(t *testing.T, r providertest.Request) {
				if strings.Contains(string(r.Body), "cache_control") {
					t.Errorf("cache_control sent: %s", r.Body)
				}
			}},
		{"large max tokens streams", nil, providers.Request{MaxTokens: 64000},
			func(t *testing.T, r providertest.Request) {
				eq(t, "stream", r.Stream, true)
				eq(t, "max_tokens", r.JSON["max_tokens"], any(64000.0))
			}},
		{"merged roles and empty args", nil, providers.Request{Messages: []providers.Message{
			providers.UserText("one"), providers.UserText("two"),
			{Role: providers.Assistant, Parts: []providers.Part{{Type: providers.ToolCallPart, ToolCall: &tools.Call{ID: "t1", Name: "noargs"}}}},
			providers.ToolResults([]tools.Result{{CallID: "t1", Name: "noargs"}}),
		}},
			func(t *testing.T, r providertest.Request) {
				jsonEq(t, "messages", r.JSON["messages"], `[
					{"role":"user","content":[{"type":"text","text":"one"},{"type":"text","text":"two"}]},
					{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"noargs","input":{}}]},
					{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","cache_control":{"type":"ephemeral"}}]}]`)
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := providertest.NewAnthropic(t, providertest.Reply{Text: "ok"})
			if c.req.Messages == nil {
				c.req.Messages = []providers.Message{providers.UserText("hi")}
			}
			resp, err := newModel(t, s, c.opts...).Generate(context.Background(), c.req)
			if err != nil {
				t.Fatal(err)
			}
			eq(t, "text", resp.Message.Text(), "ok")
			c.check(t, requests(t, s, 1)[0])
		})
	}
}

// TestStopReasons checks the translation of each stop reason.
func TestStopReasons(t *testing.T) {
	for stop, want := range map[string]providers.StopReason{
		"end_turn": providers.StopEnd, "max_tokens": providers.StopMaxTokens, "stop_sequence": providers.StopSequence,
		"refusal": providers.StopRefusal, "tool_use": providers.StopToolUse,
	} {
		for _, mode := range modes {
			t.Run(stop+"/"+mode.name, func(t *testing.T) {
				s := providertest.NewAnthropic(t, providertest.Reply{Text: "x", Stop: stop, StopSequence: "END", Model: "claude-haiku-4-5-20251001",
					Usage: providers.Usage{InputTokens: 1000, OutputTokens: 100}})
				req := providers.Request{Messages: []providers.Message{providers.UserText("hi")}}
				watch(&req, mode.stream)
				resp, err := newModel(t, s).Generate(context.Background(), req)
				if err != nil {
					t.Fatal(err)
				}
				eq(t, "stop", resp.StopReason, want)
				eq(t, "model", resp.Model, "claude-haiku-4-5-20251001")
				// Priced as the model that answered: Haiku 4.5 at $1 in, $5 out.
				if want := (1000*1 + 100*5) / 1e6; math.Abs(resp.Usage.CostUSD-want) > 1e-12 {
					t.Errorf("cost = %v, want %v", resp.Usage.CostUSD, want)
				}
			})
		}
	}
}

// TestConcurrent checks that one Model serves concurrent calls, each getting its own answer.
func TestConcurrent(t *testing.T) {
	s := providertest.NewAnthropicFunc(t, func(r providertest.Request) providertest.Reply {
		text, _ := get(r.JSON, "messages", 0, "content", 0, "text").(string)
		return providertest.Reply{Text: "echo " + text}
	})
	m := newModel(t, s)
	const n = 8
	errs := make(chan error, n)
	for i := range n {
		go func() {
			in := fmt.Sprint("message ", i)
			req := providers.Request{Messages: []providers.Message{providers.UserText(in)}}
			if i%2 == 1 {
				req.OnText = func(string) {}
			}
			resp, err := m.Generate(context.Background(), req)
			if err == nil && resp.Message.Text() != "echo "+in {
				err = fmt.Errorf("answer to %q is %q", in, resp.Message.Text())
			}
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	requests(t, s, n)
}
