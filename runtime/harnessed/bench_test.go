package harnessed_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/agiraph/agiraph/checkpoint"
	"github.com/agiraph/agiraph/checkpoint/sqlite"
	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/providers/scripted"
	"github.com/agiraph/agiraph/runtime"
	"github.com/agiraph/agiraph/runtime/harnessed"
	"github.com/agiraph/agiraph/tools"
)

// benchReAct runs an assignment of 100 model/tool turns (each turn one call of a trivial tool,
// then publish) per op, checkpointed in the saver newSaver returns, and reports the time per
// turn: the harness's own cost, with a model that answers at once.
func benchReAct(b *testing.B, newSaver func(b *testing.B) checkpoint.Saver) {
	const turns = 100
	echo := tools.Func("echo", "Echo.", func(_ context.Context, a struct {
		N int `json:"n"`
	}) (string, error) {
		return fmt.Sprint(a.N), nil
	})
	model := scripted.NewFunc("bench", func(_ context.Context, req providers.Request) (scripted.Turn, error) {
		n := 0
		for _, m := range req.Messages {
			if m.Role == providers.Assistant {
				n++
			}
		}
		if n < turns-1 {
			return scripted.Turn{Calls: []tools.Call{call(fmt.Sprint("c", n), "echo", map[string]int{"n": n})}}, nil
		}
		return scripted.Turn{Calls: []tools.Call{call("done", "publish", runtime.PublishArgs{Summary: "done"})}}, nil
	})
	saver := newSaver(b)
	rt := harnessed.New(model, harnessed.WithSaver(saver), harnessed.WithMaxIterations(turns))
	dir := b.TempDir()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		a := runtime.Assignment{ID: fmt.Sprint("bench-", i), Task: "Echo 99 times, then publish.", Dir: runtime.NodeDir(filepath.Join(dir, fmt.Sprint(i))), Tools: []tools.Tool{echo}}
		o, err := rt.Run(context.Background(), a, nil)
		if err != nil || o.Status != runtime.Published || o.Turns != turns {
			b.Fatalf("outcome %+v, %v; want published after %d turns", o, err, turns)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*turns), "us/turn")
}

// BenchmarkReAct100 is a 100-turn ReAct loop checkpointed in memory.
func BenchmarkReAct100(b *testing.B) {
	benchReAct(b, func(*testing.B) checkpoint.Saver { return checkpoint.NewMemory() })
}

// BenchmarkReAct100SQLite is the same loop checkpointed durably in SQLite.
func BenchmarkReAct100SQLite(b *testing.B) {
	benchReAct(b, func(b *testing.B) checkpoint.Saver {
		s, err := sqlite.Open(filepath.Join(b.TempDir(), "bench.db"))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { s.Close() })
		return s
	})
}
