package triggers_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agiraph/agiraph/nodes/triggers"
)

// fileTriggers reads the saved triggers straight from the file.
func fileTriggers(t *testing.T, path string) map[string]triggers.Trigger {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var st struct {
		Triggers []triggers.Trigger `json:"triggers"`
	}
	if err := json.Unmarshal(data, &st); err != nil {
		t.Fatalf("triggers.json: %v", err)
	}
	m := map[string]triggers.Trigger{}
	for _, tr := range st.Triggers {
		m[tr.ID] = tr
	}
	return m
}

func TestDelayedFiresOnceLateAfterRestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agents", "a1", "triggers.json")
	clock := triggers.NewFakeClock(base)
	h := open(t, path, clock, true)
	h.add(triggers.Trigger{Type: triggers.Delayed, Delay: triggers.Duration(10 * time.Minute), Action: wake("check the build")})
	h.none(h.advance(5*time.Minute), "5m")
	if err := h.s.Close(); err != nil {
		t.Fatal(err)
	}
	if saved := fileTriggers(t, path)["t1"]; saved.Status != triggers.Active || !saved.Next.Equal(base.Add(10*time.Minute)) {
		t.Fatalf("saved before the restart: %+v", saved)
	}

	clock.Advance(time.Hour) // down
	h2 := open(t, path, clock, true)
	f := h2.one(h2.drain(), "t1", base.Add(10*time.Minute), "after the restart")
	if !f.Late || f.Trigger.Status != triggers.Fired {
		t.Fatalf("firing %+v, want Late and status fired", f)
	}
	h2.none(h2.advance(24*time.Hour), "a day later")
	if err := h2.s.Close(); err != nil {
		t.Fatal(err)
	}
	if saved := fileTriggers(t, path)["t1"]; saved.Status != triggers.Fired || saved.Fired != 1 || !saved.LastFired.Equal(base.Add(65*time.Minute)) {
		t.Fatalf("saved after firing: %+v", saved)
	}
	// Started again, it does not fire again.
	h3 := open(t, path, clock, true)
	h3.none(h3.drain(), "second restart")
}

func TestScheduledMissingTicksWhileDownFiresOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "triggers.json")
	clock := triggers.NewFakeClock(base)
	h := open(t, path, clock, true)
	tr := h.add(triggers.Trigger{Type: triggers.Scheduled, Cron: "*/15 * * * *", Action: wake("poll")})
	if f := h.one(h.advance(15*time.Minute), tr.ID, base.Add(15*time.Minute), "10:15"); f.Late {
		t.Fatal("an on-time firing is Late")
	}
	if err := h.s.Close(); err != nil {
		t.Fatal(err)
	}

	clock.Advance(50 * time.Minute) // 11:05: 10:30, 10:45 and 11:00 pass while down
	h2 := open(t, path, clock, false)
	h2.s.Start(context.Background())
	f := h2.one(h2.drain(), tr.ID, base.Add(30*time.Minute), "restart at 11:05")
	if !f.Late || f.Trigger.Fired != 2 || !f.Trigger.Next.Equal(base.Add(75*time.Minute)) {
		t.Fatalf("late firing %+v, want Late, Fired 2, Next 11:15", f)
	}
	h2.none(h2.advance(10*time.Minute-time.Second), "11:14:59")
	if f := h2.one(h2.advance(time.Second), tr.ID, base.Add(75*time.Minute), "11:15"); f.Late {
		t.Fatal("the firing after the late one is Late")
	}
	h2.one(h2.advance(15*time.Minute), tr.ID, base.Add(90*time.Minute), "11:30")
}

func TestHeartbeatAndIdleAfterDowntime(t *testing.T) {
	path := filepath.Join(t.TempDir(), "triggers.json")
	clock := triggers.NewFakeClock(base)
	h := open(t, path, clock, true)
	hb := h.add(triggers.Trigger{Type: triggers.Heartbeat, Interval: triggers.Duration(10 * time.Minute), Action: wake("beat")})
	idle := h.add(triggers.Trigger{Type: triggers.OnIdle, Idle: triggers.Duration(30 * time.Minute), Action: wake("idle")})
	ev := h.add(triggers.Trigger{Type: triggers.OnEvent, Pattern: "*", Action: wake("event")})
	h.one(h.advance(10*time.Minute), hb.ID, base.Add(10*time.Minute), "first beat")
	h.s.Close()

	clock.Advance(time.Hour + 3*time.Minute) // 11:13
	h2 := open(t, path, clock, true)
	fs := h2.drain()
	if len(fs) != 2 || fs[0].Trigger.ID != hb.ID || fs[1].Trigger.ID != idle.ID || !fs[0].Late || !fs[1].Late {
		t.Fatalf("after the restart: %+v, want a late heartbeat then a late on_idle", fs)
	}
	now := base.Add(73 * time.Minute)
	if !fs[0].At.Equal(base.Add(20*time.Minute)) || !fs[0].Trigger.Next.Equal(now.Add(10*time.Minute)) {
		t.Fatalf("heartbeat due %s next %s, want due 10:20, next 11:23", fs[0].At, fs[0].Trigger.Next)
	}
	if !fs[1].At.Equal(base.Add(30*time.Minute)) || !fs[1].Trigger.Next.Equal(now.Add(30*time.Minute)) {
		t.Fatalf("on_idle due %s next %s, want due 10:30, next 11:43", fs[1].At, fs[1].Trigger.Next)
	}
	h2.none(h2.advance(10*time.Minute-time.Second), "11:22:59")
	h2.one(h2.advance(time.Second), hb.ID, now.Add(10*time.Minute), "11:23")
	if got, _ := h2.s.Get(ev.ID); got.Status != triggers.Active || got.Pattern != "*" {
		t.Fatalf("on_event trigger after the restart: %+v", got)
	}
}

func TestIDsContinueAndCancelPersists(t *testing.T) {
	path := filepath.Join(t.TempDir(), "triggers.json")
	clock := triggers.NewFakeClock(base)
	h := open(t, path, clock, true)
	for i := 0; i < 3; i++ {
		h.add(triggers.Trigger{Type: triggers.Heartbeat, Interval: triggers.Duration(time.Hour), Action: wake("x")})
	}
	if err := h.s.Cancel("t3"); err != nil {
		t.Fatal(err)
	}
	if err := h.s.Cancel("t2"); err != nil {
		t.Fatal(err)
	}
	err := h.s.Cancel("t2")
	if !errors.Is(err, triggers.ErrNotActive) || !strings.Contains(err.Error(), "t2") {
		t.Fatalf("cancel twice: %v", err)
	}
	err = h.s.Cancel("t42")
	if !errors.Is(err, triggers.ErrUnknownTrigger) || !strings.Contains(err.Error(), `"t42"`) {
		t.Fatalf("cancel unknown: %v", err)
	}
	if saved := fileTriggers(t, path)["t3"]; saved.Status != triggers.Cancelled {
		t.Fatalf("t3 saved as %s", saved.Status)
	}
	h.s.Close()

	h2 := open(t, path, clock, true)
	list := h2.s.List()
	if len(list) != 3 || list[0].ID != "t1" || list[0].Status != triggers.Active ||
		list[1].ID != "t2" || list[1].Status != triggers.Cancelled || list[2].ID != "t3" || list[2].Status != triggers.Cancelled {
		t.Fatalf("list after restart: %+v", list)
	}
	next := h2.add(triggers.Trigger{Type: triggers.Delayed, Delay: triggers.Duration(time.Minute), Action: wake("y")})
	if next.ID != "t4" {
		t.Fatalf("id after restart %s, want t4", next.ID)
	}
	fs := h2.advance(time.Hour)
	if len(fs) != 2 || fs[0].Trigger.ID != "t4" || fs[1].Trigger.ID != "t1" {
		t.Fatalf("firings %v, want t4 then t1 only (t2, t3 cancelled)", fs)
	}
}

func TestIDsContinueAfterAllRemovedFromList(t *testing.T) {
	// The next id is saved, so even a file whose triggers were edited away does not reuse ids.
	path := filepath.Join(t.TempDir(), "triggers.json")
	if err := os.WriteFile(path, []byte(`{"next_id": 8, "triggers": []}`), 0o644); err != nil {
		t.Fatal(err)
	}
	h := open(t, path, triggers.NewFakeClock(base), true)
	if tr := h.add(triggers.Trigger{Type: triggers.Delayed, Delay: 1, Action: wake("z")}); tr.ID != "t8" {
		t.Fatalf("id %s, want t8", tr.ID)
	}
}

func TestOpenBadFile(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"triggers": [`), 0o644)
	if _, err := triggers.Open(bad, func(triggers.Firing) {}); err == nil {
		t.Fatal("Open of a torn file succeeded")
	}
	cronBad := filepath.Join(dir, "cron.json")
	os.WriteFile(cronBad, []byte(`{"triggers": [{"id":"t1","type":"scheduled","cron":"nope","status":"active","action":{"kind":"wake","task":"x"}}]}`), 0o644)
	if _, err := triggers.Open(cronBad, func(triggers.Firing) {}); err == nil || !strings.Contains(err.Error(), "t1") {
		t.Fatalf("Open with a bad cron: %v, want an error naming t1", err)
	}
	if _, err := triggers.Open(filepath.Join(dir, "x.json"), nil); err == nil {
		t.Fatal("Open with a nil fire function succeeded")
	}
}

func TestClose(t *testing.T) {
	h := newHarness(t)
	if err := h.s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := h.s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := h.s.Add(triggers.Trigger{Type: triggers.Delayed, Delay: 1, Action: wake("x")}); !errors.Is(err, triggers.ErrClosed) {
		t.Fatalf("Add after Close: %v", err)
	}
	// Never started: Close does not block.
	s, err := triggers.Open(filepath.Join(t.TempDir(), "t.json"), func(triggers.Firing) {})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// Stopped by its context.
	s2, _ := triggers.Open(filepath.Join(t.TempDir(), "t.json"), func(triggers.Firing) {})
	ctx, cancel := context.WithCancel(context.Background())
	s2.Start(ctx)
	cancel()
	if err := s2.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestActivitySavedOnClose(t *testing.T) {
	path := filepath.Join(t.TempDir(), "triggers.json")
	clock := triggers.NewFakeClock(base)
	h := open(t, path, clock, true)
	h.add(triggers.Trigger{Type: triggers.OnIdle, Idle: triggers.Duration(10 * time.Minute), Action: wake("idle")})
	clock.Advance(5 * time.Minute)
	h.s.Activity(time.Time{})
	h.s.Close()
	if saved := fileTriggers(t, path)["t1"]; !saved.Next.Equal(base.Add(15 * time.Minute)) {
		t.Fatalf("on_idle saved Next %s, want 10:15", saved.Next)
	}
}

func TestSaveError(t *testing.T) {
	dir := t.TempDir()
	blocker := filepath.Join(dir, "sub")
	h := open(t, filepath.Join(blocker, "triggers.json"), triggers.NewFakeClock(base), true)
	// The directory of the triggers file cannot be created: a file is in the way.
	os.WriteFile(blocker, nil, 0o644)
	if _, err := h.s.Add(triggers.Trigger{Type: triggers.Delayed, Delay: 1, Action: wake("x")}); err == nil {
		t.Fatal("Add succeeded though it could not save")
	}
	if len(h.s.List()) != 0 {
		t.Fatal("a trigger that was not saved is listed")
	}
}
