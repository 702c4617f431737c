package bus_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agiraph/agiraph/internal/leaktest"
	"github.com/agiraph/agiraph/nodes/bus"
	"github.com/agiraph/agiraph/runtime"
)

func TestMain(m *testing.M) {
	leaktest.VerifyTestMain(m)
}

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// clock returns a clock that ticks a second per call.
func clock() func() time.Time {
	var mu sync.Mutex
	t := t0
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		t = t.Add(time.Second)
		return t
	}
}

func open(t *testing.T, dir string, opts ...bus.Option) *bus.Bus {
	t.Helper()
	b, err := bus.Open(dir, opts...)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func join(t *testing.T, b *bus.Bus, ps ...bus.Participant) {
	t.Helper()
	for _, p := range ps {
		if err := b.Join(p); err != nil {
			t.Fatalf("Join(%v): %v", p, err)
		}
	}
}

func send(t *testing.T, b *bus.Bus, from, to, body string) []runtime.Message {
	t.Helper()
	msgs, err := b.Send(context.Background(), from, to, body)
	if err != nil {
		t.Fatalf("Send(%s → %s): %v", from, to, err)
	}
	return msgs
}

func recipients(msgs []runtime.Message) []string {
	var out []string
	for _, m := range msgs {
		out = append(out, m.To)
	}
	return out
}

func bodies(msgs []runtime.Message) []string {
	var out []string
	for _, m := range msgs {
		out = append(out, m.Body)
	}
	return out
}

var (
	alice = bus.Participant{Name: "alice", Role: "researcher"}
	bob   = bus.Participant{Name: "Bob", Role: "researcher"}
	carol = bus.Participant{Name: "carol", Role: "writer"}
)

func TestRouting(t *testing.T) {
	b := open(t, t.TempDir(), bus.WithClock(clock()))
	join(t, b, alice, bob, carol)

	tests := []struct {
		from, to string
		want     []string
	}{
		{"alice", "bob", []string{"Bob"}},
		{"alice", "BOB", []string{"Bob"}},
		{"ALICE", "carol", []string{"carol"}},
		{"carol", "researcher", []string{"alice", "Bob"}},
		{"carol", "Researcher", []string{"alice", "Bob"}},
		{"alice", "researcher", []string{"Bob"}}, // not to the sender
		{"alice", "*", []string{"coordinator", "Bob", "carol"}},
		{"human", "*", []string{"coordinator", "alice", "Bob", "carol"}},
		{"coordinator", "*", []string{"alice", "Bob", "carol"}},
		{"bob", "human", []string{"human"}},
		{"bob", "Human", []string{"human"}},
		{"human", "coordinator", []string{"coordinator"}},
		{"coordinator", "writer", []string{"carol"}},
	}
	for _, tc := range tests {
		msgs := send(t, b, tc.from, tc.to, "hi from "+tc.from)
		if got := recipients(msgs); !slices.Equal(got, tc.want) {
			t.Errorf("%s → %s: recipients %v, want %v", tc.from, tc.to, got, tc.want)
		}
		for _, m := range msgs {
			if m.Body != "hi from "+tc.from || m.ID == "" || !m.Time.After(t0) {
				t.Errorf("%s → %s: message %+v", tc.from, tc.to, m)
			}
			if !strings.EqualFold(m.From, tc.from) {
				t.Errorf("%s → %s: From %q", tc.from, tc.to, m.From)
			}
		}
	}
	// Every copy has its own ID, in sequence.
	all, err := b.Messages()
	if err != nil {
		t.Fatal(err)
	}
	for i, m := range all {
		if want := fmt.Sprintf("m%04d", i+1); m.ID != want {
			t.Fatalf("message %d has ID %q, want %q", i, m.ID, want)
		}
	}
	// From is the sender's name as it joined.
	if m := send(t, b, "bob", "alice", "x"); m[0].From != "Bob" {
		t.Errorf("From = %q, want Bob", m[0].From)
	}
}

func TestSendErrors(t *testing.T) {
	dir := t.TempDir()
	b := open(t, dir)
	join(t, b, alice, bob, carol, bus.Participant{Name: "dave", Role: "editor"})
	ctx := context.Background()

	_, err := b.Send(ctx, "alice", "zed", "hello")
	if !errors.Is(err, bus.ErrUnknownRecipient) {
		t.Fatalf("unknown recipient: err = %v", err)
	}
	for _, s := range []string{`"zed"`, "alice", "Bob", "carol", "coordinator", "human", "researcher", "writer", "editor"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not mention %s", err, s)
		}
	}
	if _, err := b.Send(ctx, "alice", "bob", "  \n"); !errors.Is(err, bus.ErrEmptyBody) {
		t.Errorf("empty body: err = %v", err)
	}
	if _, err := b.Send(ctx, "alice", "ALICE", "me"); !errors.Is(err, bus.ErrSelf) {
		t.Errorf("self: err = %v", err)
	}
	if _, err := b.Send(ctx, "dave", "editor", "me"); !errors.Is(err, bus.ErrSelf) {
		t.Errorf("self by role: err = %v", err)
	}
	if _, err := b.Send(ctx, "", "*", "hi"); !errors.Is(err, bus.ErrUnknownSender) {
		t.Errorf("empty sender: err = %v", err)
	}
	if _, err := b.Send(ctx, "alice", "", "hi"); !errors.Is(err, bus.ErrUnknownRecipient) {
		t.Errorf("empty recipient: err = %v", err)
	}
	if _, err := b.Send(ctx, "mallory", "bob", "hi"); !errors.Is(err, bus.ErrUnknownSender) {
		t.Errorf("unknown sender: err = %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := b.Send(cctx, "alice", "bob", "hi"); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: err = %v", err)
	}
	if err := b.Mailbox("alice").Send(ctx, "", "nobody", "hi"); !errors.Is(err, bus.ErrUnknownRecipient) {
		t.Errorf("Mailbox.Send: err = %v", err)
	}
	// Nothing was sent.
	if all, _ := b.Messages(); len(all) != 0 {
		t.Errorf("failed sends left messages: %v", all)
	}
	if n := b.Pending("bob"); n != 0 {
		t.Errorf("Pending(bob) = %d", n)
	}
	if files, _ := filepath.Glob(filepath.Join(dir, "*.md")); len(files) != 0 {
		t.Errorf("failed sends left files: %v", files)
	}
}

func TestJoin(t *testing.T) {
	b := open(t, t.TempDir())
	for _, p := range []bus.Participant{{Name: ""}, {Name: "  "}, {Name: "*"}, {Name: "x\ny"}, {Name: "x", Role: "*"}} {
		if err := b.Join(p); !errors.Is(err, bus.ErrInvalidName) {
			t.Errorf("Join(%+v): err = %v", p, err)
		}
	}
	join(t, b, alice, bob)
	join(t, b, bus.Participant{Name: "ALICE", Role: "other"}, bus.Participant{Name: "Human"}, bus.Participant{Name: "coordinator"})
	want := []bus.Participant{
		{Name: "coordinator", Role: "coordinator"},
		{Name: "human", Role: "human"},
		alice, bob,
	}
	if got := b.Participants(); !slices.Equal(got, want) {
		t.Errorf("Participants = %v, want %v", got, want)
	}
}

func TestReceive(t *testing.T) {
	b := open(t, t.TempDir())
	join(t, b, alice, bob, carol)
	bobBox := b.Mailbox("bob")

	if got := bobBox.Receive(""); len(got) != 0 {
		t.Fatalf("empty Receive = %v", got)
	}
	for i := range 5 {
		send(t, b, "alice", "bob", fmt.Sprint("a", i))
		if i == 2 {
			send(t, b, "carol", "researcher", "c")
		}
	}
	if err := b.Mailbox("Carol").Send(context.Background(), "", "Bob", "c2"); err != nil {
		t.Fatal(err)
	}
	if n := b.Pending("BOB"); n != 7 {
		t.Errorf("Pending(bob) = %d, want 7", n)
	}
	if n := b.Pending("alice"); n != 1 {
		t.Errorf("Pending(alice) = %d, want 1", n)
	}
	if n := b.Pending("nobody"); n != 0 {
		t.Errorf("Pending(nobody) = %d", n)
	}
	got := bobBox.Receive("")
	if want := []string{"a0", "a1", "a2", "c", "a3", "a4", "c2"}; !slices.Equal(bodies(got), want) {
		t.Errorf("bob received %v, want %v", bodies(got), want)
	}
	if again := bobBox.Receive(""); len(again) != 0 {
		t.Errorf("second Receive = %v, want nothing", again)
	}
	if n := b.Pending("bob"); n != 0 {
		t.Errorf("Pending(bob) after Receive = %d", n)
	}
	if n := b.Pending("alice"); n != 1 {
		t.Errorf("Pending(alice) after bob's Receive = %d, want 1", n)
	}
	send(t, b, "alice", "bob", "later")
	if got := bobBox.Receive(""); !slices.Equal(bodies(got), []string{"later"}) {
		t.Errorf("after more: %v", bodies(got))
	}
}

func TestNotify(t *testing.T) {
	b := open(t, t.TempDir())
	join(t, b, alice, bob)
	select {
	case <-b.Notify():
		t.Fatal("Notify fired before any message")
	default:
	}
	send(t, b, "alice", "bob", "1")
	send(t, b, "alice", "bob", "2")
	select {
	case <-b.Notify():
	default:
		t.Fatal("Notify did not fire after a send")
	}
	// Coalesced: two sends, one signal.
	select {
	case <-b.Notify():
		t.Fatal("Notify fired twice for two sends before a read")
	default:
	}
	b.Mailbox("bob").Receive("")
	select {
	case <-b.Notify():
		t.Fatal("Notify fired on Receive")
	default:
	}
}

func TestObserver(t *testing.T) {
	var mu sync.Mutex
	var events []string
	b := open(t, t.TempDir(), bus.WithObserver(func(e bus.Event) {
		mu.Lock()
		defer mu.Unlock()
		events = append(events, fmt.Sprintf("%s %s %s→%s %s", e.Kind, e.Message.ID, e.Message.From, e.Message.To, e.Message.Body))
	}))
	join(t, b, alice, bob, carol)
	send(t, b, "carol", "researcher", "hello")
	b.Mailbox("bob").Receive("")
	send(t, b, "alice", "bob", "again")
	b.Mailbox("bob").Receive("")
	b.Mailbox("alice").Receive("")
	b.Mailbox("alice").Receive("") // nothing: no event
	want := []string{
		"sent m0001 carol→alice hello",
		"sent m0002 carol→Bob hello",
		"received m0002 carol→Bob hello",
		"sent m0003 alice→Bob again",
		"received m0003 alice→Bob again",
		"received m0001 carol→alice hello",
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(events, want) {
		t.Errorf("events:\n%s\nwant:\n%s", strings.Join(events, "\n"), strings.Join(want, "\n"))
	}
}

// An observer may call back into the bus without deadlocking, and its events still arrive.
func TestObserverReentrant(t *testing.T) {
	var b *bus.Bus
	var mu sync.Mutex
	var kinds []string
	b = open(t, t.TempDir(), bus.WithObserver(func(e bus.Event) {
		mu.Lock()
		kinds = append(kinds, e.Kind+" "+e.Message.Body)
		mu.Unlock()
		if e.Kind == bus.Sent && e.Message.To == "Bob" && e.Message.Body == "ping" {
			if _, err := b.Send(context.Background(), "coordinator", "human", "bob got pinged"); err != nil {
				t.Errorf("Send from observer: %v", err)
			}
		}
	}))
	join(t, b, alice, bob)
	send(t, b, "alice", "bob", "ping")
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"sent ping", "sent bob got pinged"}; !slices.Equal(kinds, want) {
		t.Errorf("events %v, want %v", kinds, want)
	}
	if n := b.Pending("human"); n != 1 {
		t.Errorf("Pending(human) = %d", n)
	}
}

func TestMarkdown(t *testing.T) {
	dir := t.TempDir()
	b := open(t, dir, bus.WithClock(clock()))
	join(t, b, alice, bob, carol, bus.Participant{Name: "Dr. Who/2", Role: "time lord"})
	send(t, b, "alice", "bob", "Hello Bob.\nSecond line.")
	send(t, b, "coordinator", "*", "Deadline moved up.")
	send(t, b, "carol", "Researcher", "Need sources.")
	send(t, b, "Dr. Who/2", "human", "Question?")
	send(t, b, "human", "time lord", "Answer.\n")

	want := map[string]string{
		"0001_alice_to_Bob.md":        "From: alice\nTo: Bob\nTime: 2026-03-01T12:00:01Z\n\nHello Bob.\nSecond line.\n",
		"0002_coordinator_to_all.md":  "From: coordinator\nTo: all (alice, Bob, carol, Dr. Who/2)\nTime: 2026-03-01T12:00:02Z\n\nDeadline moved up.\n",
		"0003_carol_to_researcher.md": "From: carol\nTo: researcher (alice, Bob)\nTime: 2026-03-01T12:00:03Z\n\nNeed sources.\n",
		"0004_Dr.-Who-2_to_human.md":  "From: Dr. Who/2\nTo: human\nTime: 2026-03-01T12:00:04Z\n\nQuestion?\n",
		"0005_human_to_time-lord.md":  "From: human\nTo: time lord (Dr. Who/2)\nTime: 2026-03-01T12:00:05Z\n\nAnswer.\n",
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range files {
		names = append(names, filepath.Base(f))
	}
	var wantNames []string
	for n := range want {
		wantNames = append(wantNames, n)
	}
	sort.Strings(names)
	sort.Strings(wantNames)
	if !slices.Equal(names, wantNames) {
		t.Fatalf("files %v, want %v", names, wantNames)
	}
	for name, content := range want {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if string(data) != content {
			t.Errorf("%s:\n%q\nwant\n%q", name, data, content)
		}
	}
}

func TestRestart(t *testing.T) {
	dir := t.TempDir()
	b, err := bus.Open(dir, bus.WithClock(clock()))
	if err != nil {
		t.Fatal(err)
	}
	join(t, b, alice, bob, carol)
	send(t, b, "alice", "bob", "1")
	send(t, b, "alice", "bob", "2")
	if got := b.Mailbox("bob").Receive(""); !slices.Equal(bodies(got), []string{"1", "2"}) {
		t.Fatalf("bob received %v", bodies(got))
	}
	send(t, b, "alice", "bob", "3")
	send(t, b, "carol", "researcher", "4")
	send(t, b, "bob", "human", "5")
	before, _ := b.Messages()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Send(context.Background(), "alice", "bob", "closed"); !errors.Is(err, bus.ErrClosed) {
		t.Errorf("Send after Close: err = %v", err)
	}
	if err := b.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}

	b2 := open(t, dir, bus.WithClock(clock()))
	want := []bus.Participant{{Name: "coordinator", Role: "coordinator"}, {Name: "human", Role: "human"}, alice, bob, carol}
	if got := b2.Participants(); !slices.Equal(got, want) {
		t.Errorf("participants after restart %v, want %v", got, want)
	}
	after, err := b2.Messages()
	if err != nil {
		t.Fatal(err)
	}
	if !sameMessages(before, after) {
		t.Errorf("Messages after restart:\n%v\nwant\n%v", after, before)
	}
	if n := b2.Pending("bob"); n != 2 {
		t.Errorf("Pending(bob) = %d, want 2", n)
	}
	// Rejoining is a no-op, also after a restart.
	join(t, b2, alice, bus.Participant{Name: "BOB", Role: "x"})
	if got := b2.Participants(); !slices.Equal(got, want) {
		t.Errorf("participants after rejoin %v, want %v", got, want)
	}
	if got := b2.Mailbox("bob").Receive(""); !slices.Equal(bodies(got), []string{"3", "4"}) {
		t.Errorf("bob received %v after restart, want [3 4]", bodies(got))
	}
	if got := b2.Mailbox("alice").Receive(""); !slices.Equal(bodies(got), []string{"4"}) {
		t.Errorf("alice received %v after restart, want [4]", bodies(got))
	}
	// The counters continue.
	msgs := send(t, b2, "human", "bob", "6")
	if msgs[0].ID != "m0007" {
		t.Errorf("first ID after restart %q, want m0007", msgs[0].ID)
	}
	if _, err := os.Stat(filepath.Join(dir, "0006_human_to_Bob.md")); err != nil {
		t.Errorf("markdown counter did not continue: %v", err)
	}
	if files, _ := filepath.Glob(filepath.Join(dir, "*.md")); len(files) != 6 {
		t.Errorf("%d markdown files, want 6: %v", len(files), files)
	}

	// A third opening sees the deliveries of the second.
	b2.Close()
	b3 := open(t, dir)
	for name, n := range map[string]int{"bob": 1, "alice": 0, "human": 1, "carol": 0} {
		if got := b3.Pending(name); got != n {
			t.Errorf("third open: Pending(%s) = %d, want %d", name, got, n)
		}
	}
	if got := b3.Mailbox("bob").Receive(""); !slices.Equal(bodies(got), []string{"6"}) {
		t.Errorf("third open: bob received %v", bodies(got))
	}
}

func sameMessages(a, b []runtime.Message) bool {
	return slices.EqualFunc(a, b, func(x, y runtime.Message) bool {
		return x.ID == y.ID && x.From == y.From && x.To == y.To && x.Body == y.Body && x.Time.Equal(y.Time)
	})
}

func TestTornLog(t *testing.T) {
	for _, tail := range []string{
		`{"type":"send","n":3,"to":"bob","messages":[{"id":"m0003","fr`,
		"{\"type\":\"received\",\"name\":\"Bob\",\"upto\":\"m0002\"}",             // whole record but no newline: the append did not finish
		"{\"type\":\"send\",\"n\":3,\"to\":\"bob\",\"messages\":[{\"id\x00\x00\n", // garbage as the last line
	} {
		dir := t.TempDir()
		b, err := bus.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		join(t, b, alice, bob)
		send(t, b, "alice", "bob", "1")
		send(t, b, "alice", "bob", "2")
		b.Close()
		f, err := os.OpenFile(filepath.Join(dir, bus.LogFile), os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteString(tail)
		f.Close()

		b2, err := bus.Open(dir)
		if err != nil {
			t.Fatalf("Open with a torn last line %q: %v", tail, err)
		}
		if n := b2.Pending("bob"); n != 2 {
			t.Errorf("Pending(bob) = %d, want 2", n)
		}
		send(t, b2, "alice", "bob", "3")
		b2.Close()

		// The torn line was cut off: the next records are readable.
		b3 := open(t, dir)
		if got := b3.Mailbox("bob").Receive(""); !slices.Equal(bodies(got), []string{"1", "2", "3"}) {
			t.Errorf("bob received %v, want [1 2 3]", bodies(got))
		}
		b3.Close()
	}
}

func TestCorruptLog(t *testing.T) {
	dir := t.TempDir()
	b := open(t, dir)
	join(t, b, alice, bob)
	send(t, b, "alice", "bob", "1")
	b.Close()
	data, err := os.ReadFile(filepath.Join(dir, bus.LogFile))
	if err != nil {
		t.Fatal(err)
	}
	// A bad line in the middle is not a torn append: Open refuses.
	if err := os.WriteFile(filepath.Join(dir, bus.LogFile), append([]byte("not json\n"), data...), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := bus.Open(dir); err == nil {
		b.Close()
		t.Fatal("Open accepted a corrupt line in the middle of the log")
	}
}

func TestConcurrent(t *testing.T) {
	const senders, each = 8, 100
	var omu sync.Mutex
	state := map[string]string{} // message ID → last event kind
	var badEvents []string
	b := open(t, t.TempDir(), bus.WithObserver(func(e bus.Event) {
		omu.Lock()
		defer omu.Unlock()
		prev := state[e.Message.ID]
		if (e.Kind == bus.Sent && prev != "") || (e.Kind == bus.Received && prev != bus.Sent) {
			badEvents = append(badEvents, fmt.Sprintf("%s %s after %q", e.Kind, e.Message.ID, prev))
		}
		state[e.Message.ID] = e.Kind
	}))
	join(t, b, bob)
	for i := range senders {
		join(t, b, bus.Participant{Name: fmt.Sprint("w", i), Role: "worker"})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	got := make(chan []runtime.Message)
	go func() {
		box := b.Mailbox("bob")
		var all []runtime.Message
		for len(all) < senders*each {
			select {
			case <-b.Notify():
				all = append(all, box.Receive("")...)
			case <-ctx.Done():
				got <- all
				return
			}
		}
		got <- all
	}()
	// Others read their own queues at the same time.
	var wg sync.WaitGroup
	for i := range senders {
		wg.Go(func() {
			from := fmt.Sprint("w", i)
			for j := range each {
				if _, err := b.Send(ctx, from, "bob", fmt.Sprintf("%s/%d", from, j)); err != nil {
					t.Errorf("Send: %v", err)
					return
				}
				if j%10 == 0 {
					b.Send(ctx, from, "worker", "hello")
					b.Mailbox(from).Receive("")
					b.Pending("bob")
				}
			}
		})
	}
	wg.Wait()
	all := <-got
	if len(all) != senders*each {
		t.Fatalf("bob received %d messages, want %d", len(all), senders*each)
	}
	seen := map[string]bool{}
	next := map[string]int{}
	for i, m := range all {
		if i > 0 && m.ID <= all[i-1].ID {
			t.Fatalf("IDs out of order: %s after %s", m.ID, all[i-1].ID)
		}
		if seen[m.ID] {
			t.Fatalf("message %s received twice", m.ID)
		}
		seen[m.ID] = true
		var from string
		var j int
		if _, err := fmt.Sscanf(strings.Replace(m.Body, "/", " ", 1), "%s %d", &from, &j); err != nil {
			t.Fatalf("body %q: %v", m.Body, err)
		}
		if next[from] != j {
			t.Fatalf("from %s: got %d, want %d (not FIFO)", from, j, next[from])
		}
		next[from]++
	}
	if n := b.Pending("bob"); n != 0 {
		t.Errorf("Pending(bob) = %d", n)
	}
	if got := b.Mailbox("bob").Receive(""); len(got) != 0 {
		t.Errorf("left over: %d", len(got))
	}
	omu.Lock()
	defer omu.Unlock()
	if len(badEvents) > 0 {
		t.Errorf("observer saw events out of order: %v", badEvents[:min(len(badEvents), 5)])
	}
	for _, m := range all {
		if state[m.ID] != bus.Received {
			t.Fatalf("observer: %s ended as %q, want received", m.ID, state[m.ID])
		}
	}
}

// A markdown file whose Send never reached the log (a crash between the two) keeps its number.
func TestMarkdownCounterSkipsStrayFiles(t *testing.T) {
	dir := t.TempDir()
	b := open(t, dir)
	join(t, b, alice, bob)
	send(t, b, "alice", "bob", "1")
	b.Close()
	stray := filepath.Join(dir, "0002_alice_to_Bob.md")
	if err := os.WriteFile(stray, []byte("stray"), 0o644); err != nil {
		t.Fatal(err)
	}
	b2 := open(t, dir)
	send(t, b2, "alice", "bob", "2")
	if data, _ := os.ReadFile(stray); string(data) != "stray" {
		t.Errorf("stray file overwritten: %q", data)
	}
	if _, err := os.Stat(filepath.Join(dir, "0003_alice_to_Bob.md")); err != nil {
		t.Errorf("next file: %v", err)
	}
}

func TestBroadcastToNoOne(t *testing.T) {
	b := open(t, t.TempDir())
	if _, err := b.Send(context.Background(), "coordinator", "*", "anyone?"); !errors.Is(err, bus.ErrNoRecipient) {
		t.Errorf("coordinator alone to *: err = %v", err)
	}
	if msgs := send(t, b, "human", "*", "hi"); !slices.Equal(recipients(msgs), []string{"coordinator"}) {
		t.Errorf("human to * with no workers: %v", recipients(msgs))
	}
}

func TestClosed(t *testing.T) {
	b := open(t, t.TempDir())
	join(t, b, alice, bob)
	send(t, b, "alice", "bob", "1")
	b.Close()
	if err := b.Join(carol); !errors.Is(err, bus.ErrClosed) {
		t.Errorf("Join after Close: %v", err)
	}
	if _, err := b.Receive("bob"); !errors.Is(err, bus.ErrClosed) {
		t.Errorf("Receive after Close: %v", err)
	}
	if got := b.Mailbox("bob").Receive(""); len(got) != 0 {
		t.Errorf("Mailbox.Receive after Close: %v", got)
	}
	if n := b.Pending("bob"); n != 1 {
		t.Errorf("Pending after Close = %d, want 1", n)
	}
	if all, err := b.Messages(); err != nil || len(all) != 1 {
		t.Errorf("Messages after Close = %v, %v", all, err)
	}
}

func TestSendOnceSendsOnceAcrossRestarts(t *testing.T) {
	dir := t.TempDir()
	b, err := bus.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Join(bus.Participant{Name: "alice"}); err != nil {
		t.Fatal(err)
	}
	first, err := b.SendOnce(context.Background(), "k1", "alice", "coordinator", "done")
	if err != nil {
		t.Fatal(err)
	}
	again, err := b.SendOnce(context.Background(), "k1", "alice", "coordinator", "done")
	if err != nil || len(again) != 1 || again[0].ID != first[0].ID {
		t.Fatalf("second SendOnce = %+v, %v; want the first copies", again, err)
	}
	if _, err := b.SendOnce(context.Background(), "", "alice", "coordinator", "x"); err == nil {
		t.Fatal("an empty key was accepted")
	}
	b.Close()
	b, err = bus.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, err := b.SendOnce(context.Background(), "k1", "alice", "coordinator", "done"); err != nil {
		t.Fatal(err)
	}
	if n := b.Pending("coordinator"); n != 1 {
		t.Fatalf("coordinator has %d messages, want 1 after three sends with one key", n)
	}
	msgs, _ := b.Messages()
	if len(msgs) != 1 {
		t.Fatalf("%d messages stored", len(msgs))
	}
}
