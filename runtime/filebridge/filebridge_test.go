package filebridge_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/runtime"
	"github.com/agiraph/agiraph/runtime/filebridge"
	"github.com/agiraph/agiraph/runtime/runtimetest"
)

// setup returns a bridge over a temporary folder and a mailbox whose sends to "nobody" fail.
func setup(t *testing.T) (string, *runtimetest.Mailbox, *[]runtime.Event, *filebridge.Bridge) {
	t.Helper()
	dir := t.TempDir()
	mb := &runtimetest.Mailbox{}
	mb.OnSend(func(m runtime.Message) error {
		if m.To == "nobody" {
			return errors.New("no participant nobody")
		}
		return nil
	})
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
	require.Equal(t, []runtime.Message{{To: "coordinator", Body: "first"}}, mb.Sent(), "the complete block, once")
	appendTo(t, out, " still\n---\n\n---\nno recipient\n---\nTO: nobody\nhello\n---\n")
	b.Step(context.Background(), false)
	require.Equal(t, []runtime.Message{{To: "coordinator", Body: "first"}, {To: "bob", Body: "unfinished still"}}, mb.Sent())
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
	mb.Deliver("bob", "late")
	b.Step(context.Background(), true)
	require.Equal(t, []runtime.Message{{To: "coordinator", Body: "done, no closing line"}}, mb.Sent())
	if !strings.HasSuffix(read(t, out), "\n---\n") {
		t.Fatalf("the last block was not closed:\n%q", read(t, out))
	}
	if len(mb.Pending()) != 1 {
		t.Fatal("the final step took mail an ended agent cannot read")
	}
	b.Step(context.Background(), true)
	// A later run over the same files sends nothing again.
	again, err := filebridge.New(runtime.Assignment{Worker: "ada", Mailbox: mb}, dir, func(runtime.Event) {})
	if err != nil {
		t.Fatal(err)
	}
	again.Step(context.Background(), true)
	require.Len(t, mb.Sent(), 1, "messages sent")
}

func TestMailGoesToTheInbox(t *testing.T) {
	dir, mb, events, b := setup(t)
	mb.Deliver("bob", "hi")
	mb.Deliver("carol", "ho")
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
	require.Equal(t, []runtime.Message{{To: "a", Body: "one"}, {To: "b", Body: "two"}}, mb.Sent())
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
