package graph_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agiraph/agiraph/graph"
)

type valState struct {
	Log []string `graph:"append"`
}

func valNode(name string) graph.NodeFunc[valState] {
	return func(context.Context, valState) (valState, error) {
		return valState{Log: []string{name}}, nil
	}
}

func valCmd(context.Context, valState) (graph.Command[valState], error) {
	return graph.Command[valState]{}, nil
}

func TestValidateCompileErrors(t *testing.T) {
	tests := []struct {
		name  string
		build func(g *graph.StateGraph[valState])
		opts  []graph.Option
		want  []string // substrings the error must contain; empty: Compile succeeds
	}{
		{
			name: "valid chain",
			build: func(g *graph.StateGraph[valState]) {
				g.AddNode("a", valNode("a"))
				g.AddEdge(graph.START, "a")
				g.AddEdge("a", graph.END)
			},
		},
		{
			name: "valid: join as the only way out, command node without edges, router",
			build: func(g *graph.StateGraph[valState]) {
				g.AddNode("a", valNode("a"))
				g.AddNode("b", valNode("b"))
				g.AddCommandNode("cmd", valCmd, graph.Destinations("a", graph.END))
				g.AddEdge(graph.START, "cmd")
				g.AddRouter("a", func(context.Context, valState) graph.Next[valState] { return graph.Goto[valState](graph.END) }, "b", graph.END)
				g.AddJoin([]string{"b"}, "a")
			},
		},
		{
			name: "valid: interrupt and retry options on known nodes",
			build: func(g *graph.StateGraph[valState]) {
				g.AddNode("a", valNode("a"), graph.WithRetry(graph.RetryPolicy{MaxAttempts: 2}), graph.WithTimeout(time.Second))
				g.AddEdge(graph.START, "a")
				g.AddEdge("a", graph.END)
			},
			opts: []graph.Option{graph.WithInterruptBefore("a"), graph.WithInterruptAfter("a")},
		},
		{
			name: "edge to an unknown node",
			build: func(g *graph.StateGraph[valState]) {
				g.AddNode("a", valNode("a"))
				g.AddEdge(graph.START, "a")
				g.AddEdge("a", "missing")
			},
			want: []string{`unknown node "missing"`, "edge a → missing"},
		},
		{
			name: "edge from an unknown node",
			build: func(g *graph.StateGraph[valState]) {
				g.AddNode("a", valNode("a"))
				g.AddEdge(graph.START, "a")
				g.AddEdge("a", graph.END)
				g.AddEdge("ghost", "a")
			},
			want: []string{`starts at unknown node "ghost"`},
		},
		{
			name: "edge from END",
			build: func(g *graph.StateGraph[valState]) {
				g.AddNode("a", valNode("a"))
				g.AddEdge(graph.START, "a")
				g.AddEdge("a", graph.END)
				g.AddEdge(graph.END, "a")
			},
			want: []string{"starts at END"},
		},
		{
			name: "edge to START",
			build: func(g *graph.StateGraph[valState]) {
				g.AddNode("a", valNode("a"))
				g.AddEdge(graph.START, "a")
				g.AddEdge("a", graph.START)
			},
			want: []string{"leads to START", "edge a"},
		},
		{
			name: "router to an unknown declared target",
			build: func(g *graph.StateGraph[valState]) {
				g.AddNode("a", valNode("a"))
				g.AddEdge(graph.START, "a")
				g.AddConditionalEdges("a", func(context.Context, valState) string { return graph.END }, "nowhere", graph.END)
			},
			want: []string{"router from a", `unknown node "nowhere"`},
		},
		{
			name: "router from an unknown node",
			build: func(g *graph.StateGraph[valState]) {
				g.AddNode("a", valNode("a"))
				g.AddEdge(graph.START, "a")
				g.AddEdge("a", graph.END)
				g.AddConditionalEdges("phantom", func(context.Context, valState) string { return graph.END }, graph.END)
			},
			want: []string{`starts at unknown node "phantom"`},
		},
		{
			name: "join into an unknown node",
			build: func(g *graph.StateGraph[valState]) {
				g.AddNode("a", valNode("a"))
				g.AddEdge(graph.START, "a")
				g.AddJoin([]string{"a"}, "void")
			},
			want: []string{"join into void", `unknown node "void"`},
		},
		{
			name: "join from an unknown node",
			build: func(g *graph.StateGraph[valState]) {
				g.AddNode("a", valNode("a"))
				g.AddEdge(graph.START, "a")
				g.AddEdge("a", graph.END)
				g.AddJoin([]string{"a", "ghost"}, "a")
			},
			want: []string{`unknown node "ghost"`},
		},
		{
			name: "join without sources",
			build: func(g *graph.StateGraph[valState]) {
				g.AddNode("a", valNode("a"))
				g.AddEdge(graph.START, "a")
				g.AddEdge("a", graph.END)
				g.AddJoin(nil, "a")
			},
			want: []string{`join into "a" has no sources`},
		},
		{
			name: "command destination unknown",
			build: func(g *graph.StateGraph[valState]) {
				g.AddCommandNode("cmd", valCmd, graph.Destinations("elsewhere"))
				g.AddEdge(graph.START, "cmd")
			},
			want: []string{"cmd's destinations", `unknown node "elsewhere"`},
		},
		{
			name: "unreachable node",
			build: func(g *graph.StateGraph[valState]) {
				g.AddNode("a", valNode("a"))
				g.AddNode("island", valNode("island"))
				g.AddEdge(graph.START, "a")
				g.AddEdge("a", graph.END)
				g.AddEdge("island", graph.END)
			},
			want: []string{`node "island" is unreachable`},
		},
		{
			name: "node only reachable from an unreachable node",
			build: func(g *graph.StateGraph[valState]) {
				g.AddNode("a", valNode("a"))
				g.AddNode("x", valNode("x"))
				g.AddNode("y", valNode("y"))
				g.AddEdge(graph.START, "a")
				g.AddEdge("a", graph.END)
				g.AddEdge("x", "y")
				g.AddEdge("y", "x")
			},
			want: []string{`node "x" is unreachable`, `node "y" is unreachable`},
		},
		{
			name: "duplicate node",
			build: func(g *graph.StateGraph[valState]) {
				g.AddNode("a", valNode("a"))
				g.AddNode("a", valNode("a again"))
				g.AddEdge(graph.START, "a")
				g.AddEdge("a", graph.END)
			},
			want: []string{`duplicate node "a"`},
		},
		{
			name: "duplicate command node",
			build: func(g *graph.StateGraph[valState]) {
				g.AddNode("a", valNode("a"))
				g.AddCommandNode("a", valCmd)
				g.AddEdge(graph.START, "a")
				g.AddEdge("a", graph.END)
			},
			want: []string{`duplicate node "a"`},
		},
		{
			name: "START as a node name",
			build: func(g *graph.StateGraph[valState]) {
				g.AddNode(graph.START, valNode("s"))
				g.AddNode("a", valNode("a"))
				g.AddEdge(graph.START, "a")
				g.AddEdge("a", graph.END)
			},
			want: []string{`node name "__start__" is reserved`},
		},
		{
			name: "END as a node name",
			build: func(g *graph.StateGraph[valState]) {
				g.AddCommandNode(graph.END, valCmd)
				g.AddNode("a", valNode("a"))
				g.AddEdge(graph.START, "a")
				g.AddEdge("a", graph.END)
			},
			want: []string{`node name "__end__" is reserved`},
		},
		{
			name: "empty name",
			build: func(g *graph.StateGraph[valState]) {
				g.AddNode("", valNode(""))
				g.AddNode("a", valNode("a"))
				g.AddEdge(graph.START, "a")
				g.AddEdge("a", graph.END)
			},
			want: []string{"needs a name"},
		},
		{
			name: "nil node function",
			build: func(g *graph.StateGraph[valState]) {
				g.AddNode("nilnode", nil)
				g.AddNode("a", valNode("a"))
				g.AddEdge(graph.START, "a")
				g.AddEdge("a", graph.END)
			},
			want: []string{`node "nilnode": nil function`},
		},
		{
			name: "nil command function",
			build: func(g *graph.StateGraph[valState]) {
				g.AddCommandNode("nilcmd", nil)
				g.AddNode("a", valNode("a"))
				g.AddEdge(graph.START, "a")
				g.AddEdge("a", graph.END)
			},
			want: []string{`node "nilcmd": nil function`},
		},
		{
			name: "nil router",
			build: func(g *graph.StateGraph[valState]) {
				g.AddNode("a", valNode("a"))
				g.AddEdge(graph.START, "a")
				g.AddEdge("a", graph.END)
				g.AddRouter("a", nil)
			},
			want: []string{`router from "a": nil function`},
		},
		{
			name: "nil conditional edge function",
			build: func(g *graph.StateGraph[valState]) {
				g.AddNode("a", valNode("a"))
				g.AddEdge(graph.START, "a")
				g.AddEdge("a", graph.END)
				g.AddConditionalEdges("a", nil, graph.END)
			},
			want: []string{`conditional edges from "a": nil function`},
		},
		{
			name: "nil subgraph",
			build: func(g *graph.StateGraph[valState]) {
				g.AddNode("a", valNode("a"))
				g.AddEdge(graph.START, "a")
				g.AddEdge("a", graph.END)
				g.AddSubgraph("sub", nil)
			},
			want: []string{`subgraph "sub" is nil`},
		},
		{
			name: "nil subgraph mapping",
			build: func(g *graph.StateGraph[valState]) {
				g.AddNode("a", valNode("a"))
				g.AddEdge(graph.START, "a")
				g.AddEdge("a", graph.END)
				child := graph.New[int]()
				child.AddNode("x", func(_ context.Context, s int) (int, error) { return s, nil })
				child.AddEdge(graph.START, "x")
				child.AddEdge("x", graph.END)
				cc, err := child.Compile()
				if err != nil {
					panic(err)
				}
				graph.AddMappedSubgraph(g, "mapped", cc, nil, func(p valState, _ int) valState { return p })
			},
			want: []string{`subgraph "mapped": nil mapping`},
		},
		{
			name: "no entry from START",
			build: func(g *graph.StateGraph[valState]) {
				g.AddNode("a", valNode("a"))
				g.AddEdge("a", graph.END)
			},
			want: []string{"no entry"},
		},
		{
			name:  "empty graph",
			build: func(g *graph.StateGraph[valState]) {},
			want:  []string{"no entry"},
		},
		{
			name: "interrupt before an unknown node",
			build: func(g *graph.StateGraph[valState]) {
				g.AddNode("a", valNode("a"))
				g.AddEdge(graph.START, "a")
				g.AddEdge("a", graph.END)
			},
			opts: []graph.Option{graph.WithInterruptBefore("a", "nosuch")},
			want: []string{`interrupt on unknown node "nosuch"`},
		},
		{
			name: "interrupt after an unknown node",
			build: func(g *graph.StateGraph[valState]) {
				g.AddNode("a", valNode("a"))
				g.AddEdge(graph.START, "a")
				g.AddEdge("a", graph.END)
			},
			opts: []graph.Option{graph.WithInterruptAfter("later")},
			want: []string{`interrupt on unknown node "later"`},
		},
		{
			name: "retry policy with a negative field",
			build: func(g *graph.StateGraph[valState]) {
				g.AddNode("a", valNode("a"), graph.WithRetry(graph.RetryPolicy{MaxAttempts: -1}))
				g.AddEdge(graph.START, "a")
				g.AddEdge("a", graph.END)
			},
			want: []string{`node "a"`, "negative"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := graph.New[valState]()
			tc.build(g)
			c, err := g.Compile(tc.opts...)
			if len(tc.want) == 0 {
				if err != nil || c == nil {
					t.Fatalf("Compile = %v, %v; want a compiled graph", c, err)
				}
				return
			}
			if c != nil {
				t.Errorf("Compile returned a graph along with error %v", err)
			}
			engContainsAll(t, err, tc.want...)
		})
	}
}

// Several mistakes are reported together, each in its own joined error.
func TestValidateReportsMistakesTogether(t *testing.T) {
	type badState struct {
		Items int `graph:"append"`
	}
	g := graph.New[badState]()
	node := func(context.Context, badState) (badState, error) { return badState{}, nil }
	g.AddNode("a", node)
	g.AddNode("a", node)
	g.AddNode("", node)
	g.AddNode(graph.END, node)
	g.AddNode("nilfn", nil)
	g.AddEdge(graph.START, "a")
	g.AddEdge("a", "missing")
	g.AddEdge(graph.END, "a")
	_, err := g.Compile(graph.WithInterruptBefore("nosuch"))
	want := []string{
		`duplicate node "a"`,
		"needs a name",
		`"__end__" is reserved`,
		`node "nilfn": nil function`,
		"Items",
		`unknown node "missing"`,
		"starts at END",
		`interrupt on unknown node "nosuch"`,
	}
	engContainsAll(t, err, want...)
	joined, ok := err.(interface{ Unwrap() []error })
	if !ok {
		t.Fatalf("error %T is not a joined error", err)
	}
	if n := len(joined.Unwrap()); n != len(want) {
		t.Errorf("%d errors joined, want %d:\n%v", n, len(want), err)
	}
}

// Graph shape mistakes are reported together too.
func TestValidateReportsGraphShapeMistakesTogether(t *testing.T) {
	g := graph.New[valState]()
	g.AddNode("a", valNode("a"))
	g.AddNode("island", valNode("island"))
	g.AddNode("atoll", valNode("atoll"))
	g.AddEdge(graph.START, "a")
	g.AddEdge("a", graph.END)
	g.AddEdge("island", graph.END)
	g.AddEdge("atoll", graph.END)
	_, err := g.Compile()
	engContainsAll(t, err, `"island" is unreachable`, `"atoll" is unreachable`)
	var joined interface{ Unwrap() []error }
	if !errors.As(err, &joined) || len(joined.Unwrap()) != 2 {
		t.Errorf("want 2 joined errors, got %v", err)
	}
}

// Changes to the builder after Compile do not reach the compiled graph.
func TestValidateBuilderChangesAfterCompile(t *testing.T) {
	g := graph.New[valState]()
	g.AddNode("a", valNode("a"))
	g.AddNode("b", valNode("b"))
	g.AddEdge(graph.START, "a")
	g.AddEdge("a", "b")
	g.AddEdge("b", graph.END)
	c, err := g.Compile()
	if err != nil {
		t.Fatal(err)
	}
	drawing := c.Mermaid()

	// Change everything that can be changed.
	g.AddNode("c", valNode("c"))
	g.AddEdge("a", "c")
	g.AddEdge("c", graph.END)
	g.AddEdge(graph.START, "c")
	g.AddRouter("b", func(context.Context, valState) graph.Next[valState] { return graph.Goto[valState]("c") }, "c")
	g.AddJoin([]string{"a", "b"}, "c")
	g.SetReducer(func(cur, _ valState) valState { return valState{Log: []string{"custom reducer"}} })
	g.AddNode("a", valNode("dup")) // a mistake, which must not break the compiled graph either

	out, err := c.Invoke(context.Background(), valState{})
	if err != nil {
		t.Fatalf("Invoke: %v", err)
	}
	if want := []string{"a", "b"}; !slices.Equal(out.Log, want) {
		t.Errorf("Log = %q, want %q: the builder's later changes reached the compiled graph", out.Log, want)
	}
	if got := c.Mermaid(); got != drawing {
		t.Errorf("Mermaid changed after builder changes:\n%s\nwas\n%s", got, drawing)
	}
	if strings.Contains(c.Mermaid(), `c["c"]`) {
		t.Error("the compiled graph draws node c, added after Compile")
	}

	// And the builder itself now reports the mistake.
	if _, err := g.Compile(); err == nil || !strings.Contains(err.Error(), `duplicate node "a"`) {
		t.Errorf("recompile: %v, want a duplicate node error", err)
	}
}

// A graph compiles more than once; each compiled graph is independent.
func TestValidateCompileTwice(t *testing.T) {
	g := graph.New[valState]()
	g.AddNode("a", valNode("a"))
	g.AddEdge(graph.START, "a")
	g.AddEdge("a", graph.END)
	c1, err := g.Compile()
	if err != nil {
		t.Fatal(err)
	}
	g.AddNode("b", valNode("b"))
	g.AddEdge("a", "b")
	g.AddEdge("b", graph.END)
	c2, err := g.Compile()
	if err != nil {
		t.Fatal(err)
	}
	out1, err1 := c1.Invoke(context.Background(), valState{})
	out2, err2 := c2.Invoke(context.Background(), valState{})
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	if !slices.Equal(out1.Log, []string{"a"}) || !slices.Equal(out2.Log, []string{"a", "b"}) {
		t.Errorf("first graph %q, second %q; want [a] and [a b]", out1.Log, out2.Log)
	}
}
