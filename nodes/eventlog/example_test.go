package eventlog_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/agiraph/agiraph/nodes/eventlog"
)

// Events are numbered as they are logged; a subscriber gets those logged before it subscribed,
// then the new ones, in order; a page is read by number.
func ExampleOpen() {
	dir, err := os.MkdirTemp("", "agiraph-events")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	log, err := eventlog.Open(filepath.Join(dir, "events.jsonl"))
	if err != nil {
		panic(err)
	}
	defer log.Close()
	if _, err := log.Append(eventlog.Event{Type: eventlog.AgentStarted, Text: "the state of AI chips"}); err != nil {
		panic(err)
	}
	events, stop := log.Subscribe(0)
	defer stop()
	if _, err := log.Append(eventlog.Event{Type: eventlog.NodeCreated, Node: "n1", Text: "Survey the vendors"}); err != nil {
		panic(err)
	}
	for range 2 {
		e := <-events
		fmt.Println(e.Seq, e.Type, e.Text)
	}
	page, err := log.Read(1, 10) // after event 1
	if err != nil {
		panic(err)
	}
	fmt.Println("after 1:", len(page), "event(s)")
	_, err = log.Append(eventlog.Event{Type: "node.craeted"})
	fmt.Println(err != nil)
	// Output:
	// 1 agent.started the state of AI chips
	// 2 node.created Survey the vendors
	// after 1: 1 event(s)
	// true
}
