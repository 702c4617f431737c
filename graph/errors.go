package graph

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ErrNoCheckpointer is returned when a feature that saves the run (Interrupt, InterruptBefore and
// InterruptAfter, Resume) is used without a checkpointer and a thread ID.
var ErrNoCheckpointer = errors.New("graph: this needs a checkpointer and a thread ID (WithCheckpointer, WithThread)")

// ErrNothingToResume is returned by Resume when the thread has no checkpoint or nothing left to run.
var ErrNothingToResume = errors.New("graph: nothing to resume")

// NodeError is the error of a task: the node, the superstep and what went wrong.
type NodeError struct {
	Node   string
	Step   int
	TaskID string
	Err    error
}

func (e *NodeError) Error() string {
	return fmt.Sprintf("graph: node %q (step %d): %v", e.Node, e.Step, e.Err)
}

func (e *NodeError) Unwrap() error { return e.Err }

// PanicError is a panic recovered from a node or router, with the stack where it happened.
type PanicError struct {
	Value any
	Stack []byte
}

func (e *PanicError) Error() string { return fmt.Sprintf("panic: %v", e.Value) }

// TimeoutError is an attempt of a node that did not finish within its WithTimeout.
type TimeoutError struct {
	Node    string
	Timeout time.Duration
}

func (e *TimeoutError) Error() string {
	return fmt.Sprintf("node %q did not finish within %s", e.Node, e.Timeout)
}

// Unwrap makes errors.Is(err, context.DeadlineExceeded) hold for timeouts.
func (e *TimeoutError) Unwrap() error { return context.DeadlineExceeded }

// RecursionLimitError is returned when a run would take more supersteps than its limit.
type RecursionLimitError struct{ Limit int }

func (e *RecursionLimitError) Error() string {
	return fmt.Sprintf("graph: recursion limit of %d supersteps reached without hitting END (raise it with WithRecursionLimit)", e.Limit)
}

// InvalidUpdateError is a superstep in which several tasks set a field that keeps one value (a
// field with no tag under the default reducer): merging them would keep one value and drop the
// others without a word. Tag the field graph:"append" or graph:"merge" to combine the values, or
// graph:"last" to keep the last in frontier order, or set a reducer (SetReducer). The tasks'
// updates stay saved, so a run of a graph fixed that way resumes without running them again.
type InvalidUpdateError struct {
	Step  int
	Field string   // the field; "" when the state type is not a struct
	Nodes []string // the nodes of the tasks that set it, in frontier order
}

func (e *InvalidUpdateError) Error() string {
	what := "the state"
	if e.Field != "" {
		what = "field " + e.Field
	}
	var names []string // in order of first appearance, with how many tasks of each
	count := map[string]int{}
	for _, n := range e.Nodes {
		if count[n] == 0 {
			names = append(names, n)
		}
		count[n]++
	}
	nodes := make([]string, len(names))
	for i, n := range names {
		nodes[i] = strconv.Quote(n)
		if count[n] > 1 {
			nodes[i] += fmt.Sprintf(" (%d tasks)", count[n])
		}
	}
	return fmt.Sprintf("graph: step %d: tasks of nodes %s each set %s, which keeps one value per superstep; tag it graph:\"append\", graph:\"merge\" or graph:\"last\", or set a reducer", e.Step, strings.Join(nodes, ", "), what)
}

// InterruptInfo is a pending request for input: raised by a node with Interrupt, or by
// WithInterruptBefore / WithInterruptAfter.
type InterruptInfo struct {
	// ID identifies the interrupt among the thread's pending ones; ResumeByID uses it.
	ID string
	// Node is the node that asked (in NS, for nodes of subgraphs).
	Node string
	NS   string
	// Value is the payload given to Interrupt. When the run was loaded from a checkpoint it is the
	// payload decoded by the serializer into an untyped value (for JSON: map[string]any, string, ...).
	Value any
	// When is "during" for Interrupt calls, "before" or "after" for the compile-time interrupts.
	When string
}

// Interrupted is the error of a run that paused for input. The run's checkpoint is saved; resume
// it with Resume and the values the interrupts ask for.
type Interrupted struct {
	Interrupts []InterruptInfo
}

func (e *Interrupted) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "graph: run interrupted, waiting for %d resume value(s):", len(e.Interrupts))
	for _, it := range e.Interrupts {
		v := fmt.Sprint(it.Value)
		if len(v) > 80 {
			v = v[:77] + "..."
		}
		fmt.Fprintf(&b, " [%s %s %q: %s]", it.When, it.Node, it.ID, v)
	}
	return b.String()
}

// ErrNoTask is wrapped by the error of Effect called outside a running task.
var ErrNoTask = errors.New("graph: no task runs in this context")
