package graph

import "context"

// START and END are the virtual entry and exit of every graph: edges from START choose the first
// nodes, and an edge (or goto) to END ends that branch of the run.
const (
	START = "__start__"
	END   = "__end__"
)

// NodeFunc is a node: it reads the state (or, for a task made by a Send, the Send's argument) and
// returns an update, which the graph's reducer merges into the state. A node must treat its input
// as read-only: maps and slices in it are shared with the run.
type NodeFunc[S any] func(ctx context.Context, state S) (S, error)

// CommandFunc is a node that also decides where control goes next, by returning a Command.
type CommandFunc[S any] func(ctx context.Context, state S) (Command[S], error)

// Send asks for a task of Node that gets Arg as its input instead of the state: dynamic fan-out.
// Every Send becomes its own task in the next superstep.
type Send[S any] struct {
	Node string
	Arg  S
}

// Command is what a CommandFunc returns: an update, and where to go next in addition to the node's
// edges. With ToParent set, the command is carried out by the graph that contains this graph as a
// subgraph: the update is merged there (through the subgraph's mapping) and Goto and Sends name
// nodes of that graph; the subgraph's run ends.
type Command[S any] struct {
	Update   S
	Goto     []string
	Sends    []Send[S]
	ToParent bool
}

// Next is a router's decision: the nodes to run next (END stops this branch) and Sends.
type Next[S any] struct {
	Goto  []string
	Sends []Send[S]
}

// Router chooses where control goes after a node, from the state as it was before the superstep in
// which the node ran with the node's update merged: the updates of the step's other tasks are not
// in it (they are in the state the next superstep's nodes get). A router must treat the state as
// read-only, as a node does.
type Router[S any] func(ctx context.Context, state S) Next[S]

// Goto is a convenience for a router's decision to go to the given nodes.
func Goto[S any](nodes ...string) Next[S] { return Next[S]{Goto: nodes} }

// ResumeCommand is a value for Resume and StreamResume that does more than answer interrupts
// (LangGraph's Command(resume=…, update=…, goto=…)): Value answers them as Resume's value would;
// Update is merged into the state before the paused tasks run again, as UpdateState would, in a
// checkpoint that keeps what the paused step's finished tasks wrote and the interrupts waiting
// for Value; Goto adds a task of each named node to the superstep that runs next. A command with an
// Update or a Goto runs also on a thread that has finished or has no checkpoint yet.
type ResumeCommand[S any] struct {
	Value  any
	Update S
	Goto   []string
}
