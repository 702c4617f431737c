package langchain_test

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/providers/providertest"
	"github.com/agiraph/agiraph/tools"
)

func asError(err error, target any) bool { return errors.As(err, target) }

var (
	weatherSchema = json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)
	timeSchema    = json.RawMessage(`{"type":"object","properties":{"tz":{"type":"string"}}}`)
	toolSpecs     = []providers.ToolSpec{
		{Name: "get_weather", Description: "Weather of a city.", Schema: weatherSchema},
		{Name: "get_time", Description: "Time in a zone.", Schema: timeSchema},
	}
	weatherCall = tools.Call{ID: "call_w", Name: "get_weather", Args: json.RawMessage(`{"city":"Paris"}`)}
	timeCall    = tools.Call{ID: "call_t", Name: "get_time", Args: json.RawMessage(`{"tz":"Europe/Paris"}`)}
)

// TestToolConversation plays two turns with tools: parallel calls, then their results (one an
// error) sent back in one canonical message, without and with streaming.
func TestToolConversation(t *testing.T) {
	for _, stream := range []bool{false, true} {
		name := "json"
		if stream {
			name = "stream"
		}
		t.Run(name, func(t *testing.T) { toolConversation(t, stream) })
	}
}

func toolConversation(t *testing.T, stream bool) {
	turn1 := providertest.Reply{Text: "Let me check both.", Calls: []tools.Call{weatherCall, timeCall},
		Usage: providers.Usage{InputTokens: 60, CacheReadTokens: 40, OutputTokens: 20}}
	turn2 := providertest.Reply{Text: "Paris is sunny at 21°C; the time is unknown.",
		Usage: providers.Usage{InputTokens: 150, OutputTokens: 12}}
	s := providertest.NewOpenAI(t, turn1, turn2)
	m := service(t, s, "openai", "gpt-4o")
	eq(t, "name", m.Name(), "openai/gpt-4o")

	temp := 0.2
	var streamed strings.Builder
	req := providers.Request{
		System:      "You are terse.",
		Messages:    []providers.Message{providers.UserText("Weather and time in Paris?")},
		Tools:       toolSpecs,
		Choice:      providers.ToolChoice{Mode: providers.ChooseAny},
		MaxTokens:   512,
		Temperature: &temp,
		Stop:        []string{"END"},
	}
	if stream {
		req.OnText = func(d string) { streamed.WriteString(d) }
	}
	resp, err := m.Generate(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	eq(t, "text 1", resp.Message.Text(), turn1.Text)
	eq(t, "role", resp.Message.Role, providers.Assistant)
	calls := resp.Message.ToolCalls()
	if len(calls) != 2 {
		t.Fatalf("calls = %+v, want 2", calls)
	}
	for i, want := range []tools.Call{weatherCall, timeCall} {
		eq(t, "call id", calls[i].ID, want.ID)
		eq(t, "call name", calls[i].Name, want.Name)
		eq(t, "call args", string(calls[i].Args), string(want.Args))
	}
	eq(t, "stop 1", resp.StopReason, providers.StopToolUse)
	eq(t, "model", resp.Model, "gpt-4o")
	u := resp.Usage
	eq(t, "usage tokens", []int{u.InputTokens, u.CacheReadTokens, u.OutputTokens}, []int{60, 40, 20})
	if want := (60*2.5 + 40*1.25 + 20*10) / 1e6; math.Abs(u.CostUSD-want) > 1e-12 {
		t.Errorf("cost = %v, want %v", u.CostUSD, want)
	}
	if stream {
		eq(t, "streamed 1", streamed.String(), turn1.Text)
	}

	// Turn 2: both results in one canonical message; no temperature this time.
	streamed.Reset()
	req.Messages = append(req.Messages, resp.Message, providers.ToolResults([]tools.Result{
		{CallID: "call_w", Name: "get_weather", Content: "21°C, sunny"},
		{CallID: "call_t", Name: "get_time", Content: "clock unavailable", IsError: true},
	}))
	req.Temperature = nil
	req.Choice = providers.ToolChoice{Mode: providers.ChooseTool, Name: "get_time"}
	resp2, err := m.Generate(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	eq(t, "text 2", resp2.Message.Text(), turn2.Text)
	eq(t, "calls 2", len(resp2.Message.ToolCalls()), 0)
	eq(t, "stop 2", resp2.StopReason, providers.StopEnd)
	eq(t, "usage 2", []int{resp2.Usage.InputTokens, resp2.Usage.CacheReadTokens, resp2.Usage.OutputTokens}, []int{150, 0, 12})
	if stream {
		eq(t, "streamed 2", streamed.String(), turn2.Text)
	}

	reqs := s.Requests()
	if len(reqs) != 2 {
		t.Fatalf("requests = %d, want 2", len(reqs))
	}
	checkFirstRequest(t, reqs[0], stream)
	checkSecondRequest(t, reqs[1], stream)
}

func checkFirstRequest(t *testing.T, r providertest.Request, stream bool) {
	t.Helper()
	j := r.JSON
	eq(t, "auth", r.Header.Get("Authorization"), "Bearer sk-test")
	eq(t, "model", j["model"], "gpt-4o")
	eq(t, "stream", r.Stream, stream)
	if _, ok := j["stream"]; ok != stream {
		t.Errorf("stream field present = %v, want %v", ok, stream)
	}
	if stream {
		eq(t, "stream_options", j["stream_options"], map[string]any{"include_usage": true})
	}
	// langchaingo sends max_completion_tokens (not max_tokens) to OpenAI.
	eq(t, "max_completion_tokens", j["max_completion_tokens"], 512.0)
	if _, ok := j["max_tokens"]; ok {
		t.Errorf("max_tokens sent beside max_completion_tokens")
	}
	eq(t, "temperature", j["temperature"], 0.2)
	eq(t, "stop", j["stop"], []any{"END"})
	eq(t, "tool_choice", j["tool_choice"], "required")
	eq(t, "tools", j["tools"], []any{
		map[string]any{"type": "function", "function": map[string]any{"name": "get_weather", "description": "Weather of a city.", "parameters": decoded(t, weatherSchema)}},
		map[string]any{"type": "function", "function": map[string]any{"name": "get_time", "description": "Time in a zone.", "parameters": decoded(t, timeSchema)}},
	})
	eq(t, "messages", j["messages"], []any{
		map[string]any{"role": "system", "content": "You are terse."},
		map[string]any{"role": "user", "content": "Weather and time in Paris?"},
	})
}

func checkSecondRequest(t *testing.T, r providertest.Request, stream bool) {
	t.Helper()
	j := r.JSON
	eq(t, "stream 2", r.Stream, stream)
	if _, ok := j["temperature"]; ok {
		t.Errorf("temperature %v sent though the request set none", j["temperature"])
	}
	eq(t, "tool_choice 2", j["tool_choice"], map[string]any{"type": "function", "function": map[string]any{"name": "get_time"}})
	msgs := r.Messages()
	if len(msgs) != 5 {
		t.Fatalf("messages = %d, want 5: %v", len(msgs), msgs)
	}
	eq(t, "system first", msgs[0], map[string]any{"role": "system", "content": "You are terse."})
	eq(t, "assistant", msgs[2], map[string]any{
		"role": "assistant", "content": "Let me check both.",
		"tool_calls": []any{
			map[string]any{"id": "call_w", "type": "function", "function": map[string]any{"name": "get_weather", "arguments": `{"city":"Paris"}`}},
			map[string]any{"id": "call_t", "type": "function", "function": map[string]any{"name": "get_time", "arguments": `{"tz":"Europe/Paris"}`}},
		},
	})
	eq(t, "tool result 1", msgs[3], map[string]any{"role": "tool", "tool_call_id": "call_w", "content": "21°C, sunny"})
	eq(t, "tool result 2", msgs[4], map[string]any{"role": "tool", "tool_call_id": "call_t", "content": "Error: clock unavailable"})
}

// TestStopReasons checks the finish reasons other than tool calls and end.
func TestStopReasons(t *testing.T) {
	s := providertest.NewOpenAI(t,
		providertest.Reply{Text: "cut", Stop: "length"},
		providertest.Reply{Text: "", Stop: "content_filter"},
		providertest.Reply{Calls: []tools.Call{{Name: "noargs"}}},
	)
	m := service(t, s, "openai", "gpt-4o-mini")
	want := []providers.StopReason{providers.StopMaxTokens, providers.StopRefusal, providers.StopToolUse}
	for i, w := range want {
		resp, err := m.Generate(context.Background(), providers.Request{Messages: []providers.Message{providers.UserText("hi")}})
		if err != nil {
			t.Fatal(err)
		}
		eq(t, "stop", resp.StopReason, w)
		if i == 2 {
			calls := resp.Message.ToolCalls()
			if len(calls) != 1 || string(calls[0].Args) != "{}" || calls[0].ID == "" {
				t.Errorf("calls = %+v, want one with {} arguments and an id", calls)
			}
		}
	}
	// No tools: no tool_choice, which OpenAI refuses without tools.
	if _, ok := s.Requests()[0].JSON["tool_choice"]; ok {
		t.Errorf("tool_choice sent without tools")
	}
}

// TestStreamingCallsOnly streams an answer of calls only: nothing reaches OnText (langchaingo
// hands the callback the tool-call deltas as JSON).
func TestStreamingCallsOnly(t *testing.T) {
	s := providertest.NewOpenAI(t, providertest.Reply{Calls: []tools.Call{weatherCall, timeCall}})
	m := service(t, s, "openai", "gpt-4o")
	var deltas []string
	resp, err := m.Generate(context.Background(), providers.Request{
		Messages: []providers.Message{providers.UserText("hi")}, Tools: toolSpecs,
		OnText: func(d string) { deltas = append(deltas, d) },
	})
	if err != nil {
		t.Fatal(err)
	}
	eq(t, "deltas", deltas, []string(nil))
	eq(t, "calls", len(resp.Message.ToolCalls()), 2)
	eq(t, "args 1", string(resp.Message.ToolCalls()[1].Args), `{"tz":"Europe/Paris"}`)
	eq(t, "tool_choice", s.Requests()[0].JSON["tool_choice"], "auto")
}

// TestOpaqueDropped checks that opaque parts and empty messages do not reach the wire.
func TestOpaqueDropped(t *testing.T) {
	s := providertest.NewOpenAI(t, providertest.Reply{Text: "ok"})
	m := service(t, s, "openai", "gpt-4o")
	_, err := m.Generate(context.Background(), providers.Request{Messages: []providers.Message{
		providers.UserText("hi"),
		{Role: providers.Assistant, Parts: []providers.Part{{Type: providers.OpaquePart, Provider: "anthropic", Raw: json.RawMessage(`{"type":"thinking"}`)}, providers.Text("hello")}},
		providers.UserText("again"),
	}})
	if err != nil {
		t.Fatal(err)
	}
	eq(t, "messages", s.Requests()[0].JSON["messages"], []any{
		map[string]any{"role": "user", "content": "hi"},
		map[string]any{"role": "assistant", "content": "hello"},
		map[string]any{"role": "user", "content": "again"},
	})
}

// TestAnswerModel checks that Response.Model is the model the service says answered, streamed or
// not, which langchaingo does not pass on.
func TestAnswerModel(t *testing.T) {
	reply := providertest.Reply{Text: "ok", Model: "gpt-4o-2024-08-06", Usage: providers.Usage{InputTokens: 10, OutputTokens: 1}}
	s := providertest.NewOpenAI(t, reply, reply)
	m := service(t, s, "openai", "gpt-4o")
	for _, req := range []providers.Request{hi, streaming(hi)} {
		resp, err := m.Generate(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		eq(t, "model", resp.Model, "gpt-4o-2024-08-06")
		eq(t, "cost", resp.Usage.CostUSD, (10*2.5+1*10)/1e6)
	}
}
