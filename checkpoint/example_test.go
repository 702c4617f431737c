package checkpoint_test

import (
	"context"
	"fmt"

	"github.com/agiraph/agiraph/checkpoint"
	"github.com/agiraph/agiraph/graph"
)

type tally struct {
	Steps []string `graph:"append"`
}

// A graph with a checkpointer saves each superstep of a thread: its state can be read back at
// any time, by this process or the next.
func ExampleNewMemory() {
	g := graph.New[tally]()
	g.AddNode("plan", func(context.Context, tally) (tally, error) { return tally{Steps: []string{"plan"}}, nil })
	g.AddNode("write", func(context.Context, tally) (tally, error) { return tally{Steps: []string{"write"}}, nil })
	g.AddEdge(graph.START, "plan")
	g.AddEdge("plan", "write")
	g.AddEdge("write", graph.END)
	saver := checkpoint.NewMemory()
	compiled, err := g.Compile(graph.WithCheckpointer(saver), graph.WithThread("doc-1"))
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	if _, err := compiled.Invoke(ctx, tally{}); err != nil {
		panic(err)
	}
	snap, err := compiled.State(ctx)
	if err != nil {
		panic(err)
	}
	fmt.Println(snap.Values.Steps, "next:", snap.Next)
	history, err := compiled.History(ctx, checkpoint.ListOptions{})
	if err != nil {
		panic(err)
	}
	for _, h := range history { // newest first
		fmt.Println(h.Step, h.Source, h.Values.Steps, h.Next)
	}
	// Output:
	// [plan write] next: []
	// 2 loop [plan write] []
	// 1 loop [plan] [write]
	// 0 input [] [plan]
}
