package graph_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/agiraph/agiraph/checkpoint"
	"github.com/agiraph/agiraph/graph"
)

// bench compiles g and invokes it once per iteration from input, failing on an error or on a final
// state that check rejects, and reports the time per unit (a step or a task; perOp of them per run).
// runOpts, when set, gives the options of each run.
func bench[S any](b *testing.B, g *graph.StateGraph[S], input S, perOp int, unit string, check func(S) error, runOpts func() []graph.Option, opts ...graph.Option) {
	c, err := g.Compile(opts...)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		var o []graph.Option
		if runOpts != nil {
			o = runOpts()
		}
		out, err := c.Invoke(ctx, input, o...)
		if err == nil {
			err = check(out)
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/1e3/float64(b.N*perOp), unit)
}

type chainState struct{ Count int }

// BenchmarkChain: 100 nodes in a line, each adding one.
func BenchmarkChain(b *testing.B) {
	const n = 100
	g := graph.New[chainState]()
	for i := range n {
		g.AddNode(fmt.Sprintf("n%d", i), func(_ context.Context, s chainState) (chainState, error) {
			return chainState{Count: s.Count + 1}, nil
		})
		if i > 0 {
			g.AddEdge(fmt.Sprintf("n%d", i-1), fmt.Sprintf("n%d", i))
		}
	}
	g.AddEdge(graph.START, "n0")
	g.AddEdge(fmt.Sprintf("n%d", n-1), graph.END)
	bench(b, g, chainState{}, n, "us/step", func(s chainState) error {
		if s.Count != n {
			return fmt.Errorf("count %d, want %d", s.Count, n)
		}
		return nil
	}, nil)
}

type fanState struct {
	I     int
	Items []int `graph:"append"`
	Total int
}

// BenchmarkFanout: 1000 Sends from START, an append reducer, and a collecting node.
func BenchmarkFanout(b *testing.B) {
	const n = 1000
	g := graph.New[fanState]()
	g.AddRouter(graph.START, func(_ context.Context, _ fanState) graph.Next[fanState] {
		sends := make([]graph.Send[fanState], n)
		for i := range sends {
			sends[i] = graph.Send[fanState]{Node: "worker", Arg: fanState{I: i}}
		}
		return graph.Next[fanState]{Sends: sends}
	}, "worker")
	g.AddNode("worker", func(_ context.Context, s fanState) (fanState, error) {
		return fanState{Items: []int{s.I * 2}}, nil
	})
	g.AddNode("collect", func(_ context.Context, s fanState) (fanState, error) {
		sum := 0
		for _, v := range s.Items {
			sum += v
		}
		return fanState{Total: sum}, nil
	})
	g.AddEdge("worker", "collect")
	g.AddEdge("collect", graph.END)
	bench(b, g, fanState{}, n, "us/task", func(s fanState) error {
		if len(s.Items) != n || s.Total != n*(n-1) {
			return fmt.Errorf("%d items totalling %d, want %d totalling %d", len(s.Items), s.Total, n, n*(n-1))
		}
		return nil
	}, nil)
}

type loopState struct {
	I   int
	Log []string `graph:"append"`
}

// benchLoop runs one node looping on itself until i reaches steps, appending a 100-byte log line
// each time.
func benchLoop(b *testing.B, steps int, runOpts func() []graph.Option) {
	pad := strings.Repeat("x", 100)
	g := graph.New[loopState]()
	g.AddNode("step", func(_ context.Context, s loopState) (loopState, error) {
		return loopState{I: s.I + 1, Log: []string{fmt.Sprintf("entry %d %s", s.I, pad)}}, nil
	})
	g.AddEdge(graph.START, "step")
	g.AddConditionalEdges("step", func(_ context.Context, s loopState) string {
		if s.I >= steps {
			return graph.END
		}
		return "step"
	}, "step", graph.END)
	bench(b, g, loopState{}, steps, "us/step", func(s loopState) error {
		if s.I != steps || len(s.Log) != steps || s.Log[steps-1] != fmt.Sprintf("entry %d %s", steps-1, pad) {
			return fmt.Errorf("i %d with %d log entries, want %d", s.I, len(s.Log), steps)
		}
		return nil
	}, runOpts, graph.WithRecursionLimit(steps+1))
}

// BenchmarkLoop: 1000 steps of a self-loop through a conditional edge, no checkpointer.
func BenchmarkLoop(b *testing.B) { benchLoop(b, 1000, nil) }

// BenchmarkLoopMemory: BenchmarkLoop with the in-memory saver and a thread. Each run gets a fresh
// saver, so the figure is the cost of checkpointing a step, not of a heap holding every earlier run.
func BenchmarkLoopMemory(b *testing.B) {
	benchLoop(b, 1000, func() []graph.Option {
		return []graph.Option{graph.WithCheckpointer(checkpoint.NewMemory()), graph.WithThread("bench")}
	})
}
