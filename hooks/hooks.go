// Package hooks lets a program see and change what an agent sends to its model and to its tools:
// a [Hook] runs before and after each model call and each tool call, and may rewrite the request,
// the response, the call's arguments or its result, refuse any of them with a reason, or hold a
// tool call for a human's approval.
//
// The harnessed runtime runs the hooks it is given (harnessed.WithHooks), and a squad runs them
// for its coordinator and its harnessed workers (nodes.WithHooks). [Denylist] and [RedactPII]
// are guardrails ready to use; [Approvals] is the policy that asks a human before some tools
// run. This package imports only providers and tools.
package hooks

import (
	"context"
	"fmt"

	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/tools"
)

// Hook sees a worker's model and tool calls, and may change or refuse them. A hook may be
// called again for the same call — when a run resumes after a crash or a pause — so it should
// decide the same way given the same input. Hooks run in the worker's goroutine; one shared by
// several workers must be safe for concurrent use.
//
// A hook changes a request, a response, a call or a result by assigning to it (fields, or
// elements of its slices); it must not change what their slices and pointers share with the
// worker's conversation in place: to change a message's part, assign a new Part, and to change
// a part's tool result, point it at a new tools.Result.
type Hook interface {
	// BeforeModel runs before each model call. An error refuses the call: the worker's turn
	// ends with it.
	BeforeModel(ctx context.Context, req *providers.Request) error
	// AfterModel runs after each model call that succeeded, before its answer is kept. An error
	// refuses the answer: the worker's turn ends with it.
	AfterModel(ctx context.Context, req *providers.Request, resp *providers.Response) error
	// BeforeTool runs before each tool call, and decides whether it runs now or waits for a
	// human's approval ([Ask]). An error made with [Refuse] refuses the call: the model gets an
	// error result with the reason; any other error ends the worker's turn.
	BeforeTool(ctx context.Context, call *tools.Call) (Decision, error)
	// AfterTool runs after each tool call, and may change its result. An error made with
	// [Refuse] replaces the result with an error result with the reason; any other error ends
	// the worker's turn.
	AfterTool(ctx context.Context, call tools.Call, res *tools.Result) error
}

// Decision is what BeforeTool decides about a call it does not refuse.
type Decision int

const (
	// Run runs the call (as the hook left it).
	Run Decision = iota
	// Ask holds the call until a human approves, edits or rejects it (see [Approval]).
	Ask
)

// Base is a Hook that changes nothing: embed it in a hook that implements only some points.
type Base struct{}

// BeforeModel does nothing.
func (Base) BeforeModel(context.Context, *providers.Request) error { return nil }

// AfterModel does nothing.
func (Base) AfterModel(context.Context, *providers.Request, *providers.Response) error { return nil }

// BeforeTool runs the call.
func (Base) BeforeTool(context.Context, *tools.Call) (Decision, error) { return Run, nil }

// AfterTool does nothing.
func (Base) AfterTool(context.Context, tools.Call, *tools.Result) error { return nil }

// Refused is the error a hook returns to refuse a call; Reason is what the model (or, for a
// model call, whoever runs the worker) reads.
type Refused struct{ Reason string }

func (e *Refused) Error() string { return "refused: " + e.Reason }

// Refuse returns the error that refuses a call for reason.
func Refuse(reason string) error { return &Refused{Reason: reason} }

// Chain is hooks run as one, in order: each Before and After point runs every hook in turn on
// what the previous one left, and stops at the first error. A tool call waits for approval if
// any hook asks for it.
type Chain []Hook

// BeforeModel runs each hook's BeforeModel.
func (c Chain) BeforeModel(ctx context.Context, req *providers.Request) error {
	for _, h := range c {
		if err := h.BeforeModel(ctx, req); err != nil {
			return err
		}
	}
	return nil
}

// AfterModel runs each hook's AfterModel.
func (c Chain) AfterModel(ctx context.Context, req *providers.Request, resp *providers.Response) error {
	for _, h := range c {
		if err := h.AfterModel(ctx, req, resp); err != nil {
			return err
		}
	}
	return nil
}

// BeforeTool runs each hook's BeforeTool; the call waits for approval if any asks.
func (c Chain) BeforeTool(ctx context.Context, call *tools.Call) (Decision, error) {
	d := Run
	for _, h := range c {
		hd, err := h.BeforeTool(ctx, call)
		if err != nil {
			return Run, err
		}
		d = max(d, hd)
	}
	return d, nil
}

// AfterTool runs each hook's AfterTool.
func (c Chain) AfterTool(ctx context.Context, call tools.Call, res *tools.Result) error {
	for _, h := range c {
		if err := h.AfterTool(ctx, call, res); err != nil {
			return err
		}
	}
	return nil
}

// Caller says whose calls a hook sees: the harnessed runtime puts it in the hooks' context.
type Caller struct {
	// Assignment is the assignment's ID; Worker the worker's name (a squad's coordinator is
	// "coordinator").
	Assignment, Worker string
}

type callerKey struct{}

// WithCaller returns ctx carrying c, for the hooks run under it.
func WithCaller(ctx context.Context, c Caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}

// CallerOf returns the caller ctx carries (the zero Caller when none).
func CallerOf(ctx context.Context) Caller {
	c, _ := ctx.Value(callerKey{}).(Caller)
	return c
}

// RefusedResult is the error result the model gets for call, refused by a hook.
func RefusedResult(call tools.Call, r *Refused) tools.Result {
	return tools.Result{CallID: call.ID, Name: call.Name, Content: fmt.Sprintf("The call of %s was refused: %s", call.Name, r.Reason), IsError: true}
}
