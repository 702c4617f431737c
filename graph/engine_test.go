package graph_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agiraph/agiraph/graph"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// engState is the state most engine tests run on.
type engState struct {
	Count int
	I     int
	Log   []string       `graph:"append"`
	Items []int          `graph:"append"`
	Seen  map[string]int `graph:"merge"`
}

// engGuard is how long a test waits for something that must happen "promptly" before it fails.
const engGuard = 10 * time.Second

// engCompile compiles g or fails the test.
func engCompile[S any](t testing.TB, g *graph.StateGraph[S], opts ...graph.Option) *graph.Compiled[S] {
	t.Helper()
	c, err := g.Compile(opts...)
	if err != nil {
		t.Fatalf("Compile: %v", err)
	}
	return c
}

// engInvoke runs c in a goroutine and fails the test if it does not return within engGuard.
func engInvoke[S any](t testing.TB, ctx context.Context, c *graph.Compiled[S], input S, opts ...graph.Option) (S, error) {
	t.Helper()
	type result struct {
		out S
		err error
	}
	ch := make(chan result, 1)
	go func() {
		out, err := c.Invoke(ctx, input, opts...)
		ch <- result{out, err}
	}()
	select {
	case res := <-ch:
		return res.out, res.err
	case <-time.After(engGuard):
		t.Fatalf("Invoke did not return within %s", engGuard)
		panic("unreachable")
	}
}

// engLog is a node that appends its name to Log.
func engLog(name string) graph.NodeFunc[engState] {
	return func(context.Context, engState) (engState, error) {
		return engState{Log: []string{name}}, nil
	}
}

// engWait waits for ch to be closed or to yield a value, failing the test after engGuard.
func engWait[T any](t testing.TB, ch <-chan T, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(engGuard):
		t.Fatalf("timed out waiting for %s", what)
	}
}

func engContainsAll(t testing.TB, err error, subs ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want one containing %q", subs)
	}
	for _, s := range subs {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not contain %q", err, s)
		}
	}
}

func TestEngineControlFlow(t *testing.T) {
	tests := []struct {
		name      string
		build     func(g *graph.StateGraph[engState])
		input     engState
		wantLog   []string
		wantCount int
	}{
		{
			name: "single node",
			build: func(g *graph.StateGraph[engState]) {
				g.AddNode("a", engLog("a"))
				g.AddEdge(graph.START, "a")
				g.AddEdge("a", graph.END)
			},
			wantLog: []string{"a"},
		},
		{
			name: "chain",
			build: func(g *graph.StateGraph[engState]) {
				for _, n := range []string{"a", "b", "c"} {
					g.AddNode(n, engLog(n))
				}
				g.AddEdge(graph.START, "a")
				g.AddEdge("a", "b")
				g.AddEdge("b", "c")
				g.AddEdge("c", graph.END)
			},
			wantLog: []string{"a", "b", "c"},
		},
		{
			name: "input is merged before the first node",
			build: func(g *graph.StateGraph[engState]) {
				g.AddNode("a", func(_ context.Context, s engState) (engState, error) {
					return engState{Log: []string{fmt.Sprintf("a saw %v", s.Log)}, Count: s.Count * 10}, nil
				})
				g.AddEdge(graph.START, "a")
				g.AddEdge("a", graph.END)
			},
			input:     engState{Count: 4, Log: []string{"in"}},
			wantLog:   []string{"in", "a saw [in]"},
			wantCount: 40,
		},
		{
			name: "two edges from START run in parallel, merged in declaration order",
			build: func(g *graph.StateGraph[engState]) {
				g.AddNode("a", func(context.Context, engState) (engState, error) {
					time.Sleep(5 * time.Millisecond) // finishes last, still merged first
					return engState{Log: []string{"a"}}, nil
				})
				g.AddNode("b", engLog("b"))
				g.AddEdge(graph.START, "a")
				g.AddEdge(graph.START, "b")
				g.AddEdge("a", graph.END)
				g.AddEdge("b", graph.END)
			},
			wantLog: []string{"a", "b"},
		},
		{
			name: "duplicate edge is added once",
			build: func(g *graph.StateGraph[engState]) {
				g.AddNode("a", engLog("a"))
				g.AddNode("b", engLog("b"))
				g.AddEdge(graph.START, "a")
				g.AddEdge("a", "b")
				g.AddEdge("a", "b")
				g.AddEdge("b", graph.END)
			},
			wantLog: []string{"a", "b"},
		},
		{
			name: "diamond: the join node runs once",
			build: func(g *graph.StateGraph[engState]) {
				for _, n := range []string{"a", "b", "c", "d"} {
					g.AddNode(n, engLog(n))
				}
				g.AddEdge(graph.START, "a")
				g.AddEdge("a", "b")
				g.AddEdge("a", "c")
				g.AddEdge("b", "d")
				g.AddEdge("c", "d")
				g.AddEdge("d", graph.END)
			},
			wantLog: []string{"a", "b", "c", "d"},
		},
		{
			name: "conditional loop until a condition",
			build: func(g *graph.StateGraph[engState]) {
				g.AddNode("inc", func(_ context.Context, s engState) (engState, error) {
					return engState{Count: s.Count + 1, Log: []string{fmt.Sprint("inc", s.Count)}}, nil
				})
				g.AddEdge(graph.START, "inc")
				g.AddConditionalEdges("inc", func(_ context.Context, s engState) string {
					if s.Count < 4 {
						return "inc"
					}
					return graph.END
				}, "inc", graph.END)
			},
			wantLog:   []string{"inc0", "inc1", "inc2", "inc3"},
			wantCount: 4,
		},
		{
			name: "conditional edge sees its node's update, not the rest of the step's",
			build: func(g *graph.StateGraph[engState]) {
				g.AddNode("a", func(context.Context, engState) (engState, error) { return engState{Count: 1}, nil })
				g.AddNode("b", func(context.Context, engState) (engState, error) { return engState{I: 7}, nil })
				g.AddNode("yes", engLog("yes"))
				g.AddNode("no", engLog("no"))
				g.AddEdge(graph.START, "a")
				g.AddEdge(graph.START, "b")
				g.AddEdge("b", graph.END)
				g.AddConditionalEdges("a", func(_ context.Context, s engState) string {
					if s.Count == 1 && s.I == 0 { // b's update, from the same step, is not visible
						return "yes"
					}
					return "no"
				}, "yes", "no")
				g.AddEdge("yes", graph.END)
				g.AddEdge("no", graph.END)
			},
			wantLog:   []string{"yes"},
			wantCount: 1,
		},
		{
			name: "conditional edge without declared targets",
			build: func(g *graph.StateGraph[engState]) {
				g.AddNode("a", engLog("a"))
				g.AddNode("b", engLog("b"))
				g.AddEdge(graph.START, "a")
				g.AddConditionalEdges("a", func(context.Context, engState) string { return "b" })
				g.AddEdge("b", graph.END)
			},
			wantLog: []string{"a", "b"},
		},
		{
			name: "router with several gotos runs parallel branches",
			build: func(g *graph.StateGraph[engState]) {
				for _, n := range []string{"a", "b", "c", "d"} {
					g.AddNode(n, engLog(n))
				}
				g.AddEdge(graph.START, "a")
				g.AddRouter("a", func(context.Context, engState) graph.Next[engState] {
					return graph.Goto[engState]("b", "c")
				}, "b", "c", "d")
				for _, n := range []string{"b", "c", "d"} {
					g.AddEdge(n, graph.END)
				}
			},
			wantLog: []string{"a", "b", "c"},
		},
		{
			name: "router goto END stops the branch",
			build: func(g *graph.StateGraph[engState]) {
				g.AddNode("a", engLog("a"))
				g.AddNode("b", engLog("b"))
				g.AddEdge(graph.START, "a")
				g.AddRouter("a", func(context.Context, engState) graph.Next[engState] {
					return graph.Goto[engState](graph.END)
				}, "b", graph.END)
				g.AddEdge("b", graph.END)
			},
			wantLog: []string{"a"},
		},
		{
			name: "router from START with sends",
			build: func(g *graph.StateGraph[engState]) {
				g.AddRouter(graph.START, func(context.Context, engState) graph.Next[engState] {
					var n graph.Next[engState]
					for i := range 3 {
						n.Sends = append(n.Sends, graph.Send[engState]{Node: "w", Arg: engState{I: i}})
					}
					return n
				}, "w")
				g.AddNode("w", func(_ context.Context, s engState) (engState, error) {
					return engState{Log: []string{fmt.Sprint("w", s.I)}}, nil
				})
				g.AddEdge("w", graph.END)
			},
			wantLog: []string{"w0", "w1", "w2"},
		},
		{
			name: "router with gotos and sends",
			build: func(g *graph.StateGraph[engState]) {
				g.AddNode("a", engLog("a"))
				g.AddNode("b", engLog("b"))
				g.AddNode("w", func(_ context.Context, s engState) (engState, error) {
					return engState{Log: []string{fmt.Sprint("w", s.I)}}, nil
				})
				g.AddEdge(graph.START, "a")
				g.AddRouter("a", func(context.Context, engState) graph.Next[engState] {
					return graph.Next[engState]{Goto: []string{"b"}, Sends: []graph.Send[engState]{
						{Node: "w", Arg: engState{I: 1}}, {Node: "w", Arg: engState{I: 2}},
					}}
				}, "b", "w")
				g.AddEdge("b", graph.END)
				g.AddEdge("w", graph.END)
			},
			wantLog: []string{"a", "b", "w1", "w2"},
		},
		{
			name: "a push task gets the Send's argument, not the state",
			build: func(g *graph.StateGraph[engState]) {
				g.AddNode("a", func(context.Context, engState) (engState, error) {
					return engState{Count: 99}, nil
				})
				g.AddEdge(graph.START, "a")
				g.AddRouter("a", func(context.Context, engState) graph.Next[engState] {
					return graph.Next[engState]{Sends: []graph.Send[engState]{{Node: "w", Arg: engState{I: 5}}}}
				}, "w")
				g.AddNode("w", func(_ context.Context, s engState) (engState, error) {
					return engState{Log: []string{fmt.Sprintf("count=%d i=%d", s.Count, s.I)}}, nil
				})
				g.AddEdge("w", graph.END)
			},
			wantLog:   []string{"count=0 i=5"},
			wantCount: 99,
		},
		{
			name: "two routers on one node both apply",
			build: func(g *graph.StateGraph[engState]) {
				for _, n := range []string{"a", "b", "c"} {
					g.AddNode(n, engLog(n))
				}
				g.AddEdge(graph.START, "a")
				g.AddConditionalEdges("a", func(context.Context, engState) string { return "b" }, "b")
				g.AddConditionalEdges("a", func(context.Context, engState) string { return "c" }, "c")
				g.AddEdge("b", graph.END)
				g.AddEdge("c", graph.END)
			},
			wantLog: []string{"a", "b", "c"},
		},
		{
			name: "command goto a declared destination",
			build: func(g *graph.StateGraph[engState]) {
				g.AddCommandNode("cmd", func(context.Context, engState) (graph.Command[engState], error) {
					return graph.Command[engState]{Update: engState{Log: []string{"cmd"}}, Goto: []string{"b"}}, nil
				}, graph.Destinations("b", "c"))
				g.AddNode("b", engLog("b"))
				g.AddNode("c", engLog("c"))
				g.AddEdge(graph.START, "cmd")
				g.AddEdge("b", graph.END)
				g.AddEdge("c", graph.END)
			},
			wantLog: []string{"cmd", "b"},
		},
		{
			name: "command with sends",
			build: func(g *graph.StateGraph[engState]) {
				g.AddCommandNode("cmd", func(context.Context, engState) (graph.Command[engState], error) {
					return graph.Command[engState]{
						Update: engState{Count: 1},
						Sends: []graph.Send[engState]{
							{Node: "w", Arg: engState{I: 10}}, {Node: "w", Arg: engState{I: 20}}, {Node: "w", Arg: engState{I: 30}},
						},
					}, nil
				}, graph.Destinations("w"))
				g.AddNode("w", func(_ context.Context, s engState) (engState, error) {
					return engState{Log: []string{fmt.Sprint("w", s.I)}}, nil
				})
				g.AddEdge(graph.START, "cmd")
				g.AddEdge("w", graph.END)
			},
			wantLog:   []string{"w10", "w20", "w30"},
			wantCount: 1,
		},
		{
			name: "command goto END ends the run",
			build: func(g *graph.StateGraph[engState]) {
				g.AddCommandNode("cmd", func(_ context.Context, s engState) (graph.Command[engState], error) {
					return graph.Command[engState]{Update: engState{Log: []string{"cmd"}}, Goto: []string{graph.END}}, nil
				}, graph.Destinations("b", graph.END))
				g.AddNode("b", engLog("b"))
				g.AddEdge(graph.START, "cmd")
				g.AddEdge("b", graph.END)
			},
			wantLog: []string{"cmd"},
		},
		{
			name: "command loop decided by goto",
			build: func(g *graph.StateGraph[engState]) {
				g.AddCommandNode("cmd", func(_ context.Context, s engState) (graph.Command[engState], error) {
					next := "cmd"
					if s.Count == 2 {
						next = graph.END
					}
					return graph.Command[engState]{Update: engState{Count: s.Count + 1, Log: []string{"cmd"}}, Goto: []string{next}}, nil
				}, graph.Destinations("cmd", graph.END))
				g.AddEdge(graph.START, "cmd")
			},
			wantLog:   []string{"cmd", "cmd", "cmd"},
			wantCount: 3,
		},
		{
			name: "command node's static edges are followed as well as its goto",
			build: func(g *graph.StateGraph[engState]) {
				g.AddCommandNode("cmd", func(context.Context, engState) (graph.Command[engState], error) {
					return graph.Command[engState]{Goto: []string{"b"}}, nil
				}, graph.Destinations("b"))
				g.AddNode("b", engLog("b"))
				g.AddNode("d", engLog("d"))
				g.AddEdge(graph.START, "cmd")
				g.AddEdge("cmd", "d")
				g.AddEdge("b", graph.END)
				g.AddEdge("d", graph.END)
			},
			wantLog: []string{"b", "d"},
		},
		{
			name: "command goto and static edge to the same node run it once",
			build: func(g *graph.StateGraph[engState]) {
				g.AddCommandNode("cmd", func(context.Context, engState) (graph.Command[engState], error) {
					return graph.Command[engState]{Goto: []string{"b", "b"}}, nil
				}, graph.Destinations("b"))
				g.AddNode("b", engLog("b"))
				g.AddEdge(graph.START, "cmd")
				g.AddEdge("cmd", "b")
				g.AddEdge("b", graph.END)
			},
			wantLog: []string{"b"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := graph.New[engState]()
			tc.build(g)
			c := engCompile(t, g)
			out, err := engInvoke(t, context.Background(), c, tc.input)
			if err != nil {
				t.Fatalf("Invoke: %v", err)
			}
			if !slices.Equal(out.Log, tc.wantLog) {
				t.Errorf("Log = %q, want %q", out.Log, tc.wantLog)
			}
			if out.Count != tc.wantCount {
				t.Errorf("Count = %d, want %d", out.Count, tc.wantCount)
			}
		})
	}
}

var errEngSentinel = errors.New("eng sentinel")

func TestEngineRoutingErrors(t *testing.T) {
	tests := []struct {
		name  string
		build func(g *graph.StateGraph[engState])
		want  []string
		check func(t *testing.T, err error)
	}{
		{
			name: "router chooses a target it did not declare",
			build: func(g *graph.StateGraph[engState]) {
				g.AddNode("a", engLog("a"))
				g.AddNode("b", engLog("b"))
				g.AddNode("zed", engLog("zed"))
				g.AddEdge(graph.START, "a")
				g.AddEdge(graph.START, "zed")
				g.AddRouter("a", func(context.Context, engState) graph.Next[engState] {
					return graph.Goto[engState]("zed")
				}, "b", graph.END)
				g.AddEdge("b", graph.END)
				g.AddEdge("zed", graph.END)
			},
			want: []string{`"zed"`, "not among its declared targets", `router from "a"`},
		},
		{
			name: "router sends to a node it did not declare",
			build: func(g *graph.StateGraph[engState]) {
				g.AddNode("a", engLog("a"))
				g.AddNode("b", engLog("b"))
				g.AddNode("w", engLog("w"))
				g.AddEdge(graph.START, "a")
				g.AddEdge(graph.START, "w")
				g.AddRouter("a", func(context.Context, engState) graph.Next[engState] {
					return graph.Next[engState]{Sends: []graph.Send[engState]{{Node: "w"}}}
				}, "b")
				g.AddEdge("b", graph.END)
				g.AddEdge("w", graph.END)
			},
			want: []string{`sends to "w"`, "not among its declared targets"},
		},
		{
			name: "command goes to a node outside its destinations",
			build: func(g *graph.StateGraph[engState]) {
				g.AddCommandNode("cmd", func(context.Context, engState) (graph.Command[engState], error) {
					return graph.Command[engState]{Goto: []string{"zed"}}, nil
				}, graph.Destinations("b"))
				g.AddNode("b", engLog("b"))
				g.AddNode("zed", engLog("zed"))
				g.AddEdge(graph.START, "cmd")
				g.AddEdge(graph.START, "zed")
				g.AddEdge("b", graph.END)
				g.AddEdge("zed", graph.END)
			},
			want: []string{`node "cmd" goes to "zed"`, "not among its declared targets"},
		},
		{
			name: "command sends to a node outside its destinations",
			build: func(g *graph.StateGraph[engState]) {
				g.AddCommandNode("cmd", func(context.Context, engState) (graph.Command[engState], error) {
					return graph.Command[engState]{Sends: []graph.Send[engState]{{Node: "zed"}}}, nil
				}, graph.Destinations("b"))
				g.AddNode("b", engLog("b"))
				g.AddNode("zed", engLog("zed"))
				g.AddEdge(graph.START, "cmd")
				g.AddEdge(graph.START, "zed")
				g.AddEdge("b", graph.END)
				g.AddEdge("zed", graph.END)
			},
			want: []string{`node "cmd" sends to "zed"`, "not among its declared targets"},
		},
		{
			name: "router to an unknown node",
			build: func(g *graph.StateGraph[engState]) {
				g.AddNode("a", engLog("a"))
				g.AddEdge(graph.START, "a")
				g.AddRouter("a", func(context.Context, engState) graph.Next[engState] {
					return graph.Goto[engState]("ghost")
				})
			},
			want: []string{`unknown node "ghost"`, `router from "a"`},
		},
		{
			name: "router sends to an unknown node",
			build: func(g *graph.StateGraph[engState]) {
				g.AddNode("a", engLog("a"))
				g.AddEdge(graph.START, "a")
				g.AddRouter("a", func(context.Context, engState) graph.Next[engState] {
					return graph.Next[engState]{Sends: []graph.Send[engState]{{Node: "phantom"}}}
				})
			},
			want: []string{`unknown node "phantom"`},
		},
		{
			name: "router panics",
			build: func(g *graph.StateGraph[engState]) {
				g.AddNode("a", engLog("a"))
				g.AddNode("b", engLog("b"))
				g.AddEdge(graph.START, "a")
				g.AddRouter("a", func(context.Context, engState) graph.Next[engState] {
					panic("router exploded")
				}, "b")
				g.AddEdge("b", graph.END)
			},
			want: []string{`router from "a"`, "router exploded"},
			check: func(t *testing.T, err error) {
				var pe *graph.PanicError
				if !errors.As(err, &pe) {
					t.Fatalf("error %v is not a *PanicError", err)
				}
				if pe.Value != "router exploded" || len(pe.Stack) == 0 {
					t.Errorf("PanicError = {%v, %d bytes of stack}", pe.Value, len(pe.Stack))
				}
			},
		},
		{
			name: "router from START panics",
			build: func(g *graph.StateGraph[engState]) {
				g.AddNode("a", engLog("a"))
				g.AddRouter(graph.START, func(context.Context, engState) graph.Next[engState] {
					panic(errEngSentinel)
				}, "a")
				g.AddEdge("a", graph.END)
			},
			want: []string{"eng sentinel"},
			check: func(t *testing.T, err error) {
				var pe *graph.PanicError
				if !errors.As(err, &pe) || pe.Value != errEngSentinel {
					t.Fatalf("error %v is not a *PanicError of the sentinel", err)
				}
			},
		},
		{
			name: "command goto an unknown node",
			build: func(g *graph.StateGraph[engState]) {
				g.AddCommandNode("cmd", func(context.Context, engState) (graph.Command[engState], error) {
					return graph.Command[engState]{Goto: []string{"nope"}}, nil
				})
				g.AddEdge(graph.START, "cmd")
			},
			want: []string{`unknown node "nope"`, `node "cmd"`},
		},
		{
			name: "command sends to an unknown node",
			build: func(g *graph.StateGraph[engState]) {
				g.AddCommandNode("cmd", func(context.Context, engState) (graph.Command[engState], error) {
					return graph.Command[engState]{Sends: []graph.Send[engState]{{Node: "nowhere"}}}, nil
				})
				g.AddEdge(graph.START, "cmd")
			},
			want: []string{`unknown node "nowhere"`, `node "cmd"`},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := graph.New[engState]()
			tc.build(g)
			c := engCompile(t, g)
			_, err := engInvoke(t, context.Background(), c, engState{})
			engContainsAll(t, err, tc.want...)
			if tc.check != nil {
				tc.check(t, err)
			}
		})
	}
}

func TestEngineFanIn(t *testing.T) {
	t.Run("two parallel predecessors", func(t *testing.T) {
		var calls atomic.Int32
		var step atomic.Int32
		g := graph.New[engState]()
		g.AddNode("a", engLog("a"))
		g.AddNode("b", engLog("b"))
		g.AddNode("c", func(ctx context.Context, s engState) (engState, error) {
			calls.Add(1)
			info, _ := graph.CurrentTask(ctx)
			step.Store(int32(info.Step))
			return engState{Log: []string{fmt.Sprintf("c saw %v", s.Log)}}, nil
		})
		g.AddEdge(graph.START, "a")
		g.AddEdge(graph.START, "b")
		g.AddEdge("a", "c")
		g.AddEdge("b", "c")
		g.AddEdge("c", graph.END)
		out, err := engInvoke(t, context.Background(), engCompile(t, g), engState{})
		if err != nil {
			t.Fatal(err)
		}
		if n := calls.Load(); n != 1 {
			t.Errorf("c ran %d times, want 1", n)
		}
		if s := step.Load(); s != 2 {
			t.Errorf("c ran in step %d, want 2", s)
		}
		if want := []string{"a", "b", "c saw [a b]"}; !slices.Equal(out.Log, want) {
			t.Errorf("Log = %q, want %q", out.Log, want)
		}
	})

	t.Run("many push tasks lead to one node", func(t *testing.T) {
		var calls atomic.Int32
		g := graph.New[engState]()
		g.AddRouter(graph.START, func(context.Context, engState) graph.Next[engState] {
			var n graph.Next[engState]
			for i := range 50 {
				n.Sends = append(n.Sends, graph.Send[engState]{Node: "w", Arg: engState{I: i}})
			}
			return n
		}, "w")
		g.AddNode("w", func(_ context.Context, s engState) (engState, error) {
			return engState{Items: []int{s.I}}, nil
		})
		g.AddNode("collect", func(_ context.Context, s engState) (engState, error) {
			calls.Add(1)
			return engState{Count: len(s.Items)}, nil
		})
		g.AddEdge("w", "collect")
		g.AddEdge("collect", graph.END)
		out, err := engInvoke(t, context.Background(), engCompile(t, g), engState{})
		if err != nil {
			t.Fatal(err)
		}
		if n := calls.Load(); n != 1 {
			t.Errorf("collect ran %d times, want 1", n)
		}
		if out.Count != 50 {
			t.Errorf("collect saw %d items, want 50", out.Count)
		}
	})

	t.Run("join waits for sources in different supersteps", func(t *testing.T) {
		var calls atomic.Int32
		var step atomic.Int32
		g := graph.New[engState]()
		g.AddNode("a", engLog("a"))
		g.AddNode("b", engLog("b"))
		g.AddNode("b2", engLog("b2"))
		g.AddNode("c", func(ctx context.Context, s engState) (engState, error) {
			calls.Add(1)
			info, _ := graph.CurrentTask(ctx)
			step.Store(int32(info.Step))
			return engState{Log: []string{fmt.Sprintf("c saw %v", s.Log)}}, nil
		})
		g.AddEdge(graph.START, "a")
		g.AddEdge(graph.START, "b")
		g.AddEdge("b", "b2")
		g.AddJoin([]string{"a", "b2"}, "c")
		g.AddEdge("c", graph.END)
		out, err := engInvoke(t, context.Background(), engCompile(t, g), engState{})
		if err != nil {
			t.Fatal(err)
		}
		if n := calls.Load(); n != 1 {
			t.Errorf("c ran %d times, want 1", n)
		}
		if s := step.Load(); s != 3 {
			t.Errorf("c ran in step %d, want 3 (after b2)", s)
		}
		if want := []string{"a", "b", "b2", "c saw [a b b2]"}; !slices.Equal(out.Log, want) {
			t.Errorf("Log = %q, want %q", out.Log, want)
		}
	})

	t.Run("join sources in the same superstep", func(t *testing.T) {
		var calls atomic.Int32
		g := graph.New[engState]()
		g.AddNode("a", engLog("a"))
		g.AddNode("b", engLog("b"))
		g.AddNode("c", func(context.Context, engState) (engState, error) {
			calls.Add(1)
			return engState{Log: []string{"c"}}, nil
		})
		g.AddEdge(graph.START, "a")
		g.AddEdge(graph.START, "b")
		g.AddJoin([]string{"a", "b"}, "c")
		g.AddEdge("c", graph.END)
		out, err := engInvoke(t, context.Background(), engCompile(t, g), engState{})
		if err != nil {
			t.Fatal(err)
		}
		if n := calls.Load(); n != 1 {
			t.Errorf("c ran %d times, want 1", n)
		}
		if want := []string{"a", "b", "c"}; !slices.Equal(out.Log, want) {
			t.Errorf("Log = %q, want %q", out.Log, want)
		}
	})

	t.Run("join whose source never runs does not fire", func(t *testing.T) {
		var calls atomic.Int32
		g := graph.New[engState]()
		g.AddNode("a", engLog("a"))
		g.AddNode("b", engLog("b"))
		g.AddNode("c", func(context.Context, engState) (engState, error) {
			calls.Add(1)
			return engState{}, nil
		})
		g.AddEdge(graph.START, "a")
		g.AddConditionalEdges("a", func(context.Context, engState) string { return graph.END }, "b", graph.END)
		g.AddJoin([]string{"a", "b"}, "c")
		g.AddEdge("b", graph.END)
		g.AddEdge("c", graph.END)
		if _, err := engInvoke(t, context.Background(), engCompile(t, g), engState{}); err != nil {
			t.Fatal(err)
		}
		if n := calls.Load(); n != 0 {
			t.Errorf("c ran %d times, want 0", n)
		}
	})

	t.Run("join waits again after firing", func(t *testing.T) {
		var calls atomic.Int32
		var mu sync.Mutex
		var steps []int
		g := graph.New[engState]()
		g.AddNode("fork", engLog("fork"))
		g.AddNode("a", engLog("a"))
		g.AddNode("b", engLog("b"))
		g.AddNode("b2", engLog("b2"))
		g.AddNode("c", func(ctx context.Context, s engState) (engState, error) {
			calls.Add(1)
			info, _ := graph.CurrentTask(ctx)
			mu.Lock()
			steps = append(steps, info.Step)
			mu.Unlock()
			return engState{Count: s.Count + 1}, nil
		})
		g.AddEdge(graph.START, "fork")
		g.AddEdge("fork", "a")
		g.AddEdge("fork", "b")
		g.AddEdge("b", "b2")
		g.AddJoin([]string{"a", "b2"}, "c")
		g.AddConditionalEdges("c", func(_ context.Context, s engState) string {
			if s.Count < 2 {
				return "fork"
			}
			return graph.END
		}, "fork", graph.END)
		out, err := engInvoke(t, context.Background(), engCompile(t, g), engState{})
		if err != nil {
			t.Fatal(err)
		}
		if n := calls.Load(); n != 2 || out.Count != 2 {
			t.Errorf("c ran %d times (Count %d), want 2", n, out.Count)
		}
		if want := []int{4, 8}; !slices.Equal(steps, want) {
			t.Errorf("c ran in steps %v, want %v", steps, want)
		}
	})
}

// engFanOut builds START -(n Sends)-> worker -> END, where each worker sleeps 0-2ms and returns
// update(i).
func engFanOut(n int, update func(i int) engState) *graph.StateGraph[engState] {
	g := graph.New[engState]()
	g.AddRouter(graph.START, func(context.Context, engState) graph.Next[engState] {
		sends := make([]graph.Send[engState], n)
		for i := range sends {
			sends[i] = graph.Send[engState]{Node: "worker", Arg: engState{I: i}}
		}
		return graph.Next[engState]{Sends: sends}
	}, "worker")
	g.AddNode("worker", func(_ context.Context, s engState) (engState, error) {
		time.Sleep(time.Duration(rand.IntN(2001)) * time.Microsecond)
		return update(s.I), nil
	})
	g.AddEdge("worker", graph.END)
	return g
}

func TestEngineSendFanOutIsDeterministic(t *testing.T) {
	const n = 1000
	t.Run("append", func(t *testing.T) {
		c := engCompile(t, engFanOut(n, func(i int) engState { return engState{Items: []int{i}} }))
		want := make([]int, n)
		for i := range want {
			want[i] = i
		}
		for run := range 3 {
			out, err := engInvoke(t, context.Background(), c, engState{})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(out.Items, want) {
				t.Fatalf("run %d: %d items, not in Send order: first differences at %d", run, len(out.Items), engFirstDiff(out.Items, want))
			}
		}
	})
	t.Run("merge", func(t *testing.T) {
		c := engCompile(t, engFanOut(n, func(i int) engState {
			// Every worker writes "last": the one merged last (the last Send) must win.
			return engState{Seen: map[string]int{fmt.Sprint("k", i): i, "last": i}}
		}))
		for run := range 3 {
			out, err := engInvoke(t, context.Background(), c, engState{Seen: map[string]int{"input": -1}})
			if err != nil {
				t.Fatal(err)
			}
			if len(out.Seen) != n+2 {
				t.Fatalf("run %d: %d keys, want %d", run, len(out.Seen), n+2)
			}
			if out.Seen["last"] != n-1 || out.Seen["input"] != -1 {
				t.Fatalf("run %d: last = %d, input = %d; want %d, -1", run, out.Seen["last"], out.Seen["input"], n-1)
			}
			for i := range n {
				if v, ok := out.Seen[fmt.Sprint("k", i)]; !ok || v != i {
					t.Fatalf("run %d: k%d = %d, %v", run, i, v, ok)
				}
			}
		}
	})
	t.Run("untagged field: several Sends setting it fail", func(t *testing.T) {
		c := engCompile(t, engFanOut(200, func(i int) engState { return engState{Count: i + 1} }))
		_, err := engInvoke(t, context.Background(), c, engState{})
		var bad *graph.InvalidUpdateError
		require.ErrorAs(t, err, &bad)
		assert.Equal(t, "Count", bad.Field)
		assert.Len(t, bad.Nodes, 200)
		assert.Contains(t, err.Error(), `"worker" (200 tasks) each set field Count`)
	})
}

func engFirstDiff(a, b []int) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// engConcurrencyGraph fans out n Sends whose workers track how many run at once. Each worker waits
// until want workers run at the same time (or every task has started), so that the maximum is
// reached whatever the scheduling; a guard keeps a broken engine from hanging the test.
func engConcurrencyGraph(n int, want int32, running, peak, total *atomic.Int32) *graph.StateGraph[engState] {
	g := graph.New[engState]()
	g.AddRouter(graph.START, func(context.Context, engState) graph.Next[engState] {
		sends := make([]graph.Send[engState], n)
		for i := range sends {
			sends[i] = graph.Send[engState]{Node: "w", Arg: engState{I: i}}
		}
		return graph.Next[engState]{Sends: sends}
	}, "w")
	var started atomic.Int32
	g.AddNode("w", func(_ context.Context, s engState) (engState, error) {
		cur := running.Add(1)
		started.Add(1)
		for {
			p := peak.Load()
			if cur <= p || peak.CompareAndSwap(p, cur) {
				break
			}
		}
		deadline := time.Now().Add(5 * time.Second)
		for running.Load() < want && started.Load() < int32(n) && time.Now().Before(deadline) {
			time.Sleep(100 * time.Microsecond)
		}
		total.Add(1)
		running.Add(-1)
		return engState{Items: []int{s.I}}, nil
	})
	g.AddEdge("w", graph.END)
	return g
}

func TestEngineMaxConcurrency(t *testing.T) {
	tests := []struct {
		name        string
		compileOpts []graph.Option
		invokeOpts  []graph.Option
		n           int
		want        int32
	}{
		{name: "bound of 3", compileOpts: []graph.Option{graph.WithMaxConcurrency(3)}, n: 20, want: 3},
		{name: "bound of 1", compileOpts: []graph.Option{graph.WithMaxConcurrency(1)}, n: 10, want: 1},
		{name: "invoke option overrides compile option", compileOpts: []graph.Option{graph.WithMaxConcurrency(1)},
			invokeOpts: []graph.Option{graph.WithMaxConcurrency(4)}, n: 20, want: 4},
		{name: "bound above the task count", compileOpts: []graph.Option{graph.WithMaxConcurrency(50)}, n: 20, want: 20},
		{name: "no bound: all at once", n: 20, want: 20},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var running, peak, total atomic.Int32
			c := engCompile(t, engConcurrencyGraph(tc.n, tc.want, &running, &peak, &total), tc.compileOpts...)
			out, err := engInvoke(t, context.Background(), c, engState{}, tc.invokeOpts...)
			if err != nil {
				t.Fatal(err)
			}
			if got := total.Load(); got != int32(tc.n) {
				t.Errorf("%d tasks ran, want %d", got, tc.n)
			}
			if got := peak.Load(); got != tc.want {
				t.Errorf("at most %d tasks ran at once, want exactly %d", got, tc.want)
			}
			if len(out.Items) != tc.n {
				t.Errorf("%d updates merged, want %d", len(out.Items), tc.n)
			}
		})
	}
}

func TestEngineFirstFailureCancelsTheRest(t *testing.T) {
	const slow = 4
	var startedSlow sync.WaitGroup
	startedSlow.Add(slow)
	var sawCancel atomic.Int32
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })

	g := graph.New[engState]()
	g.AddNode("first", engLog("first"))
	g.AddEdge(graph.START, "first")
	g.AddNode("fail", func(ctx context.Context, _ engState) (engState, error) {
		done := make(chan struct{})
		go func() { startedSlow.Wait(); close(done) }()
		select {
		case <-done:
		case <-release:
		}
		return engState{}, fmt.Errorf("fail node: %w", errEngSentinel)
	})
	g.AddEdge("first", "fail")
	g.AddEdge("fail", graph.END)
	for i := range slow {
		name := fmt.Sprint("slow", i)
		g.AddNode(name, func(ctx context.Context, _ engState) (engState, error) {
			startedSlow.Done()
			select {
			case <-ctx.Done():
				sawCancel.Add(1)
				return engState{}, ctx.Err()
			case <-release:
				return engState{Log: []string{"not cancelled"}}, nil
			}
		})
		g.AddEdge("first", name)
		g.AddEdge(name, graph.END)
	}
	_, err := engInvoke(t, context.Background(), engCompile(t, g), engState{})
	var ne *graph.NodeError
	if !errors.As(err, &ne) {
		t.Fatalf("error %v is not a *NodeError", err)
	}
	if ne.Node != "fail" || ne.Step != 2 {
		t.Errorf("NodeError{Node: %q, Step: %d}, want fail, 2", ne.Node, ne.Step)
	}
	if ne.TaskID == "" {
		t.Error("NodeError.TaskID is empty")
	}
	if !errors.Is(err, errEngSentinel) || !errors.Is(ne.Err, errEngSentinel) {
		t.Errorf("error %v does not wrap the node's error", err)
	}
	if errors.Is(err, context.Canceled) {
		t.Errorf("error %v reports a cancellation; the run was not cancelled by its caller", err)
	}
	engContainsAll(t, err, `node "fail"`, "step 2", "eng sentinel")
	if n := sawCancel.Load(); n != slow {
		t.Errorf("%d slow nodes saw the cancellation, want %d", n, slow)
	}
}

func TestEngineNodePanic(t *testing.T) {
	tests := []struct {
		name  string
		build func(g *graph.StateGraph[engState])
		node  string
		value any
	}{
		{
			name: "single node",
			build: func(g *graph.StateGraph[engState]) {
				g.AddNode("boom", func(context.Context, engState) (engState, error) { panic("kaboom") })
				g.AddEdge(graph.START, "boom")
				g.AddEdge("boom", graph.END)
			},
			node: "boom", value: "kaboom",
		},
		{
			name: "one of parallel nodes",
			build: func(g *graph.StateGraph[engState]) {
				g.AddNode("ok", engLog("ok"))
				g.AddNode("boom", func(context.Context, engState) (engState, error) {
					var m map[string]int
					m["x"] = 1 //nolint:staticcheck // a runtime panic, on purpose
					return engState{}, nil
				})
				g.AddEdge(graph.START, "ok")
				g.AddEdge(graph.START, "boom")
				g.AddEdge("ok", graph.END)
				g.AddEdge("boom", graph.END)
			},
			node: "boom",
		},
		{
			name: "command node",
			build: func(g *graph.StateGraph[engState]) {
				g.AddCommandNode("cmdboom", func(context.Context, engState) (graph.Command[engState], error) {
					panic(42)
				})
				g.AddEdge(graph.START, "cmdboom")
			},
			node: "cmdboom", value: 42,
		},
		{
			name: "node with a timeout (runs in a goroutine of its own)",
			build: func(g *graph.StateGraph[engState]) {
				g.AddNode("slowboom", func(context.Context, engState) (engState, error) { panic("timed kaboom") },
					graph.WithTimeout(time.Minute))
				g.AddEdge(graph.START, "slowboom")
				g.AddEdge("slowboom", graph.END)
			},
			node: "slowboom", value: "timed kaboom",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := graph.New[engState]()
			tc.build(g)
			_, err := engInvoke(t, context.Background(), engCompile(t, g), engState{})
			var ne *graph.NodeError
			if !errors.As(err, &ne) {
				t.Fatalf("error %v is not a *NodeError", err)
			}
			if ne.Node != tc.node || ne.Step != 1 {
				t.Errorf("NodeError{Node: %q, Step: %d}, want %q, 1", ne.Node, ne.Step, tc.node)
			}
			var pe *graph.PanicError
			if !errors.As(err, &pe) {
				t.Fatalf("error %v does not wrap a *PanicError", err)
			}
			if len(pe.Stack) == 0 {
				t.Error("PanicError.Stack is empty")
			} else if !bytes.Contains(pe.Stack, []byte("engine_test.go")) {
				t.Errorf("PanicError.Stack does not show where the panic happened:\n%s", pe.Stack)
			}
			if tc.value != nil && pe.Value != tc.value {
				t.Errorf("PanicError.Value = %v, want %v", pe.Value, tc.value)
			}
			engContainsAll(t, err, fmt.Sprintf("%q", tc.node), "panic")
		})
	}
}

func engLoopGraph(steps *atomic.Int32, stopAt int) *graph.StateGraph[engState] {
	g := graph.New[engState]()
	g.AddNode("loop", func(_ context.Context, s engState) (engState, error) {
		steps.Add(1)
		return engState{Count: s.Count + 1}, nil
	})
	g.AddEdge(graph.START, "loop")
	g.AddConditionalEdges("loop", func(_ context.Context, s engState) string {
		if stopAt > 0 && s.Count >= stopAt {
			return graph.END
		}
		return "loop"
	}, "loop", graph.END)
	return g
}

func TestEngineRecursionLimit(t *testing.T) {
	tests := []struct {
		name        string
		stopAt      int // 0: never
		compileOpts []graph.Option
		invokeOpts  []graph.Option
		wantLimit   int // 0: the run succeeds
		wantSteps   int32
	}{
		{name: "endless loop", compileOpts: []graph.Option{graph.WithRecursionLimit(10)}, wantLimit: 10, wantSteps: 10},
		{name: "exactly the limit", stopAt: 10, compileOpts: []graph.Option{graph.WithRecursionLimit(10)}, wantSteps: 10},
		{name: "one past the limit", stopAt: 11, compileOpts: []graph.Option{graph.WithRecursionLimit(10)}, wantLimit: 10, wantSteps: 10},
		{name: "invoke option overrides compile option", stopAt: 10,
			compileOpts: []graph.Option{graph.WithRecursionLimit(5)}, invokeOpts: []graph.Option{graph.WithRecursionLimit(10)}, wantSteps: 10},
		{name: "invoke option lowers the limit", stopAt: 10, invokeOpts: []graph.Option{graph.WithRecursionLimit(3)}, wantLimit: 3, wantSteps: 3},
		{name: "default limit", wantLimit: graph.DefaultRecursionLimit, wantSteps: graph.DefaultRecursionLimit},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var steps atomic.Int32
			c := engCompile(t, engLoopGraph(&steps, tc.stopAt), tc.compileOpts...)
			out, err := engInvoke(t, context.Background(), c, engState{}, tc.invokeOpts...)
			if tc.wantLimit == 0 {
				if err != nil {
					t.Fatalf("Invoke: %v", err)
				}
			} else {
				var rl *graph.RecursionLimitError
				if !errors.As(err, &rl) {
					t.Fatalf("error %v is not a *RecursionLimitError", err)
				}
				if rl.Limit != tc.wantLimit {
					t.Errorf("Limit = %d, want %d", rl.Limit, tc.wantLimit)
				}
				engContainsAll(t, err, fmt.Sprint(tc.wantLimit))
			}
			if got := steps.Load(); got != tc.wantSteps {
				t.Errorf("the node ran %d times, want %d", got, tc.wantSteps)
			}
			if out.Count != int(tc.wantSteps) {
				t.Errorf("state Count = %d, want %d (the state so far)", out.Count, tc.wantSteps)
			}
		})
	}
}

func TestEngineCurrentTask(t *testing.T) {
	if info, ok := graph.CurrentTask(context.Background()); ok {
		t.Errorf("CurrentTask outside a node = %+v, true; want ok false", info)
	}
	var mu sync.Mutex
	got := map[string][]graph.TaskInfo{}
	record := func(ctx context.Context) {
		info, ok := graph.CurrentTask(ctx)
		if !ok {
			t.Error("CurrentTask in a node: ok is false")
			return
		}
		mu.Lock()
		got[info.Node] = append(got[info.Node], info)
		mu.Unlock()
	}
	routerOK := atomic.Bool{}
	g := graph.New[engState]()
	g.AddNode("a", func(ctx context.Context, _ engState) (engState, error) { record(ctx); return engState{}, nil })
	g.AddNode("b", func(ctx context.Context, _ engState) (engState, error) { record(ctx); return engState{}, nil })
	g.AddNode("w", func(ctx context.Context, _ engState) (engState, error) { record(ctx); return engState{}, nil })
	type key struct{}
	var attempts atomic.Int32
	g.AddNode("timed", func(ctx context.Context, _ engState) (engState, error) {
		if attempts.Add(1) == 1 {
			return engState{}, errEngSentinel // the retry is the same task
		}
		record(context.WithValue(ctx, key{}, 1)) // a context derived from the node's
		return engState{}, nil
	}, graph.WithTimeout(time.Minute), graph.WithRetry(graph.RetryPolicy{InitialInterval: time.Millisecond}))
	g.AddEdge(graph.START, "timed")
	g.AddEdge("timed", graph.END)
	g.AddEdge(graph.START, "a")
	g.AddEdge("a", "b")
	g.AddRouter("b", func(ctx context.Context, _ engState) graph.Next[engState] {
		_, ok := graph.CurrentTask(ctx)
		routerOK.Store(ok)
		return graph.Next[engState]{Sends: []graph.Send[engState]{{Node: "w"}, {Node: "w"}, {Node: "w"}}}
	}, "w")
	g.AddEdge("w", graph.END)
	if _, err := engInvoke(t, context.Background(), engCompile(t, g), engState{}); err != nil {
		t.Fatal(err)
	}
	if routerOK.Load() {
		t.Error("CurrentTask in a router: ok is true; a router is not a node")
	}
	check := func(node string, n, step int) {
		t.Helper()
		infos := got[node]
		if len(infos) != n {
			t.Fatalf("%s ran %d times, want %d", node, len(infos), n)
		}
		ids := map[string]bool{}
		for _, info := range infos {
			if info.Node != node || info.Step != step || info.Namespace != "" {
				t.Errorf("CurrentTask in %s = %+v, want node %s, step %d, no namespace", node, info, node, step)
			}
			if info.TaskID == "" || ids[info.TaskID] {
				t.Errorf("CurrentTask in %s: task ID %q empty or not unique", node, info.TaskID)
			}
			ids[info.TaskID] = true
		}
	}
	check("timed", 1, 1)
	check("a", 1, 1)
	check("b", 1, 2)
	check("w", 3, 3)
}

func TestEngineConcurrentInvokes(t *testing.T) {
	g := graph.New[engState]()
	g.AddNode("start", func(_ context.Context, s engState) (engState, error) {
		return engState{Log: []string{fmt.Sprint("start", s.I)}}, nil
	})
	g.AddEdge(graph.START, "start")
	g.AddRouter("start", func(_ context.Context, s engState) graph.Next[engState] {
		var n graph.Next[engState]
		for k := range s.I%5 + 1 {
			n.Sends = append(n.Sends, graph.Send[engState]{Node: "w", Arg: engState{I: s.I*100 + k}})
		}
		return n
	}, "w")
	g.AddNode("w", func(_ context.Context, s engState) (engState, error) {
		time.Sleep(time.Duration(rand.IntN(500)) * time.Microsecond)
		return engState{Items: []int{s.I}, Seen: map[string]int{fmt.Sprint(s.I): 1}}, nil
	})
	g.AddEdge("w", "loop")
	g.AddNode("loop", func(_ context.Context, s engState) (engState, error) {
		return engState{Count: s.Count + 1}, nil
	})
	g.AddConditionalEdges("loop", func(_ context.Context, s engState) string {
		if s.Count < 3 {
			return "loop"
		}
		return graph.END
	}, "loop", graph.END)
	c := engCompile(t, g, graph.WithMaxConcurrency(2))

	const workers = 20
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for i := range workers {
		wg.Go(func() {
			out, err := c.Invoke(context.Background(), engState{I: i})
			if err != nil {
				errs <- fmt.Errorf("invoke %d: %w", i, err)
				return
			}
			var want engState
			want.I = i
			want.Count = 3
			want.Log = []string{fmt.Sprint("start", i)}
			want.Seen = map[string]int{}
			for k := range i%5 + 1 {
				want.Items = append(want.Items, i*100+k)
				want.Seen[fmt.Sprint(i*100+k)] = 1
			}
			if !reflect.DeepEqual(out, want) {
				errs <- fmt.Errorf("invoke %d: got %+v, want %+v", i, out, want)
			}
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	engWait(t, done, "concurrent invokes")
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
