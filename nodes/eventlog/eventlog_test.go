package eventlog_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agiraph/agiraph/internal/leaktest"
	"github.com/agiraph/agiraph/nodes/eventlog"
)

func TestMain(m *testing.M) { leaktest.VerifyTestMain(m) }

// clock returns a clock that ticks one second per call from a fixed start.
func clock() (func() time.Time, time.Time) {
	start := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	n := 0
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		n++
		return start.Add(time.Duration(n) * time.Second)
	}, start
}

func open(t *testing.T, path string, opts ...eventlog.Option) *eventlog.Log {
	t.Helper()
	l, err := eventlog.Open(path, opts...)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return l
}

func appendN(t *testing.T, l *eventlog.Log, n int) []eventlog.Event {
	t.Helper()
	var out []eventlog.Event
	for i := 0; i < n; i++ {
		e, err := l.Append(eventlog.Event{Type: eventlog.NodeCompleted, Node: fmt.Sprintf("n%d", i), Text: fmt.Sprintf("event %d", i)})
		if err != nil {
			t.Fatalf("Append %d: %v", i, err)
		}
		out = append(out, e)
	}
	return out
}

// fileSeqs returns the seq of every line in the file at path.
func fileSeqs(t *testing.T, path string) []int64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var seqs []int64
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var e struct{ Seq int64 }
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("line %d: %v", len(seqs)+1, err)
		}
		seqs = append(seqs, e.Seq)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return seqs
}

// recv reads n events from ch; it fails if the channel closes early or nothing comes for a
// long time (a hang, not a timing judgement).
func recv(ch <-chan eventlog.Event, n int) ([]eventlog.Event, error) {
	out := make([]eventlog.Event, 0, n)
	for len(out) < n {
		select {
		case e, ok := <-ch:
			if !ok {
				return out, fmt.Errorf("channel closed after %d of %d events", len(out), n)
			}
			out = append(out, e)
		case <-time.After(30 * time.Second):
			return out, fmt.Errorf("no event after %d of %d", len(out), n)
		}
	}
	return out, nil
}

func receive(t *testing.T, ch <-chan eventlog.Event, n int) []eventlog.Event {
	t.Helper()
	out, err := recv(ch, n)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func checkSeqs(t *testing.T, what string, evs []eventlog.Event, from int64) {
	t.Helper()
	for i, e := range evs {
		if want := from + int64(i); e.Seq != want {
			t.Fatalf("%s: event %d has seq %d, want %d", what, i, e.Seq, want)
		}
	}
}

func waitClosed(t *testing.T, ch <-chan eventlog.Event) {
	t.Helper()
	for {
		select {
		case e, ok := <-ch:
			if !ok {
				return
			}
			t.Fatalf("unexpected event %d on a stopped subscription", e.Seq)
		case <-time.After(30 * time.Second):
			t.Fatal("channel not closed")
		}
	}
}

func TestTypes(t *testing.T) {
	ts := eventlog.Types()
	if len(ts) != 28 {
		t.Fatalf("%d types, want 28", len(ts))
	}
	if ts[0] != eventlog.AgentCreated || ts[27] != eventlog.MemoryCompacted || ts[11] != eventlog.NodeFailed {
		t.Fatalf("types out of order: %v", ts)
	}
	seen := map[eventlog.Type]bool{}
	for _, ty := range ts {
		if seen[ty] || !strings.Contains(string(ty), ".") || !ty.Valid() {
			t.Fatalf("bad or repeated type %q", ty)
		}
		seen[ty] = true
	}
	ts[0] = "changed"
	if eventlog.Types()[0] != eventlog.AgentCreated {
		t.Fatal("Types returned its internal slice")
	}
}

func TestAppendAssignsSeqAndTime(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	now, start := clock()
	l := open(t, path, eventlog.WithClock(now))
	defer l.Close()
	if l.Last() != 0 {
		t.Fatalf("Last of an empty log = %d", l.Last())
	}
	evs := appendN(t, l, 5)
	for i, e := range evs {
		if e.Seq != int64(i+1) {
			t.Errorf("event %d: seq %d", i, e.Seq)
		}
		if want := start.Add(time.Duration(i+1) * time.Second); !e.Time.Equal(want) {
			t.Errorf("event %d: time %v, want %v", i, e.Time, want)
		}
	}
	given := time.Date(2020, 1, 2, 3, 4, 5, 6, time.UTC)
	e, err := l.Append(eventlog.Event{Seq: 99, Time: given, Type: eventlog.AgentStarted})
	if err != nil {
		t.Fatal(err)
	}
	if e.Seq != 6 || !e.Time.Equal(given) {
		t.Fatalf("got seq %d time %v; want 6 and the given time", e.Seq, e.Time)
	}
	if l.Last() != 6 {
		t.Fatalf("Last = %d", l.Last())
	}
	if got := fileSeqs(t, path); len(got) != 6 || got[5] != 6 {
		t.Fatalf("file seqs %v", got)
	}
}

func TestReopenContinuesAndReadsAll(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	now, _ := clock()
	l := open(t, path, eventlog.WithClock(now))
	first := appendN(t, l, 3)
	withData, err := l.Append(eventlog.Event{
		Type: eventlog.ToolCalled, Agent: "a", Run: "r1", Node: "n", Worker: "w",
		Text: "line one\nline two <&>", Data: json.RawMessage(`{ "name": "grep", "args": [1, 2] }`),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}

	l = open(t, path, eventlog.WithClock(now))
	defer l.Close()
	if l.Last() != 4 {
		t.Fatalf("Last after reopen = %d, want 4", l.Last())
	}
	more := appendN(t, l, 2)
	if more[0].Seq != 5 || more[1].Seq != 6 {
		t.Fatalf("seqs after reopen %d, %d", more[0].Seq, more[1].Seq)
	}
	all, err := l.Read(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := append(append(first, withData), more...)
	if len(all) != len(want) {
		t.Fatalf("Read returned %d events, want %d", len(all), len(want))
	}
	for i := range want {
		a, w := all[i], want[i]
		if a.Seq != w.Seq || !a.Time.Equal(w.Time) || a.Type != w.Type || a.Agent != w.Agent || a.Run != w.Run ||
			a.Node != w.Node || a.Worker != w.Worker || a.Text != w.Text || string(a.Data) != string(w.Data) {
			t.Errorf("event %d read back as %+v, appended as %+v", i, a, w)
		}
	}
	if got := string(all[3].Data); got != `{"name":"grep","args":[1,2]}` {
		t.Errorf("data stored as %s", got)
	}
	var d struct {
		Name string
		Args []int
	}
	if err := all[3].Decode(&d); err != nil || d.Name != "grep" || len(d.Args) != 2 {
		t.Errorf("Decode: %+v, %v", d, err)
	}
	if got := fileSeqs(t, path); len(got) != 6 {
		t.Fatalf("file has %d lines, want 6", len(got))
	}
}

func TestReadPaging(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	l := open(t, path)
	defer l.Close()
	appendN(t, l, 10)
	cases := []struct {
		after    int64
		limit    int
		from, to int64 // expected seqs, inclusive; to < from: none
	}{
		{0, 0, 1, 10},
		{0, -1, 1, 10},
		{0, 3, 1, 3},
		{3, 3, 4, 6},
		{8, 5, 9, 10},
		{10, 5, 1, 0},
		{50, 0, 1, 0},
		{-5, 2, 1, 2},
	}
	for _, c := range cases {
		got, err := l.Read(c.after, c.limit)
		if err != nil {
			t.Fatalf("Read(%d, %d): %v", c.after, c.limit, err)
		}
		n := int(c.to - c.from + 1)
		if n < 0 {
			n = 0
		}
		if len(got) != n {
			t.Fatalf("Read(%d, %d) returned %d events, want %d", c.after, c.limit, len(got), n)
		}
		checkSeqs(t, fmt.Sprintf("Read(%d, %d)", c.after, c.limit), got, c.from)
	}
	// Paging through with the last seq of each page reaches every event once.
	var all []eventlog.Event
	for after := int64(0); ; {
		page, err := l.Read(after, 4)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		all = append(all, page...)
		after = page[len(page)-1].Seq
	}
	if len(all) != 10 {
		t.Fatalf("paging gave %d events", len(all))
	}
	checkSeqs(t, "paging", all, 1)
}

func TestTypeValidation(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	l := open(t, path)
	defer l.Close()
	for _, ty := range []eventlog.Type{"", "node.done", "x.", "custom", "NODE.COMPLETED", "y.custom"} {
		_, err := l.Append(eventlog.Event{Type: ty})
		if err == nil {
			t.Fatalf("type %q accepted", ty)
		}
		if !errors.Is(err, eventlog.ErrUnknownType) {
			t.Errorf("type %q: error %v does not wrap ErrUnknownType", ty, err)
		}
		if ty != "" && !strings.Contains(err.Error(), string(ty)) {
			t.Errorf("type %q: error %q does not name it", ty, err)
		}
	}
	if _, err := l.Append(eventlog.Event{Type: eventlog.NodeFailed, Data: json.RawMessage(`{bad`)}); err == nil {
		t.Fatal("invalid JSON data accepted")
	}
	if l.Last() != 0 {
		t.Fatalf("rejected events used seqs: Last = %d", l.Last())
	}
	e, err := l.Append(eventlog.Event{Type: "x.custom"})
	if err != nil {
		t.Fatalf("x.custom rejected: %v", err)
	}
	if e.Seq != 1 {
		t.Fatalf("seq %d", e.Seq)
	}
	if got := fileSeqs(t, path); len(got) != 1 {
		t.Fatalf("file has %d lines, want 1", len(got))
	}
}

func TestTornLastLineDropped(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	l := open(t, path)
	appendN(t, l, 3)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(`{"seq":4,"time":"2025-03-01T12:00:00Z","type":"node.comp`); err != nil {
		t.Fatal(err)
	}
	f.Close()

	l = open(t, path)
	defer l.Close()
	if l.Last() != 3 {
		t.Fatalf("Last = %d, want 3", l.Last())
	}
	e, err := l.Append(eventlog.Event{Type: eventlog.NodeCompleted, Text: "after the tear"})
	if err != nil {
		t.Fatal(err)
	}
	if e.Seq != 4 {
		t.Fatalf("seq after tear %d, want 4", e.Seq)
	}
	got := fileSeqs(t, path) // fails if the torn bytes were left in the file
	if len(got) != 4 || got[3] != 4 {
		t.Fatalf("file seqs %v", got)
	}
	all, err := l.Read(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 4 || all[3].Text != "after the tear" {
		t.Fatalf("read %+v", all)
	}
	checkSeqs(t, "after tear", all, 1)
}

func TestCorruptMiddleLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	l := open(t, path)
	appendN(t, l, 4)
	l.Close()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(data), "\n")
	lines[2] = "{not json at all\n"
	if err := os.WriteFile(path, []byte(strings.Join(lines, "")), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = eventlog.Open(path)
	if err == nil {
		t.Fatal("Open accepted a corrupt line")
	}
	if !strings.Contains(err.Error(), "line 3") {
		t.Fatalf("error %q does not name line 3", err)
	}
	after, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(after) != strings.Join(lines, "") {
		t.Fatal("Open changed a corrupt file")
	}
}

func TestOutOfOrderSeqRejected(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	content := `{"seq":1,"time":"2025-03-01T12:00:00Z","type":"node.created"}
{"seq":2,"time":"2025-03-01T12:00:01Z","type":"node.created"}
{"seq":2,"time":"2025-03-01T12:00:02Z","type":"node.created"}
`
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := eventlog.Open(path)
	if err == nil || !strings.Contains(err.Error(), "line 3") {
		t.Fatalf("Open: %v; want an error naming line 3", err)
	}
}

func TestSubscribeHistoryThenLive(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	l := open(t, path)
	appendN(t, l, 600) // more than one catch-up page
	l.Close()
	l = open(t, path)
	defer l.Close()

	ch, stop := l.Subscribe(0)
	defer stop()
	from5, stop5 := l.Subscribe(595)
	defer stop5()
	appendN(t, l, 10)
	got := receive(t, ch, 610)
	checkSeqs(t, "Subscribe(0)", got, 1)
	if got[0].Text != "event 0" || got[600].Text != "event 0" || got[609].Text != "event 9" {
		t.Fatalf("wrong events: %q %q %q", got[0].Text, got[600].Text, got[609].Text)
	}
	checkSeqs(t, "Subscribe(595)", receive(t, from5, 15), 596)

	// A subscription from beyond the end skips events up to its after.
	ahead, stopAhead := l.Subscribe(612)
	defer stopAhead()
	appendN(t, l, 4)
	checkSeqs(t, "Subscribe(612)", receive(t, ahead, 2), 613)
}

func TestSlowSubscriberDoesNotBlockAppend(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	l := open(t, path)
	defer l.Close()
	ch, stop := l.Subscribe(0)
	defer stop()

	const n = 10000
	done := make(chan error, 1)
	go func() {
		for i := 0; i < n; i++ {
			if _, err := l.Append(eventlog.Event{Type: eventlog.ToolResult}); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("appends blocked by a subscriber that does not read")
	}
	if l.Last() != n {
		t.Fatalf("Last = %d", l.Last())
	}
	checkSeqs(t, "slow subscriber", receive(t, ch, n), 1)
}

func TestConcurrentAppendersAndSubscribers(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	l := open(t, path)
	defer l.Close()
	const writers, each = 8, 500
	const total = writers * each

	var subs sync.WaitGroup
	results := make([][]eventlog.Event, 3)
	start := make(chan struct{})
	for i := range results {
		// One subscribes before any append, the others while appends run.
		var ch <-chan eventlog.Event
		var stop func()
		if i == 0 {
			ch, stop = l.Subscribe(0)
		}
		subs.Add(1)
		go func() {
			defer subs.Done()
			if ch == nil {
				<-start
				ch, stop = l.Subscribe(0)
			}
			defer stop()
			var err error
			if results[i], err = recv(ch, total); err != nil {
				t.Errorf("subscriber %d: %v", i, err)
			}
		}()
	}

	var writersWG sync.WaitGroup
	errs := make(chan error, writers)
	for w := 0; w < writers; w++ {
		writersWG.Add(1)
		go func() {
			defer writersWG.Done()
			for i := 0; i < each; i++ {
				if i == each/4 && w == 0 {
					close(start)
				}
				if _, err := l.Append(eventlog.Event{Type: eventlog.MessageSent, Worker: fmt.Sprintf("w%d", w), Text: fmt.Sprint(i)}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	writersWG.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	subs.Wait()
	for i, r := range results {
		if len(r) != total {
			t.Fatalf("subscriber %d got %d events", i, len(r))
		}
		checkSeqs(t, fmt.Sprintf("subscriber %d", i), r, 1)
	}
	seqs := fileSeqs(t, path)
	if len(seqs) != total {
		t.Fatalf("file has %d lines, want %d", len(seqs), total)
	}
	for i, s := range seqs {
		if s != int64(i+1) {
			t.Fatalf("line %d has seq %d", i+1, s)
		}
	}
	// Each writer's events keep their order.
	all, err := l.Read(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	next := map[string]int{}
	for _, e := range all {
		if e.Text != fmt.Sprint(next[e.Worker]) {
			t.Fatalf("writer %s: event %q out of order", e.Worker, e.Text)
		}
		next[e.Worker]++
	}
}

func TestUnsubscribeClosesChannel(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	l := open(t, path)
	defer l.Close()
	appendN(t, l, 3)
	ch, stop := l.Subscribe(0)
	other, stopOther := l.Subscribe(0)
	defer stopOther()
	if got := receive(t, ch, 1); got[0].Seq != 1 {
		t.Fatalf("first event seq %d", got[0].Seq)
	}
	stop() // with undelivered history pending
	stop() // idempotent
	waitClosed(t, ch)
	appendN(t, l, 2)
	checkSeqs(t, "other subscriber", receive(t, other, 5), 1)
}

func TestCloseClosesAll(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	l := open(t, path)
	appendN(t, l, 2)
	a, stopA := l.Subscribe(0)
	b, stopB := l.Subscribe(2)
	c, _ := l.Subscribe(0)
	if got := receive(t, c, 2); got[1].Seq != 2 {
		t.Fatalf("seq %d", got[1].Seq)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	waitClosed(t, a)
	waitClosed(t, b)
	waitClosed(t, c)
	stopA() // after Close: no-op
	stopB()
	if err := l.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := l.Append(eventlog.Event{Type: eventlog.NodeCreated}); !errors.Is(err, eventlog.ErrClosed) {
		t.Fatalf("Append after Close: %v", err)
	}
	if _, err := l.Read(0, 0); !errors.Is(err, eventlog.ErrClosed) {
		t.Fatalf("Read after Close: %v", err)
	}
	d, stopD := l.Subscribe(0)
	waitClosed(t, d)
	stopD()
}

func TestNewAndDecode(t *testing.T) {
	e := eventlog.New(eventlog.HumanQuestion, "Which one?", map[string]any{"options": []string{"a", "b"}})
	if e.Type != eventlog.HumanQuestion || e.Text != "Which one?" || string(e.Data) != `{"options":["a","b"]}` {
		t.Fatalf("New: %+v (data %s)", e, e.Data)
	}
	var d struct{ Options []string }
	if err := e.Decode(&d); err != nil || len(d.Options) != 2 {
		t.Fatalf("Decode: %+v %v", d, err)
	}
	if e := eventlog.New(eventlog.NodeStarted, "x", nil); e.Data != nil {
		t.Fatalf("nil data gave %s", e.Data)
	}
	var p *struct{}
	if e := eventlog.New(eventlog.NodeStarted, "x", p); e.Data != nil {
		t.Fatalf("typed nil data gave %s", e.Data)
	}
	bad := eventlog.New(eventlog.NodeFailed, "x", make(chan int))
	var b struct{ Error string }
	if err := bad.Decode(&b); err != nil || !strings.Contains(b.Error, "marshal") {
		t.Fatalf("unmarshallable data gave %s (%v)", bad.Data, err)
	}
	untouched := struct{ A int }{A: 7}
	if err := (eventlog.Event{}).Decode(&untouched); err != nil || untouched.A != 7 {
		t.Fatalf("Decode without data: %+v %v", untouched, err)
	}

	l := open(t, filepath.Join(t.TempDir(), "events.jsonl"))
	defer l.Close()
	if _, err := l.Append(bad); err != nil {
		t.Fatalf("appending an event from New: %v", err)
	}
}

func TestBlankLinesIgnored(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	content := `{"seq":1,"time":"2025-03-01T12:00:00Z","type":"node.created"}

{"seq":2,"time":"2025-03-01T12:00:01Z","type":"node.started","data":{"k":1}}
   
`
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	l := open(t, path)
	defer l.Close()
	if _, err := l.Append(eventlog.Event{Type: eventlog.NodeCompleted}); err != nil {
		t.Fatal(err)
	}
	all, err := l.Read(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 3 || all[1].Type != eventlog.NodeStarted || string(all[1].Data) != `{"k":1}` {
		t.Fatalf("read %+v", all)
	}
	checkSeqs(t, "with blank lines", all, 1)
	if page, err := l.Read(1, 1); err != nil || len(page) != 1 || page[0].Seq != 2 {
		t.Fatalf("Read(1, 1) = %+v, %v", page, err)
	}
}

func TestReadWhileAppending(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	l := open(t, path)
	defer l.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < 2000; i++ {
			if _, err := l.Append(eventlog.Event{Type: eventlog.MemoryWritten}); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	for reading := true; reading; {
		select {
		case <-done:
			reading = false
		default:
		}
		last := l.Last()
		all, err := l.Read(0, 0)
		if err != nil {
			t.Fatal(err)
		}
		if int64(len(all)) < last {
			t.Fatalf("Read returned %d events after Last was %d", len(all), last)
		}
		checkSeqs(t, "concurrent Read", all, 1)
	}
}
