package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/agiraph/agiraph/nodes/eventlog"
)

// eventForm is the first element of an event as EncodeEvent encodes it: the form of the rest.
const eventForm = 1

// EncodeEvent returns e as a store implementation keeps it, without its Seq and its Key, which
// are the row's: a JSON array, [1, time, type, agent, run, node, worker, text] followed by the
// data when e has some. The 1 is the form. The time is its Unix nanoseconds when it is UTC (or
// at offset 0) and within their range, else its RFC 3339 text. The text is null when the data
// gives it (a tool event's, with eventlog.ToolText; a message's, its body), and the data is
// compacted. e must have passed Change.Check.
func EncodeEvent(e eventlog.Event) ([]byte, error) {
	e, err := eventlog.Check(e)
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	b := make([]byte, 0, 96+len(e.Text)+len(e.Data))
	b = append(strconv.AppendInt(append(b, '['), eventForm, 10), ',')
	if _, offset := e.Time.Zone(); offset == 0 && e.Time.Equal(time.Unix(0, e.Time.UnixNano())) {
		b = strconv.AppendInt(b, e.Time.UnixNano(), 10)
	} else {
		t, err := e.Time.MarshalJSON()
		if err != nil {
			return nil, fmt.Errorf("store: %s event: %w", e.Type, err)
		}
		b = append(b, t...)
	}
	for _, s := range []string{string(e.Type), e.Agent, e.Run, e.Node, e.Worker} {
		b = appendString(append(b, ','), s)
	}
	if t, ok := dataText(e.Type, e.Data); ok && t == e.Text {
		b = append(b, ",null"...)
	} else {
		b = appendString(append(b, ','), e.Text)
	}
	if len(e.Data) > 0 {
		b = append(append(b, ','), e.Data...)
	}
	return append(b, ']'), nil
}

// appendString appends s to b as a JSON string.
func appendString(b []byte, s string) []byte {
	for i := range len(s) {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			q, _ := json.Marshal(s) // a string always marshals
			return append(b, q...)
		}
	}
	return append(append(append(b, '"'), s...), '"')
}

// DecodeEvent reads an event EncodeEvent made, numbered seq, with its key ("" for none). It
// reads the events stored before too: a JSON object, as eventlog.Event marshals (with their Seq
// and Key in it, in the oldest).
func DecodeEvent(seq int64, key string, b []byte) (eventlog.Event, error) {
	var e eventlog.Event
	var err error
	if len(b) > 0 && b[0] == '[' {
		e, err = decodeRow(b)
	} else {
		err = json.Unmarshal(b, &e)
	}
	if err != nil {
		return eventlog.Event{}, fmt.Errorf("store: decode event: %w", err)
	}
	e.Seq = seq
	if key != "" {
		e.Key = key
	}
	return e, nil
}

// decodeRow reads an event of the form EncodeEvent makes.
func decodeRow(b []byte) (eventlog.Event, error) {
	var (
		e    eventlog.Event
		form int
		at   json.RawMessage
		text *string // nil: null, the text its data gives
		data = &e.Data
	)
	// Each element decodes into what its pointer points to; a tenth is there to be left nil.
	row := [10]any{&form, &at, &e.Type, &e.Agent, &e.Run, &e.Node, &e.Worker, &text, &data, nil}
	err := json.Unmarshal(b, &row)
	var syntax *json.SyntaxError
	switch {
	case errors.As(err, &syntax):
		return eventlog.Event{}, err
	case form != eventForm:
		return eventlog.Event{}, fmt.Errorf("a form other than %d: %.20s", eventForm, b)
	case err != nil:
		return eventlog.Event{}, err
	case row[7] == nil || row[9] != nil:
		return eventlog.Event{}, fmt.Errorf("not 8 or 9 elements: %.40s", b)
	}
	if ns, err := strconv.ParseInt(string(at), 10, 64); err == nil {
		e.Time = time.Unix(0, ns).UTC()
	} else if err := json.Unmarshal(at, &e.Time); err != nil {
		return eventlog.Event{}, fmt.Errorf("time: %w", err)
	}
	if data == nil {
		e.Data = json.RawMessage("null") // the data was null, not left out
	}
	if text != nil {
		e.Text = *text
	} else {
		e.Text, _ = dataText(e.Type, e.Data)
	}
	return e, nil
}

// dataText returns the text of an event of type t that its data gives, and whether it gives one:
// a tool event's is eventlog.ToolText of its call, a message's its body.
func dataText(t eventlog.Type, data json.RawMessage) (string, bool) {
	if len(data) == 0 {
		return "", false
	}
	var d struct {
		Name   string          `json:"name"`
		Args   json.RawMessage `json:"args"`
		Result string          `json:"result"`
		Body   string          `json:"body"`
	}
	switch t {
	case eventlog.ToolCalled, eventlog.ToolResult, eventlog.MessageSent, eventlog.MessageReceived:
		if json.Unmarshal(data, &d) != nil {
			return "", false
		}
	default:
		return "", false
	}
	switch t {
	case eventlog.ToolCalled:
		return eventlog.ToolText(t, d.Name, string(d.Args)), true
	case eventlog.ToolResult:
		return eventlog.ToolText(t, d.Name, d.Result), true
	}
	return d.Body, true
}
