package triggers_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/agiraph/agiraph/internal/leaktest"
	"github.com/agiraph/agiraph/nodes/triggers"
)

func TestMain(m *testing.M) { leaktest.VerifyTestMain(m) }

// base is a Monday, 10:00 UTC, before the 2026 change to daylight saving time in the US.
var base = time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)

// harness is a scheduler on a fake clock whose firings land in a channel.
type harness struct {
	t     *testing.T
	path  string
	clock *triggers.FakeClock
	s     *triggers.Scheduler
	fired chan triggers.Firing
}

// open opens (and starts, if start) a scheduler on path with clock.
func open(t *testing.T, path string, clock *triggers.FakeClock, start bool) *harness {
	t.Helper()
	h := &harness{t: t, path: path, clock: clock, fired: make(chan triggers.Firing, 10000)}
	s, err := triggers.Open(path, func(f triggers.Firing) { h.fired <- f }, triggers.WithClock(clock))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	h.s = s
	if start {
		s.Start(context.Background())
	}
	t.Cleanup(func() { _ = s.Close() })
	return h
}

// newHarness starts a scheduler on a fresh file with a fake clock at base.
func newHarness(t *testing.T) *harness {
	return open(t, filepath.Join(t.TempDir(), "agent", "triggers.json"), triggers.NewFakeClock(base), true)
}

func (h *harness) add(tr triggers.Trigger) triggers.Trigger {
	h.t.Helper()
	got, err := h.s.Add(tr)
	if err != nil {
		h.t.Fatalf("Add(%+v): %v", tr, err)
	}
	return got
}

func (h *harness) settle() {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.s.Settle(ctx); err != nil {
		h.t.Fatalf("Settle: %v", err)
	}
}

// advance moves the clock by d and returns what fired because of it, in order.
func (h *harness) advance(d time.Duration) []triggers.Firing {
	h.t.Helper()
	h.clock.Advance(d)
	return h.drain()
}

// drain waits for the loop to settle and returns what fired since the last drain.
func (h *harness) drain() []triggers.Firing {
	h.t.Helper()
	h.settle()
	var out []triggers.Firing
	for {
		select {
		case f := <-h.fired:
			out = append(out, f)
		default:
			return out
		}
	}
}

// none asserts that nothing fired.
func (h *harness) none(fs []triggers.Firing, when string) {
	h.t.Helper()
	if len(fs) != 0 {
		h.t.Fatalf("%s: %d unexpected firing(s), first %s at %s", when, len(fs), fs[0].Trigger.ID, fs[0].At)
	}
}

// one asserts that exactly one firing, of id, due at at, happened, and returns it.
func (h *harness) one(fs []triggers.Firing, id string, at time.Time, when string) triggers.Firing {
	h.t.Helper()
	if len(fs) != 1 {
		var ids []string
		for _, f := range fs {
			ids = append(ids, f.Trigger.ID+"@"+f.At.UTC().Format(time.RFC3339))
		}
		h.t.Fatalf("%s: want one firing of %s at %s, got %d: %v", when, id, at.UTC().Format(time.RFC3339), len(fs), ids)
	}
	f := fs[0]
	if f.Trigger.ID != id || !f.At.Equal(at) {
		h.t.Fatalf("%s: want %s at %s, got %s at %s", when, id, at.UTC().Format(time.RFC3339), f.Trigger.ID, f.At.UTC().Format(time.RFC3339))
	}
	return f
}

func wake(task string) triggers.Action { return triggers.Action{Kind: triggers.Wake, Task: task} }
