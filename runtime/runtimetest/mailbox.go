package runtimetest

import (
	"context"
	"slices"
	"sync"

	"github.com/agiraph/agiraph/runtime"
)

// Mailbox is a runtime.Mailbox for tests: the test delivers messages to the worker with Deliver
// and reads what the worker sent with Sent. Its zero value is an empty mailbox; it is safe for
// concurrent use.
//
// Keys work as they do on the message bus (nodes/bus): Receive with a non-empty key that an
// earlier call received messages with returns those messages again, without taking more (a key
// that found nothing is not bound to anything); Send with the key of an earlier successful send
// sends nothing.
type Mailbox struct {
	mu       sync.Mutex
	queue    []runtime.Message
	taken    map[string][]runtime.Message // receive key → what it received
	sent     []runtime.Message
	sentKeys map[string]bool
	onSend   func(runtime.Message) error
}

var _ runtime.Mailbox = (*Mailbox)(nil)

// Deliver queues a message from from for the worker; the next Receive returns it.
func (m *Mailbox) Deliver(from, body string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.queue = append(m.queue, runtime.Message{From: from, Body: body})
}

// Receive returns the messages delivered since the last Receive, oldest first, and removes them
// from the queue; a non-empty key that received messages before returns those again.
func (m *Mailbox) Receive(key string) []runtime.Message {
	m.mu.Lock()
	defer m.mu.Unlock()
	if got, ok := m.taken[key]; ok && key != "" {
		return slices.Clone(got)
	}
	msgs := m.queue
	m.queue = nil
	if key != "" && len(msgs) > 0 {
		if m.taken == nil {
			m.taken = map[string][]runtime.Message{}
		}
		m.taken[key] = slices.Clone(msgs)
	}
	return msgs
}

// Send records a message from the worker, with its recipient and body. A non-empty key that an
// earlier send succeeded with sends nothing. It fails with the context's error when ctx is
// done, and with the error of the OnSend function when that refuses the message.
func (m *Mailbox) Send(ctx context.Context, key, to, body string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	msg := runtime.Message{To: to, Body: body}
	m.mu.Lock()
	if key != "" && m.sentKeys[key] {
		m.mu.Unlock()
		return nil
	}
	onSend := m.onSend
	m.mu.Unlock()
	if onSend != nil { // outside the lock: it may Deliver a reply
		if err := onSend(msg); err != nil {
			return err
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if key != "" {
		if m.sentKeys[key] { // a concurrent send with the same key got there first
			return nil
		}
		if m.sentKeys == nil {
			m.sentKeys = map[string]bool{}
		}
		m.sentKeys[key] = true
	}
	m.sent = append(m.sent, msg)
	return nil
}

// OnSend sets a function every Send calls with the message before recording it: it may refuse
// the message by returning an error (Send returns it and records nothing) or answer it by
// calling Deliver. Nil removes it.
func (m *Mailbox) OnSend(fn func(runtime.Message) error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.onSend = fn
}

// Sent returns the messages sent so far, in the order they were sent; each has To and Body set.
func (m *Mailbox) Sent() []runtime.Message {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.sent)
}

// Pending returns the messages delivered and not yet received, oldest first.
func (m *Mailbox) Pending() []runtime.Message {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.queue)
}
