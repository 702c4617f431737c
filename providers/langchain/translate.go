package langchain

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/tmc/langchaingo/llms"

	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/tools"
)

// errEmptySchema is returned for a tool whose schema is not a JSON object.
var errEmptySchema = errors.New("tool schema is not a JSON object")

// errorPrefix marks the content of a tool result that is an error.
const errorPrefix = "Error: "

// messages translates the system prompt and the conversation, and returns the names of the PDFs
// it holds, in order (see recorder.pdfs).
func messages(req providers.Request) ([]llms.MessageContent, []string) {
	var out []llms.MessageContent
	if req.System != "" {
		out = append(out, llms.TextParts(llms.ChatMessageTypeSystem, req.System))
	}
	var pdfs []string
	for _, m := range req.Messages {
		if m.Role == providers.Assistant {
			out = appendAssistant(out, m)
		} else {
			out = appendUser(out, m, &pdfs)
		}
	}
	return out, pdfs
}

// appendAssistant appends an assistant message as one AI message of its text and tool calls.
func appendAssistant(out []llms.MessageContent, m providers.Message) []llms.MessageContent {
	var parts []llms.ContentPart
	if text := m.Text(); text != "" {
		parts = append(parts, llms.TextContent{Text: text})
	}
	for _, c := range m.ToolCalls() {
		parts = append(parts, llms.ToolCall{
			ID:           c.ID,
			Type:         "function",
			FunctionCall: &llms.FunctionCall{Name: c.Name, Arguments: arguments(c.Args)},
		})
	}
	if len(parts) == 0 {
		return out
	}
	return append(out, llms.MessageContent{Role: llms.ChatMessageTypeAI, Parts: parts})
}

// appendUser appends a user message: one tool message per tool result (langchaingo takes
// exactly one result per tool message), then a human message of its text and files. An image
// is an image_url part (its URL, or its bytes as a data URL); a PDF is langchaingo's binary
// part, which the transport of a service makes a file part (see recorder.filesOf); its name is
// appended to pdfs.
func appendUser(out []llms.MessageContent, m providers.Message, pdfs *[]string) []llms.MessageContent {
	var parts []llms.ContentPart
	for _, p := range m.Parts {
		switch {
		case p.Type == providers.ToolResultPart && p.ToolResult != nil:
			out = append(out, toolMessage(*p.ToolResult))
		case p.Type == providers.TextPart && p.Text != "":
			parts = append(parts, llms.TextContent{Text: p.Text})
		case p.Type == providers.FilePart && p.File.IsImage():
			parts = append(parts, llms.ImageURLContent{URL: cmp.Or(p.File.URL, p.File.DataURL())})
		case p.Type == providers.FilePart:
			parts = append(parts, llms.BinaryContent{MIMEType: p.File.MediaType, Data: p.File.Data})
			*pdfs = append(*pdfs, cmp.Or(p.File.Name, "document.pdf"))
		}
	}
	if len(parts) > 0 {
		out = append(out, llms.MessageContent{Role: llms.ChatMessageTypeHuman, Parts: parts})
	}
	return out
}

// toolMessage makes the tool message of a result.
func toolMessage(r tools.Result) llms.MessageContent {
	content := r.Content
	if r.IsError {
		content = errorPrefix + content
	}
	return llms.MessageContent{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{
		llms.ToolCallResponse{ToolCallID: r.CallID, Name: r.Name, Content: content},
	}}
}

// arguments returns a call's arguments as the JSON string the wire carries ({} when empty).
func arguments(args json.RawMessage) string {
	if len(bytes.TrimSpace(args)) == 0 {
		return "{}"
	}
	return string(args)
}

// functionTools translates tool specs to function tools.
func functionTools(specs []providers.ToolSpec) ([]llms.Tool, error) {
	out := make([]llms.Tool, len(specs))
	for i, s := range specs {
		params, err := schema(s.Schema)
		if err != nil {
			return nil, fmt.Errorf("tool %s: %w", s.Name, err)
		}
		out[i] = llms.Tool{Type: "function", Function: &llms.FunctionDefinition{
			Name: s.Name, Description: s.Description, Parameters: params,
		}}
	}
	return out, nil
}

// schema decodes a tool's JSON schema; an empty one is an object without properties.
func schema(raw json.RawMessage) (map[string]any, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return map[string]any{"type": "object", "properties": map[string]any{}}, nil
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("%w: %v", errEmptySchema, err)
	}
	if m == nil {
		return nil, errEmptySchema
	}
	return m, nil
}

// responseFormat returns the response_format of an Output: a json_schema format, which OpenAI,
// OpenRouter, Ollama and Gemini's OpenAI-compatible endpoint take.
func responseFormat(o *providers.Output) (json.RawMessage, error) {
	s, err := schema(o.Schema)
	if err != nil {
		return nil, fmt.Errorf("output %s: %w", o.ResultName(), err)
	}
	return json.Marshal(map[string]any{"type": "json_schema", "json_schema": map[string]any{
		"name": o.ResultName(), "strict": o.Strict, "schema": s,
	}})
}

// toolChoice translates a tool choice to the value of OpenAI's tool_choice.
func toolChoice(c providers.ToolChoice) any {
	switch c.Mode {
	case providers.ChooseAny:
		return "required"
	case providers.ChooseNone:
		return "none"
	case providers.ChooseTool:
		return llms.ToolChoice{Type: "function", Function: &llms.FunctionReference{Name: c.Name}}
	}
	return "auto"
}

// answer translates a choice to the assistant's message.
func answer(c *llms.ContentChoice) providers.Message {
	msg := providers.Message{Role: providers.Assistant}
	if c.Content != "" {
		msg.Parts = append(msg.Parts, providers.Text(c.Content))
	}
	calls := c.ToolCalls
	if len(calls) == 0 && c.FuncCall != nil {
		calls = []llms.ToolCall{{Type: "function", FunctionCall: c.FuncCall}}
	}
	for _, tc := range calls {
		if tc.FunctionCall == nil {
			continue
		}
		call := tools.Call{ID: tc.ID, Name: tc.FunctionCall.Name, Args: json.RawMessage(arguments([]byte(tc.FunctionCall.Arguments)))}
		msg.Parts = append(msg.Parts, providers.Part{Type: providers.ToolCallPart, ToolCall: &call})
	}
	return msg
}

// withCalls returns msg with its tool calls replaced by calls (empty arguments as {}).
func withCalls(msg providers.Message, calls []tools.Call) providers.Message {
	out := providers.Message{Role: msg.Role}
	for _, p := range msg.Parts {
		if p.Type != providers.ToolCallPart {
			out.Parts = append(out.Parts, p)
		}
	}
	for _, c := range calls {
		c.Args = json.RawMessage(arguments(c.Args))
		out.Parts = append(out.Parts, providers.Part{Type: providers.ToolCallPart, ToolCall: &c})
	}
	return out
}

// stopReason translates a finish reason (OpenAI's, or Anthropic's through other langchaingo
// models). An answer with tool calls waits for their results, unless it was cut at the token
// limit (its last call may then be incomplete).
func stopReason(reason string, calls bool) providers.StopReason {
	switch strings.ToLower(reason) {
	case "length", "max_tokens":
		return providers.StopMaxTokens
	case "content_filter", "refusal", "safety":
		return providers.StopRefusal
	case "tool_calls", "function_call", "tool_use":
		return providers.StopToolUse
	case "stop_sequence":
		return providers.StopSequence
	}
	if calls {
		return providers.StopToolUse
	}
	return providers.StopEnd
}

// usage reads the token counts of GenerationInfo, in OpenAI's style (prompt tokens including
// cached ones) or Anthropic's (input tokens excluding them).
func usage(info map[string]any) providers.Usage {
	if prompt, ok := count(info, "PromptTokens"); ok {
		cached, _ := count(info, "PromptCachedTokens")
		out, _ := count(info, "CompletionTokens")
		return providers.Usage{InputTokens: max(prompt-cached, 0), OutputTokens: out, CacheReadTokens: cached}
	}
	in, _ := count(info, "InputTokens")
	out, _ := count(info, "OutputTokens")
	read, _ := count(info, "CacheReadInputTokens")
	write, _ := count(info, "CacheCreationInputTokens")
	return providers.Usage{InputTokens: in, OutputTokens: out, CacheReadTokens: read, CacheWriteTokens: write}
}

// count reads a number from GenerationInfo.
func count(info map[string]any, key string) (int, bool) {
	switch v := info[key].(type) {
	case int:
		return v, true
	case int32:
		return int(v), true
	case int64:
		return int(v), true
	case float64:
		return int(v), true
	}
	return 0, false
}

// isToolCallChunk reports whether a streamed chunk is a tool-call delta that langchaingo's OpenAI
// client marshalled ([{"id":..,"type":..,"function":{"name":..,"arguments":..}}]) rather than text.
func isToolCallChunk(b []byte) bool {
	if !bytes.HasPrefix(b, []byte(`[{`)) {
		return false
	}
	var deltas []struct {
		ID       *string `json:"id"`
		Type     *string `json:"type"`
		Function *struct {
			Name      *string `json:"name"`
			Arguments *string `json:"arguments"`
		} `json:"function"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if dec.Decode(&deltas) != nil || dec.More() || len(deltas) == 0 {
		return false
	}
	for _, d := range deltas {
		if d.Type == nil || d.Function == nil || d.Function.Arguments == nil {
			return false
		}
	}
	return true
}
