package eventlog_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/nodes/eventlog"
)

// A log that is a view of another record of the events writes them with the Seqs they come
// with, gaps and all, refuses one that does not follow the last, and hands them to subscribers.
func TestPutKeepsTheGivenSeq(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	l, err := eventlog.Open(path)
	require.NoError(t, err)
	defer l.Close()
	sub, stop := l.Subscribe(0)
	defer stop()

	_, err = l.Put(eventlog.Event{Seq: 3, Type: eventlog.AgentStarted})
	require.NoError(t, err)
	_, err = l.Put(eventlog.Event{Seq: 7, Type: eventlog.NodeCreated, Data: []byte(`{ "a": 1 }`)})
	require.NoError(t, err)
	_, err = l.Put(eventlog.Event{Seq: 7, Type: eventlog.NodeCreated})
	require.ErrorContains(t, err, "event 7 does not follow 7")
	_, err = l.Put(eventlog.Event{Seq: 8, Type: "nonsense"})
	require.ErrorIs(t, err, eventlog.ErrUnknownType)
	assert.Equal(t, int64(7), l.Last())

	for _, want := range []int64{3, 7} {
		e := <-sub
		assert.Equal(t, want, e.Seq)
	}
	require.NoError(t, l.Close())
	again, err := eventlog.Open(path)
	require.NoError(t, err)
	defer again.Close()
	evs, err := again.Read(0, 0)
	require.NoError(t, err)
	require.Len(t, evs, 2)
	assert.Equal(t, `{"a":1}`, string(evs[1].Data))
	assert.Equal(t, int64(7), again.Last())
}
