package triggers_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/agiraph/agiraph/nodes/eventlog"
	"github.com/agiraph/agiraph/nodes/triggers"
)

func TestScheduledEveryQuarterHourInNewYork(t *testing.T) {
	h := newHarness(t)
	h.clock.Advance(7 * time.Minute) // 10:07 UTC, 05:07 in New York
	tr := h.add(triggers.Trigger{Type: triggers.Scheduled, Cron: "*/15 * * * *", TZ: "America/New_York", Action: wake("check")})
	if want := base.Add(15 * time.Minute); !tr.Next.Equal(want) {
		t.Fatalf("Next = %s, want %s", tr.Next, want)
	}
	h.none(h.advance(8*time.Minute-time.Second), "at 10:14:59")
	f := h.one(h.advance(time.Second), tr.ID, base.Add(15*time.Minute), "at 10:15")
	if f.Late || f.Trigger.Fired != 1 || !f.Trigger.Next.Equal(base.Add(30*time.Minute)) {
		t.Fatalf("firing = %+v, want not late, Fired 1, Next 10:30", f)
	}
	ny, _ := time.LoadLocation("America/New_York")
	if local := f.At.In(ny); local.Hour() != 5 || local.Minute() != 15 {
		t.Fatalf("fired at %s New York time, want 05:15", local)
	}
	h.none(h.advance(15*time.Minute-time.Second), "at 10:29:59")
	h.one(h.advance(time.Second), tr.ID, base.Add(30*time.Minute), "at 10:30")
	h.one(h.advance(15*time.Minute), tr.ID, base.Add(45*time.Minute), "at 10:45")
}

func TestScheduledTimeZones(t *testing.T) {
	h := newHarness(t)
	utc := h.add(triggers.Trigger{Type: triggers.Scheduled, Cron: "0 11 * * *", Action: wake("utc")})
	ny := h.add(triggers.Trigger{Type: triggers.Scheduled, Cron: "0 11 * * *", TZ: "America/New_York", Action: wake("ny")})
	tokyo := h.add(triggers.Trigger{Type: triggers.Scheduled, Cron: "CRON_TZ=Asia/Tokyo 0 11 * * *", Action: wake("tokyo")})
	day := 24 * time.Hour
	for _, c := range []struct {
		tr   triggers.Trigger
		want time.Time
	}{
		{utc, base.Add(time.Hour)},                         // 11:00 UTC
		{ny, base.Add(6 * time.Hour)},                      // 11:00 EST = 16:00 UTC
		{tokyo, base.Add(day - 8*time.Hour)},               // 11:00 JST = 02:00 UTC the next day
		{ny, time.Date(2026, 3, 2, 16, 0, 0, 0, time.UTC)}, // the same, spelled out
	} {
		if !c.tr.Next.Equal(c.want) {
			t.Errorf("%s (%s %s): Next = %s, want %s", c.tr.ID, c.tr.Cron, c.tr.TZ, c.tr.Next.UTC(), c.want)
		}
	}
	h.none(h.advance(time.Hour-time.Second), "10:59:59")
	h.one(h.advance(time.Second), utc.ID, base.Add(time.Hour), "11:00 UTC")
	h.none(h.advance(5*time.Hour-time.Second), "15:59:59")
	f := h.one(h.advance(time.Second), ny.ID, base.Add(6*time.Hour), "16:00 UTC")
	if !f.Trigger.Next.Equal(base.Add(day + 6*time.Hour)) {
		t.Fatalf("next New York firing %s, want the next day 16:00 UTC", f.Trigger.Next.UTC())
	}
	h.one(h.advance(10*time.Hour), tokyo.ID, base.Add(day-8*time.Hour), "02:00 UTC")
	// Jump to 8 March 12:00 UTC: each fires once (not once per missed day) and continues from
	// then; New York has switched to daylight saving time, so 11:00 there is 15:00 UTC.
	h.clock.Advance(time.Date(2026, 3, 8, 12, 0, 0, 0, time.UTC).Sub(h.clock.Now()))
	fs := h.drain()
	if len(fs) != 3 {
		t.Fatalf("after the jump: %d firings, want 3 (one per trigger)", len(fs))
	}
	for i := 1; i < len(fs); i++ {
		if fs[i].At.Before(fs[i-1].At) {
			t.Fatalf("firings out of time order: %s before %s", fs[i-1].At, fs[i].At)
		}
	}
	got, _ := h.s.Get(ny.ID)
	if want := time.Date(2026, 3, 8, 15, 0, 0, 0, time.UTC); !got.Next.Equal(want) {
		t.Fatalf("New York trigger Next = %s, want %s (11:00 EDT)", got.Next.UTC(), want)
	}
}

func TestScheduledHourlyDescriptor(t *testing.T) {
	h := newHarness(t)
	h.clock.Advance(20 * time.Minute)
	tr := h.add(triggers.Trigger{Type: triggers.Scheduled, Cron: "@hourly", Action: wake("hourly")})
	h.none(h.advance(40*time.Minute-time.Second), "10:59:59")
	h.one(h.advance(time.Second), tr.ID, base.Add(time.Hour), "11:00")
	h.none(h.advance(time.Hour-time.Second), "11:59:59")
	h.one(h.advance(time.Second), tr.ID, base.Add(2*time.Hour), "12:00")
}

func TestDelayedFiresOnce(t *testing.T) {
	h := newHarness(t)
	tr := h.add(triggers.Trigger{Type: triggers.Delayed, Delay: triggers.Duration(30 * time.Minute), Action: wake("follow up")})
	if tr.ID != "t1" || tr.Status != triggers.Active || !tr.Created.Equal(base) || !tr.Next.Equal(base.Add(30*time.Minute)) {
		t.Fatalf("added %+v", tr)
	}
	h.none(h.advance(30*time.Minute-time.Second), "29:59")
	f := h.one(h.advance(time.Second), "t1", base.Add(30*time.Minute), "30:00")
	if f.Trigger.Status != triggers.Fired || f.Trigger.Fired != 1 || !f.Trigger.LastFired.Equal(base.Add(30*time.Minute)) {
		t.Fatalf("fired trigger = %+v, want status fired, fired once", f.Trigger)
	}
	if f.Trigger.Action.Task != "follow up" {
		t.Fatalf("action %+v", f.Trigger.Action)
	}
	h.none(h.advance(48*time.Hour), "two days later")
	got, _ := h.s.Get("t1")
	if got.Status != triggers.Fired {
		t.Fatalf("status %s, want fired", got.Status)
	}
}

func TestAtTime(t *testing.T) {
	h := newHarness(t)
	at := base.Add(2 * time.Hour)
	tr := h.add(triggers.Trigger{Type: triggers.AtTime, At: at, Action: triggers.Action{Kind: triggers.Message, To: "human", Body: "the analysis is due"}})
	h.none(h.advance(2*time.Hour-time.Second), "11:59:59")
	f := h.one(h.advance(time.Second), tr.ID, at, "12:00")
	if f.Trigger.Status != triggers.Fired || f.Trigger.Action.To != "human" {
		t.Fatalf("firing %+v", f)
	}
	h.none(h.advance(time.Hour), "13:00")

	// An At in the past fires at once, and is not late: the process was not down.
	past := h.add(triggers.Trigger{Type: triggers.AtTime, At: base, Action: wake("overdue")})
	f = h.one(h.drain(), past.ID, base, "past at")
	if f.Late {
		t.Fatal("a past at_time added while running fired with Late set")
	}
}

func TestPastAtTimeAddedBeforeStartIsNotLate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "triggers.json")
	clock := triggers.NewFakeClock(base)
	h := open(t, path, clock, false)
	h.add(triggers.Trigger{Type: triggers.AtTime, At: base.Add(-time.Hour), Action: wake("overdue")})
	h.add(triggers.Trigger{Type: triggers.Delayed, Delay: triggers.Duration(time.Minute), Action: wake("soon")})
	clock.Advance(2 * time.Minute)
	h.s.Start(context.Background())
	fs := h.drain()
	if len(fs) != 2 || fs[0].Trigger.ID != "t1" || fs[1].Trigger.ID != "t2" || fs[0].Late || fs[1].Late {
		t.Fatalf("firings %+v, want t1 then t2, neither late", fs)
	}
}

func TestFiringsInTimeOrder(t *testing.T) {
	h := newHarness(t)
	h.add(triggers.Trigger{Type: triggers.Delayed, Delay: triggers.Duration(5 * time.Minute), Action: wake("second")})
	h.add(triggers.Trigger{Type: triggers.AtTime, At: base.Add(3 * time.Minute), Action: wake("first")})
	h.add(triggers.Trigger{Type: triggers.Heartbeat, Interval: triggers.Duration(4 * time.Minute), Action: wake("between")})
	fs := h.advance(10 * time.Minute)
	var got []string
	for _, f := range fs {
		got = append(got, f.Trigger.Action.Task)
	}
	if len(got) != 3 || got[0] != "first" || got[1] != "between" || got[2] != "second" {
		t.Fatalf("order %v, want [first between second]", got)
	}
}

func TestHeartbeat(t *testing.T) {
	h := newHarness(t)
	tr := h.add(triggers.Trigger{Type: triggers.Heartbeat, Interval: triggers.Duration(10 * time.Minute), Action: wake("HEARTBEAT")})
	for i := 1; i <= 5; i++ {
		h.none(h.advance(10*time.Minute-time.Second), "just before a beat")
		f := h.one(h.advance(time.Second), tr.ID, base.Add(time.Duration(i)*10*time.Minute), "beat")
		if f.Trigger.Fired != i || f.Trigger.Status != triggers.Active {
			t.Fatalf("beat %d: %+v", i, f.Trigger)
		}
	}
}

func TestOnEventPatternAndFilter(t *testing.T) {
	h := newHarness(t)
	tr := h.add(triggers.Trigger{Type: triggers.OnEvent, Pattern: "node.*", Filter: map[string]string{"node": "n2"},
		Action: triggers.Action{Kind: triggers.RunNode, Node: "synthesis"}})
	h.s.Observe(eventlog.Event{Type: eventlog.NodeCompleted, Node: "n1"})
	h.s.Observe(eventlog.Event{Type: eventlog.MessageReceived, Node: "n2"})
	h.none(h.drain(), "n1 completed, a message about n2")

	h.clock.Advance(time.Minute)
	h.s.Observe(eventlog.Event{Seq: 7, Type: eventlog.NodeCompleted, Node: "n2", Text: "done"})
	f := h.one(h.drain(), tr.ID, base.Add(time.Minute), "n2 completed")
	if f.Event == nil || f.Event.Seq != 7 || f.Event.Node != "n2" {
		t.Fatalf("firing event %+v, want the n2 event", f.Event)
	}
	if f.Trigger.Action.Node != "synthesis" || f.Trigger.Fired != 1 {
		t.Fatalf("firing trigger %+v", f.Trigger)
	}
	// Recurring: every match fires.
	h.s.Observe(eventlog.Event{Type: eventlog.NodeFailed, Node: "n2"})
	h.s.Observe(eventlog.Event{Type: eventlog.NodeStarted, Node: "n2"})
	if fs := h.drain(); len(fs) != 2 || fs[1].Trigger.Fired != 3 {
		t.Fatalf("two more matches: %d firings", len(fs))
	}
}

func TestOnEventDataAndTextFilter(t *testing.T) {
	h := newHarness(t)
	tr := h.add(triggers.Trigger{Type: triggers.OnEvent, Pattern: "message.received",
		Filter: map[string]string{"data.to": "coordinator", "data.meta.n": "3", "text": "build"}, Action: wake("read it")})
	ev := func(data any, text string) eventlog.Event {
		return eventlog.New(eventlog.MessageReceived, text, data)
	}
	for _, e := range []eventlog.Event{
		ev(map[string]any{"to": "worker1", "meta": map[string]any{"n": 3}}, "build failed"),
		ev(map[string]any{"to": "coordinator", "meta": map[string]any{"n": 4}}, "build failed"),
		ev(map[string]any{"to": "coordinator", "meta": map[string]any{"n": 3}}, "tests failed"),
		ev(map[string]any{"to": "coordinator"}, "build failed"),
		ev("not an object", "build failed"),
		{Type: eventlog.MessageSent, Text: "build", Data: json.RawMessage(`{"to":"coordinator","meta":{"n":3}}`)},
	} {
		h.s.Observe(e)
	}
	h.none(h.drain(), "non-matching events")
	h.s.Observe(ev(map[string]any{"to": "coordinator", "meta": map[string]any{"n": 3}}, "the build failed"))
	h.one(h.drain(), tr.ID, base, "matching event")
}

func TestOnIdle(t *testing.T) {
	h := newHarness(t)
	tr := h.add(triggers.Trigger{Type: triggers.OnIdle, Idle: triggers.Duration(10 * time.Minute), Action: wake("anything to do?")})
	h.none(h.advance(9*time.Minute), "9m idle")
	h.s.Activity(time.Time{}) // at 10:09
	h.none(h.advance(9*time.Minute), "9m after activity")
	h.one(h.advance(time.Minute), tr.ID, base.Add(19*time.Minute), "10m after activity")
	// Re-armed: once per idle period, not on every tick.
	h.none(h.advance(10*time.Minute-time.Second), "just before the next idle period ends")
	h.one(h.advance(time.Second), tr.ID, base.Add(29*time.Minute), "second idle period")
	// An event is activity too.
	h.clock.Advance(5 * time.Minute) // 10:34
	h.s.Observe(eventlog.Event{Type: eventlog.ToolCalled})
	h.none(h.advance(10*time.Minute-time.Second), "just before 10m after the event")
	h.one(h.advance(time.Second), tr.ID, base.Add(44*time.Minute), "10m after the event")
	// Activity with an explicit time.
	h.s.Activity(base.Add(50 * time.Minute))
	h.none(h.advance(15*time.Minute), "10:59, 9m after activity at 10:50")
	h.one(h.advance(time.Minute), tr.ID, base.Add(60*time.Minute), "11:00")
}

func TestDurationJSON(t *testing.T) {
	b, err := json.Marshal(triggers.Duration(90 * time.Second))
	if err != nil || string(b) != "90" {
		t.Fatalf("Marshal(90s) = %s, %v", b, err)
	}
	b, _ = json.Marshal(triggers.Duration(1500 * time.Millisecond))
	if string(b) != "1.5" {
		t.Fatalf("Marshal(1.5s) = %s", b)
	}
	for in, want := range map[string]time.Duration{`1800`: 30 * time.Minute, `0.25`: 250 * time.Millisecond, `"1h30m"`: 90 * time.Minute} {
		var d triggers.Duration
		if err := json.Unmarshal([]byte(in), &d); err != nil || d.D() != want {
			t.Errorf("Unmarshal(%s) = %s, %v; want %s", in, d, err, want)
		}
	}
	var d triggers.Duration
	if err := json.Unmarshal([]byte(`"soon"`), &d); err == nil {
		t.Error("Unmarshal(\"soon\") succeeded")
	}
}

func TestFakeClock(t *testing.T) {
	c := triggers.NewFakeClock(base)
	late := c.At(base.Add(2 * time.Minute))
	early := c.At(base.Add(time.Minute))
	never := c.At(base.Add(time.Hour))
	now := c.At(base.Add(-time.Minute))
	if got := <-now; !got.Equal(base) {
		t.Fatalf("At(a time passed) = %s", got)
	}
	c.Advance(59 * time.Second)
	select {
	case <-early:
		t.Fatal("fired before its time")
	default:
	}
	c.Advance(2 * time.Minute)
	if got := <-early; !got.Equal(base.Add(time.Minute)) {
		t.Fatalf("early = %s", got)
	}
	if got := <-late; !got.Equal(base.Add(2 * time.Minute)) {
		t.Fatalf("late = %s", got)
	}
	select {
	case <-never:
		t.Fatal("an hour's timer fired after 3 minutes")
	default:
	}
	if !c.Now().Equal(base.Add(179 * time.Second)) {
		t.Fatalf("Now = %s", c.Now())
	}
}
