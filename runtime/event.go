package runtime

import (
	"encoding/json"
	"time"

	"github.com/agiraph/agiraph/providers"
)

// Kind says what an Event reports.
type Kind string

// The event kinds.
const (
	Started         Kind = "started"          // the assignment began (Text: the runtime's account of how)
	ModelTurn       Kind = "model_turn"       // the model answered (Text: its text; Usage: the turn's)
	ToolCalled      Kind = "tool_called"      // a tool was called (Tool: name, id, args)
	ToolResult      Kind = "tool_result"      // a tool answered (Tool: with Result and IsError)
	MessageSent     Kind = "message_sent"     // the worker sent a message (Message)
	MessageReceived Kind = "message_received" // a message reached the worker (Message)
	AskedHuman      Kind = "asked_human"      // the worker asked the human (Text: the question; Tool: the call to approve, for an approval)
	Hooked          Kind = "hooked"           // a hook, or the human approving a call, refused or changed something (Text: what)
	Retrying        Kind = "retrying"         // a failed call is being tried again (Text: why)
	Compacted       Kind = "compacted"        // the conversation was compacted (Text: where the old one went)
	Output          Kind = "output"           // a line a CLI agent printed outside its protocol (Text)
	Ended           Kind = "ended"            // the assignment ended (Status; Text: the summary or the error; Usage: the total)
)

// TextDelta is a piece of the model's answer as it is generated (Text: the piece), reported by
// the runtimes that see the answer stream (harnessed, Claude Code). The pieces of a turn, in
// order, add up to the text of its ModelTurn, which comes after them; a call that fails and is
// tried again (Retrying) starts its pieces again. They are for watching a worker live: a squad
// passes them to its subscribers as "text.delta" events and writes none of them anywhere (the
// ModelTurn holds the text), and the liveness watchdog counts them as progress.
const TextDelta Kind = "text_delta"

// Event is one thing that happened during an assignment.
type Event struct {
	Time       time.Time        `json:"time"`
	Kind       Kind             `json:"kind"`
	Assignment string           `json:"assignment"`
	Node       string           `json:"node,omitempty"`
	Worker     string           `json:"worker,omitempty"`
	Text       string           `json:"text,omitempty"`
	Tool       *ToolEvent       `json:"tool,omitempty"`
	Message    *Message         `json:"message,omitempty"`
	Usage      *providers.Usage `json:"usage,omitempty"`
	Status     Status           `json:"status,omitempty"` // for Ended
}

// ToolEvent describes a tool call and, once it answered, its result.
type ToolEvent struct {
	ID      string          `json:"id,omitempty"`
	Name    string          `json:"name"`
	Args    json.RawMessage `json:"args,omitempty"`
	Result  string          `json:"result,omitempty"`
	IsError bool            `json:"is_error,omitempty"`
}

// Sink receives events. It must not block for long: the worker waits for it.
type Sink func(Event)
