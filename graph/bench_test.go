package graph_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/agiraph/agiraph/checkpoint"
	"github.com/agiraph/agiraph/graph"
)

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
	c, err := g.Compile()
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		out, err := c.Invoke(ctx, chainState{})
		if err != nil || out.Count != n {
			b.Fatalf("count %d, err %v", out.Count, err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*n), "us/step")
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
	c, err := g.Compile()
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		out, err := c.Invoke(ctx, fanState{})
		if err != nil || len(out.Items) != n || out.Total != n*(n-1) {
			b.Fatalf("items %d total %d, err %v", len(out.Items), out.Total, err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*n), "us/task")
}

type loopState struct {
	I   int
	Log []string `graph:"append"`
}

// loopGraph is one node looping on itself until i reaches steps, appending a log line each time.
func loopGraph(steps int) *graph.StateGraph[loopState] {
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
	return g
}

// benchLoop runs loopGraph; opts, called before each run, gives that run's options.
func benchLoop(b *testing.B, steps int, opts func() []graph.Option) {
	c, err := loopGraph(steps).Compile(graph.WithRecursionLimit(steps + 1))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		var runOpts []graph.Option
		if opts != nil {
			runOpts = opts()
		}
		out, err := c.Invoke(ctx, loopState{}, runOpts...)
		if err != nil || out.I != steps || len(out.Log) != steps {
			b.Fatalf("i %d log %d, err %v", out.I, len(out.Log), err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*steps), "us/step")
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
