package sqlite_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/agiraph/agiraph/checkpoint"
	"github.com/agiraph/agiraph/checkpoint/sqlite"
	"github.com/agiraph/agiraph/graph"
	"github.com/agiraph/agiraph/internal/workload"
)

// dbBytes is the size of the database file and its write-ahead log.
func dbBytes(b *testing.B, path string) int64 {
	var n int64
	for _, p := range []string{path, path + "-wal"} {
		if fi, err := os.Stat(p); err == nil {
			n += fi.Size()
		}
	}
	return n
}

// BenchmarkLoopSQLite: BenchmarkLoop (see package graph) with 500 steps, checkpointed to a SQLite
// file with sync durability. Each run gets a new database; db_bytes is its size (database and log,
// the saver still open) when the run has ended.
func BenchmarkLoopSQLite(b *testing.B) { loopSQLite(b) }

// BenchmarkLoopSQLiteFull: the same with every commit synced (SyncFull): a step that returned
// survives a power failure, as with PostgreSQL's defaults.
func BenchmarkLoopSQLiteFull(b *testing.B) { loopSQLite(b, sqlite.WithSynchronous(sqlite.SyncFull)) }

func loopSQLite(b *testing.B, opts ...sqlite.Option) {
	dir := b.TempDir()
	i := 0
	workload.SaverLoop(b, func(b *testing.B) (checkpoint.Saver, func() int64) {
		i++
		path := filepath.Join(dir, fmt.Sprintf("loop-%d.db", i))
		saver, err := sqlite.Open(path, opts...)
		if err != nil {
			b.Fatal(err)
		}
		return saver, func() int64 {
			n := dbBytes(b, path)
			saver.Close()
			os.Remove(path)
			return n
		}
	})
}

// longThread makes a thread of 10,000 checkpoints: a counter loop that logs a short entry per step
// and pauses before its last step.
func longThread(b *testing.B, saver checkpoint.Saver) *graph.Compiled[workload.LoopState] {
	const steps = 10_000
	g := graph.New[workload.LoopState]()
	g.AddNode("step", func(_ context.Context, s workload.LoopState) (workload.LoopState, error) {
		return workload.LoopState{I: s.I + 1, Log: []string{fmt.Sprint("e", s.I)}}, nil
	})
	g.AddNode("last", func(_ context.Context, s workload.LoopState) (workload.LoopState, error) {
		return workload.LoopState{I: s.I + 1}, nil
	})
	g.AddEdge(graph.START, "step")
	g.AddConditionalEdges("step", func(_ context.Context, s workload.LoopState) string {
		if s.I < steps-1 {
			return "step"
		}
		return "last"
	}, "step", "last")
	g.AddEdge("last", graph.END)
	c, err := g.Compile(graph.WithCheckpointer(saver), graph.WithRecursionLimit(steps+1), graph.WithInterruptBefore("last"))
	if err != nil {
		b.Fatal(err)
	}
	_, err = c.Invoke(context.Background(), workload.LoopState{}, graph.WithThread("long"), graph.WithDurability(graph.DurabilityAsync))
	var paused *graph.Interrupted
	if !errors.As(err, &paused) {
		b.Fatalf("setting up the thread: %v", err)
	}
	return c
}

// benchLongThread times op, called once per iteration on a thread of 10,000 checkpoints, and
// reports ms per call.
func benchLongThread(b *testing.B, op func(context.Context, *graph.Compiled[workload.LoopState]) error) {
	saver, err := sqlite.Open(filepath.Join(b.TempDir(), "long.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer saver.Close()
	c := longThread(b, saver)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if err := op(ctx, c); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/1e6/float64(b.N), "ms/op")
}

// BenchmarkResume10k: what Resume does before running anything, on a thread of 10,000 checkpoints:
// find the latest checkpoint, rebuild its state (the nearest snapshot and the updates after it)
// and its next tasks and pending interrupts. Measured through State, which does exactly that.
func BenchmarkResume10k(b *testing.B) {
	benchLongThread(b, func(ctx context.Context, c *graph.Compiled[workload.LoopState]) error {
		snap, err := c.State(ctx, graph.WithThread("long"))
		if err == nil && (snap.Values.I != 9_999 || len(snap.Values.Log) != 9_999 || len(snap.Interrupts) != 1) {
			err = fmt.Errorf("state %d with %d entries and %d interrupts", snap.Values.I, len(snap.Values.Log), len(snap.Interrupts))
		}
		return err
	})
}

// BenchmarkHistory10k: listing the 100 newest snapshots, states rebuilt, of a thread of 10,000
// checkpoints.
func BenchmarkHistory10k(b *testing.B) {
	benchLongThread(b, func(ctx context.Context, c *graph.Compiled[workload.LoopState]) error {
		h, err := c.History(ctx, checkpoint.ListOptions{Limit: 100}, graph.WithThread("long"))
		if err == nil && (len(h) != 100 || h[99].Values.I != 9_999-99) {
			err = fmt.Errorf("%d snapshots", len(h))
		}
		return err
	})
}
