package graph_test

import (
	"context"
	"strings"
	"testing"

	"github.com/agiraph/agiraph/graph"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type merState struct {
	N   int
	Log []string `graph:"append"`
}

func merNode(context.Context, merState) (merState, error) { return merState{}, nil }

func merCompile[S any](t *testing.T, g *graph.StateGraph[S]) *graph.Compiled[S] {
	t.Helper()
	c, err := g.Compile()
	if err != nil {
		t.Fatalf("Compile: %v", err)
	}
	return c
}

func TestMermaid(t *testing.T) {
	tests := []struct {
		name  string
		build func(t *testing.T) string
		want  string
	}{
		{
			name: "single edge",
			build: func(t *testing.T) string {
				g := graph.New[merState]()
				g.AddNode("only", merNode)
				g.AddEdge(graph.START, "only")
				g.AddEdge("only", graph.END)
				return merCompile(t, g).Mermaid()
			},
			want: `flowchart TD
	__start__(["start"])
	only["only"]
	__end__(["end"])
	__start__ --> only
	only --> __end__
`,
		},
		{
			name: "names that clean up to the same ID get different IDs",
			build: func(t *testing.T) string {
				g := graph.New[merState]()
				g.AddNode("my-tool", merNode)
				g.AddNode("my_tool", merNode)
				g.AddEdge(graph.START, "my-tool")
				g.AddEdge("my-tool", "my_tool")
				g.AddEdge("my_tool", graph.END)
				return merCompile(t, g).Mermaid()
			},
			want: `flowchart TD
	__start__(["start"])
	my_tool["my-tool"]
	my_tool_2["my_tool"]
	__end__(["end"])
	__start__ --> my_tool
	my_tool --> my_tool_2
	my_tool_2 --> __end__
`,
		},
		{
			name: "edges, conditional edge, join, command destinations and a mapped subgraph",
			build: func(t *testing.T) string {
				child := graph.New[int]()
				child.AddNode("x", func(_ context.Context, s int) (int, error) { return s + 1, nil })
				child.AddEdge(graph.START, "x")
				child.AddEdge("x", graph.END)

				g := graph.New[merState]()
				g.AddNode("plan", merNode)
				g.AddNode("my-tool", merNode)
				graph.AddMappedSubgraph(g, "sub", merCompile(t, child),
					func(p merState) int { return p.N },
					func(_ merState, n int) merState { return merState{N: n} })
				g.AddNode("merge", merNode)
				g.AddCommandNode("cmd", func(context.Context, merState) (graph.Command[merState], error) {
					return graph.Command[merState]{Goto: []string{graph.END}}, nil
				}, graph.Destinations("plan", graph.END))
				g.AddEdge(graph.START, "plan")
				g.AddEdge("plan", "my-tool")
				g.AddEdge("plan", "sub")
				g.AddJoin([]string{"my-tool", "sub"}, "merge")
				g.AddConditionalEdges("merge", func(context.Context, merState) string { return graph.END }, "cmd", graph.END)
				return merCompile(t, g).Mermaid()
			},
			want: `flowchart TD
	__start__(["start"])
	plan["plan"]
	my_tool["my-tool"]
	subgraph sub ["sub"]
		sub___start__(["start"])
		sub_x["x"]
		sub___end__(["end"])
		sub___start__ --> sub_x
		sub_x --> sub___end__
	end
	merge["merge"]
	cmd["cmd"]
	__end__(["end"])
	__start__ --> plan
	plan --> my_tool
	plan --> sub
	merge -.-> cmd
	merge -.-> __end__
	cmd -.-> plan
	cmd -.-> __end__
	my_tool ==> merge
	sub ==> merge
`,
		},
		{
			name: "router without declared targets may go anywhere; nested subgraphs",
			build: func(t *testing.T) string {
				inner := graph.New[merState]()
				inner.AddNode("leaf", merNode)
				inner.AddEdge(graph.START, "leaf")
				inner.AddEdge("leaf", graph.END)
				outer := graph.New[merState]()
				outer.AddSubgraph("in", merCompile(t, inner))
				outer.AddEdge(graph.START, "in")
				outer.AddEdge("in", graph.END)

				g := graph.New[merState]()
				g.AddNode("a", merNode)
				g.AddSubgraph("out", merCompile(t, outer))
				g.AddEdge(graph.START, "a")
				g.AddRouter("a", func(context.Context, merState) graph.Next[merState] { return graph.Goto[merState](graph.END) })
				g.AddEdge("out", graph.END)
				return merCompile(t, g).Mermaid()
			},
			want: `flowchart TD
	__start__(["start"])
	a["a"]
	subgraph out ["out"]
		out___start__(["start"])
		subgraph out_in ["in"]
			out_in___start__(["start"])
			out_in_leaf["leaf"]
			out_in___end__(["end"])
			out_in___start__ --> out_in_leaf
			out_in_leaf --> out_in___end__
		end
		out___end__(["end"])
		out___start__ --> out_in
		out_in --> out___end__
	end
	__end__(["end"])
	__start__ --> a
	a -.-> a
	a -.-> out
	a -.-> __end__
	out --> __end__
`,
		},
		{
			name: "router from START",
			build: func(t *testing.T) string {
				g := graph.New[merState]()
				g.AddNode("w", merNode)
				g.AddRouter(graph.START, func(context.Context, merState) graph.Next[merState] {
					return graph.Next[merState]{Sends: []graph.Send[merState]{{Node: "w"}}}
				}, "w")
				g.AddEdge("w", graph.END)
				return merCompile(t, g).Mermaid()
			},
			want: `flowchart TD
	__start__(["start"])
	w["w"]
	__end__(["end"])
	__start__ -.-> w
	w --> __end__
`,
		},
		{
			name: "a quote in a node name does not break the label",
			build: func(t *testing.T) string {
				g := graph.New[merState]()
				g.AddNode(`ask "why"`, merNode)
				g.AddEdge(graph.START, `ask "why"`)
				g.AddEdge(`ask "why"`, graph.END)
				return merCompile(t, g).Mermaid()
			},
			want: `flowchart TD
	__start__(["start"])
	ask__why_["ask #quot;why#quot;"]
	__end__(["end"])
	__start__ --> ask__why_
	ask__why_ --> __end__
`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.build(t)
			if got != tc.want {
				t.Errorf("Mermaid() =\n%s\nwant\n%s\nfirst difference at line %d", got, tc.want, merFirstDiffLine(got, tc.want))
			}
		})
	}
}

func merFirstDiffLine(a, b string) int {
	la, lb := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := range min(len(la), len(lb)) {
		if la[i] != lb[i] {
			return i + 1
		}
	}
	return min(len(la), len(lb)) + 1
}

// Drawing is deterministic: the same graph gives the same text every time.
func TestMermaidDeterministic(t *testing.T) {
	g := graph.New[merState]()
	names := []string{"k", "j", "i", "h", "g", "f", "e", "d", "c", "b", "a"}
	for _, n := range names {
		g.AddNode(n, merNode)
		g.AddEdge(graph.START, n)
		g.AddEdge(n, graph.END)
	}
	g.AddJoin([]string{"a", "b"}, "c")
	g.AddJoin([]string{"d", "e"}, "f")
	c := merCompile(t, g)
	first := c.Mermaid()
	for range 20 {
		if got := c.Mermaid(); got != first {
			t.Fatalf("Mermaid() changed between calls:\n%s\nvs\n%s", got, first)
		}
	}
	// Nodes are drawn in declaration order.
	if i, j := strings.Index(first, `k["k"]`), strings.Index(first, `a["a"]`); i < 0 || j < 0 || i > j {
		t.Errorf("nodes not drawn in declaration order:\n%s", first)
	}
}

func TestEdges(t *testing.T) {
	g := graph.New[merState]()
	g.AddNode("a", merNode)
	g.AddNode("b", merNode)
	g.AddNode("c", merNode)
	g.AddEdge(graph.START, "a")
	g.AddEdge(graph.START, "b")
	g.AddConditionalEdges("a", func(context.Context, merState) string { return "c" }, "c", graph.END)
	g.AddJoin([]string{"b", "c"}, graph.END)
	c := merCompile(t, g)
	require.Equal(t, []string{"a", "b", "c"}, c.Nodes())
	assert.Equal(t, []graph.Edge{
		{From: graph.START, To: "a", Kind: graph.EdgeDirect},
		{From: graph.START, To: "b", Kind: graph.EdgeDirect},
		{From: "a", To: "c", Kind: graph.EdgeConditional},
		{From: "a", To: graph.END, Kind: graph.EdgeConditional},
		{From: "b", To: graph.END, Kind: graph.EdgeJoin},
		{From: "c", To: graph.END, Kind: graph.EdgeJoin},
	}, c.Edges())
}
