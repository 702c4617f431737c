package graph

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"reflect"
)

// IOGraph is a compiled graph over the state S seen through an input type and an output type of
// its own, as LangGraph's input and output schemas: Invoke and Stream take an In, whose fields set
// the state's fields of the same names, and Invoke and Resume return an Out, made of the final
// state's fields of the same names. The state may hold more (notes between nodes, a node's private
// input: see AddNodeWithInput) than a caller gives or gets. Everything else (State, History,
// UpdateState, the events of Stream) is the compiled graph's, over S.
type IOGraph[In, Out, S any] struct {
	*Compiled[S]
	in  func(In) S
	out func(S) Out
}

// NewIO returns g seen through In and Out: structs whose exported fields are fields of S, of the
// same names and types (embedded structs' fields count as fields). An error names every field
// that S lacks.
func NewIO[In, Out, S any](g *Compiled[S]) (*IOGraph[In, Out, S], error) {
	in, inErr := project[In, S, S]("input type")
	out, outErr := project[S, Out, S]("output type")
	if err := errors.Join(inErr, outErr); err != nil {
		return nil, err
	}
	return &IOGraph[In, Out, S]{Compiled: g, in: in, out: out}, nil
}

// Invoke runs the graph from input, as Compiled.Invoke, and returns the output made of the state
// it returns (the state so far, when the run pauses or fails).
func (g *IOGraph[In, Out, S]) Invoke(ctx context.Context, input In, opts ...Option) (Out, error) {
	s, err := g.Compiled.Invoke(ctx, g.in(input), opts...)
	return g.out(s), err
}

// Resume continues the thread, as Compiled.Resume, and returns the output made of the state it
// returns.
func (g *IOGraph[In, Out, S]) Resume(ctx context.Context, value any, opts ...Option) (Out, error) {
	s, err := g.Compiled.Resume(ctx, value, opts...)
	return g.out(s), err
}

// Stream runs the graph from input, as Compiled.Stream: its events carry states of S, as
// LangGraph's values mode yields the whole state.
func (g *IOGraph[In, Out, S]) Stream(ctx context.Context, input In, opts ...Option) iter.Seq2[Event, error] {
	return g.Compiled.Stream(ctx, g.in(input), opts...)
}

// AddNodeWithInput adds a node whose input is a type of its own, P (LangGraph's node input
// schema): a struct whose exported fields are fields of the state, of the same names and types,
// copied from the state (or from a Send's argument) for each task. The node sees what it needs
// and nothing else; its update is a state, as any node's. Compile names every field of P the state
// lacks.
func AddNodeWithInput[P, S any](g *StateGraph[S], name string, fn func(ctx context.Context, in P) (S, error), opts ...NodeOption) {
	if fn == nil {
		g.errs = append(g.errs, fmt.Errorf("graph: node %q: nil function", name))
		return
	}
	in, err := project[S, P, S](fmt.Sprintf("node %q: input type", name))
	if err != nil {
		g.errs = append(g.errs, err)
		return
	}
	g.AddNode(name, func(ctx context.Context, s S) (S, error) { return fn(ctx, in(s)) }, opts...)
}

// fieldPair is a field of a struct and the state's field of the same name, by index paths.
type fieldPair struct{ field, state []int }

// project returns the function that builds a To from the fields of the same names of a From; one
// of them is the state S, the other the type whose fields are paired (see fieldPairs).
func project[From, To, S any](what string) (func(From) To, error) {
	state, narrow := reflect.TypeFor[S](), reflect.TypeFor[From]()
	toState := state == reflect.TypeFor[To]()
	if !toState {
		narrow = reflect.TypeFor[To]()
	}
	pairs, err := fieldPairs(narrow, state, what)
	return func(from From) To {
		var to To
		tv, fv := reflect.ValueOf(&to).Elem(), reflect.ValueOf(from)
		for _, p := range pairs {
			dst, src := p.field, p.state
			if toState {
				dst, src = src, dst
			}
			tv.FieldByIndex(dst).Set(fv.FieldByIndex(src))
		}
		return to
	}, err
}

// fieldPairs pairs every exported field of t with the field of state of the same name and type.
// Neither may reach a field through an embedded pointer, which may be nil.
func fieldPairs(t, state reflect.Type, what string) ([]fieldPair, error) {
	if t.Kind() != reflect.Struct || state.Kind() != reflect.Struct {
		return nil, fmt.Errorf("graph: %s %v: it and the state %v must be structs", what, t, state)
	}
	var (
		pairs []fieldPair
		errs  []error
	)
	for _, f := range reflect.VisibleFields(t) {
		if f.Anonymous || !f.IsExported() || throughPointer(t, f.Index) {
			continue
		}
		sf, ok := state.FieldByName(f.Name)
		switch {
		case !ok || throughPointer(state, sf.Index):
			errs = append(errs, fmt.Errorf("graph: %s %v: the state %v has no field %s", what, t, state, f.Name))
		case sf.Type != f.Type:
			errs = append(errs, fmt.Errorf("graph: %s %v: field %s is a %v, the state's is a %v", what, t, f.Name, f.Type, sf.Type))
		default:
			pairs = append(pairs, fieldPair{field: f.Index, state: sf.Index})
		}
	}
	return pairs, errors.Join(errs...)
}

// throughPointer reports whether the field of t at index is reached through an embedded pointer.
func throughPointer(t reflect.Type, index []int) bool {
	for _, i := range index[:len(index)-1] {
		t = t.Field(i).Type
		if t.Kind() == reflect.Pointer {
			return true
		}
	}
	return false
}
