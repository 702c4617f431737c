package eventlog_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/runtime/eventlog"
)

// A keyed event is logged once, whether it is appended again in the same process or after a
// restart; the numbering stays contiguous.
func TestKeyedEventOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	l, err := eventlog.Open(path)
	require.NoError(t, err)
	first, err := l.Append(eventlog.Event{Type: eventlog.NodeCompleted, Node: "n1", Key: "a1/completed"})
	require.NoError(t, err)
	again, err := l.Append(eventlog.Event{Type: eventlog.NodeCompleted, Node: "n1", Key: "a1/completed"})
	require.NoError(t, err)
	assert.Equal(t, first.Seq, again.Seq)
	_, err = l.Append(eventlog.Event{Type: eventlog.NodeStarted, Node: "n2"})
	require.NoError(t, err)
	require.NoError(t, l.Close())

	l, err = eventlog.Open(path)
	require.NoError(t, err)
	defer l.Close()
	again, err = l.Append(eventlog.Event{Type: eventlog.NodeCompleted, Node: "n1", Key: "a1/completed"})
	require.NoError(t, err)
	assert.Equal(t, first.Seq, again.Seq)
	next, err := l.Append(eventlog.Event{Type: eventlog.NodeCompleted, Node: "n2", Key: "a2/completed"})
	require.NoError(t, err)
	assert.Equal(t, int64(3), next.Seq)
	evs, err := l.Read(0, 0)
	require.NoError(t, err)
	require.Len(t, evs, 3)
	assert.Equal(t, "a1/completed", evs[0].Key)
}
