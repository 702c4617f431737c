package providers

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html"
	"regexp"
	"strings"
	"sync"

	"github.com/agiraph/agiraph/tools"
)

// The tags of the text tool-call protocol WithTextTools teaches a model.
const (
	toolCallOpen  = "<tool_call>"
	toolCallClose = "</tool_call>"
)

// WithTextTools gives tool calling to a model that has none natively, through the prompt.
//
// The returned Model has m's name. A request without tools goes to m with its conversation
// rewritten as text (see below) and its answer unparsed. A request with
// tools goes to m without them: its system prompt gains a section that lists each tool (name,
// description, JSON schema), explains the call format
//
//	<tool_call>{"name": "...", "arguments": {...}}</tool_call>
//
// and states the request's ToolChoice; the conversation is rewritten as text (assistant tool calls
// become the <tool_call> blocks they came from, tool results become
// <tool_result name="..." id="...">content</tool_result> blocks, with is_error="true" for
// errors; opaque parts are dropped, since m cannot read them, and a message left empty is
// dropped). The answer's text is parsed with ParseToolCalls; when it holds calls the stop reason
// is StopToolUse. Call IDs are "call_<turn>_<n>": the turn is the number of assistant messages in
// the request plus one, n counts the calls of the answer from 1, so IDs are unique within a
// conversation. Non-text parts of m's answer (for example opaque blocks) are kept, before the
// parsed parts.
//
// A request's Output is stated in the system prompt too (see PromptOutput).
//
// Streaming: OnText receives m's text up to the first <tool_call> tag; from the tag onward
// nothing more is streamed (a tag split across deltas is held back until it is known not to be a
// tag), so watchers never see call markup. Prose after a call is in the Response only.
func WithTextTools(m Model) Model { return &textTools{inner: m} }

type textTools struct{ inner Model }

func (t *textTools) Name() string { return t.inner.Name() }

func (t *textTools) Generate(ctx context.Context, req Request) (Response, error) {
	req = PromptOutput(req)
	if len(req.Tools) == 0 {
		// No tools offered: nothing to parse back, but earlier calls and results of the
		// conversation must still reach m as text it can read.
		req.Messages = textConversation(req.Messages)
		return t.inner.Generate(ctx, req)
	}
	in := req
	in.Tools = nil
	in.Choice = ToolChoice{}
	in.System = toolPrompt(req.System, req.Tools, req.Choice)
	in.Messages = textConversation(req.Messages)
	var filter *streamFilter
	if req.OnText != nil {
		filter = &streamFilter{out: req.OnText}
		in.OnText = filter.write
	}
	resp, err := t.inner.Generate(ctx, in)
	if filter != nil {
		filter.flush()
	}
	if err != nil {
		return resp, err
	}
	turn := 1
	for _, msg := range req.Messages {
		if msg.Role == Assistant {
			turn++
		}
	}
	var (
		text  strings.Builder
		other []Part
	)
	for _, p := range resp.Message.Parts {
		if p.Type == TextPart {
			text.WriteString(p.Text)
		} else {
			other = append(other, p)
		}
	}
	parts := ParseToolCalls(text.String())
	calls := 0
	for _, p := range parts {
		if p.Type == ToolCallPart {
			calls++
			p.ToolCall.ID = fmt.Sprintf("call_%d_%d", turn, calls)
		}
	}
	out := resp
	out.Message = Message{Role: Assistant, Parts: append(other, parts...)}
	if calls > 0 {
		out.StopReason = StopToolUse
	}
	return out, nil
}

// toolPrompt returns the system prompt that teaches the call format and lists the tools.
func toolPrompt(system string, specs []ToolSpec, choice ToolChoice) string {
	var b strings.Builder
	if s := strings.TrimRight(system, "\n"); s != "" {
		b.WriteString(s)
		b.WriteString("\n\n")
	}
	b.WriteString("# Tools\n\n")
	b.WriteString("You can call the tools listed below. To call a tool, write a block of exactly this form in your answer:\n\n")
	b.WriteString(`<tool_call>{"name": "TOOL_NAME", "arguments": {...}}</tool_call>` + "\n\n")
	b.WriteString("where \"arguments\" is a JSON object matching the tool's parameter schema.\n\n")
	b.WriteString("Rules:\n")
	b.WriteString("- Call only the tools listed below, by their exact names.\n")
	b.WriteString("- Put only the JSON object inside the tags: no code fences, comments or other text.\n")
	b.WriteString("- You may call several tools in one answer: write one <tool_call> block per call.\n")
	b.WriteString("- After your calls, stop and wait. The results come back in the next message as " +
		`<tool_result name="..." id="...">...</tool_result>` + " blocks; never write <tool_result> blocks yourself.\n")
	switch choice.Mode {
	case ChooseAny:
		b.WriteString("- In this answer you must call at least one tool.\n")
	case ChooseTool:
		fmt.Fprintf(&b, "- In this answer you must call the tool %q.\n", choice.Name)
	case ChooseNone:
		b.WriteString("- In this answer you must not call any tool: reply in plain text only, without <tool_call> blocks.\n")
	default:
		b.WriteString("- Call a tool when it helps; when you need none, answer in plain text without <tool_call> blocks.\n")
	}
	b.WriteString("\n## Available tools\n")
	for _, s := range specs {
		fmt.Fprintf(&b, "\n### %s\n", s.Name)
		if d := strings.TrimSpace(s.Description); d != "" {
			b.WriteString(d + "\n")
		}
		schema := []byte(`{"type":"object"}`)
		if len(bytes.TrimSpace(s.Schema)) > 0 {
			var c bytes.Buffer
			if json.Compact(&c, s.Schema) == nil {
				schema = c.Bytes()
			} else {
				schema = s.Schema
			}
		}
		fmt.Fprintf(&b, "Arguments schema: %s\n", schema)
	}
	return b.String()
}

// textConversation rewrites messages as text: tool calls and results become their tags, opaque
// parts are dropped, and the pieces of a message are joined into one text part, followed by the
// message's files.
func textConversation(msgs []Message) []Message {
	out := make([]Message, 0, len(msgs))
	for _, msg := range msgs {
		var b strings.Builder
		var files []Part
		lastBlock := false
		block := func(s string) {
			if b.Len() > 0 && !strings.HasSuffix(b.String(), "\n") {
				b.WriteByte('\n')
			}
			b.WriteString(s)
			lastBlock = true
		}
		for _, p := range msg.Parts {
			switch p.Type {
			case TextPart:
				if p.Text == "" {
					continue
				}
				if lastBlock && !strings.HasPrefix(p.Text, "\n") {
					b.WriteByte('\n')
				}
				b.WriteString(p.Text)
				lastBlock = false
			case ToolCallPart:
				if p.ToolCall != nil {
					block(renderCall(*p.ToolCall))
				}
			case ToolResultPart:
				if p.ToolResult != nil {
					block(renderResult(*p.ToolResult))
				}
			case FilePart:
				files = append(files, p)
			}
		}
		var parts []Part
		if b.Len() > 0 {
			parts = append(parts, Text(b.String()))
		}
		if parts = append(parts, files...); len(parts) == 0 {
			continue
		}
		out = append(out, Message{Role: msg.Role, Parts: parts})
	}
	return out
}

// renderCall writes a call as the <tool_call> block a model would have written. Args that are
// not valid JSON are the raw text of a malformed block (see ParseToolCalls) and are written back
// verbatim, so the model sees what it sent.
func renderCall(c tools.Call) string {
	args := bytes.TrimSpace(c.Args)
	if len(args) == 0 {
		args = []byte("{}")
	}
	if !json.Valid(args) {
		return toolCallOpen + string(c.Args) + toolCallClose
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	// Cannot fail: a string and valid JSON.
	_ = enc.Encode(struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}{c.Name, args})
	return toolCallOpen + strings.TrimSuffix(b.String(), "\n") + toolCallClose
}

// renderResult writes a result as a <tool_result> block.
func renderResult(r tools.Result) string {
	errAttr := ""
	if r.IsError {
		errAttr = ` is_error="true"`
	}
	return fmt.Sprintf(`<tool_result name="%s" id="%s"%s>%s</tool_result>`,
		html.EscapeString(r.Name), html.EscapeString(r.CallID), errAttr, r.Content)
}

var textToolNameRe = regexp.MustCompile(`"name"\s*:\s*"((?:[^"\\]|\\.)*)"`)

// ParseToolCalls splits a model's answer into text parts and tool-call parts, in order. Each
// <tool_call>...</tool_call> block becomes a ToolCall part (with no ID; WithTextTools assigns
// them); the text around the blocks becomes text parts, verbatim, except that text that is only
// white space is dropped.
//
// A block holds {"name": "...", "arguments": {...}}. The parser tolerates white space and a code
// fence (```json ... ```) around the object, "arguments" given as a JSON string that contains the
// JSON (or named "parameters"), a missing closing tag at the end of the text or just before the
// next <tool_call>, and braces or "</tool_call>" inside JSON strings: the object is scanned as
// JSON, string-aware, to find its end.
//
// A block is never dropped. When it is not a well-formed call (malformed JSON, no string name),
// its Name is the name recovered from the raw text by pattern ("" if none) and its Args are the
// raw text of the block, which is not valid JSON (or, for a well-formed object without a name,
// not a call's object): tools.Registry.Run then answers that the arguments are not valid JSON
// (tools.ErrMalformedArgs; or "unknown tool" when no name was recovered)
// to the model, which can fix its call. Likewise "arguments" given as a string that is not JSON
// become Args holding that string's raw content.
func ParseToolCalls(text string) []Part {
	var parts []Part
	addText := func(s string) {
		if strings.TrimSpace(s) == "" {
			return
		}
		if n := len(parts); n > 0 && parts[n-1].Type == TextPart {
			parts[n-1].Text += s
			return
		}
		parts = append(parts, Text(s))
	}
	rest := text
	for {
		i := strings.Index(rest, toolCallOpen)
		if i < 0 {
			addText(rest)
			return parts
		}
		addText(rest[:i])
		body := rest[i+len(toolCallOpen):]
		end, next := blockEnd(body)
		c := parseCall(body[:end])
		parts = append(parts, Part{Type: ToolCallPart, ToolCall: &c})
		rest = body[next:]
	}
}

// blockEnd finds where the block whose text (after the opening tag) is body ends: its content is
// body[:end] and the text after it starts at body[next:].
func blockEnd(body string) (end, next int) {
	i := skipSpace(body, 0)
	i = skipFenceOpen(body, i)
	if i < len(body) && body[i] == '{' {
		if j := scanJSON(body, i); j > 0 {
			k := skipSpace(body, j)
			if strings.HasPrefix(body[k:], "```") {
				k = skipSpace(body, k+3)
			}
			switch {
			case strings.HasPrefix(body[k:], toolCallClose):
				return k, k + len(toolCallClose)
			case k == len(body), strings.HasPrefix(body[k:], toolCallOpen):
				return k, k
			}
		}
	}
	// Not a well-formed object followed by the closing tag: the block runs to the first closing
	// tag, or to the next opening tag or the end of the text if that comes first.
	c := strings.Index(body, toolCallClose)
	o := strings.Index(body, toolCallOpen)
	switch {
	case c >= 0 && (o < 0 || c < o):
		return c, c + len(toolCallClose)
	case o >= 0:
		return o, o
	}
	return len(body), len(body)
}

func skipSpace(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
		i++
	}
	return i
}

// skipFenceOpen skips a code fence's opening line (``` and an optional language) at s[i:].
func skipFenceOpen(s string, i int) int {
	if !strings.HasPrefix(s[i:], "```") {
		return i
	}
	i += 3
	for i < len(s) && s[i] != '\n' && s[i] != '{' {
		i++
	}
	return skipSpace(s, i)
}

// scanJSON returns the index just after the JSON object or array that starts at s[i], counting
// brackets outside strings, or -1 if it does not end.
func scanJSON(s string, i int) int {
	depth := 0
	inStr, esc := false, false
	for ; i < len(s); i++ {
		ch := s[i]
		switch {
		case inStr:
			switch {
			case esc:
				esc = false
			case ch == '\\':
				esc = true
			case ch == '"':
				inStr = false
			}
		case ch == '"':
			inStr = true
		case ch == '{' || ch == '[':
			depth++
		case ch == '}' || ch == ']':
			depth--
			if depth == 0 {
				return i + 1
			}
		}
	}
	return -1
}

// parseCall parses the content of one block.
func parseCall(content string) tools.Call {
	c := strings.TrimSpace(content)
	if strings.HasPrefix(c, "```") {
		c = strings.TrimSpace(c[skipFenceOpen(c, 0):])
		c = strings.TrimSpace(strings.TrimSuffix(c, "```"))
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal([]byte(c), &obj); err == nil && obj != nil {
		var name string
		if err := json.Unmarshal(obj["name"], &name); err == nil {
			args, ok := obj["arguments"]
			if !ok {
				args = obj["parameters"]
			}
			return tools.Call{Name: name, Args: callArgs(args)}
		}
	}
	call := tools.Call{Args: json.RawMessage(c)}
	if m := textToolNameRe.FindStringSubmatch(c); m != nil {
		var name string
		if json.Unmarshal([]byte(`"`+m[1]+`"`), &name) == nil {
			call.Name = name
		}
	}
	return call
}

// callArgs returns a call's arguments from the value of "arguments": an object (or any JSON
// value, which validation then judges) as is, a string holding JSON as that JSON, a string not
// holding JSON as its raw content (which fails validation as malformed), null or absent as none.
func callArgs(raw json.RawMessage) json.RawMessage {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	if raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			if strings.TrimSpace(s) == "" {
				return nil
			}
			return json.RawMessage(s)
		}
	}
	return raw
}

// streamFilter passes text deltas on until the first <tool_call> tag and holds back everything
// from the tag onward; a possible tag prefix at the end of a delta waits for the next delta.
type streamFilter struct {
	mu      sync.Mutex
	out     func(string)
	pending string
	hidden  bool
}

func (f *streamFilter) write(delta string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.hidden {
		return
	}
	s := f.pending + delta
	f.pending = ""
	if i := strings.Index(s, toolCallOpen); i >= 0 {
		f.hidden = true
		f.emit(s[:i])
		return
	}
	keep := 0
	for n := min(len(s), len(toolCallOpen)-1); n > 0; n-- {
		if strings.HasSuffix(s, toolCallOpen[:n]) {
			keep = n
			break
		}
	}
	f.pending = s[len(s)-keep:]
	f.emit(s[:len(s)-keep])
}

// flush passes on a held-back tail that turned out not to be a tag.
func (f *streamFilter) flush() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.hidden {
		f.emit(f.pending)
	}
	f.pending = ""
}

func (f *streamFilter) emit(s string) {
	if s != "" {
		f.out(s)
	}
}
