package store_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/nodes/eventlog"
	"github.com/agiraph/agiraph/nodes/store"
	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/runtime"
)

// squadTypes are the types of the events a squad logs: eventlog's and the squad's own.
var squadTypes = append(eventlog.Types(),
	eventlog.RuntimeStarted, eventlog.ModelTurn, eventlog.Retrying, eventlog.Output, eventlog.Error,
	eventlog.TriggerFired, eventlog.CycleCompleted, eventlog.NodeRetried, eventlog.NodeSkipped,
	eventlog.Hooked, eventlog.Budget)

// randomJSON returns a JSON value of up to depth levels, with strings that JSON escapes.
func randomJSON(r *rand.Rand, depth int) any {
	words := []string{"", "a", "n500", "<b> & c", "é ✓ 日本", "line\nbreak\t\"quoted\"", "\u2028", strings.Repeat("x", 300)}
	switch k := r.IntN(7); {
	case depth == 0 || k == 0:
		return words[r.IntN(len(words))]
	case k == 1:
		return r.Int64() - r.Int64()
	case k == 2:
		return r.Float64() * 1e6
	case k == 3:
		return r.IntN(2) == 0
	case k == 4:
		return nil
	case k == 5:
		a := make([]any, r.IntN(4))
		for i := range a {
			a[i] = randomJSON(r, depth-1)
		}
		return a
	default:
		m := map[string]any{}
		for range r.IntN(5) {
			m[words[r.IntN(len(words))]] = randomJSON(r, depth-1)
		}
		return m
	}
}

// toolEvents returns tool and message events as the squad makes them (their text from their
// data), and with texts that their data does not give.
func toolEvents() []eventlog.Event {
	call := func(name, args string) runtime.ToolEvent {
		return runtime.ToolEvent{ID: "call_0_1", Name: name, Args: json.RawMessage(args)}
	}
	result := func(name, res string, isErr bool) runtime.ToolEvent {
		return runtime.ToolEvent{ID: "call_0_1", Name: name, Result: res, IsError: isErr}
	}
	long := `{"content":"` + strings.Repeat("é", 150) + `"}` // clipped in the middle of a rune
	evs := []eventlog.Event{}
	for _, tool := range []runtime.ToolEvent{
		call("write_file", `{"content":"A note on n500.\n","path":"nodes/n500/scratch/note.md"}`),
		call("write_file", long),
		call("publish", ""),
		call("shell", `{"cmd": "ls  -l"}`),    // spaces its data does not keep
		call("shell", `{"cmd":"a < b && c"}`), // characters its data escapes
		call("", `{}`),
	} {
		evs = append(evs, eventlog.New(eventlog.ToolCalled, eventlog.ToolText(eventlog.ToolCalled, tool.Name, string(tool.Args)), tool))
	}
	for _, tool := range []runtime.ToolEvent{
		result("write_file", `wrote 16 bytes to "nodes/n500/scratch/note.md" (new file)`, false),
		result("shell", strings.Repeat("ü", 300), false),
		result("publish", "", false),
	} {
		evs = append(evs, eventlog.New(eventlog.ToolResult, eventlog.ToolText(eventlog.ToolResult, tool.Name, tool.Result), tool))
	}
	msg := map[string]string{"id": "m1", "from": "squad", "to": "coordinator", "body": "Stage 1 is complete.\n- n1 <done>"}
	evs = append(evs,
		eventlog.New(eventlog.MessageSent, msg["body"], msg),
		eventlog.New(eventlog.MessageReceived, msg["body"], msg),
		eventlog.New(eventlog.MessageSent, "", msg),                                          // a text that is not its body
		eventlog.New(eventlog.ToolCalled, "edited", call("write_file", `{"a":1}`)),           // nor its call's
		eventlog.New(eventlog.ToolResult, "", result("write_file", "done", false)),           // an empty text
		eventlog.New(eventlog.ToolResult, "no data", nil),                                    // no data to give it
		eventlog.Event{Type: eventlog.ToolCalled, Text: "x", Data: json.RawMessage(`[1,2]`)}, // data of another shape
		eventlog.New(eventlog.ModelTurn, "", providers.Usage{}),
		eventlog.Event{Type: eventlog.Error, Text: "null data", Data: json.RawMessage(`null`)},
	)
	return evs
}

// Every event a squad logs reads back from its stored form as it was given, Data compacted:
// tool and message events whose text their data gives are stored without it.
func TestEventRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	at := time.Date(2026, 11, 28, 4, 9, 42, 984013898, time.UTC)
	var evs []eventlog.Event
	for i, typ := range squadTypes {
		for j := range 20 {
			e := eventlog.Event{Type: typ, Time: at.Add(time.Duration(i*1000+j) * time.Nanosecond), Run: "20261128-040941"}
			if j%2 == 0 {
				e.Node, e.Worker = fmt.Sprintf("n%d", j), "w5"
			}
			if j%3 == 0 {
				e.Agent = "writer"
			}
			if j%4 != 0 {
				e.Text = fmt.Sprintf("%v", randomJSON(r, 1))
			}
			if j%5 != 0 {
				b, err := json.MarshalIndent(randomJSON(r, 3), "", "  ")
				require.NoError(t, err)
				e.Data = b
			}
			evs = append(evs, e)
		}
	}
	for _, e := range toolEvents() {
		e.Time = at
		evs = append(evs, e)
	}
	for i, e := range evs {
		b, err := store.EncodeEvent(e)
		require.NoError(t, err, "event %d (%s)", i, e.Type)
		want, err := eventlog.Check(e)
		require.NoError(t, err)
		want.Seq, want.Key = int64(i+1), "r/k"
		got, err := store.DecodeEvent(want.Seq, want.Key, b)
		require.NoError(t, err, "event %d (%s): %s", i, e.Type, b)
		assert.Equal(t, want, got, "event %d: stored as %s", i, b)
	}
}

// A tool event as the squad makes it is stored without its text, and its time as a number.
func TestEventStoredCompact(t *testing.T) {
	tool := runtime.ToolEvent{ID: "call_0_1", Name: "write_file", Args: json.RawMessage(`{"content":"A note on n500.\n","path":"nodes/n500/scratch/note.md"}`)}
	e := eventlog.New(eventlog.ToolCalled, eventlog.ToolText(eventlog.ToolCalled, tool.Name, string(tool.Args)), tool)
	e.Time, e.Run, e.Node, e.Worker = time.Date(2026, 11, 28, 4, 9, 42, 984013898, time.UTC), "20261128-040941", "n500", "w5"
	b, err := store.EncodeEvent(e)
	require.NoError(t, err)
	assert.Equal(t, `[1,1795838982984013898,"tool.called","","20261128-040941","n500","w5",null,`+
		`{"id":"call_0_1","name":"write_file","args":{"content":"A note on n500.\n","path":"nodes/n500/scratch/note.md"}}]`, string(b))
}

// Times not in UTC, or beyond what Unix nanoseconds hold, keep their zone and read back the same.
func TestEventTimes(t *testing.T) {
	for _, at := range []time.Time{
		{},
		time.Date(2026, 11, 28, 6, 9, 42, 984013898, time.FixedZone("", 2*60*60)),
		time.Date(2300, 1, 1, 0, 0, 0, 1, time.UTC),
		time.Date(1600, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2026, 11, 28, 4, 9, 42, 0, time.FixedZone("UTC", 0)),
	} {
		b, err := store.EncodeEvent(eventlog.Event{Type: eventlog.AgentStarted, Time: at})
		require.NoError(t, err)
		got, err := store.DecodeEvent(1, "", b)
		require.NoError(t, err, "%s", b)
		assert.True(t, at.Equal(got.Time), "%s read as %s (stored %s)", at, got.Time, b)
		_, want := at.Zone()
		_, off := got.Time.Zone()
		assert.Equal(t, want, off, "%s: zone offset", at)
	}
}

// Events stored before read as they did: the full JSON of an event, and the older one with its
// number and key in it.
func TestEventOldRows(t *testing.T) {
	at := time.Date(2026, 11, 27, 10, 0, 0, 123456789, time.UTC)
	for _, c := range []struct {
		row  string
		seq  int64
		key  string
		want eventlog.Event
	}{{
		row: `{"seq":0,"time":"2026-11-27T10:00:00.123456789Z","type":"tool.called","run":"r1","node":"n1","worker":"w1",` +
			`"text":"write_file {\"path\":\"a.md\"}","data":{"id":"c1","name":"write_file","args":{"path":"a.md"}},"key":"r1/k"}`,
		seq: 7,
		want: eventlog.Event{Seq: 7, Time: at, Type: eventlog.ToolCalled, Run: "r1", Node: "n1", Worker: "w1",
			Text: `write_file {"path":"a.md"}`, Data: json.RawMessage(`{"id":"c1","name":"write_file","args":{"path":"a.md"}}`), Key: "r1/k"},
	}, {
		row: `{"time":"2026-11-27T10:00:00.123456789Z","type":"tool.result","run":"r1","node":"n1","worker":"w1",` +
			`"text":"write_file: wrote 1 byte","data":{"id":"c1","name":"write_file","result":"wrote 1 byte"}}`,
		seq: 8, key: "r1/result",
		want: eventlog.Event{Seq: 8, Time: at, Type: eventlog.ToolResult, Run: "r1", Node: "n1", Worker: "w1",
			Text: "write_file: wrote 1 byte", Data: json.RawMessage(`{"id":"c1","name":"write_file","result":"wrote 1 byte"}`), Key: "r1/result"},
	}, {
		row:  `{"time":"2026-11-27T10:00:00.123456789Z","type":"x.model_turn","agent":"a","run":"r1","data":{"input_tokens":0,"output_tokens":0}}`,
		seq:  9,
		want: eventlog.Event{Seq: 9, Time: at, Type: eventlog.ModelTurn, Agent: "a", Run: "r1", Data: json.RawMessage(`{"input_tokens":0,"output_tokens":0}`)},
	}} {
		got, err := store.DecodeEvent(c.seq, c.key, []byte(c.row))
		require.NoError(t, err)
		assert.Equal(t, c.want, got)
	}
}

// A text that is not UTF-8 reads back as JSON keeps it, each bad byte a U+FFFD, as before; its
// data holds the U+FFFD too, and gives it.
func TestEventTextNotUTF8(t *testing.T) {
	tool := runtime.ToolEvent{ID: "c1", Name: "shell", Result: "bad\xffbyte"}
	for _, text := range []string{"bad\xffbyte", eventlog.ToolText(eventlog.ToolResult, tool.Name, tool.Result)} {
		b, err := store.EncodeEvent(eventlog.New(eventlog.ToolResult, text, tool))
		require.NoError(t, err)
		got, err := store.DecodeEvent(1, "", b)
		require.NoError(t, err)
		assert.Equal(t, strings.ReplaceAll(text, "\xff", "\ufffd"), got.Text)
		assert.JSONEq(t, `{"id":"c1","name":"shell","result":"bad\ufffdbyte"}`, string(got.Data))
	}
}

// A stored event of a form this version does not know, or cut short, is refused, saying so.
func TestEventUnknownForm(t *testing.T) {
	_, err := store.DecodeEvent(1, "", []byte(`[2,0,"agent.started","","","","",""]`))
	assert.ErrorContains(t, err, "a form other than 1: [2,0")
	_, err = store.DecodeEvent(1, "", []byte(`[1,0,"agent.started"`))
	assert.ErrorContains(t, err, "unexpected end of JSON input")
	_, err = store.DecodeEvent(1, "", []byte(`[1,0,"agent.started"]`))
	assert.ErrorContains(t, err, "not 8 or 9 elements")
	_, err = store.DecodeEvent(1, "", []byte(`[1,0,"agent.started","","","","","","",{},""]`))
	assert.ErrorContains(t, err, "not 8 or 9 elements")
}
