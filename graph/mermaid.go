package graph

import (
	"fmt"
	"regexp"
	"strings"
)

// Mermaid draws the graph as a Mermaid flowchart: solid arrows for edges, dotted arrows for the
// possible choices of routers and command nodes, thick arrows into joins, and subgraphs as boxes
// holding their own nodes.
func (g *Compiled[S]) Mermaid() string {
	var b strings.Builder
	b.WriteString("flowchart TD\n")
	g.draw(&b, &mermaidIDs{byPath: map[string]string{}, taken: map[string]bool{}}, "", "\t")
	return b.String()
}

// drawer is what a subgraph node needs from its compiled graph to be drawn.
type drawer interface {
	draw(b *strings.Builder, ids *mermaidIDs, prefix, indent string)
}

// mermaidIDs gives every node of a drawing, subgraphs included, its own Mermaid ID: the node's
// path with unsafe characters replaced, and a number added where two paths would look the same.
type mermaidIDs struct {
	byPath map[string]string
	taken  map[string]bool
}

var unsafeID = regexp.MustCompile(`[^A-Za-z0-9_]`)

func (m *mermaidIDs) of(path string) string {
	if id, ok := m.byPath[path]; ok {
		return id
	}
	base := unsafeID.ReplaceAllString(path, "_")
	id := base
	for i := 2; m.taken[id]; i++ {
		id = fmt.Sprintf("%s_%d", base, i)
	}
	m.byPath[path], m.taken[id] = id, true
	return id
}

func (g *Compiled[S]) draw(b *strings.Builder, ids *mermaidIDs, prefix, indent string) {
	id := func(name string) string { return ids.of(prefix + name) }
	// A quote would end the label early: Mermaid writes it as an entity.
	label := func(name string) string { return strings.ReplaceAll(name, `"`, "#quot;") }
	fmt.Fprintf(b, "%s%s([\"start\"])\n", indent, id(START))
	for _, name := range g.order {
		n := g.nodes[name]
		if n.sub != nil {
			fmt.Fprintf(b, "%ssubgraph %s [\"%s\"]\n", indent, id(name), label(name))
			n.sub.draw(b, ids, prefix+name+"/", indent+"\t")
			fmt.Fprintf(b, "%send\n", indent)
			continue
		}
		fmt.Fprintf(b, "%s%s[\"%s\"]\n", indent, id(name), label(name))
	}
	fmt.Fprintf(b, "%s%s([\"end\"])\n", indent, id(END))
	for _, e := range g.Edges() {
		fmt.Fprintf(b, "%s%s %s %s\n", indent, id(e.From), arrowStyles[e.Kind], id(e.To))
	}
}

// EdgeKind tells when a run goes along an edge.
type EdgeKind uint8

// The kinds of edges.
const (
	EdgeDirect      EdgeKind = iota // always (AddEdge)
	EdgeConditional                 // when a router or a command node chooses it
	EdgeJoin                        // into a join, which runs once all its sources ran
)

// Mermaid's arrow for each kind of edge.
var arrowStyles = [...]string{EdgeDirect: "-->", EdgeConditional: "-.->", EdgeJoin: "==>"}

// Edge is one arrow between two nodes of the graph (START and END included).
type Edge struct {
	From, To string
	Kind     EdgeKind
}

// Nodes returns the names of the graph's nodes in the order they were added, START and END not
// included; a subgraph node is one node.
func (g *Compiled[S]) Nodes() []string { return append([]string(nil), g.order...) }

// Edges returns the graph's arrows as Mermaid draws them: edges, the possible choices of routers
// (every node and END for a router that declared none) and command nodes, then the sources of
// joins.
func (g *Compiled[S]) Edges() []Edge {
	var edges []Edge
	for _, from := range append([]string{START}, g.order...) {
		for _, to := range g.edges[from] {
			edges = append(edges, Edge{from, to, EdgeDirect})
		}
		for _, rt := range g.routers[from] {
			targets := rt.targets
			if len(targets) == 0 {
				targets = append(append([]string{}, g.order...), END)
			}
			for _, to := range targets {
				edges = append(edges, Edge{from, to, EdgeConditional})
			}
		}
		if n := g.nodes[from]; n != nil {
			for _, to := range n.cfg.destinations {
				edges = append(edges, Edge{from, to, EdgeConditional})
			}
		}
	}
	for _, j := range g.joins {
		for _, from := range j.sources {
			edges = append(edges, Edge{from, j.target, EdgeJoin})
		}
	}
	return edges
}
