package harnessed

import (
	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/runtime"
	"github.com/agiraph/agiraph/tools"
)

// state is the worker's saved state, and an update of it: a step's update holds only what the
// step adds (see reduce), so a step's checkpoint is as large as what the step did, never as large
// as the conversation. The model step saves its answer, whose calls become the pending calls
// (Asks); each tools step saves its results and how many of the calls it ran.
type state struct {
	// Conversation grows by the messages of each update (a compaction's replace it: Reset).
	Conversation []providers.Message `json:"conversation,omitempty"`
	// Chars counts the characters of the conversation (see over); reduce keeps it.
	Chars int `json:"chars,omitempty"`
	// Pending are the calls of the latest answer not yet run: the model step's update sets them
	// (Asks), each tools step's update consumes Ran of them.
	Pending []tools.Call `json:"pending,omitempty"`
	// Results and Held collect the results of the pending calls and the messages that arrived
	// meanwhile, each update adding its own, until the last call has run: that step's update
	// makes them a message of the conversation, and they are cleared.
	Results []tools.Result    `json:"results,omitempty"`
	Held    []runtime.Message `json:"held,omitempty"`
	// Report is what the worker reported (see adapter.Report): an update adds its suggestions,
	// sub-nodes and unread messages, and an ending (Status set) replaces the ending.
	Report runtime.Outcome `json:"report,omitzero"`

	// Every update replaces the fields below; a step carries those it does not change.
	Turns int `json:"turns,omitempty"`
	// Since is Turns when the worker was last woken: the turns of a wake-up, which
	// WithMaxIterations bounds, count from there.
	Since int             `json:"since,omitempty"`
	Usage providers.Usage `json:"usage,omitzero"`
	// LastContext is the context size the provider reported for the latest call.
	LastContext int  `json:"last_context,omitempty"`
	Flushing    bool `json:"flushing,omitempty"` // asked to save notes before a compaction
	Compactions int  `json:"compactions,omitempty"`

	// What an update does besides adding; never set in a state.
	Delta bool `json:"delta,omitempty"` // set in every update of this version (see reduceWhole)
	Reset bool `json:"reset,omitempty"` // its Conversation replaces the conversation (a compaction)
	Ran   int  `json:"ran,omitempty"`   // it ran that many of the pending calls
	Asks  bool `json:"asks,omitempty"`  // the calls of its last message are the pending calls
	Woken bool `json:"woken,omitempty"` // it wakes a worker that had ended: the report starts afresh
}

// reduce merges an update into the state; see state for what each field's update means.
func reduce(cur, u state) state {
	if !u.Delta {
		return reduceWhole(cur, u)
	}
	next := u.replaced()
	next.Conversation, next.Chars = u.Conversation, conversationChars(u.Conversation)
	if !u.Reset {
		next.Conversation = append(cur.Conversation, u.Conversation...)
		next.Chars += cur.chars()
	}
	next.Pending = cur.Pending
	switch {
	case u.Asks:
		next.Pending = u.Conversation[len(u.Conversation)-1].ToolCalls()
	case len(u.Pending) > 0: // an update of the version before Asks
		next.Pending = u.Pending
	}
	next.Pending = next.Pending[min(u.Ran, len(next.Pending)):]
	if len(next.Pending) > 0 { // else the update made them a message
		next.Results = append(cur.Results, u.Results...)
		next.Held = append(cur.Held, u.Held...)
	}
	report := cur.Report
	if u.Woken {
		report = runtime.Outcome{}
	}
	next.Report = addReport(report, u.Report)
	return next
}

// reduceWhole merges an update written by an earlier version of this package, which held every
// field whole but the conversation: the conversation grows (or is replaced: Reset), every other
// field is replaced. Such updates remain in the checkpoints of assignments that ran before.
func reduceWhole(cur, u state) state {
	if !u.Reset {
		u.Conversation = append(cur.Conversation, u.Conversation...)
	}
	u.Reset, u.Chars = false, conversationChars(u.Conversation)
	return u
}

// chars returns Chars, counted afresh for a state saved before states counted them.
func (s state) chars() int {
	if s.Chars == 0 {
		return conversationChars(s.Conversation)
	}
	return s.Chars
}

// update starts the update of a step (or an input) on the state s: the fields every update
// replaces, as they are; nothing added.
func (s state) update() state {
	u := s.replaced()
	u.Delta = true
	return u
}

// replaced is the state with only the fields every update replaces.
func (s state) replaced() state {
	return state{Turns: s.Turns, Since: s.Since, Usage: s.Usage, LastContext: s.LastContext, Flushing: s.Flushing, Compactions: s.Compactions}
}

// reported is what the worker reported during a step: the report after the step less the
// report before it (the step's input, which the report was restored from).
func reported(before, after runtime.Outcome) runtime.Outcome {
	d := runtime.Outcome{
		Suggestions: added(before.Suggestions, after.Suggestions),
		SubNodes:    added(before.SubNodes, after.SubNodes),
	}
	if after.Status != before.Status {
		d.Status, d.Summary, d.Published, d.Result = after.Status, after.Summary, after.Published, after.Result
	}
	return d
}

// added is what after, which extends before, holds beyond it.
func added[T any](before, after []T) []T {
	if len(after) <= len(before) {
		return nil
	}
	return after[len(before):]
}

// addReport merges d, what a step reported, into the report r.
func addReport(r, d runtime.Outcome) runtime.Outcome {
	if d.Status != "" {
		r.Status, r.Summary, r.Published, r.Result = d.Status, d.Summary, d.Published, d.Result
	}
	r.Suggestions = append(r.Suggestions, d.Suggestions...)
	r.SubNodes = append(r.SubNodes, d.SubNodes...)
	r.Unread = append(r.Unread, d.Unread...)
	return r
}
