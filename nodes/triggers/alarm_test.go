package triggers_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/nodes/triggers"
)

// An alarm calls its function for each key when its time comes, in the order of their times;
// a later Set replaces a key's time, a zero one forgets it, a time passed fires at once; its
// goroutine runs only while a key has a time.
func TestAlarm(t *testing.T) {
	clock := triggers.NewFakeClock(base)
	called := make(chan string, 10)
	before := runtime.NumGoroutine()
	a := triggers.NewAlarm(clock, func(key string) { called <- key })
	defer a.Close()
	assert.LessOrEqual(t, runtime.NumGoroutine(), before, "no goroutine while no key has a time")

	a.Set("late", base.Add(20*time.Minute))
	a.Set("early", base.Add(5*time.Minute))
	a.Set("moved", base.Add(10*time.Minute))
	a.Set("moved", base.Add(40*time.Minute))
	a.Set("forgotten", base.Add(time.Minute))
	a.Set("forgotten", time.Time{})
	assert.Equal(t, base.Add(40*time.Minute), a.When("moved"))
	assert.True(t, a.When("forgotten").IsZero())

	clock.Advance(30 * time.Minute)
	assert.Equal(t, "early", receive(t, called))
	assert.Equal(t, "late", receive(t, called))
	assert.Empty(t, called)
	assert.True(t, a.When("early").IsZero(), "a key that rang is forgotten")

	a.Set("past", base)
	assert.Equal(t, "past", receive(t, called), "a time passed rings at once")
	clock.Advance(10 * time.Minute)
	assert.Equal(t, "moved", receive(t, called))
	for end := time.Now().Add(5 * time.Second); runtime.NumGoroutine() > before && time.Now().Before(end); {
		time.Sleep(time.Millisecond)
	}
	assert.LessOrEqual(t, runtime.NumGoroutine(), before, "the goroutine ends once no key has a time")

	a.Set("again", base.Add(50*time.Minute))
	clock.Advance(10 * time.Minute)
	assert.Equal(t, "again", receive(t, called))
}

// Close stops the alarm: nothing rings after it, and Set does nothing.
func TestAlarmClose(t *testing.T) {
	clock := triggers.NewFakeClock(base)
	called := make(chan string, 10)
	a := triggers.NewAlarm(clock, func(key string) { called <- key })
	a.Set("k", base.Add(time.Hour))
	a.Close()
	a.Set("j", base)
	clock.Advance(2 * time.Hour)
	time.Sleep(10 * time.Millisecond)
	assert.Empty(t, called)
	a.Close()
}

// One goroutine serves many keys: a thousand keys cost no goroutine each.
func TestAlarmManyKeys(t *testing.T) {
	clock := triggers.NewFakeClock(base)
	called := make(chan string, 1000)
	before := runtime.NumGoroutine()
	a := triggers.NewAlarm(clock, func(key string) { called <- key })
	defer a.Close()
	for i := range 1000 {
		a.Set(fmt.Sprint(i), base.Add(time.Duration(1000-i)*time.Second))
	}
	assert.LessOrEqual(t, runtime.NumGoroutine()-before, 1)
	clock.Advance(time.Hour)
	for i := range 1000 {
		assert.Equal(t, fmt.Sprint(999-i), receive(t, called))
	}
}

func receive(t *testing.T, c <-chan string) string {
	t.Helper()
	select {
	case k := <-c:
		return k
	case <-time.After(5 * time.Second):
		t.Fatal("the alarm did not ring")
		return ""
	}
}

// Next says when the earliest active timed trigger comes due: not an on_event one, nor one
// cancelled.
func TestNext(t *testing.T) {
	h := newHarness(t)
	assert.True(t, h.s.Next().IsZero())
	h.add(triggers.Trigger{Type: triggers.OnEvent, Pattern: "node.*", Action: triggers.Action{Kind: triggers.Wake, Task: "look"}})
	assert.True(t, h.s.Next().IsZero())
	hb := h.add(triggers.Trigger{Type: triggers.Heartbeat, Interval: triggers.Duration(time.Hour), Action: triggers.Action{Kind: triggers.Wake, Task: "look"}})
	d := h.add(triggers.Trigger{Type: triggers.Delayed, Delay: triggers.Duration(10 * time.Minute), Action: triggers.Action{Kind: triggers.Wake, Task: "look"}})
	assert.Equal(t, base.Add(10*time.Minute), h.s.Next())
	require.NoError(t, h.s.Cancel(d.ID))
	assert.Equal(t, hb.Next, h.s.Next())
}

// A trigger that came due while the scheduler was closed but its program ran (after the time
// of WithUpSince) fires on time — not late, its next due time counted from the last — and one
// that came due before that time, while the program was down, fires late.
func TestUpSince(t *testing.T) {
	path := filepath.Join(t.TempDir(), "triggers.json")
	file := fmt.Sprintf(`{"next_id": 3, "triggers": [
		{"id": "t1", "type": "heartbeat", "interval": 3600, "action": {"kind": "wake", "task": "look"}, "status": "active", "created": %q, "next": %q},
		{"id": "t2", "type": "heartbeat", "interval": 3600, "action": {"kind": "wake", "task": "look"}, "status": "active", "created": %q, "next": %q}]}`,
		base.Format(time.RFC3339), base.Add(time.Hour).Format(time.RFC3339),
		base.Format(time.RFC3339), base.Add(2*time.Hour).Format(time.RFC3339))
	for _, tc := range []struct {
		name     string
		opts     []triggers.Option
		lateT1   bool
		lateT2   bool
		nextT2At time.Time
	}{
		{"up since the start", []triggers.Option{triggers.WithUpSince(base)}, false, false, base.Add(3 * time.Hour)},
		{"up since between", []triggers.Option{triggers.WithUpSince(base.Add(90 * time.Minute))}, true, false, base.Add(3 * time.Hour)},
		{"by default", nil, true, true, base.Add(2*time.Hour + 5*time.Minute + time.Hour)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.NoError(t, os.WriteFile(path, []byte(file), 0o644))
			clock := triggers.NewFakeClock(base.Add(2*time.Hour + 5*time.Minute))
			fired := map[string]triggers.Firing{}
			s, err := triggers.Open(path, func(f triggers.Firing) { fired[f.Trigger.ID] = f }, append(tc.opts, triggers.WithClock(clock))...)
			require.NoError(t, err)
			s.Start(context.Background())
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			require.NoError(t, s.Settle(ctx))
			require.NoError(t, s.Close())
			require.Len(t, fired, 2)
			assert.Equal(t, tc.lateT1, fired["t1"].Late, "t1")
			assert.Equal(t, tc.lateT2, fired["t2"].Late, "t2")
			assert.Equal(t, tc.nextT2At, fired["t2"].Trigger.Next, "t2's next due time")
		})
	}
}
