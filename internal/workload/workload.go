// Package workload holds the engine benchmark workloads (see docs/performance.md): the graphs,
// the checks of their results, and the loop that runs them as Go benchmarks, shared by the
// benchmarks of graph and of the savers.
package workload

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/agiraph/agiraph/checkpoint"
	"github.com/agiraph/agiraph/graph"
)

// Bench compiles g and invokes it once per iteration from input, failing on an error or on a final
// state that check rejects, and reports the time per unit (a step or a task; perOp of them per
// run). runOpts, when set, gives the options of each run.
func Bench[S any](b *testing.B, g *graph.StateGraph[S], input S, perOp int, unit string, check func(S) error, runOpts func() []graph.Option, opts ...graph.Option) {
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

// ChainState is the state of Chain.
type ChainState struct{ Count int }

// Chain is n nodes in a line, each adding one to Count.
func Chain(n int) (*graph.StateGraph[ChainState], func(ChainState) error) {
	g := graph.New[ChainState]()
	for i := range n {
		g.AddNode(fmt.Sprintf("n%d", i), func(_ context.Context, s ChainState) (ChainState, error) {
			return ChainState{Count: s.Count + 1}, nil
		})
		if i > 0 {
			g.AddEdge(fmt.Sprintf("n%d", i-1), fmt.Sprintf("n%d", i))
		}
	}
	g.AddEdge(graph.START, "n0")
	g.AddEdge(fmt.Sprintf("n%d", n-1), graph.END)
	return g, func(s ChainState) error {
		if s.Count != n {
			return fmt.Errorf("count %d, want %d", s.Count, n)
		}
		return nil
	}
}

// FanoutState is the state of Fanout.
type FanoutState struct {
	I     int
	Items []int `graph:"append"`
	Total int
}

// Fanout sends n tasks from START to worker, which returns I*2 in Items; collect sums them.
func Fanout(n int) (*graph.StateGraph[FanoutState], func(FanoutState) error) {
	g := graph.New[FanoutState]()
	g.AddRouter(graph.START, func(_ context.Context, _ FanoutState) graph.Next[FanoutState] {
		sends := make([]graph.Send[FanoutState], n)
		for i := range sends {
			sends[i] = graph.Send[FanoutState]{Node: "worker", Arg: FanoutState{I: i}}
		}
		return graph.Next[FanoutState]{Sends: sends}
	}, "worker")
	g.AddNode("worker", func(_ context.Context, s FanoutState) (FanoutState, error) {
		return FanoutState{Items: []int{s.I * 2}}, nil
	})
	g.AddNode("collect", func(_ context.Context, s FanoutState) (FanoutState, error) {
		sum := 0
		for _, v := range s.Items {
			sum += v
		}
		return FanoutState{Total: sum}, nil
	})
	g.AddEdge("worker", "collect")
	g.AddEdge("collect", graph.END)
	return g, func(s FanoutState) error {
		if len(s.Items) != n || s.Total != n*(n-1) {
			return fmt.Errorf("%d items totalling %d, want %d totalling %d", len(s.Items), s.Total, n, n*(n-1))
		}
		for i, v := range s.Items {
			if v != i*2 {
				return fmt.Errorf("item %d is %d, want %d: updates merged out of order", i, v, i*2)
			}
		}
		return nil
	}
}

// LoopState is the state of Loop.
type LoopState struct {
	I   int
	Log []string `graph:"append"`
}

// Loop is one node looping on itself through a conditional edge until I reaches steps, appending
// "entry <i> " and 100 x's to Log each time.
func Loop(steps int) (*graph.StateGraph[LoopState], func(LoopState) error) {
	pad := strings.Repeat("x", 100)
	g := graph.New[LoopState]()
	g.AddNode("step", func(_ context.Context, s LoopState) (LoopState, error) {
		return LoopState{I: s.I + 1, Log: []string{fmt.Sprintf("entry %d %s", s.I, pad)}}, nil
	})
	g.AddEdge(graph.START, "step")
	g.AddConditionalEdges("step", func(_ context.Context, s LoopState) string {
		if s.I >= steps {
			return graph.END
		}
		return "step"
	}, "step", graph.END)
	return g, func(s LoopState) error {
		if s.I != steps || len(s.Log) != steps || s.Log[steps-1] != fmt.Sprintf("entry %d %s", steps-1, pad) {
			return fmt.Errorf("i %d with %d log entries, want %d", s.I, len(s.Log), steps)
		}
		return nil
	}
}

// SaverLoop is Loop's benchmark (500 steps) checkpointed with sync durability to a saver: open
// gives each run a new, empty one and a function that closes it and returns its size on disk
// then. It reports the time per step, db_bytes (the size of a run's checkpoints) and that per
// step.
func SaverLoop(b *testing.B, open func(b *testing.B) (checkpoint.Saver, func() int64)) {
	const steps = 500
	g, check := Loop(steps)
	c, err := g.Compile(graph.WithRecursionLimit(steps + 1))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	var bytes int64
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		saver, closed := open(b)
		b.StartTimer()
		out, err := c.Invoke(ctx, LoopState{}, graph.WithCheckpointer(saver), graph.WithThread("loop"))
		b.StopTimer()
		if err == nil {
			err = check(out)
		}
		if err != nil {
			b.Fatal(err)
		}
		bytes += closed()
		b.StartTimer()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/1e3/float64(b.N*steps), "us/step")
	b.ReportMetric(float64(bytes)/float64(b.N), "db_bytes")
	b.ReportMetric(float64(bytes)/float64(b.N*steps), "bytes/step")
}
