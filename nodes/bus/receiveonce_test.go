package bus_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/nodes/bus"
)

// A keyed receive that is repeated — in the same process or after a restart, as a step that
// crashed before saving what it received is run again — gets the same messages, and only
// those; an unkeyed receive afterwards gets what came since.
func TestReceiveOnceAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	b := open(t, dir)
	require.NoError(t, b.Join(bus.Participant{Name: "bob"}))
	_, err := b.Send(ctx, bus.Coordinator, "bob", "one")
	require.NoError(t, err)
	_, err = b.Send(ctx, bus.Coordinator, "bob", "two")
	require.NoError(t, err)

	got, err := b.ReceiveOnce("bob", "a1/turn3")
	require.NoError(t, err)
	assert.Equal(t, []string{"one", "two"}, bodies(got))
	_, err = b.Send(ctx, bus.Coordinator, "bob", "three")
	require.NoError(t, err)
	again, err := b.ReceiveOnce("bob", "a1/turn3")
	require.NoError(t, err)
	assert.Equal(t, got, again, "the same key gets the same messages")
	require.NoError(t, b.Close())

	b = open(t, dir)
	again, err = b.ReceiveOnce("bob", "a1/turn3")
	require.NoError(t, err)
	assert.Equal(t, []string{"one", "two"}, bodies(again), "after a restart too")
	next, err := b.ReceiveOnce("bob", "a1/turn4")
	require.NoError(t, err)
	assert.Equal(t, []string{"three"}, bodies(next))
	assert.Equal(t, 0, b.Pending("bob"))

	empty, err := b.ReceiveOnce("bob", "a1/turn5")
	require.NoError(t, err)
	assert.Empty(t, empty)
	_, err = b.Send(ctx, bus.Coordinator, "bob", "four")
	require.NoError(t, err)
	later, err := b.ReceiveOnce("bob", "a1/turn5")
	require.NoError(t, err)
	assert.Equal(t, []string{"four"}, bodies(later), "a key that found nothing took nothing")

	_, err = b.ReceiveOnce("bob", "")
	assert.Error(t, err)
}

// Events gives back every send and every delivery, also those from before a restart.
func TestEventsAfterRestart(t *testing.T) {
	dir := t.TempDir()
	b := open(t, dir)
	require.NoError(t, b.Join(bus.Participant{Name: "bob"}))
	_, err := b.Send(context.Background(), bus.Coordinator, "bob", "one")
	require.NoError(t, err)
	_, err = b.Send(context.Background(), "bob", bus.Coordinator, "two")
	require.NoError(t, err)
	_, err = b.Receive("bob")
	require.NoError(t, err)
	require.NoError(t, b.Close())

	b = open(t, dir)
	var kinds []string
	for _, e := range b.Events() {
		kinds = append(kinds, e.Kind+" "+e.Message.Body)
	}
	assert.Equal(t, []string{"sent one", "sent two", "received one"}, kinds)
}
