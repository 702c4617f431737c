// Package graph is a typed state-graph engine: declare a state type, nodes that return updates to
// it, and edges between them; compile; then invoke or stream a run.
//
//	type State struct {
//		Count int
//		Log   []string `graph:"append"`
//	}
//	g := graph.New[State]()
//	g.AddNode("hello", func(ctx context.Context, s State) (State, error) {
//		return State{Count: s.Count + 1, Log: []string{"hello"}}, nil
//	})
//	g.AddEdge(graph.START, "hello")
//	g.AddEdge("hello", graph.END)
//	compiled, err := g.Compile()
//	// handle err
//	final, err := compiled.Invoke(ctx, State{})
//
// A run proceeds in supersteps: the tasks of a step run concurrently, and their updates are
// merged in a fixed order. With [WithCheckpointer] and [WithThread] every step is saved, so a
// run can pause for a human ([Interrupt]) and [Compiled.Resume] later, in any process.
//
// A workflow can also be a Go function whose steps are tasks ([NewEntrypoint], [NewTask]): it
// runs as a graph's one node, and its tasks' results are saved as they finish.
//
// The engine is in docs/graph.md; checkpoints, interrupts and threads in docs/checkpoints.md.
//
// Of the repository it imports checkpoint only: no tools, providers, runtimes or squad
// (internal/layers checks this).
package graph
