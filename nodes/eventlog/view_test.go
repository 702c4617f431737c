package eventlog_test

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/nodes/eventlog"
)

// A view has no file: it reads the events before it was made from its record, hands those Put
// to the subscribers, and leaves the numbering to the record.
func TestViewReadsItsRecord(t *testing.T) {
	var (
		mu     sync.Mutex // the record is read by the subscriber's goroutine, as a store would be
		record []eventlog.Event
	)
	add := func(ty eventlog.Type, text string) eventlog.Event {
		mu.Lock()
		defer mu.Unlock()
		e := eventlog.Event{Seq: int64(len(record) + 1), Type: ty, Text: text}
		record = append(record, e)
		return e
	}
	source := func(after int64, limit int) ([]eventlog.Event, error) {
		mu.Lock()
		defer mu.Unlock()
		var out []eventlog.Event
		for _, e := range record {
			if e.Seq > after && (limit <= 0 || len(out) < limit) {
				out = append(out, e)
			}
		}
		return out, nil
	}
	add(eventlog.AgentCreated, "one")
	add(eventlog.AgentStarted, "two")
	l := eventlog.NewView(source, 2)
	defer l.Close()
	assert.Equal(t, int64(2), l.Last())
	assert.Empty(t, l.Path())

	sub, stop := l.Subscribe(0)
	defer stop()
	_, err := l.Put(add(eventlog.NodeCreated, "three"))
	require.NoError(t, err)
	var got []string
	for range 3 {
		got = append(got, (<-sub).Text)
	}
	assert.Equal(t, []string{"one", "two", "three"}, got, "the record's events, then those put")

	page, err := l.Read(1, 1)
	require.NoError(t, err)
	require.Len(t, page, 1)
	assert.Equal(t, "two", page[0].Text)
	_, err = l.Append(eventlog.Event{Type: eventlog.AgentPaused})
	require.ErrorContains(t, err, "Put them")
	assert.Equal(t, int64(3), l.Last())
}

// A view with no subscriber moves its Last on without reading the events; with one, it does not,
// so that the subscriber is given them.
func TestViewAdvancesOnlyUnwatched(t *testing.T) {
	record := []eventlog.Event{{Seq: 1, Type: eventlog.AgentCreated, Text: "one"}, {Seq: 2, Type: eventlog.AgentStarted, Text: "two"}}
	reads := 0
	l := eventlog.NewView(func(after int64, limit int) ([]eventlog.Event, error) {
		reads++
		if after >= int64(len(record)) {
			return nil, nil
		}
		return record[after:], nil
	}, 0)
	defer l.Close()
	require.True(t, l.Advance(2))
	assert.Equal(t, int64(2), l.Last())
	assert.Zero(t, reads)

	sub, stop := l.Subscribe(0)
	defer stop()
	assert.False(t, l.Advance(3), "watched")
	assert.Equal(t, "one", (<-sub).Text)
	assert.Equal(t, "two", (<-sub).Text)
}
