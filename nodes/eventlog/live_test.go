package eventlog_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/nodes/eventlog"
)

// A live event reaches the subscribers listening, in its place among the logged events, with
// Seq 0 and a time; it is not written, not numbered, not read back, and a later subscriber never
// sees it. Append refuses a text.delta.
func TestBroadcastIsLiveOnly(t *testing.T) {
	now, start := clock()
	path := filepath.Join(t.TempDir(), "events.jsonl")
	l := open(t, path, eventlog.WithClock(now))
	defer l.Close()
	appendN(t, l, 2)
	early, stopEarly := l.Subscribe(0)
	defer stopEarly()
	ahead, stopAhead := l.Subscribe(3) // after the next logged event: live events all the same
	defer stopAhead()

	l.Broadcast(eventlog.Event{Seq: 42, Type: eventlog.TextDelta, Node: "n1", Worker: "alice", Text: "Hel"})
	appendN(t, l, 1)
	l.Broadcast(eventlog.Event{Type: eventlog.TextDelta, Node: "n1", Worker: "alice", Text: "lo."})
	appendN(t, l, 1)

	got := receive(t, early, 6)
	var order []string
	for _, e := range got {
		order = append(order, string(e.Type)+" "+e.Text)
	}
	assert.Equal(t, []string{"node.completed event 0", "node.completed event 1", "text.delta Hel", "node.completed event 0", "text.delta lo.", "node.completed event 0"}, order)
	assert.Equal(t, []int64{1, 2, 0, 3, 0, 4}, []int64{got[0].Seq, got[1].Seq, got[2].Seq, got[3].Seq, got[4].Seq, got[5].Seq})
	assert.Equal(t, "alice", got[2].Worker)
	assert.Equal(t, "n1", got[2].Node)
	assert.True(t, got[2].Time.After(start), "a live event gets the clock's time")

	fromAhead := receive(t, ahead, 3)
	assert.Equal(t, []string{"Hel", "lo.", "event 0"}, []string{fromAhead[0].Text, fromAhead[1].Text, fromAhead[2].Text})
	assert.Equal(t, int64(4), fromAhead[2].Seq)

	assert.Equal(t, []int64{1, 2, 3, 4}, fileSeqs(t, path))
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.NotContains(t, string(b), "text.delta")
	read, err := l.Read(0, 0)
	require.NoError(t, err)
	assert.Len(t, read, 4)
	assert.Equal(t, int64(4), l.Last())
	later, stopLater := l.Subscribe(0)
	checkSeqs(t, "a later subscriber", receive(t, later, 4), 1)
	stopLater()

	_, err = l.Append(eventlog.Event{Type: eventlog.TextDelta, Text: "x"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "live only")
	assert.Equal(t, int64(4), l.Last())
}

// A subscriber that does not read keeps every logged event queued, but stops taking live ones
// once 4,096 events wait; when it has read them, it gets live events again.
func TestBroadcastSkipsASubscriberFarBehind(t *testing.T) {
	l := open(t, filepath.Join(t.TempDir(), "events.jsonl"))
	defer l.Close()
	ch, stop := l.Subscribe(0)
	defer stop()
	const n = 5000
	appendN(t, l, n)
	l.Broadcast(eventlog.Event{Type: eventlog.TextDelta, Text: "missed"})
	checkSeqs(t, "the logged events", receive(t, ch, n), 1)
	l.Broadcast(eventlog.Event{Type: eventlog.TextDelta, Text: "seen"})
	appendN(t, l, 1)
	got := receive(t, ch, 2)
	assert.Equal(t, "seen", got[0].Text)
	assert.Equal(t, int64(n+1), got[1].Seq)
}

// On a closed log Broadcast does nothing.
func TestBroadcastOnAClosedLog(t *testing.T) {
	l := open(t, filepath.Join(t.TempDir(), "events.jsonl"))
	ch, _ := l.Subscribe(0)
	require.NoError(t, l.Close())
	l.Broadcast(eventlog.Event{Type: eventlog.TextDelta, Text: "x"})
	waitClosed(t, ch)
}

// Closing the log ends a subscription once the subscriber has everything appended or broadcast
// while it listened: a live event, which no later Read or Subscribe gives, is not lost to a
// subscriber that reads behind. A subscriber still reading the log's earlier events from the
// file stops there.
func TestCloseDeliversWhatWasQueued(t *testing.T) {
	l := open(t, filepath.Join(t.TempDir(), "events.jsonl"))
	appendN(t, l, 1)
	caughtUp, stopCaughtUp := l.Subscribe(0)
	defer stopCaughtUp()
	checkSeqs(t, "the log's earlier events", receive(t, caughtUp, 1), 1)
	catchingUp, stopCatchingUp := l.Subscribe(0) // event 1 not read yet
	defer stopCatchingUp()
	appendN(t, l, 1)
	l.Broadcast(eventlog.Event{Type: eventlog.TextDelta, Worker: "alice", Text: "Hel"})
	l.Broadcast(eventlog.Event{Type: eventlog.TextDelta, Worker: "alice", Text: "lo."})
	appendN(t, l, 1)
	require.NoError(t, l.Close())

	all := func(ch <-chan eventlog.Event) []string {
		got := []string{}
		for e := range ch {
			got = append(got, fmt.Sprintf("%d %s", e.Seq, e.Text))
		}
		return got
	}
	assert.Equal(t, []string{"2 event 0", "0 Hel", "0 lo.", "3 event 0"}, all(caughtUp))
	assert.Empty(t, all(catchingUp))
}
