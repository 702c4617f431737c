package harnessed

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/agiraph/agiraph/graph"
	"github.com/agiraph/agiraph/hooks"
	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/runtime"
	"github.com/agiraph/agiraph/tools"
)

// WithHooks runs these hooks, in order, around every model call and tool call of the
// assignments (see package hooks): they may rewrite the request, the answer, a call's arguments
// or its result, refuse them, or hold a tool call for the human's approval — the assignment
// then stops Waiting, its Outcome.Approval the pending call, until it is run again with the
// human's answer (hooks.ParseVerdict) as Assignment.Answer. What the hooks refuse or change is
// reported as Hooked events. ask_human, which the runtime answers itself, does not go through
// them.
func WithHooks(hs ...hooks.Hook) Option {
	return func(c *config) { c.hooks = append(c.hooks, hs...) }
}

// hookCtx is ctx carrying who calls, for the hooks.
func (w *worker) hookCtx(ctx context.Context) context.Context {
	return hooks.WithCaller(ctx, hooks.Caller{Assignment: w.a.ID, Worker: w.a.Worker})
}

// hooked reports what a hook did.
func (w *worker) hooked(format string, args ...any) {
	w.rep.Emit(runtime.Event{Kind: runtime.Hooked, Text: fmt.Sprintf(format, args...)})
}

// beforeModel runs the hooks on req, whose messages it copies first so that the hooks can
// change them without changing the conversation.
func (w *worker) beforeModel(ctx context.Context, req *providers.Request) error {
	if len(w.rt.cfg.hooks) == 0 {
		return nil
	}
	req.Messages = slices.Clone(req.Messages)
	for i := range req.Messages {
		req.Messages[i].Parts = slices.Clone(req.Messages[i].Parts)
	}
	if err := w.rt.cfg.hooks.BeforeModel(w.hookCtx(ctx), req); err != nil {
		w.hooked("refused the model call: %v", err)
		return fmt.Errorf("harnessed: a hook refused the model call: %w", err)
	}
	return nil
}

// afterModel runs the hooks on the model's answer.
func (w *worker) afterModel(ctx context.Context, req *providers.Request, resp *providers.Response) error {
	if len(w.rt.cfg.hooks) == 0 {
		return nil
	}
	if err := w.rt.cfg.hooks.AfterModel(w.hookCtx(ctx), req, resp); err != nil {
		w.hooked("refused the model's answer: %v", err)
		return fmt.Errorf("harnessed: a hook refused the model's answer: %w", err)
	}
	return nil
}

// guard runs the hooks before the calls of batch. It returns the calls to run now (a leading
// part of batch, rewritten by the hooks) and, for each, the result a hook or the human's
// rejection gave it instead of running it. A call that waits for approval comes alone: the
// human's answer is asked for here (the assignment stops until it comes), and when it comes
// the call runs as approved or edited, or is rejected.
func (w *worker) guard(ctx context.Context, batch []tools.Call) ([]tools.Call, []*tools.Result, error) {
	if len(w.rt.cfg.hooks) == 0 {
		return batch, make([]*tools.Result, len(batch)), nil
	}
	ctx = w.hookCtx(ctx)
	calls := slices.Clone(batch)
	done := make([]*tools.Result, len(calls))
	for i := range calls {
		before := calls[i]
		d, err := w.rt.cfg.hooks.BeforeTool(ctx, &calls[i])
		var refused *hooks.Refused
		switch {
		case errors.As(err, &refused):
			w.hooked("refused the call of %s: %s", before.Name, refused.Reason)
			r := hooks.RefusedResult(before, refused)
			done[i] = &r
			continue
		case err != nil:
			return nil, nil, fmt.Errorf("harnessed: a hook before the call of %s: %w", before.Name, err)
		}
		if string(calls[i].Args) != string(before.Args) {
			w.hooked("changed the arguments of %s to %s", before.Name, calls[i].Args)
		}
		if d != hooks.Ask {
			continue
		}
		if i > 0 { // the calls before it run first; it comes alone, next
			return calls[:i], done[:i], nil
		}
		r, err := w.approve(ctx, &calls[0])
		return calls[:1], []*tools.Result{r}, err
	}
	return calls, done, nil
}

// approve asks the human to approve c: it stops the assignment until the answer comes, then
// returns nil to run c — with the arguments the human edited, if so — or the result of a
// rejected call. An answer that is not a verdict rejects the call: the model reads it.
func (w *worker) approve(ctx context.Context, c *tools.Call) (*tools.Result, error) {
	a := hooks.Approval{Worker: w.a.Worker, CallID: c.ID, Tool: c.Name, Args: c.Args}
	if t, ok := w.reg.Get(c.Name); ok {
		a.Schema = t.Schema
	}
	answer, err := graph.Interrupt[string](ctx, a)
	if err != nil {
		w.rep.Emit(runtime.Event{Kind: runtime.AskedHuman, Text: a.Question(), Tool: &runtime.ToolEvent{ID: c.ID, Name: c.Name, Args: c.Args}})
		return nil, err
	}
	v, err := hooks.ParseVerdict(a, answer)
	switch {
	case err != nil:
		v.Reason = fmt.Sprintf("the human answered %q (%v)", answer, err)
	case v.Approve && v.Args != nil:
		w.hooked("the human edited the arguments of %s to %s", c.Name, v.Args)
		c.Args = v.Args
		return nil, nil
	case v.Approve:
		w.hooked("the human approved the call of %s", c.Name)
		return nil, nil
	}
	w.hooked("the human rejected the call of %s: %s", c.Name, v.Reason)
	r := hooks.RefusedResult(*c, &hooks.Refused{Reason: "the human rejected it: " + v.Reason})
	return &r, nil
}

// afterTool runs the hooks on the result of c.
func (w *worker) afterTool(ctx context.Context, c tools.Call, res tools.Result) (tools.Result, error) {
	if len(w.rt.cfg.hooks) == 0 {
		return res, nil
	}
	was := res
	err := w.rt.cfg.hooks.AfterTool(w.hookCtx(ctx), c, &res)
	var refused *hooks.Refused
	switch {
	case errors.As(err, &refused):
		w.hooked("refused the result of %s: %s", c.Name, refused.Reason)
		return hooks.RefusedResult(c, refused), nil
	case err != nil:
		return res, fmt.Errorf("harnessed: a hook after the call of %s: %w", c.Name, err)
	case res != was:
		w.hooked("changed the result of %s", c.Name)
	}
	return res, nil
}

// approvalOf returns the approval an interrupt's payload holds: the value given to Interrupt,
// or, loaded from a checkpoint, its decoded form. A question to the human (a string) is none.
func approvalOf(v any) *hooks.Approval {
	switch v := v.(type) {
	case hooks.Approval:
		return &v
	case string, nil:
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	var a hooks.Approval
	if json.Unmarshal(b, &a) != nil || a.Tool == "" {
		return nil
	}
	return &a
}
