package bus_test

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/nodes/bus"
)

// memJournal keeps records in memory; fail makes Append fail.
type memJournal struct {
	recs [][]byte
	fail error
}

func (j *memJournal) Records() ([][]byte, error) { return slices.Clone(j.recs), nil }
func (j *memJournal) Append(recs [][]byte) error {
	if j.fail != nil {
		return j.fail
	}
	for _, r := range recs {
		j.recs = append(j.recs, slices.Clone(r))
	}
	return nil
}
func (j *memJournal) Close() error { return nil }

// A bus with a journal of its own keeps its records there, not in a log file, and a bus opened
// on the journal again is as the first was; a journal that refuses a write refuses the send,
// which sends nothing.
func TestJournalKeepsTheRecords(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	j := &memJournal{}
	b, err := bus.Open(dir, bus.WithJournal(j))
	require.NoError(t, err)
	require.NoError(t, b.Join(bus.Participant{Name: "alice", Role: "researcher"}))
	_, err = b.Send(ctx, "alice", bus.Coordinator, "first")
	require.NoError(t, err)
	_, err = b.SendAll(ctx, []bus.Message{{From: bus.Coordinator, To: "alice", Body: "second"}, {From: bus.Coordinator, To: "alice", Body: "third"}})
	require.NoError(t, err)
	got, err := b.Receive(bus.Coordinator)
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.NoFileExists(t, filepath.Join(dir, bus.LogFile))
	assert.Len(t, j.recs, 5, "a join, three sends, a receipt")

	refused := errors.New("the store is full")
	j.fail = refused
	_, err = b.Send(ctx, "alice", bus.Coordinator, "lost")
	require.ErrorIs(t, err, refused)
	_, err = b.Receive("alice")
	require.ErrorIs(t, err, refused)
	assert.Equal(t, 2, b.Pending("alice"), "a receipt not kept delivers nothing")
	require.NoError(t, b.Close())

	j.fail = nil
	again, err := bus.Open(dir, bus.WithJournal(j))
	require.NoError(t, err)
	defer again.Close()
	msgs, err := again.Messages()
	require.NoError(t, err)
	var bodies []string
	for _, m := range msgs {
		bodies = append(bodies, m.Body)
	}
	assert.Equal(t, []string{"first", "second", "third"}, bodies, "nothing of the refused send")
	assert.Equal(t, 0, again.Pending(bus.Coordinator), "received before")
	assert.Equal(t, 2, again.Pending("alice"))
}
