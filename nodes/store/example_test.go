package store_test

import (
	"context"
	"fmt"

	"github.com/agiraph/agiraph/nodes/eventlog"
	"github.com/agiraph/agiraph/nodes/store"
)

// A change outside a graph task commits alone; its events are numbered as they commit, and a
// document's older version never replaces a newer one.
func ExampleCommit() {
	st := store.NewMemory()
	defer st.Close()
	ctx := context.Background()
	var ch store.Change
	if err := ch.PutVersion("node/r1/n1", 2, map[string]string{"status": "running"}); err != nil {
		panic(err)
	}
	ch.Events = []eventlog.Event{{Type: eventlog.NodeStarted, Node: "n1"}}
	if err := store.Commit(ctx, st, ch, func() { fmt.Println("committed") }); err != nil {
		panic(err)
	}
	var late store.Change // made before the one above, committed after it
	if err := late.PutVersion("node/r1/n1", 1, map[string]string{"status": "pending"}); err != nil {
		panic(err)
	}
	if err := st.Apply(ctx, late); err != nil {
		panic(err)
	}
	doc, err := st.Doc(ctx, "node/r1/n1")
	if err != nil {
		panic(err)
	}
	fmt.Println(string(doc.Value), doc.Version)
	evs, err := st.Events(ctx, 0, 0)
	if err != nil {
		panic(err)
	}
	fmt.Println(evs[0].Seq, evs[0].Type, evs[0].Node)
	// Output:
	// committed
	// {"status":"running"} 2
	// 1 node.started n1
}
