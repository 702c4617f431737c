package bus_test

import (
	"context"
	"fmt"
	"os"

	"github.com/agiraph/agiraph/nodes/bus"
)

// Participants join a run's bus; a message goes to a name or to everyone with a role, waits in
// the receiver's queue until it reads it, and outlives the process in the bus's log.
func ExampleOpen() {
	dir, err := os.MkdirTemp("", "agiraph-bus")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	b, err := bus.Open(dir)
	if err != nil {
		panic(err)
	}
	for _, p := range []bus.Participant{{Name: "coordinator"}, {Name: "ana", Role: "researcher"}, {Name: "ben", Role: "researcher"}} {
		if err := b.Join(p); err != nil {
			panic(err)
		}
	}
	ctx := context.Background()
	if _, err := b.Send(ctx, "coordinator", "researcher", "Cite your sources."); err != nil {
		panic(err)
	}
	if _, err := b.Send(ctx, "ana", "coordinator", "Found three papers."); err != nil {
		panic(err)
	}
	fmt.Println("waiting for ben:", b.Pending("ben"))
	msgs, err := b.Receive("coordinator")
	if err != nil {
		panic(err)
	}
	for _, m := range msgs {
		fmt.Printf("%s → %s: %s\n", m.From, m.To, m.Body)
	}
	b.Close()

	again, err := bus.Open(dir) // the next process
	if err != nil {
		panic(err)
	}
	defer again.Close()
	fmt.Println("still waiting for ben:", again.Pending("ben"))
	// Output:
	// waiting for ben: 1
	// ana → coordinator: Found three papers.
	// still waiting for ben: 1
}
