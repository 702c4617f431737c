// Package graph is a typed state-graph engine: declare a state type, nodes that return updates to
// it, and edges between them; compile; then invoke or stream a run.
//
// A run proceeds in supersteps. Every task of the frontier runs concurrently; each task's update is
// recorded as it finishes; when all are done the updates are merged into the state by the graph's
// reducer in the frontier's order (so the result never depends on timing), and the next frontier is
// computed from static edges, routers (which see the merged state), Command gotos and Sends. A node
// that several finished nodes lead to runs once in the next step; every Send is a task of its own.
// Two tasks of one step that set a field keeping one value fail the run (InvalidUpdateError); a
// deferred node (Defer) waits until nothing else is left to run.
//
// With a checkpoint.Saver and a thread ID, every superstep is saved: a run can pause for a human
// with Interrupt and be resumed later, in the same process or another, and a run that failed or
// was killed resumes by running only the tasks that had not finished. A ResumeCommand answers,
// edits the state and adds nodes in one call. Nodes with a CachePolicy reuse the outputs of
// inputs seen before, from a NodeCache. What a task changes beside the state, in the saver's
// database (Effect), is saved with its update in one call: a resumed run finds both or neither.
//
// # Checkpoints hold what changed
//
// A checkpoint stores the update of each task and, now and then, a snapshot of the whole state:
// by default once the bytes saved since the last snapshot reach twice its size (WithSnapshotEvery
// sets a fixed interval instead). An invocation's input and UpdateState's update are stored as
// updates too. A state is rebuilt from its nearest snapshot and the updates after it. What a
// thread stores thus grows with its updates, however large the state grows — when updates hold
// only what changed. Keep deltas:
//
//   - A field that grows (a log, a conversation) is appended to by the reducer: tag it
//     graph:"append", or append in your own reducer (SetReducer). A node returns only the new
//     elements, never the list so far.
//   - A field that must sometimes be replaced or cleared instead (a compaction) gets a flag in
//     the update that tells the reducer so, rather than every update carrying the whole field.
//   - Work in progress over several steps (a batch of calls run one per step) is saved once,
//     by the step that starts it; each later step's update says how far it got and what it
//     produced.
//
// A node that returns the whole list each time defeats this: every step then stores the state,
// and a thread's storage grows with the square of its history.
//
// Rebuilding still reads a snapshot as large as the state. A thread invoked again and again in
// one process (an agent woken by each message) can skip that: WithCache keeps the latest state of
// recent threads as their runs left it, and a run that finds its thread's latest checkpoint there
// starts from it (see Cache).
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
