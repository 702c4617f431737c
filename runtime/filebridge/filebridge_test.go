package filebridge_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agiraph/agiraph/runtime"
	"github.com/agiraph/agiraph/runtime/filebridge"
)

// mailbox records what is sent and hands out what is queued; sends to "nobody" fail.
type mailbox struct {
	mu   sync.Mutex
	in   []runtime.Message
	sent []runtime.Message
}

func (m *mailbox) Receive(string) []runtime.Message {
	m.mu.Lock()
	defer m.mu.Unlock()
	in := m.in
	m.in = nil
	return in
}

func (m *mailbox) Send(_ context.Context, _, to, body string) error {
	if to == "nobody" {
		return errors.New("no participant nobody")
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sent = append(m.sent, runtime.Message{To: to, Body: body})
	return nil
}

func setup(t *testing.T) (string, *mailbox, *[]runtime.Event, *filebridge.Bridge) {
	t.Helper()
	dir := t.TempDir()
	mb := &mailbox{}
	var events []runtime.Event
	b, err := filebridge.New(runtime.Assignment{Worker: "ada", Mailbox: mb}, dir, func(e runtime.Event) { events = append(events, e) })
	if err != nil {
		t.Fatal(err)
	}
	return dir, mb, &events, b
}

func appendTo(t *testing.T, path, text string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(text); err != nil {
		t.Fatal(err)
	}
}

func read(t *testing.T, path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}

func TestBlocksAreSentOnce(t *testing.T) {
	dir, mb, events, b := setup(t)
	out := filepath.Join(dir, filebridge.OutboxFile)
	appendTo(t, out, "TO: coordinator\nfirst\n---\nTO: bob\nunfinished")
	b.Step(context.Background(), false)
	b.Step(context.Background(), false)
	if len(mb.sent) != 1 || mb.sent[0].To != "coordinator" || mb.sent[0].Body != "first" {
		t.Fatalf("sent %+v, want the complete block once", mb.sent)
	}
	appendTo(t, out, " still\n---\n\n---\nno recipient\n---\nTO: nobody\nhello\n---\n")
	b.Step(context.Background(), false)
	if len(mb.sent) != 2 || mb.sent[1].To != "bob" || mb.sent[1].Body != "unfinished still" {
		t.Fatalf("sent %+v", mb.sent)
	}
	inbox := read(t, filepath.Join(dir, filebridge.InboxFile))
	if !strings.Contains(inbox, "no \"TO: name\" line") || !strings.Contains(inbox, "your message to nobody was not sent") {
		t.Fatalf("inbox lacks the notes:\n%s", inbox)
	}
	sentEvents := 0
	for _, e := range *events {
		if e.Kind == runtime.MessageSent {
			sentEvents++
		}
	}
	if sentEvents != 2 {
		t.Fatalf("%d message_sent events, want 2", sentEvents)
	}
}

func TestFinalStepSendsAndClosesTheLastBlock(t *testing.T) {
	dir, mb, _, b := setup(t)
	out := filepath.Join(dir, filebridge.OutboxFile)
	appendTo(t, out, "TO: coordinator\ndone, no closing line")
	mb.in = []runtime.Message{{From: "bob", Body: "late"}}
	b.Step(context.Background(), true)
	if len(mb.sent) != 1 || mb.sent[0].Body != "done, no closing line" {
		t.Fatalf("sent %+v", mb.sent)
	}
	if !strings.HasSuffix(read(t, out), "\n---\n") {
		t.Fatalf("the last block was not closed:\n%q", read(t, out))
	}
	if len(mb.in) != 1 {
		t.Fatal("the final step took mail an ended agent cannot read")
	}
	b.Step(context.Background(), true)
	// A later run over the same files sends nothing again.
	again, err := filebridge.New(runtime.Assignment{Worker: "ada", Mailbox: mb}, dir, func(runtime.Event) {})
	if err != nil {
		t.Fatal(err)
	}
	again.Step(context.Background(), true)
	if len(mb.sent) != 1 {
		t.Fatalf("sent %d messages, want 1", len(mb.sent))
	}
}

func TestMailGoesToTheInbox(t *testing.T) {
	dir, mb, events, b := setup(t)
	mb.in = []runtime.Message{{From: "bob", Body: "hi"}, {From: "carol", Body: "ho"}}
	b.Step(context.Background(), false)
	inbox := read(t, filepath.Join(dir, filebridge.InboxFile))
	if !strings.Contains(inbox, "[Message from bob]: hi") || !strings.Contains(inbox, "[Message from carol]: ho") {
		t.Fatalf("inbox:\n%s", inbox)
	}
	if len(*events) != 2 || (*events)[0].Kind != runtime.MessageReceived {
		t.Fatalf("events %+v", *events)
	}
}

func TestRewrittenOutboxIsReadAfresh(t *testing.T) {
	dir, mb, _, b := setup(t)
	out := filepath.Join(dir, filebridge.OutboxFile)
	appendTo(t, out, "TO: a\none\n---\n")
	b.Step(context.Background(), false)
	if err := os.WriteFile(out, []byte("TO: b\ntwo\n---\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	b.Step(context.Background(), false)
	if len(mb.sent) != 2 || mb.sent[1].To != "b" {
		t.Fatalf("sent %+v", mb.sent)
	}
}

func TestWithoutMailboxNothingHappens(t *testing.T) {
	dir := t.TempDir()
	b, err := filebridge.New(runtime.Assignment{}, dir, func(runtime.Event) { t.Fatal("an event without a mailbox") })
	if err != nil {
		t.Fatal(err)
	}
	appendTo(t, filepath.Join(dir, filebridge.OutboxFile), "TO: a\nx\n---\n")
	b.Step(context.Background(), false)
	b.Step(context.Background(), true)
}
