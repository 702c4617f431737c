package providers_test

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/providers/scripted"
	"github.com/agiraph/agiraph/tools"
)

// call is a parsed call for the tables: ID is not compared (ParseToolCalls sets none).
func call(name, args string) providers.Part {
	return providers.Part{Type: providers.ToolCallPart, ToolCall: &tools.Call{Name: name, Args: json.RawMessage(args)}}
}

// sameParts compares parts, comparing JSON arguments semantically when both are valid JSON.
func sameParts(t *testing.T, got, want []providers.Part) bool {
	t.Helper()
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		g, w := got[i], want[i]
		if g.Type != w.Type {
			return false
		}
		if g.Type == providers.TextPart {
			if g.Text != w.Text {
				return false
			}
			continue
		}
		if g.ToolCall == nil || g.ToolCall.Name != w.ToolCall.Name {
			return false
		}
		ga, wa := g.ToolCall.Args, w.ToolCall.Args
		if json.Valid(ga) && json.Valid(wa) {
			var gv, wv any
			_ = json.Unmarshal(ga, &gv)
			_ = json.Unmarshal(wa, &wv)
			if !reflect.DeepEqual(gv, wv) {
				return false
			}
		} else if string(ga) != string(wa) {
			return false
		}
	}
	return true
}

func dump(parts []providers.Part) string {
	b, _ := json.Marshal(parts)
	return string(b)
}

func TestParseToolCalls(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, in string
		want     []providers.Part
	}{
		{"plain text", "Just an answer.", []providers.Part{providers.Text("Just an answer.")}},
		{"empty", "", nil},
		{"single call", `<tool_call>{"name": "read", "arguments": {"path": "a.txt"}}</tool_call>`,
			[]providers.Part{call("read", `{"path":"a.txt"}`)}},
		{"prose between calls", "Let me look.\n<tool_call>{\"name\":\"a\",\"arguments\":{}}</tool_call>\nand\n<tool_call>{\"name\":\"b\",\"arguments\":{\"x\":1}}</tool_call>\n<tool_call>{\"name\":\"c\"}</tool_call> done",
			[]providers.Part{providers.Text("Let me look.\n"), call("a", `{}`), providers.Text("\nand\n"), call("b", `{"x":1}`), call("c", ``), providers.Text(" done")}},
		{"whitespace and code fence", "<tool_call>\n```json\n{\"name\": \"read\", \"arguments\": {\"path\": \"a\"}}\n```\n</tool_call>",
			[]providers.Part{call("read", `{"path":"a"}`)}},
		{"bare fence", "<tool_call>```\n{\"name\":\"read\",\"arguments\":{}}```</tool_call>",
			[]providers.Part{call("read", `{}`)}},
		{"arguments as a JSON string", `<tool_call>{"name": "read", "arguments": "{\"path\": \"a.txt\"}"}</tool_call>`,
			[]providers.Part{call("read", `{"path":"a.txt"}`)}},
		{"parameters alias", `<tool_call>{"name": "read", "parameters": {"path": "a"}}</tool_call>`,
			[]providers.Part{call("read", `{"path":"a"}`)}},
		{"missing closing tag at the end", "Reading.\n<tool_call>{\"name\": \"read\", \"arguments\": {\"path\": \"a\"}}\n",
			[]providers.Part{providers.Text("Reading.\n"), call("read", `{"path":"a"}`)}},
		{"missing closing tag before the next call", `<tool_call>{"name":"a","arguments":{}} <tool_call>{"name":"b","arguments":{}}</tool_call>`,
			[]providers.Part{call("a", `{}`), call("b", `{}`)}},
		{"nested braces and the closing tag in a string", `<tool_call>{"name": "write", "arguments": {"text": "}} </tool_call> {{", "o": {"a": [1, {"b": "\"}"}]}}}</tool_call>after`,
			[]providers.Part{call("write", `{"text":"}} </tool_call> {{","o":{"a":[1,{"b":"\"}"}]}}`), providers.Text("after")}},
		{"malformed JSON with a recoverable name", `<tool_call>{"name": "read", "arguments": {"path": "a.txt",}}</tool_call>ok`,
			[]providers.Part{call("read", `{"name": "read", "arguments": {"path": "a.txt",}}`), providers.Text("ok")}},
		{"malformed JSON without a name", `<tool_call>read the file please</tool_call>`,
			[]providers.Part{call("", `read the file please`)}},
		{"malformed and unterminated", `x <tool_call>{"name": "read", "arguments": {"path": "a`,
			[]providers.Part{providers.Text("x "), call("read", `{"name": "read", "arguments": {"path": "a`)}},
		{"arguments string that is not JSON", `<tool_call>{"name": "read", "arguments": "path=a"}</tool_call>`,
			[]providers.Part{call("read", `path=a`)}},
		{"object without a name", `<tool_call>{"arguments": {}}</tool_call>`,
			[]providers.Part{call("", `{"arguments": {}}`)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := providers.ParseToolCalls(tc.in)
			if !sameParts(t, got, tc.want) {
				t.Errorf("ParseToolCalls(%q)\n got %s\nwant %s", tc.in, dump(got), dump(tc.want))
			}
		})
	}
}

// TestMalformedCallSurfaces checks that a malformed call reaches the registry and comes back as
// an error result the model can act on.
func TestMalformedCallSurfaces(t *testing.T) {
	t.Parallel()
	reg := newRegistry(t)
	for _, in := range []string{
		`<tool_call>{"name": "read", "arguments": {"path": "a.txt",}}</tool_call>`,
		`<tool_call>{"name": "read", "arguments": "path=a"}</tool_call>`,
	} {
		parts := providers.ParseToolCalls(in)
		msg := providers.Message{Role: providers.Assistant, Parts: parts}
		res := reg.Run(context.Background(), msg.ToolCalls())
		if len(res) != 1 || !res[0].IsError || !strings.Contains(res[0].Content, "not valid JSON") {
			t.Errorf("%s: results %+v, want one not-valid-JSON error", in, res)
		}
	}
}

type readArgs struct {
	Path string `json:"path" jsonschema:"required"`
}

func newRegistry(t *testing.T) *tools.Registry {
	t.Helper()
	reg, err := tools.NewRegistry([]tools.Tool{
		tools.Func("read", "Read a file.", func(_ context.Context, a readArgs) (string, error) {
			return "contents of " + a.Path, nil
		}),
	})
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

var specs = []providers.ToolSpec{
	{Name: "read", Description: "Read a file.", Schema: json.RawMessage(`{"type": "object", "properties": {"path": {"type": "string"}}}`)},
	{Name: "write", Description: "Write a file.", Schema: json.RawMessage(`{"type":"object"}`)},
}

func TestTextToolsSystemPrompt(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		choice providers.ToolChoice
		want   string
	}{
		{providers.ToolChoice{}, "when you need none, answer in plain text"},
		{providers.ToolChoice{Mode: providers.ChooseAny}, "you must call at least one tool"},
		{providers.ToolChoice{Mode: providers.ChooseTool, Name: "write"}, `you must call the tool "write"`},
		{providers.ToolChoice{Mode: providers.ChooseNone}, "you must not call any tool"},
	} {
		inner := scripted.New("inner", scripted.Turn{Text: "hi"}).KeepRequests()
		m := providers.WithTextTools(inner)
		if m.Name() != "scripted/inner" {
			t.Fatalf("Name() = %q", m.Name())
		}
		_, err := m.Generate(context.Background(), providers.Request{
			System: "You are helpful.", Messages: []providers.Message{providers.UserText("hello")},
			Tools: specs, Choice: tc.choice,
		})
		if err != nil {
			t.Fatal(err)
		}
		got := inner.Requests()[0]
		if len(got.Tools) != 0 || got.Choice != (providers.ToolChoice{}) {
			t.Errorf("inner request still has tools %v / choice %v", got.Tools, got.Choice)
		}
		sys := got.System
		for _, want := range []string{
			"You are helpful.\n\n", tc.want,
			`<tool_call>{"name": "TOOL_NAME", "arguments": {...}}</tool_call>`,
			"### read\nRead a file.\n", `{"type":"object","properties":{"path":{"type":"string"}}}`,
			"### write\nWrite a file.\n", "several tools", "Call only the tools listed", "stop and wait",
		} {
			if !strings.Contains(sys, want) {
				t.Errorf("choice %v: system prompt lacks %q:\n%s", tc.choice, want, sys)
			}
		}
		if !strings.HasPrefix(sys, "You are helpful.") {
			t.Errorf("system prompt does not start with the caller's: %q", sys)
		}
	}
}

func TestTextToolsPassThroughWithoutTools(t *testing.T) {
	t.Parallel()
	inner := scripted.New("inner", scripted.Turn{Text: "<tool_call>{}</tool_call>"}).KeepRequests()
	req := providers.Request{System: "s", Messages: []providers.Message{providers.UserText("hi")}}
	resp, err := providers.WithTextTools(inner).Generate(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if got := inner.Requests()[0]; got.System != "s" || !reflect.DeepEqual(got.Messages, req.Messages) {
		t.Errorf("request changed: %+v", got)
	}
	if resp.Message.Text() != "<tool_call>{}</tool_call>" || resp.StopReason != providers.StopEnd {
		t.Errorf("response changed: %+v", resp)
	}
}

// Without tools in the request, earlier calls and results of the conversation still reach the
// inner model as text.
func TestTextToolsWithoutToolsRendersEarlierCalls(t *testing.T) {
	t.Parallel()
	inner := scripted.New("inner", scripted.Turn{Text: "ok"}).KeepRequests()
	call := tools.Call{ID: "c1", Name: "read", Args: json.RawMessage(`{"path":"a"}`)}
	req := providers.Request{Messages: []providers.Message{
		providers.UserText("read a"),
		{Role: providers.Assistant, Parts: []providers.Part{{Type: providers.ToolCallPart, ToolCall: &call}}},
		providers.ToolResults([]tools.Result{{CallID: "c1", Name: "read", Content: "hello"}}),
	}}
	if _, err := providers.WithTextTools(inner).Generate(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	got := inner.Requests()[0].Messages
	for _, m := range got {
		for _, p := range m.Parts {
			if p.Type != providers.TextPart {
				t.Fatalf("a %s part reached the inner model: %+v", p.Type, got)
			}
		}
	}
	if !strings.Contains(got[1].Text(), "<tool_call>") || !strings.Contains(got[2].Text(), "hello") {
		t.Errorf("conversation not rendered: %+v", got)
	}
}

func TestTextToolsConversation(t *testing.T) {
	t.Parallel()
	inner := scripted.New("inner", scripted.Turn{Text: "done"}).KeepRequests()
	msgs := []providers.Message{
		providers.UserText("read a and b"),
		{Role: providers.Assistant, Parts: []providers.Part{
			{Type: providers.OpaquePart, Provider: "x", Raw: json.RawMessage(`{"thinking":"secret"}`)},
			providers.Text("Reading."),
			{Type: providers.ToolCallPart, ToolCall: &tools.Call{ID: "c1", Name: "read", Args: json.RawMessage(`{"path": "a"}`)}},
			{Type: providers.ToolCallPart, ToolCall: &tools.Call{ID: "c2", Name: "read", Args: json.RawMessage(`not json`)}},
		}},
		providers.ToolResults([]tools.Result{
			{CallID: "c1", Name: "read", Content: "A"},
			{CallID: "c2", Name: "read", Content: "bad args", IsError: true},
		}),
		{Role: providers.Assistant, Parts: []providers.Part{{Type: providers.OpaquePart, Provider: "x", Raw: json.RawMessage(`{}`)}}},
		providers.UserText("go on"),
	}
	_, err := providers.WithTextTools(inner).Generate(context.Background(), providers.Request{Messages: msgs, Tools: specs})
	if err != nil {
		t.Fatal(err)
	}
	got := inner.Requests()[0].Messages
	want := []providers.Message{
		providers.UserText("read a and b"),
		{Role: providers.Assistant, Parts: []providers.Part{providers.Text(
			"Reading.\n" +
				`<tool_call>{"name":"read","arguments":{"path":"a"}}</tool_call>` + "\n" +
				`<tool_call>not json</tool_call>`)}},
		{Role: providers.User, Parts: []providers.Part{providers.Text(
			`<tool_result name="read" id="c1">A</tool_result>` + "\n" +
				`<tool_result name="read" id="c2" is_error="true">bad args</tool_result>`)}},
		providers.UserText("go on"),
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("inner messages\n got %s\nwant %s", mustJSON(got), mustJSON(want))
	}
	// The rendered call parses back to the call it came from.
	parts := providers.ParseToolCalls(got[1].Text())
	if !sameParts(t, parts, []providers.Part{providers.Text("Reading.\n"), call("read", `{"path":"a"}`), call("", "not json")}) {
		t.Errorf("rendered calls do not parse back: %s", dump(parts))
	}
}

func mustJSON(v any) string {
	b, _ := json.MarshalIndent(v, "", " ")
	return string(b)
}

func TestTextToolsResponse(t *testing.T) {
	t.Parallel()
	inner := scripted.New("inner", scripted.Turn{
		Text:  "Let me read both. <tool_call>{\"name\":\"read\",\"arguments\":{\"path\":\"a\"}}</tool_call>\n<tool_call>{\"name\":\"read\",\"arguments\":{\"path\":\"b\"}}</tool_call>",
		Usage: providers.Usage{InputTokens: 10, OutputTokens: 5},
	})
	msgs := []providers.Message{
		providers.UserText("x"),
		{Role: providers.Assistant, Parts: []providers.Part{providers.Text("earlier")}},
		providers.UserText("y"),
	}
	resp, err := providers.WithTextTools(inner).Generate(context.Background(), providers.Request{Messages: msgs, Tools: specs})
	if err != nil {
		t.Fatal(err)
	}
	if resp.StopReason != providers.StopToolUse || resp.Usage.InputTokens != 10 || resp.Model != "scripted/inner" {
		t.Errorf("response %+v", resp)
	}
	if resp.Message.Role != providers.Assistant || resp.Message.Text() != "Let me read both. " {
		t.Errorf("message %s", dump(resp.Message.Parts))
	}
	calls := resp.Message.ToolCalls()
	if len(calls) != 2 || calls[0].ID != "call_2_1" || calls[1].ID != "call_2_2" || calls[1].Name != "read" {
		t.Errorf("calls %+v", calls)
	}
}

// streamModel is an inner model whose OnText deltas the test controls exactly.
func streamModel(deltas ...string) *scripted.Model {
	return scripted.NewFunc("stream", func(_ context.Context, req providers.Request) (scripted.Turn, error) {
		for _, d := range deltas {
			req.OnText(d)
		}
		// No Text: the scripted model would stream it again, word by word.
		return scripted.Turn{}, nil
	})
}

func TestTextToolsStreaming(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		deltas []string
		want   string
	}{
		{"no call", []string{"Hello ", "world"}, "Hello world"},
		{"tag in one delta", []string{"Let me ", "look. ", `<tool_call>{"name":"a"}</tool_call>`, " more"}, "Let me look. "},
		{"tag split across deltas", []string{"Let me look.", " <to", "ol_ca", `ll>{"name"`, `:"a"}</tool_call>`}, "Let me look. "},
		{"tag split one byte at a time", strings.Split(`ok<tool_call>{"name":"a"}`, ""), "ok"},
		{"prefix that is not a tag", []string{"a <to", "ol> b", " <tool"}, "a <tool> b <tool"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got strings.Builder
			_, err := providers.WithTextTools(streamModel(tc.deltas...)).Generate(context.Background(), providers.Request{
				Messages: []providers.Message{providers.UserText("hi")}, Tools: specs,
				OnText: func(d string) {
					if d == "" {
						t.Error("empty delta")
					}
					got.WriteString(d)
				},
			})
			if err != nil {
				t.Fatal(err)
			}
			if got.String() != tc.want {
				t.Errorf("streamed %q, want %q", got.String(), tc.want)
			}
		})
	}
}

// TestTextToolsStreamingScripted streams through the scripted model's own word-by-word deltas.
func TestTextToolsStreamingScripted(t *testing.T) {
	t.Parallel()
	inner := scripted.New("inner", scripted.Turn{Text: `Checking now. <tool_call>{"name": "read", "arguments": {"path": "a b"}}</tool_call> then more`})
	var got strings.Builder
	resp, err := providers.WithTextTools(inner).Generate(context.Background(), providers.Request{
		Messages: []providers.Message{providers.UserText("hi")}, Tools: specs,
		OnText: func(d string) { got.WriteString(d) },
	})
	if err != nil {
		t.Fatal(err)
	}
	if got.String() != "Checking now. " {
		t.Errorf("streamed %q", got.String())
	}
	if c := resp.Message.ToolCalls(); len(c) != 1 || string(c[0].Args) != `{"path": "a b"}` {
		t.Errorf("calls %+v", c)
	}
}

// TestTextToolsLoop runs an agent loop: the inner model calls a tool in text, the registry runs
// it, the result goes back as text and the inner model finishes.
func TestTextToolsLoop(t *testing.T) {
	t.Parallel()
	reg := newRegistry(t)
	inner := scripted.NewFunc("loop", func(_ context.Context, req providers.Request) (scripted.Turn, error) {
		last := req.Messages[len(req.Messages)-1].Text()
		switch {
		case len(req.Messages) == 1:
			return scripted.Turn{Text: "I'll read it.\n<tool_call>\n{\"name\": \"read\", \"arguments\": {\"path\": \"notes.txt\"}}\n</tool_call>"}, nil
		case strings.Contains(last, `<tool_result name="read" id="call_1_1">contents of notes.txt</tool_result>`):
			return scripted.Turn{Text: "The file says: contents of notes.txt"}, nil
		}
		return scripted.Turn{Text: "unexpected: " + last}, nil
	}).KeepRequests()
	m := providers.WithTextTools(inner)
	req := providers.Request{Messages: []providers.Message{providers.UserText("read notes.txt")}, Tools: providers.Specs(reg.Tools())}
	var final string
	for range 5 {
		resp, err := m.Generate(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		req.Messages = append(req.Messages, resp.Message)
		if resp.StopReason != providers.StopToolUse {
			final = resp.Message.Text()
			break
		}
		req.Messages = append(req.Messages, providers.ToolResults(reg.Run(context.Background(), resp.Message.ToolCalls())))
	}
	if final != "The file says: contents of notes.txt" {
		t.Fatalf("final answer %q; conversation %s", final, mustJSON(req.Messages))
	}
	if n := len(inner.Requests()); n != 2 {
		t.Errorf("inner model called %d times", n)
	}
}

// FuzzParseToolCalls checks, for any text, that ParseToolCalls
//   - does not panic and is deterministic;
//   - returns only non-blank text parts (never two in a row) and tool-call parts with a call;
//   - returns text parts that contain no "<tool_call>" and occur in the input in order, without
//     overlapping (they are verbatim pieces of the text outside the blocks);
//   - returns the input as its only part when it has no "<tool_call>" (nothing when it is blank);
//   - returns at least one and at most strings.Count(text, "<tool_call>") calls otherwise;
//   - returns, for each call with valid JSON arguments, a call that survives a round trip through
//     the canonical block format.
func FuzzParseToolCalls(f *testing.F) {
	for _, s := range []string{
		"", "plain", `<tool_call>{"name":"a","arguments":{"x":1}}</tool_call>`,
		"a <tool_call>\n```json\n{\"name\":\"a\"}\n```\n</tool_call> b <tool_call>{\"name\":\"b\",\"arguments\":\"{}\"}",
		`<tool_call>{"name":"w","arguments":{"t":"</tool_call>}{"}}</tool_call>`,
		`<tool_call>{"name": "r", bad}</tool_call><tool_call>`, "<tool_call></tool_call>", "```<tool_call>```",
		`<tool_call>{"name":"\"","arguments":[}</tool_call>`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		parts := providers.ParseToolCalls(text)
		if again := providers.ParseToolCalls(text); !reflect.DeepEqual(parts, again) {
			t.Fatalf("not deterministic")
		}
		calls, cur := 0, 0
		for i, p := range parts {
			switch p.Type {
			case providers.TextPart:
				if strings.TrimSpace(p.Text) == "" || strings.Contains(p.Text, "<tool_call>") {
					t.Fatalf("bad text part %q", p.Text)
				}
				if i > 0 && parts[i-1].Type == providers.TextPart {
					t.Fatalf("two text parts in a row")
				}
				j := strings.Index(text[cur:], p.Text)
				if j < 0 {
					t.Fatalf("text part %q not found in order in %q", p.Text, text)
				}
				cur += j + len(p.Text)
			case providers.ToolCallPart:
				if p.ToolCall == nil {
					t.Fatalf("tool-call part without a call")
				}
				calls++
				c := *p.ToolCall
				args := bytes.TrimSpace(c.Args)
				if len(args) == 0 || !json.Valid(args) || args[0] == '"' || string(args) == "null" {
					continue
				}
				block, err := json.Marshal(map[string]any{"name": c.Name, "arguments": json.RawMessage(args)})
				if err != nil {
					t.Fatal(err)
				}
				back := providers.ParseToolCalls("<tool_call>" + string(block) + "</tool_call>")
				if len(back) != 1 || back[0].ToolCall == nil || back[0].ToolCall.Name != c.Name || !jsonEqual(back[0].ToolCall.Args, args) {
					t.Fatalf("call %q %s does not round-trip: %s", c.Name, args, dump(back))
				}
			default:
				t.Fatalf("unexpected part type %q", p.Type)
			}
		}
		n := strings.Count(text, "<tool_call>")
		switch {
		case n == 0 && strings.TrimSpace(text) == "":
			if len(parts) != 0 {
				t.Fatalf("blank text gave %s", dump(parts))
			}
		case n == 0:
			if len(parts) != 1 || parts[0].Text != text {
				t.Fatalf("text without calls gave %s", dump(parts))
			}
		case calls < 1 || calls > n:
			t.Fatalf("%d calls from %d opening tags", calls, n)
		}
	})
}

func jsonEqual(a, b []byte) bool {
	var av, bv any
	if json.Unmarshal(a, &av) != nil || json.Unmarshal(b, &bv) != nil {
		return false
	}
	return reflect.DeepEqual(av, bv)
}
