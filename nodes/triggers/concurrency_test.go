package triggers_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agiraph/agiraph/nodes/eventlog"
	"github.com/agiraph/agiraph/nodes/triggers"
)

func TestConcurrentUse(t *testing.T) {
	path := filepath.Join(t.TempDir(), "triggers.json")
	clock := triggers.NewFakeClock(base)
	var fired atomic.Int64
	var s *triggers.Scheduler
	s, err := triggers.Open(path, func(f triggers.Firing) {
		fired.Add(1)
		_ = s.List() // the fire function may use the scheduler
	}, triggers.WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	s.Start(context.Background())

	const workers, each = 8, 12
	var wg sync.WaitGroup
	var added atomic.Int64
	for w := 0; w < workers; w++ {
		wg.Go(func() {
			for i := 0; i < each; i++ {
				var tr triggers.Trigger
				switch i % 4 {
				case 0:
					tr = triggers.Trigger{Type: triggers.Delayed, Delay: triggers.Duration(time.Duration(i+1) * time.Second), Action: wake("d")}
				case 1:
					tr = triggers.Trigger{Type: triggers.Heartbeat, Interval: triggers.Duration(3 * time.Second), Action: wake("h")}
				case 2:
					tr = triggers.Trigger{Type: triggers.OnEvent, Pattern: "node.*", Filter: map[string]string{"worker": fmt.Sprint(w)}, Action: wake("e")}
				case 3:
					tr = triggers.Trigger{Type: triggers.OnIdle, Idle: triggers.Duration(2 * time.Second), Action: wake("i")}
				}
				got, err := s.Add(tr)
				if err != nil {
					t.Error(err)
					return
				}
				added.Add(1)
				s.Observe(eventlog.Event{Type: eventlog.NodeStarted, Worker: fmt.Sprint(w)})
				s.Activity(time.Time{})
				if i%5 == 0 {
					// A one-shot may fire (the clock moves meanwhile) before it is cancelled.
					if err := s.Cancel(got.ID); err != nil && !errors.Is(err, triggers.ErrNotActive) {
						t.Error(err)
					}
				}
				_ = s.List()
			}
		})
	}
	wg.Go(func() {
		for i := 0; i < 30; i++ {
			clock.Advance(time.Second)
		}
	})
	wg.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Settle(ctx); err != nil {
		t.Fatal(err)
	}
	if fired.Load() == 0 {
		t.Fatal("nothing fired")
	}
	list := s.List()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if int64(len(list)) != added.Load() || added.Load() != workers*each {
		t.Fatalf("%d listed, %d added, want %d", len(list), added.Load(), workers*each)
	}
	seen := map[string]bool{}
	for _, tr := range list {
		if seen[tr.ID] {
			t.Fatalf("id %s given twice", tr.ID)
		}
		seen[tr.ID] = true
	}
	// The file holds the same triggers.
	saved := fileTriggers(t, path)
	if len(saved) != len(list) {
		t.Fatalf("%d triggers saved, %d listed", len(saved), len(list))
	}
	for _, tr := range list {
		if saved[tr.ID].Status != tr.Status || saved[tr.ID].Fired != tr.Fired {
			t.Fatalf("%s saved as %+v, listed as %+v", tr.ID, saved[tr.ID], tr)
		}
	}
}
