package runtimetest_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/runtime"
	"github.com/agiraph/agiraph/runtime/runtimetest"
)

func TestReceiveDrainsTheQueue(t *testing.T) {
	var mb runtimetest.Mailbox
	assert.Empty(t, mb.Receive(""))
	mb.Deliver("bob", "one")
	mb.Deliver("carol", "two")
	assert.Equal(t, []runtime.Message{{From: "bob", Body: "one"}, {From: "carol", Body: "two"}}, mb.Pending())
	assert.Equal(t, []runtime.Message{{From: "bob", Body: "one"}, {From: "carol", Body: "two"}}, mb.Receive(""))
	assert.Empty(t, mb.Pending())
	assert.Empty(t, mb.Receive(""))
}

// A key that received messages returns them again and takes no more; a key that found nothing
// is not bound, as on the bus.
func TestReceiveWithAKey(t *testing.T) {
	var mb runtimetest.Mailbox
	assert.Empty(t, mb.Receive("step1"))
	mb.Deliver("bob", "one")
	assert.Equal(t, []runtime.Message{{From: "bob", Body: "one"}}, mb.Receive("step1"), "a key that found nothing before")
	mb.Deliver("bob", "two")
	got := mb.Receive("step1")
	assert.Equal(t, []runtime.Message{{From: "bob", Body: "one"}}, got, "the same key again")
	got[0].Body = "changed"
	assert.Equal(t, []runtime.Message{{From: "bob", Body: "one"}}, mb.Receive("step1"), "what a key received, after its caller changed its copy")
	assert.Equal(t, []runtime.Message{{From: "bob", Body: "two"}}, mb.Pending())
	assert.Equal(t, []runtime.Message{{From: "bob", Body: "two"}}, mb.Receive("step2"))
}

func TestSendOncePerKey(t *testing.T) {
	var mb runtimetest.Mailbox
	ctx := context.Background()
	require.NoError(t, mb.Send(ctx, "", "bob", "hi"))
	require.NoError(t, mb.Send(ctx, "", "bob", "hi"))
	require.NoError(t, mb.Send(ctx, "k1", "carol", "once"))
	require.NoError(t, mb.Send(ctx, "k1", "carol", "once"))
	assert.Equal(t, []runtime.Message{{To: "bob", Body: "hi"}, {To: "bob", Body: "hi"}, {To: "carol", Body: "once"}}, mb.Sent())

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	assert.ErrorIs(t, mb.Send(cancelled, "", "bob", "late"), context.Canceled)
	assert.Len(t, mb.Sent(), 3)
}

// OnSend refuses messages (a refused key may be sent again) or answers them.
func TestOnSend(t *testing.T) {
	var mb runtimetest.Mailbox
	ctx := context.Background()
	refused := errors.New("no participant nobody")
	mb.OnSend(func(m runtime.Message) error {
		if m.To == "nobody" {
			return refused
		}
		mb.Deliver(m.To, "re: "+m.Body)
		return nil
	})
	assert.ErrorIs(t, mb.Send(ctx, "k", "nobody", "hello"), refused)
	require.NoError(t, mb.Send(ctx, "k", "coordinator", "what now?"))
	assert.Equal(t, []runtime.Message{{To: "coordinator", Body: "what now?"}}, mb.Sent())
	assert.Equal(t, []runtime.Message{{From: "coordinator", Body: "re: what now?"}}, mb.Receive(""))
	mb.OnSend(nil)
	require.NoError(t, mb.Send(ctx, "", "nobody", "hello"))
	assert.Len(t, mb.Sent(), 2)
}

func TestMailboxConcurrentUse(t *testing.T) {
	var mb runtimetest.Mailbox
	const n = 50
	var wg sync.WaitGroup
	var mu sync.Mutex
	var received []runtime.Message
	for i := range n {
		wg.Go(func() {
			mb.Deliver("bob", fmt.Sprint(i))
			_ = mb.Send(context.Background(), fmt.Sprint("k", i%10), "bob", fmt.Sprint(i))
			got := mb.Receive("")
			mu.Lock()
			received = append(received, got...)
			mu.Unlock()
		})
	}
	wg.Wait()
	received = append(received, mb.Receive("")...)
	assert.Len(t, received, n, "every delivered message received once")
	assert.Len(t, mb.Sent(), 10, "one send per key")
}
