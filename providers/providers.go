// Package providers is the one interface agents use to call language models, over canonical
// types that every provider adapter translates to and from its own wire format: a system prompt,
// messages made of parts (text, images and PDFs, tool calls, tool results, and opaque provider
// blocks that must be sent back unchanged), tool definitions and options in; the assistant's message, the stop reason
// and the usage out.
//
// Adapters live in sub-packages (providers/scripted for a deterministic model; the HTTP providers
// beside it), and models are named "provider/model", for example "anthropic/claude-sonnet-4-5" or
// "scripted/demo" (see ParseName).
//
// It imports tools and no runtime or squad (internal/layers checks this).
package providers

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agiraph/agiraph/tools"
)

// Model is a language model. Implementations are safe for concurrent use.
type Model interface {
	// Name is the model's "provider/model" name.
	Name() string
	// Generate sends one request and returns the model's answer. Errors a caller may branch on are
	// *Error values (see the Err* kinds).
	Generate(ctx context.Context, req Request) (Response, error)
}

// Role says who wrote a message.
type Role string

// The roles. Tool results travel in user messages, as the Anthropic API has them; adapters for
// APIs with a separate tool role translate.
const (
	User      Role = "user"
	Assistant Role = "assistant"
)

// Message is one turn of a conversation.
type Message struct {
	Role  Role   `json:"role"`
	Parts []Part `json:"parts"`
}

// PartType says what a Part holds.
type PartType string

// The part types.
const (
	TextPart       PartType = "text"
	ToolCallPart   PartType = "tool_call"
	ToolResultPart PartType = "tool_result"
	// FilePart is an image or a PDF the model is shown (see File).
	FilePart PartType = "file"
	// OpaquePart is a provider's own block (for example a server tool's use and result, or a
	// thinking block with its signature) that must be sent back to the same provider unchanged.
	OpaquePart PartType = "opaque"
)

// Part is one piece of a message. Exactly the field its Type names is set.
type Part struct {
	Type       PartType      `json:"type"`
	Text       string        `json:"text,omitempty"`
	ToolCall   *tools.Call   `json:"tool_call,omitempty"`
	ToolResult *tools.Result `json:"tool_result,omitempty"`
	File       *File         `json:"file,omitempty"`
	// Provider names the provider an opaque block came from; Raw is the block as it sent it.
	Provider string          `json:"provider,omitempty"`
	Raw      json.RawMessage `json:"raw,omitempty"`
}

// Text makes a text part.
func Text(s string) Part { return Part{Type: TextPart, Text: s} }

// UserText makes a user message of one text part.
func UserText(s string) Message { return Message{Role: User, Parts: []Part{Text(s)}} }

// Text returns the text parts of m, joined.
func (m Message) Text() string {
	var b strings.Builder
	for _, p := range m.Parts {
		if p.Type == TextPart {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// ToolCalls returns the tool calls of m, in order.
func (m Message) ToolCalls() []tools.Call {
	var calls []tools.Call
	for _, p := range m.Parts {
		if p.Type == ToolCallPart && p.ToolCall != nil {
			calls = append(calls, *p.ToolCall)
		}
	}
	return calls
}

// ToolResults makes the user message that answers calls with their results.
func ToolResults(results []tools.Result) Message {
	m := Message{Role: User}
	for i := range results {
		r := results[i]
		m.Parts = append(m.Parts, Part{Type: ToolResultPart, ToolResult: &r})
	}
	return m
}

// ToolSpec is what a model is told of a tool: its name, description and argument schema.
type ToolSpec struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Schema      json.RawMessage `json:"schema"`
}

// Specs returns the specs of tools.
func Specs(ts []tools.Tool) []ToolSpec {
	specs := make([]ToolSpec, len(ts))
	for i, t := range ts {
		specs[i] = ToolSpec{Name: t.Name, Description: t.Description, Schema: t.Schema}
	}
	return specs
}

// ToolChoice says whether and which tools the model must call.
type ToolChoice struct {
	Mode ChoiceMode
	Name string // the tool, for ChooseTool
}

// ChoiceMode is the kind of a ToolChoice.
type ChoiceMode string

// The tool choice modes.
const (
	ChooseAuto ChoiceMode = ""     // the model decides (the default)
	ChooseAny  ChoiceMode = "any"  // the model must call some tool
	ChooseNone ChoiceMode = "none" // the model must not call tools
	ChooseTool ChoiceMode = "tool" // the model must call the named tool
)

// Request is one call of a model.
type Request struct {
	System   string
	Messages []Message
	Tools    []ToolSpec
	Choice   ToolChoice
	// MaxTokens bounds the answer (0: the adapter's default).
	MaxTokens int
	// Temperature, when set, overrides the model's default.
	Temperature *float64
	Stop        []string
	// Output, when set, asks for an answer that is a JSON value of its schema (see Output).
	Output *Output
	// OnText, when set, receives the answer's text as it is generated, in order.
	OnText func(delta string)
}

// StopReason says why the model stopped.
type StopReason string

// The stop reasons.
const (
	StopEnd       StopReason = "end"        // the model finished its answer
	StopToolUse   StopReason = "tool_use"   // the model called tools and waits for their results
	StopMaxTokens StopReason = "max_tokens" // the answer hit MaxTokens
	StopSequence  StopReason = "stop"       // a stop sequence was generated
	StopPause     StopReason = "pause"      // a long server-side turn paused; send the answer back to continue
	StopRefusal   StopReason = "refusal"    // the model declined to answer
)

// Usage counts the tokens of a request and, where the price is known, what it cost.
type Usage struct {
	InputTokens      int     `json:"input_tokens"`
	OutputTokens     int     `json:"output_tokens"`
	CacheReadTokens  int     `json:"cache_read_tokens,omitempty"`
	CacheWriteTokens int     `json:"cache_write_tokens,omitempty"`
	CostUSD          float64 `json:"cost_usd,omitempty"` // 0 when the price is unknown
}

// Add returns the sum of two usages.
func (u Usage) Add(v Usage) Usage {
	return Usage{
		InputTokens:      u.InputTokens + v.InputTokens,
		OutputTokens:     u.OutputTokens + v.OutputTokens,
		CacheReadTokens:  u.CacheReadTokens + v.CacheReadTokens,
		CacheWriteTokens: u.CacheWriteTokens + v.CacheWriteTokens,
		CostUSD:          u.CostUSD + v.CostUSD,
	}
}

// Response is a model's answer.
type Response struct {
	Message    Message // the assistant's message: text, tool calls, opaque blocks
	StopReason StopReason
	Usage      Usage
	Model      string // the model that answered, as the provider names it
}

// ParseName splits a "provider/model" name. The model part may itself contain slashes
// ("openrouter/meta-llama/llama-3.1-70b").
func ParseName(name string) (provider, model string, err error) {
	provider, model, ok := strings.Cut(name, "/")
	if !ok || provider == "" || model == "" {
		return "", "", fmt.Errorf("providers: model name %q is not of the form provider/model (for example anthropic/claude-sonnet-4-5)", name)
	}
	return provider, model, nil
}
