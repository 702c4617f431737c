// Package graph is a typed state-graph engine: declare a state type, nodes that return updates to
// it, and edges between them; compile; then invoke or stream a run.
//
// A run proceeds in supersteps. Every task of the frontier runs concurrently; each task's update is
// recorded as it finishes; when all are done the updates are merged into the state by the graph's
// reducer in the frontier's order (so the result never depends on timing), and the next frontier is
// computed from static edges, routers (which see the merged state), Command gotos and Sends. A node
// that several finished nodes lead to runs once in the next step; every Send is a task of its own.
//
// With a checkpoint.Saver and a thread ID, every superstep is saved: a run can pause for a human
// with Interrupt and be resumed later, in the same process or another, and a run that failed or
// was killed resumes by running only the tasks that had not finished.
//
// A minimal graph:
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
package graph
