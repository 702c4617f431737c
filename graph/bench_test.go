package graph_test

import (
	"testing"

	"github.com/agiraph/agiraph/checkpoint"
	"github.com/agiraph/agiraph/graph"
	"github.com/agiraph/agiraph/internal/workload"
)

// BenchmarkChain: 100 nodes in a line, each adding one.
func BenchmarkChain(b *testing.B) {
	g, check := workload.Chain(100)
	workload.Bench(b, g, workload.ChainState{}, 100, "us/step", check, nil)
}

// BenchmarkFanout: 1000 Sends from START, an append reducer, and a collecting node.
func BenchmarkFanout(b *testing.B) {
	g, check := workload.Fanout(1000)
	workload.Bench(b, g, workload.FanoutState{}, 1000, "us/task", check, nil)
}

// BenchmarkLoop: 1000 steps of a self-loop through a conditional edge, no checkpointer.
func BenchmarkLoop(b *testing.B) {
	g, check := workload.Loop(1000)
	workload.Bench(b, g, workload.LoopState{}, 1000, "us/step", check, nil, graph.WithRecursionLimit(1001))
}

// BenchmarkLoopMemory: BenchmarkLoop with the in-memory saver and a thread. Each run gets a fresh
// saver, so the figure is the cost of checkpointing a step, not of a heap holding every earlier run.
func BenchmarkLoopMemory(b *testing.B) {
	g, check := workload.Loop(1000)
	workload.Bench(b, g, workload.LoopState{}, 1000, "us/step", check, func() []graph.Option {
		return []graph.Option{graph.WithCheckpointer(checkpoint.NewMemory()), graph.WithThread("bench")}
	}, graph.WithRecursionLimit(1001))
}
