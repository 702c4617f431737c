package claudecode

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/runtime"
)

// maxOutput is how much of a raw line an Output event carries.
const maxOutput = 2 << 10

// event is one line of the stream-json output, with the fields of every kind this package reads.
type event struct {
	Type    string `json:"type"`
	Subtype string `json:"subtype"`

	// system/init
	SessionID string   `json:"session_id"`
	Model     string   `json:"model"`
	Tools     []string `json:"tools"`
	CWD       string   `json:"cwd"`
	Version   string   `json:"claude_code_version"`
	Mode      string   `json:"permissionMode"`

	// system/api_retry
	Attempt      int    `json:"attempt"`
	MaxRetries   int    `json:"max_retries"`
	RetryDelayMS int    `json:"retry_delay_ms"`
	ErrorStatus  *int   `json:"error_status"`
	Error        string `json:"error"`

	// assistant, user
	Message *message `json:"message"`

	// result
	Result         string   `json:"result"`
	IsError        bool     `json:"is_error"`
	NumTurns       int      `json:"num_turns"`
	TotalCostUSD   float64  `json:"total_cost_usd"`
	Usage          *usage   `json:"usage"`
	Denials        []denial `json:"permission_denials"`
	Errors         []string `json:"errors"`
	APIErrorStatus *int     `json:"api_error_status"`
}

type message struct {
	ID      string          `json:"id"`
	Model   string          `json:"model"`
	Content json.RawMessage `json:"content"` // a string or blocks
	Usage   *usage          `json:"usage"`
}

type block struct {
	Type string `json:"type"`
	// text
	Text string `json:"text"`
	// tool_use
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
	// tool_result
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"` // a string or blocks
	IsError   bool            `json:"is_error"`
}

type usage struct {
	InputTokens              int `json:"input_tokens"`
	OutputTokens             int `json:"output_tokens"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens"`
	CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
}

func (u *usage) canonical() providers.Usage {
	if u == nil {
		return providers.Usage{}
	}
	return providers.Usage{
		InputTokens: u.InputTokens, OutputTokens: u.OutputTokens,
		CacheReadTokens: u.CacheReadInputTokens, CacheWriteTokens: u.CacheCreationInputTokens,
	}
}

type denial struct {
	ToolName  string          `json:"tool_name"`
	ToolUseID string          `json:"tool_use_id"`
	ToolInput json.RawMessage `json:"tool_input"`
}

// denials describes the result's permission denials; empty when there are none.
func (e *event) denials() string {
	if len(e.Denials) == 0 {
		return ""
	}
	var parts []string
	for _, d := range e.Denials {
		parts = append(parts, fmt.Sprintf("%s %s", d.ToolName, compact(d.ToolInput)))
	}
	return "Permission denied for: " + strings.Join(parts, "; ")
}

// blocks decodes content that is either a string (one text block) or an array of blocks.
func blocks(raw json.RawMessage) []block {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '[' {
		var s string
		if json.Unmarshal(raw, &s) == nil && s != "" {
			return []block{{Type: "text", Text: s}}
		}
		return nil
	}
	var bs []block
	json.Unmarshal(raw, &bs)
	return bs
}

// textOf joins the text blocks of content.
func textOf(raw json.RawMessage) string {
	var parts []string
	for _, b := range blocks(raw) {
		if b.Type == "text" && b.Text != "" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// stream turns the CLI's output into events and remembers what the outcome needs. Its fields
// are written by read only, and read once read has returned.
type stream struct {
	rep     *runtime.Reporter
	kill    func()
	tools   map[string]string // tool_use id → name
	turns   map[string]bool   // assistant message ids seen
	perMsg  []providers.Usage // the usage of each assistant message, for a run without a result
	session string
	last    string // the type of the last event
	result  *event
	bad     string // the first line that is not JSON
	readErr error
}

// read reads lines until the end of the output or a line that is not JSON, which kills the
// process group.
func (s *stream) read(r io.Reader) {
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := br.ReadBytes('\n')
		if l := bytes.TrimSpace(line); len(l) > 0 {
			if !s.line(l) {
				s.kill()
				io.Copy(io.Discard, br) // let the dying group write without blocking
				return
			}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) && s.result == nil {
				s.readErr = err
			}
			return
		}
	}
}

// line handles one line; false means it is not JSON.
func (s *stream) line(l []byte) bool {
	var e event
	if l[0] != '{' || json.Unmarshal(l, &e) != nil {
		s.bad = truncate(string(l), 500)
		return false
	}
	s.last = e.Type
	if e.Subtype != "" {
		s.last += "/" + e.Subtype
	}
	if e.SessionID != "" {
		s.session = e.SessionID
	}
	switch e.Type {
	case "system":
		s.system(&e, l)
	case "assistant":
		s.assistant(&e)
	case "user":
		s.user(&e)
	case "result":
		s.result = &e
	default:
		s.rep.Emit(runtime.Event{Kind: runtime.Output, Text: truncate(string(l), maxOutput)})
	}
	return true
}

func (s *stream) system(e *event, raw []byte) {
	switch e.Subtype {
	case "init":
		text := fmt.Sprintf("Claude Code %s: model %s, session %s, permission mode %s, in %s; tools: %s",
			e.Version, e.Model, e.SessionID, e.Mode, e.CWD, strings.Join(e.Tools, ", "))
		s.rep.Emit(runtime.Event{Kind: runtime.Started, Text: text})
	case "api_retry":
		why := e.Error
		if e.ErrorStatus != nil {
			why = fmt.Sprintf("status %d %s", *e.ErrorStatus, e.Error)
		}
		s.rep.Emit(runtime.Event{Kind: runtime.Retrying, Text: fmt.Sprintf("API call failed (%s); attempt %d of %d in %dms",
			strings.TrimSpace(why), e.Attempt, e.MaxRetries, e.RetryDelayMS)})
	case "compact_boundary":
		s.rep.Emit(runtime.Event{Kind: runtime.Compacted, Text: "Claude Code compacted its conversation (the full one stays in its session transcript)"})
	default:
		s.rep.Emit(runtime.Event{Kind: runtime.Output, Text: truncate(string(raw), maxOutput)})
	}
}

// assistant reports a model turn. The CLI prints one assistant event per content block, all with
// the message's id: the first of a message reports the turn with its usage, later ones only
// their text; every tool_use block is a tool call.
func (s *stream) assistant(e *event) {
	if e.Message == nil {
		return
	}
	m := e.Message
	text := textOf(m.Content)
	first := m.ID == "" || !s.turns[m.ID]
	if m.ID != "" {
		s.turns[m.ID] = true
	}
	if first {
		u := m.Usage.canonical()
		s.perMsg = append(s.perMsg, u)
		s.rep.Emit(runtime.Event{Kind: runtime.ModelTurn, Text: text, Usage: &u})
	} else if text != "" {
		s.rep.Emit(runtime.Event{Kind: runtime.ModelTurn, Text: text})
	}
	for _, b := range blocks(m.Content) {
		if b.Type != "tool_use" {
			continue
		}
		s.tools[b.ID] = b.Name
		s.rep.Emit(runtime.Event{Kind: runtime.ToolCalled, Tool: &runtime.ToolEvent{ID: b.ID, Name: b.Name, Args: b.Input}})
	}
}

// user reports the tool results the CLI sends back to the model.
func (s *stream) user(e *event) {
	if e.Message == nil {
		return
	}
	for _, b := range blocks(e.Message.Content) {
		if b.Type != "tool_result" {
			continue
		}
		result := textOf(b.Content)
		s.rep.Emit(runtime.Event{Kind: runtime.ToolResult, Tool: &runtime.ToolEvent{
			ID: b.ToolUseID, Name: s.tools[b.ToolUseID], Result: result, IsError: b.IsError,
		}})
	}
}

// usage returns the run's usage: the result's, with its cost, or else the sum of the turns seen.
func (s *stream) usage() providers.Usage {
	if s.result != nil && s.result.Usage != nil {
		u := s.result.Usage.canonical()
		u.CostUSD = s.result.TotalCostUSD
		return u
	}
	var u providers.Usage
	for _, t := range s.perMsg {
		u = u.Add(t)
	}
	if s.result != nil {
		u.CostUSD = s.result.TotalCostUSD
	}
	return u
}

// lastKind names the last event, for errors.
func (s *stream) lastKind() string {
	if s.last == "" {
		return "none"
	}
	return s.last
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

func compact(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return truncate(b.String(), 200)
}
