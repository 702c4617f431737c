package bus_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/nodes/bus"
)

// SendAll sends a batch in order, as Send and SendOnce would one by one (keys deduplicated
// within the batch and against earlier sends), and the batch survives a restart; a batch with
// one message refused sends nothing — no copy queued, no line in the log, no markdown file.
func TestSendAll(t *testing.T) {
	dir := t.TempDir()
	b := open(t, dir, bus.WithClock(clock()))
	join(t, b, alice, bob, carol)
	ctx := context.Background()
	first, err := b.SendOnce(ctx, "early", "alice", "coordinator", "before the batch")
	require.NoError(t, err)

	sent, err := b.SendAll(ctx, []bus.Message{
		{Key: "k1", From: "alice", To: "coordinator", Body: "one"},
		{From: "Bob", To: "researcher", Body: "to my role"},
		{Key: "k1", From: "alice", To: "coordinator", Body: "one"},
		{Key: "early", From: "alice", To: "coordinator", Body: "before the batch"},
		{From: "carol", To: bus.Everyone, Body: "all"},
	})
	require.NoError(t, err)
	require.Len(t, sent, 5)
	assert.Equal(t, []string{"coordinator"}, recipients(sent[0]))
	assert.Equal(t, []string{"alice"}, recipients(sent[1]))
	assert.Equal(t, sent[0], sent[2], "a key repeated in the batch sends once")
	assert.Equal(t, first, sent[3], "a key sent before is not sent again")
	assert.Equal(t, []string{"alice", "Bob"}, recipients(sent[4])[1:])

	got, err := b.Receive("coordinator")
	require.NoError(t, err)
	assert.Equal(t, []string{"before the batch", "one", "all"}, bodies(got))

	refused := []bus.Message{
		{Key: "k2", From: "alice", To: "coordinator", Body: "two"},
		{From: "alice", To: "nobody", Body: "lost"},
	}
	files := func() int {
		entries, err := os.ReadDir(dir)
		require.NoError(t, err)
		n := 0
		for _, e := range entries {
			if filepath.Ext(e.Name()) == ".md" {
				n++
			}
		}
		return n
	}
	before := files()
	_, err = b.SendAll(ctx, refused)
	require.ErrorIs(t, err, bus.ErrUnknownRecipient)
	assert.Contains(t, err.Error(), "nobody")
	assert.Zero(t, b.Pending("coordinator"), "nothing of a refused batch is queued")
	assert.Equal(t, before, files(), "nor written")
	require.NoError(t, b.Close())

	b = open(t, dir)
	msgs, err := b.Messages()
	require.NoError(t, err)
	assert.Len(t, msgs, 1+1+1+3, "the batch, and nothing of the refused one, after a restart")
	again, err := b.SendOnce(ctx, "k1", "alice", "coordinator", "one")
	require.NoError(t, err)
	assert.Equal(t, sent[0], again, "the batch's keys are kept")
	_, err = b.SendOnce(ctx, "k2", "alice", "coordinator", "two")
	require.NoError(t, err)
	assert.Equal(t, 1, b.Pending("coordinator"), "the refused batch's key was not taken")
}
