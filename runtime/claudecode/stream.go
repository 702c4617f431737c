package claudecode

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"

	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/runtime"
	"github.com/agiraph/agiraph/runtime/adapter"
	"github.com/agiraph/agiraph/runtime/internal/workmcp"
	"github.com/agiraph/agiraph/tools"
)

// maxOutput is how much of a raw line an Output event carries.
const maxOutput = 2 << 10

// event is one line of the stream-json output, with the fields of every kind this package reads.
// Fields it does not declare are ignored. Numbers are float64 (the CLI's are not always integers:
// 2.1.197 printed "retry_delay_ms":619.6007536683462), except NumTurns and APIErrorStatus, which
// decode reads from float64s.
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
	Attempt      float64         `json:"attempt"`
	MaxRetries   float64         `json:"max_retries"`
	RetryDelayMS float64         `json:"retry_delay_ms"`
	ErrorStatus  *float64        `json:"error_status"`
	Error        json.RawMessage `json:"error"` // a string ("server_error"), read by errorText

	// assistant, user; system/permission_denied: a string, the text the model got back
	Message *message `json:"message"`

	// system/permission_denied (and its tool_use_id, as in result's permission_denials)
	ToolName     string `json:"tool_name"`
	ToolUseID    string `json:"tool_use_id"`
	DecisionType string `json:"decision_reason_type"`
	Decision     string `json:"decision_reason"`

	// stream_event (--include-partial-messages): an event of the Messages API's stream
	Event *apiEvent `json:"event"`

	// result
	Result         string   `json:"result"`
	IsError        bool     `json:"is_error"`
	NumTurns       int      `json:"-"`
	TotalCostUSD   float64  `json:"total_cost_usd"`
	Usage          *usage   `json:"usage"`
	Denials        []denial `json:"permission_denials"`
	Errors         []string `json:"errors"`
	APIErrorStatus *int     `json:"-"`
}

// decode decodes a line that is a JSON object. A field of an unexpected type is left empty and
// named in the error (a *json.UnmarshalTypeError); the others are still read.
func decode(l []byte) (*event, error) {
	var w struct {
		event
		NumTurns       float64  `json:"num_turns"`
		APIErrorStatus *float64 `json:"api_error_status"`
	}
	err := json.Unmarshal(l, &w)
	e := &w.event
	e.NumTurns = int(w.NumTurns)
	if w.APIErrorStatus != nil {
		s := int(*w.APIErrorStatus)
		e.APIErrorStatus = &s
	}
	return e, err
}

// apiEvent is an event of the Messages API's stream, as a stream_event line carries it. Only
// message_start (the message's id and its usage so far), message_delta (its final usage) and the
// text of content_block_delta are read.
type apiEvent struct {
	Type    string      `json:"type"`
	Message *message    `json:"message"` // message_start
	Usage   *deltaUsage `json:"usage"`   // message_delta
	Delta   *apiDelta   `json:"delta"`   // content_block_delta (and message_delta, whose fields are not read)
}

// apiDelta is the delta of a content_block_delta: of a text block, a text_delta with its text.
type apiDelta struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// message is a model message (assistant), the CLI's answer to one (user), or, as a JSON string,
// what a system/permission_denied event says the model got back (Text).
type message struct {
	ID      string          `json:"id"`
	Model   string          `json:"model"`
	Content json.RawMessage `json:"content"` // a string or blocks
	Usage   *usage          `json:"usage"`
	Text    string          `json:"-"`
}

// UnmarshalJSON reads a message object, or a string into Text.
func (m *message) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		return json.Unmarshal(b, &m.Text)
	}
	type plain message // without this method
	return json.Unmarshal(b, (*plain)(m))
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
	InputTokens              float64 `json:"input_tokens"`
	OutputTokens             float64 `json:"output_tokens"`
	CacheReadInputTokens     float64 `json:"cache_read_input_tokens"`
	CacheCreationInputTokens float64 `json:"cache_creation_input_tokens"`
}

// deltaUsage is the usage of a message_delta: its output_tokens, when present, is the message's
// total; the other counts are the message_start's again, or zero or null when not repeated.
type deltaUsage struct {
	usage
	OutputTokens *float64 `json:"output_tokens"` // shadows usage's, to tell absent from zero
}

// update applies a message_delta's usage as the CLI does to count a message's cost (2.1.330's
// updateUsage): the input and cache counts it gives replace the message_start's when above zero,
// its output_tokens replaces theirs when present.
func (u *usage) update(d *deltaUsage) {
	if d == nil {
		return
	}
	if d.InputTokens > 0 {
		u.InputTokens = d.InputTokens
	}
	if d.CacheReadInputTokens > 0 {
		u.CacheReadInputTokens = d.CacheReadInputTokens
	}
	if d.CacheCreationInputTokens > 0 {
		u.CacheCreationInputTokens = d.CacheCreationInputTokens
	}
	if d.OutputTokens != nil {
		u.OutputTokens = *d.OutputTokens
	}
}

func (u *usage) canonical() providers.Usage {
	if u == nil {
		return providers.Usage{}
	}
	return providers.Usage{
		InputTokens: int(u.InputTokens), OutputTokens: int(u.OutputTokens),
		CacheReadTokens: int(u.CacheReadInputTokens), CacheWriteTokens: int(u.CacheCreationInputTokens),
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

// denied describes a system/permission_denied event: the tool call and why it was denied.
func (e *event) denied() string {
	text := fmt.Sprintf("Claude Code denied %s (%s)", e.ToolName, e.ToolUseID)
	if e.DecisionType != "" {
		text += " by " + e.DecisionType
	}
	why := e.Decision
	if why == "" && e.Message != nil {
		why = e.Message.Text
	}
	if why != "" {
		text += ": " + why
	}
	return text
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
	_ = json.Unmarshal(raw, &bs) // what decodes is kept: a field of another type stays empty
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

// parsed is what one line of output says.
type parsed struct {
	// event is the line decoded; nil when it is not a JSON object.
	event *event
	// warning, when set, says the line or a field of it could not be read; the run goes on.
	warning string
	// fatal, when set, ends the run: an error wrapping providers.ErrAuth when an api_retry event
	// shows the API refusing the credentials (the CLI would retry them in vain for minutes).
	fatal error
}

// parse reads one line of the CLI's output. Only one kind of line is fatal: an api_retry event
// with an authentication status (see authFailure). Anything that cannot be read (text that is
// not JSON, an object cut short, JSON that is not an object, a field of an unexpected type)
// gets a warning; an object with a field of an unexpected type is still returned, that field
// left empty. A CLI that stops speaking stream-json for good still ends: without a result when
// it exits, or stalled (runtime.Watch).
func parse(l []byte) parsed {
	l = bytes.TrimSpace(l)
	switch {
	case len(l) == 0:
		return parsed{}
	case l[0] != '{' && json.Valid(l):
		return parsed{warning: unreadable("it is not a JSON object", l)}
	case l[0] != '{':
		return parsed{warning: unreadable("it is not JSON", l)}
	}
	// Decoding checks the syntax first (one pass over a line, not two: most lines are stream
	// events, many a second).
	e, err := decode(l)
	var p parsed
	if err != nil {
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &se):
			return parsed{warning: unreadable("it is not valid JSON", l)}
		case !errors.As(err, &te):
			return parsed{warning: unreadable(err.Error(), l)}
		}
		p.warning = unreadable(fmt.Sprintf("field %s is a JSON %s; the rest was read", strings.TrimPrefix(te.Field, "event."), te.Value), l)
	}
	p.event = e
	if why := e.authFailure(); why != "" {
		p.fatal = fmt.Errorf("%w: %s; stopped Claude Code instead of letting it retry", providers.ErrAuth, why)
	}
	return p
}

// unreadable is the warning for a line that could not be read.
func unreadable(why string, l []byte) string {
	return fmt.Sprintf("could not read a line of Claude Code's output (%s): %s", why, truncate(string(l), maxOutput))
}

// authFailure says why an api_retry event shows the API refusing the credentials (status 401 or
// 403, or an error naming authentication); "" when it does not.
func (e *event) authFailure() string {
	if e.Type != "system" || e.Subtype != "api_retry" {
		return ""
	}
	msg := e.errorText()
	lower := strings.ToLower(msg)
	named := strings.Contains(lower, "authentication") || strings.Contains(lower, "unauthorized") ||
		strings.Contains(lower, "invalid api key") || strings.Contains(lower, "invalid x-api-key")
	switch {
	case e.ErrorStatus != nil && errors.Is(providers.KindOfStatus(int(*e.ErrorStatus)), providers.ErrAuth):
		return strings.TrimSpace(fmt.Sprintf("the API answered status %.0f %s", *e.ErrorStatus, msg))
	case named:
		return "the API answered " + msg
	}
	return ""
}

// errorText returns an api_retry event's error: the string, or the JSON of anything else.
func (e *event) errorText() string {
	var s string
	if json.Unmarshal(e.Error, &s) == nil {
		return s
	}
	return compact(e.Error)
}

// stream turns the CLI's output into events and remembers what the outcome needs. Its fields
// are written by read, and by mcpCall under mu; they are read once read has returned.
type stream struct {
	rep    *adapter.Emitter
	kill   func()
	how    string            // how the CLI runs (its sandbox), added to the Started event
	mu     sync.Mutex        // held by read while it handles a line, and by mcpCall
	tools  map[string]string // tool_use id → name, of the calls reported
	turns  map[string]bool   // the ids of the model messages reported
	perMsg []providers.Usage // the usage of each model message reported, for a run without a result
	// turn is the model message being read, reported when it ends (see flush).
	turn    *turn
	session string
	last    string // the type of the last event
	// result is the result event or, when authentication failed, an error result made from the
	// api_retry event that showed it.
	result  *event
	readErr error
}

// turn is a model message being read: what its assistant events said, held until it ends.
type turn struct {
	id       string
	text     []string
	calls    []block
	usage    usage
	streamed bool // it began with a message_start: its message_stop ends it
	answered bool // an assistant event or a message_delta was read
	// after are the events of its calls read before it ended (the CLI runs a call as soon as
	// its block ends), reported after the calls.
	after []runtime.Event
}

// has says whether the message calls the tool_use id.
func (t *turn) has(id string) bool {
	return slices.ContainsFunc(t.calls, func(b block) bool { return b.ID == id })
}

// read reads lines until the end of the output, or until a line that is fatal (see parse) kills
// the process group.
func (s *stream) read(r io.Reader) {
	defer func() { // a message cut short by the end of the output
		s.mu.Lock()
		defer s.mu.Unlock()
		s.flush()
	}()
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := br.ReadBytes('\n')
		if l := bytes.TrimSpace(line); len(l) > 0 {
			s.mu.Lock()
			ok := s.line(l)
			s.mu.Unlock()
			if !ok {
				s.kill()
				_, _ = io.Copy(io.Discard, br) // let the dying group write without blocking
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

// ends says whether line p ends the message being read, before its message_stop: a user or
// result line, a fatal one, or, for a message without stream events, any line but an
// assistant or stream_event line.
func (s *stream) ends(p parsed) bool {
	switch {
	case s.turn == nil:
		return false
	case p.fatal != nil:
		return true
	case p.event == nil:
		return !s.turn.streamed
	}
	switch p.event.Type {
	case "assistant", "stream_event":
		return false
	case "user", "result":
		return true
	}
	return !s.turn.streamed
}

// line handles one line; false means the run must end (s.result says why).
func (s *stream) line(l []byte) bool {
	p := parse(l)
	if s.ends(p) {
		s.flush()
	}
	if p.warning != "" {
		s.rep.Emit(runtime.Event{Kind: runtime.Output, Text: p.warning})
	}
	switch {
	case p.fatal != nil:
		s.result = &event{Type: "result", Subtype: "api_retry", IsError: true, Result: p.fatal.Error(),
			SessionID: s.session, NumTurns: len(s.perMsg)}
		return false
	case p.event == nil:
		return true
	}
	e := p.event
	s.last = e.Type
	if e.Subtype != "" {
		s.last += "/" + e.Subtype
	}
	if e.Type == "stream_event" && e.Event != nil {
		s.last += "/" + e.Event.Type
	}
	if e.SessionID != "" {
		s.session = e.SessionID
	}
	switch e.Type {
	case "system":
		s.system(e, l)
	case "assistant":
		s.assistant(e)
	case "stream_event":
		s.partial(e.Event)
	case "user":
		s.user(e)
	case "result":
		s.result = e
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
		if s.how != "" {
			text += "; " + s.how
		}
		s.rep.Emit(runtime.Event{Kind: runtime.Started, Text: text})
	case "api_retry":
		why := e.errorText()
		if e.ErrorStatus != nil {
			why = fmt.Sprintf("status %.0f %s", *e.ErrorStatus, why)
		}
		s.rep.Emit(runtime.Event{Kind: runtime.Retrying, Text: fmt.Sprintf("API call failed (%s); attempt %.0f of %.0f in %.0fms",
			strings.TrimSpace(why), e.Attempt, e.MaxRetries, e.RetryDelayMS)})
	case "compact_boundary":
		s.rep.Emit(runtime.Event{Kind: runtime.Compacted, Text: "Claude Code compacted its conversation (the full one stays in its session transcript)"})
	case "status":
		// "requesting" before each API call, "compacting", null: progress the other events show
	case "permission_denied":
		s.after(e.ToolUseID, runtime.Event{Kind: runtime.Output, Text: truncate(e.denied(), maxOutput)})
	default:
		s.rep.Emit(runtime.Event{Kind: runtime.Output, Text: truncate(string(raw), maxOutput)})
	}
}

// assistant reads an assistant event. The CLI prints one per content block of a model message,
// all with the message's id and the usage of its start (output_tokens 1); with
// --include-partial-messages, stream_event lines around them carry the final usage. So the
// events of a message are held (s.turn) and reported when it ends (see flush). An assistant event
// of a message already reported (a subagent's, interleaved with another's) is reported at once,
// without usage.
func (s *stream) assistant(e *event) {
	if e.Message == nil {
		return
	}
	m := e.Message
	if m.ID != "" && s.turns[m.ID] {
		if text := textOf(m.Content); text != "" {
			s.rep.Emit(runtime.Event{Kind: runtime.ModelTurn, Text: text})
		}
		s.called(blocks(m.Content))
		return
	}
	if s.turn == nil || m.ID == "" || s.turn.id != m.ID {
		s.flush()
		s.turn = &turn{id: m.ID}
		if m.Usage != nil {
			s.turn.usage = *m.Usage
		}
	}
	t := s.turn
	t.answered = true
	for _, b := range blocks(m.Content) {
		switch {
		case b.Type == "text" && b.Text != "":
			t.text = append(t.text, b.Text)
		case b.Type == "tool_use":
			t.calls = append(t.calls, b)
		}
	}
}

// partial reads an event of the API's stream: message_start begins a message (its id, its usage
// so far), a text_delta is reported as a TextDelta, message_delta gives the message's final
// usage, message_stop ends it. Other events (the content blocks, their other deltas) are
// ignored: the assistant events carry the blocks whole.
func (s *stream) partial(a *apiEvent) {
	if a == nil {
		return
	}
	switch a.Type {
	case "content_block_delta":
		if a.Delta != nil && a.Delta.Type == "text_delta" && a.Delta.Text != "" {
			s.rep.Emit(runtime.Event{Kind: runtime.TextDelta, Text: a.Delta.Text})
		}
	case "message_start":
		s.flush()
		if a.Message == nil {
			return
		}
		s.turn = &turn{id: a.Message.ID, streamed: true}
		if a.Message.Usage != nil {
			s.turn.usage = *a.Message.Usage
		}
	case "message_delta":
		if s.turn != nil {
			s.turn.usage.update(a.Usage)
			s.turn.answered = true
		}
	case "message_stop":
		s.flush()
	}
}

// flush reports the message being read, if the model answered it: a model turn with its text and
// usage, then its tool calls. A message that only started (a stream cut short, which the CLI
// retries) is dropped.
func (s *stream) flush() {
	t := s.turn
	s.turn = nil
	if t == nil || !t.answered {
		return
	}
	if t.id != "" {
		s.turns[t.id] = true
	}
	u := t.usage.canonical()
	s.perMsg = append(s.perMsg, u)
	s.rep.Emit(runtime.Event{Kind: runtime.ModelTurn, Text: strings.Join(t.text, "\n"), Usage: &u})
	s.called(t.calls)
	for _, e := range t.after {
		s.rep.Emit(e)
	}
}

// after reports e, an event of the tool call id, after the call: at once, unless the message
// being read calls it, which then reports it after its calls.
func (s *stream) after(id string, e runtime.Event) {
	if s.turn != nil && id != "" && s.turn.has(id) {
		s.turn.after = append(s.turn.after, e)
		return
	}
	s.rep.Emit(e)
}

// called reports the tool_use blocks among bs, but those already reported (see mcpCall).
func (s *stream) called(bs []block) {
	for _, b := range bs {
		if b.Type != "tool_use" {
			continue
		}
		if _, ok := s.tools[b.ID]; ok && b.ID != "" {
			continue
		}
		s.tools[b.ID] = b.Name
		s.rep.Emit(runtime.Event{Kind: runtime.ToolCalled, Tool: &runtime.ToolEvent{ID: b.ID, Name: b.Name, Args: b.Input}})
	}
}

// mcpCall reports c, a call of a work tool over MCP, named as the output names it
// (mcp__<server>__<tool>), unless the output showed it already; it is called before the tool
// runs. The CLI runs a call as soon as its block ends, and a message's calls are reported when
// the message ends, after its model turn: a call the tool runs first is reported before that
// turn, so that what the tool does (a message sent, say) comes after the call.
func (s *stream) mcpCall(c tools.Call) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.tools[c.ID]; ok {
		return
	}
	name := "mcp__" + workmcp.Name + "__" + c.Name
	s.tools[c.ID] = name
	s.rep.Emit(runtime.Event{Kind: runtime.ToolCalled, Tool: &runtime.ToolEvent{ID: c.ID, Name: name, Args: c.Args}})
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
