package harnessed_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agiraph/agiraph/checkpoint"
	"github.com/agiraph/agiraph/checkpoint/sqlite"
	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/providers/scripted"
	"github.com/agiraph/agiraph/runtime"
	"github.com/agiraph/agiraph/runtime/adapter"
	"github.com/agiraph/agiraph/runtime/harnessed"
	"github.com/agiraph/agiraph/runtime/runtimetest"
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
		return scripted.Turn{Calls: []tools.Call{call("done", "publish", adapter.PublishArgs{Summary: "done"})}}, nil
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

// BenchmarkTurn1000SQLite is one model turn of 1,000 tool calls (a coordinator putting 1,000
// nodes on the board, say: a call of a tool that is not Safe runs alone, one superstep each),
// then a publish, checkpointed durably in a new SQLite file per op. db_bytes is the size of the
// file once the saver is closed (its log copied in): what the assignment leaves on disk.
func BenchmarkTurn1000SQLite(b *testing.B) {
	const calls = 1000
	create := tools.Func("add_node", "Put a piece of work on the board.", func(_ context.Context, a struct {
		Task string `json:"task"`
	}) (string, error) {
		return "Created node for: " + a.Task, nil
	})
	turn := make([]tools.Call, calls)
	for i := range turn {
		turn[i] = call(fmt.Sprint("c", i), "add_node", map[string]string{"task": fmt.Sprintf("Work item %d: read the input, write the findings to findings.md.", i)})
	}
	dir := b.TempDir()
	var bytes int64
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		path := filepath.Join(dir, fmt.Sprint("turn-", i, ".db"))
		saver, err := sqlite.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		model := scripted.New("bench", scripted.Turn{Calls: turn},
			scripted.Turn{Calls: []tools.Call{call("done", "publish", adapter.PublishArgs{Summary: "done"})}})
		rt := harnessed.New(model, harnessed.WithSaver(saver))
		a := runtime.Assignment{ID: "turn", Task: "Plan 1,000 nodes.", Dir: runtime.NodeDir(filepath.Join(dir, fmt.Sprint(i))), Tools: []tools.Tool{create}}
		b.StartTimer()
		o, err := rt.Run(context.Background(), a, nil)
		b.StopTimer()
		if err != nil || o.Status != runtime.Published {
			b.Fatalf("outcome %+v, %v; want published", o, err)
		}
		bytes += closedSize(b, saver, path)
		b.StartTimer()
	}
	b.ReportMetric(float64(bytes)/float64(b.N), "db_bytes")
}

// BenchmarkWake300SQLite is a conversational worker (a coordinator, say) woken 300 times in one
// conversation, each time by a message of 1 KB that it answers with 1 KB, checkpointed durably
// in a new SQLite file per op: an agent that lives for weeks. ms/wake is the time of the last
// 100 wake-ups (loading the conversation included), db_bytes the file once the saver is closed.
func BenchmarkWake300SQLite(b *testing.B) {
	const wakes = 300
	dir := b.TempDir()
	var bytes int64
	var last100 time.Duration
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		path := filepath.Join(dir, fmt.Sprint("wake-", i, ".db"))
		saver, err := sqlite.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		turns := make([]scripted.Turn, wakes)
		for j := range turns {
			turns[j] = scripted.Turn{Text: fmt.Sprintf("reply %d: %01000d", j, j)}
		}
		rt := harnessed.New(scripted.New("bench", turns...), harnessed.WithSaver(saver), harnessed.WithTextEndsTurn(), harnessed.WithMaxIterations(wakes))
		mb := &runtimetest.Mailbox{}
		a := runtime.Assignment{ID: "wake", Task: "Answer the human.", Dir: runtime.NodeDir(filepath.Join(dir, fmt.Sprint(i))), Mailbox: mb, Wake: true}
		b.StartTimer()
		for j := range wakes {
			start := time.Now()
			if j > 0 {
				mb.Deliver("human", fmt.Sprintf("news %d: %01000d", j, j))
			}
			if _, err := rt.Run(context.Background(), a, nil); err != nil {
				b.Fatal(err)
			}
			if j >= wakes-100 {
				last100 += time.Since(start)
			}
		}
		b.StopTimer()
		bytes += closedSize(b, saver, path)
		b.StartTimer()
	}
	b.ReportMetric(float64(last100.Microseconds())/1e3/float64(100*b.N), "ms/wake")
	b.ReportMetric(float64(bytes)/float64(b.N), "db_bytes")
}

// closedSize closes saver and returns the size of its database file at path.
func closedSize(b *testing.B, saver interface{ Close() error }, path string) int64 {
	b.Helper()
	if err := saver.Close(); err != nil {
		b.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	return fi.Size()
}
