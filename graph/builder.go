package graph

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
)

// StateGraph declares a graph over the state type S: nodes, edges and the reducer. Declaration
// mistakes are collected and reported together by Compile.
type StateGraph[S any] struct {
	nodes   map[string]*node[S]
	order   []string // node names in declaration order
	edges   map[string][]string
	routers map[string][]*router[S]
	joins   []*join
	reducer Reducer[S]
	errs    []error
}

type node[S any] struct {
	name string
	run  CommandFunc[S]
	cfg  nodeConfig
	// command is true for nodes that may go anywhere through Commands.
	command bool
	// sub describes a subgraph node, for drawing.
	sub drawer
}

type router[S any] struct {
	source  string
	route   Router[S]
	targets []string // declared possible targets; empty means any node
}

// join runs target once after every one of sources has finished (in any supersteps).
type join struct {
	sources []string
	target  string
}

// New starts a graph over the state type S. Updates are merged by the default, tag-driven reducer
// (see Reducer) unless SetReducer replaces it.
func New[S any]() *StateGraph[S] {
	return &StateGraph[S]{
		nodes:   map[string]*node[S]{},
		edges:   map[string][]string{},
		routers: map[string][]*router[S]{},
	}
}

// SetReducer replaces the default reducer.
func (g *StateGraph[S]) SetReducer(r Reducer[S]) { g.reducer = r }

// AddNode adds a node that returns an update.
func (g *StateGraph[S]) AddNode(name string, fn NodeFunc[S], opts ...NodeOption) {
	if fn == nil {
		g.errs = append(g.errs, fmt.Errorf("graph: node %q: nil function", name))
		return
	}
	g.addNode(name, func(ctx context.Context, s S) (Command[S], error) {
		u, err := fn(ctx, s)
		return Command[S]{Update: u}, err
	}, false, nil, opts)
}

// AddCommandNode adds a node that returns a Command: an update and where to go next. Declare its
// possible targets with Destinations so that Compile can validate and Mermaid can draw them.
func (g *StateGraph[S]) AddCommandNode(name string, fn CommandFunc[S], opts ...NodeOption) {
	if fn == nil {
		g.errs = append(g.errs, fmt.Errorf("graph: node %q: nil function", name))
		return
	}
	g.addNode(name, fn, true, nil, opts)
}

func (g *StateGraph[S]) addNode(name string, fn CommandFunc[S], command bool, sub drawer, opts []NodeOption) {
	switch {
	case name == "":
		g.errs = append(g.errs, errors.New("graph: a node needs a name"))
		return
	case name == START || name == END:
		g.errs = append(g.errs, fmt.Errorf("graph: node name %q is reserved", name))
		return
	case g.nodes[name] != nil:
		g.errs = append(g.errs, fmt.Errorf("graph: duplicate node %q", name))
		return
	}
	n := &node[S]{name: name, run: fn, command: command, sub: sub}
	for _, o := range opts {
		o(&n.cfg)
	}
	if n.cfg.retry != nil {
		if err := n.cfg.retry.validate(); err != nil {
			g.errs = append(g.errs, fmt.Errorf("graph: node %q: %w", name, err))
		}
	}
	g.nodes[name] = n
	g.order = append(g.order, name)
}

// AddEdge makes to run in the superstep after from ran. from may be START; to may be END.
func (g *StateGraph[S]) AddEdge(from, to string) {
	if !slices.Contains(g.edges[from], to) {
		g.edges[from] = append(g.edges[from], to)
	}
}

// AddJoin makes to run once after every one of from has finished, whether they ran in the same
// superstep or in different ones; it then waits for all of them again.
func (g *StateGraph[S]) AddJoin(from []string, to string) {
	if len(from) == 0 {
		g.errs = append(g.errs, fmt.Errorf("graph: join into %q has no sources", to))
		return
	}
	g.joins = append(g.joins, &join{sources: slices.Clone(from), target: to})
}

// AddRouter routes from source by calling r after source ran, on the state before that superstep
// with source's update merged (see Router). targets declares the nodes r may choose (for
// validation and drawing); without them r may choose any node.
func (g *StateGraph[S]) AddRouter(source string, r Router[S], targets ...string) {
	if r == nil {
		g.errs = append(g.errs, fmt.Errorf("graph: router from %q: nil function", source))
		return
	}
	g.routers[source] = append(g.routers[source], &router[S]{source: source, route: r, targets: targets})
}

// AddConditionalEdges routes from source to the one node choose names (END to stop).
func (g *StateGraph[S]) AddConditionalEdges(source string, choose func(ctx context.Context, state S) string, targets ...string) {
	if choose == nil {
		g.errs = append(g.errs, fmt.Errorf("graph: conditional edges from %q: nil function", source))
		return
	}
	g.AddRouter(source, func(ctx context.Context, s S) Next[S] {
		return Next[S]{Goto: []string{choose(ctx, s)}}
	}, targets...)
}

// Compile validates the graph and returns a runnable form. Options set the defaults of its runs.
func (g *StateGraph[S]) Compile(opts ...Option) (*Compiled[S], error) {
	errs := slices.Clone(g.errs)
	reducer := g.reducer
	var one oneValue[S]
	if reducer == nil {
		r, o, err := tagReducer[S]()
		if err != nil {
			errs = append(errs, err)
		}
		reducer, one = r, o
	}
	errs = append(errs, g.validate()...)
	cfg := defaultConfig().with(opts)
	for _, set := range []map[string]bool{cfg.interruptBefore, cfg.interruptAfter} {
		for name := range set {
			if g.nodes[name] == nil {
				errs = append(errs, fmt.Errorf("graph: interrupt on unknown node %q", name))
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	// The compiled graph gets its own copies, so later changes to the builder do not reach it.
	c := &Compiled[S]{
		nodes:   maps.Clone(g.nodes),
		order:   slices.Clone(g.order),
		edges:   map[string][]string{},
		routers: map[string][]*router[S]{},
		joins:   slices.Clone(g.joins),
		reducer: reducer,
		one:     one,
		cfg:     cfg,
	}
	for k, v := range g.edges {
		c.edges[k] = slices.Clone(v)
	}
	for k, v := range g.routers {
		c.routers[k] = slices.Clone(v)
	}
	c.joinsBySource = map[string][]int{}
	for i, j := range g.joins {
		for _, s := range j.sources {
			c.joinsBySource[s] = append(c.joinsBySource[s], i)
		}
	}
	return c, nil
}

// validate reports unknown nodes in edges and unreachable nodes. A node with no way out is no
// mistake: its branch ends there, as with an edge to END.
func (g *StateGraph[S]) validate() []error {
	var errs []error
	known := func(name string) bool { return name == END || g.nodes[name] != nil }
	check := func(what, name string) {
		if name == START {
			errs = append(errs, fmt.Errorf("graph: %s leads to START", what))
		} else if !known(name) {
			errs = append(errs, fmt.Errorf("graph: %s names unknown node %q", what, name))
		}
	}
	source := func(what, name string) {
		if name == END {
			errs = append(errs, fmt.Errorf("graph: %s starts at END", what))
		} else if name != START && g.nodes[name] == nil {
			errs = append(errs, fmt.Errorf("graph: %s starts at unknown node %q", what, name))
		}
	}
	for _, from := range sortedKeys(g.edges) {
		for _, to := range g.edges[from] {
			what := fmt.Sprintf("edge %s → %s", from, to)
			source(what, from)
			check(what, to)
		}
	}
	for _, from := range sortedKeys(g.routers) {
		for _, r := range g.routers[from] {
			what := fmt.Sprintf("router from %s", from)
			source(what, from)
			for _, to := range r.targets {
				check(what, to)
			}
		}
	}
	for _, j := range g.joins {
		what := fmt.Sprintf("join into %s", j.target)
		for _, s := range j.sources {
			source(what, s)
		}
		check(what, j.target)
	}
	for _, name := range g.order {
		for _, to := range g.nodes[name].cfg.destinations {
			check(fmt.Sprintf("node %s's destinations", name), to)
		}
	}
	if len(errs) > 0 {
		return errs
	}
	if len(g.edges[START]) == 0 && len(g.routers[START]) == 0 {
		return []error{errors.New("graph: no entry: add an edge or router from START")}
	}
	// Reachability from START over every way control can move.
	reached := map[string]bool{START: true}
	queue := []string{START}
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		for _, to := range g.successors(n) {
			if !reached[to] {
				reached[to] = true
				queue = append(queue, to)
			}
		}
	}
	for _, name := range g.order {
		if !reached[name] {
			errs = append(errs, fmt.Errorf("graph: node %q is unreachable from START", name))
		}
	}
	return errs
}

// successors lists every node control may move to from name, as declared.
func (g *StateGraph[S]) successors(name string) []string {
	var out []string
	out = append(out, g.edges[name]...)
	for _, r := range g.routers[name] {
		if len(r.targets) == 0 {
			out = append(out, g.order...)
		}
		out = append(out, r.targets...)
	}
	if n := g.nodes[name]; n != nil {
		if n.command && len(n.cfg.destinations) == 0 {
			out = append(out, g.order...)
		}
		out = append(out, n.cfg.destinations...)
	}
	out = append(out, g.joinsFrom(name)...)
	return out
}

func (g *StateGraph[S]) joinsFrom(name string) []string {
	var out []string
	for _, j := range g.joins {
		if slices.Contains(j.sources, name) {
			out = append(out, j.target)
		}
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
