package graph

import (
	"context"
	"errors"
	"fmt"

	"github.com/agiraph/agiraph/checkpoint"
)

// AddSubgraph adds a compiled graph of the same state type as a node. The subgraph starts from the
// parent's state, and the sum of the updates it made comes back to the parent as one update, so
// appended lists are not appended twice.
//
// A subgraph shares its parent's checkpointer and thread, under its own namespace: it can
// interrupt, and it resumes where it stopped. Its nodes may return a Command with ToParent to
// continue in the parent.
func (g *StateGraph[S]) AddSubgraph(name string, child *Compiled[S], opts ...NodeOption) {
	addSubgraph(g, name, child, func(p S) S { return p }, func(_ S, _ S, delta S) S { return delta }, opts)
}

// AddMappedSubgraph adds a compiled graph with its own state type C as a node of g: in builds the
// subgraph's input from the parent's state, and out builds the parent's update from the parent's
// state and the subgraph's final state. A Send in a ToParent command of the subgraph carries a C
// argument; out maps it as if it were a final state.
func AddMappedSubgraph[P, C any](g *StateGraph[P], name string, child *Compiled[C], in func(P) C, out func(parent P, final C) P, opts ...NodeOption) {
	if in == nil || out == nil {
		g.errs = append(g.errs, fmt.Errorf("graph: subgraph %q: nil mapping", name))
		return
	}
	addSubgraph(g, name, child, in, func(p P, final C, _ C) P { return out(p, final) }, opts)
}

func addSubgraph[P, C any](g *StateGraph[P], name string, child *Compiled[C], in func(P) C, out func(p P, final, delta C) P, opts []NodeOption) {
	if child == nil {
		g.errs = append(g.errs, fmt.Errorf("graph: subgraph %q is nil", name))
		return
	}
	fn := func(ctx context.Context, p P) (Command[P], error) {
		final, delta, toParent, err := child.runNested(ctx, in(p))
		if err != nil {
			var ir *Interrupted
			if errors.As(err, &ir) {
				return Command[P]{}, &interruptSignal{interrupts: ir.Interrupts}
			}
			return Command[P]{}, err
		}
		cmd := Command[P]{Update: out(p, final, delta)}
		if toParent != nil {
			cmd.Goto = toParent.Goto
			for _, s := range toParent.Sends {
				cmd.Sends = append(cmd.Sends, Send[P]{Node: s.Node, Arg: out(p, s.Arg, s.Arg)})
			}
		}
		return cmd, nil
	}
	g.addNode(name, fn, false, child, opts)
}

// runNested runs g as a subgraph inside the task whose context is ctx. When the task already ran
// the subgraph partway (it was interrupted, failed or the process died), the subgraph continues
// from its own checkpoint instead of starting over.
func (g *Compiled[S]) runNested(ctx context.Context, input S) (final, delta S, toParent *Command[S], err error) {
	sc := scopeFrom(ctx)
	if sc == nil {
		return final, delta, nil, errors.New("graph: a subgraph must run inside a node")
	}
	r, err := g.newRun(g.cfg, sc)
	if err != nil {
		return final, delta, nil, err
	}
	ctx = r.traceRun(ctx, "graph.subgraph")
	defer func() { r.endRun(ctx, err) }()
	r.trackDelta = true
	if r.saving {
		t, err := r.cfg.saver.Get(ctx, r.nsConfig(""))
		switch {
		case err == nil && len(t.Checkpoint.Next) > 0:
			var answer any
			if sc.resuming && len(sc.resume) > 0 {
				answer = sc.resume[len(sc.resume)-1]
			}
			final, err = r.resumeWith(ctx, answer, sc.resuming)
			return final, r.delta, r.toParent, err
		case err == nil && sc.resuming:
			// It finished with a pause after its last node (WithInterruptAfter), which the
			// answer lets pass: it hands back what it made rather than starting over.
			if final, _, err = r.stateAt(ctx, t); err != nil {
				return final, delta, nil, err
			}
			delta, err = r.deltaAt(ctx, t)
			return final, delta, nil, err
		case err != nil && !errors.Is(err, checkpoint.ErrNotFound):
			return final, delta, nil, fmt.Errorf("graph: subgraph %q: %w", sc.path(), err)
		}
	}
	final, err = r.start(ctx, input)
	return final, r.delta, r.toParent, err
}
