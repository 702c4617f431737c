package triggers_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/agiraph/agiraph/nodes/eventlog"
	"github.com/agiraph/agiraph/nodes/triggers"
)

// A scheduler fires an agent's triggers — at a time, on a cron, on an event — by handing each
// firing to the function it was opened with; a clock of its own lets a test move time.
func ExampleOpen() {
	dir, err := os.MkdirTemp("", "agiraph-triggers")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	clock := triggers.NewFakeClock(time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC))
	fired := make(chan triggers.Firing, 4)
	s, err := triggers.Open(filepath.Join(dir, "triggers.json"), func(f triggers.Firing) { fired <- f }, triggers.WithClock(clock))
	if err != nil {
		panic(err)
	}
	defer s.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s.Start(ctx)
	if _, err := s.Add(triggers.Trigger{Type: triggers.Delayed, Delay: triggers.Duration(time.Hour),
		Action: triggers.Action{Kind: triggers.Wake, Task: "Check the overnight results."}}); err != nil {
		panic(err)
	}
	if _, err := s.Add(triggers.Trigger{Type: triggers.OnEvent, Pattern: "node.*", Filter: map[string]string{"node": "n3"},
		Action: triggers.Action{Kind: triggers.Wake, Task: "Look at n3."}}); err != nil {
		panic(err)
	}
	s.Observe(eventlog.Event{Type: eventlog.NodeCompleted, Node: "n3"})
	f := <-fired
	fmt.Println(f.Trigger.ID, f.Trigger.Action.Task)
	clock.Advance(time.Hour)
	f = <-fired
	fmt.Println(f.Trigger.ID, f.Trigger.Action.Task, f.At.Format(time.Kitchen))
	// Output:
	// t2 Look at n3.
	// t1 Check the overnight results. 10:00AM
}
