package nodes_test

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agiraph/agiraph/models"
	"github.com/agiraph/agiraph/nodes"
	"github.com/agiraph/agiraph/nodes/eventlog"
	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/providers/scripted"
	"github.com/agiraph/agiraph/tools"
)

// BenchmarkSquad runs a squad with instant scripted models on SQLite and the default tick: the
// coordinator spawns W workers and creates N nodes in its first turn, waits for the stage (wait
// with until "stage": it takes no turn as each node completes), each worker writes a note and
// publishes, and the coordinator finishes once the stage is complete. What it costs
// is the squad's own overhead: it reports ms per node, the bytes the agent's home holds after
// the run and those of its checkpoints (state.db, with its log), and allocations. The homes of
// its runs are removed when it ends, not between runs: on ext4 a file created soon after
// thousands were deleted nearby costs ten times more (without a journal, the file system does not
// hand out an inode deleted in the last minute, or six while its inode table's block is unwritten,
// and reads each such candidate), which would measure the cleanup of the run before.
func BenchmarkSquad(b *testing.B) {
	homes := b.TempDir()
	for _, size := range []struct{ nodes, workers int }{{100, 5}, {100, 50}, {300, 5}, {300, 50}, {1000, 5}, {1000, 50}} {
		b.Run(fmt.Sprintf("N=%d/W=%d", size.nodes, size.workers), func(b *testing.B) {
			b.ReportAllocs()
			var disk, db int64
			for b.Loop() {
				disk, db = squadRun(b, homes, size.nodes, size.workers)
			}
			b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N*size.nodes), "ms/node")
			b.ReportMetric(float64(disk), "bytes-on-disk")
			b.ReportMetric(float64(db), "state.db-bytes")
		})
	}
}

// squadRun runs the benchmark's squad once, in a new home in homes, and returns the bytes the
// home holds, and those of state.db and its write-ahead log.
func squadRun(b *testing.B, homes string, n, w int) (disk, db int64) {
	b.StopTimer()
	home, err := os.MkdirTemp(homes, "home")
	if err != nil {
		b.Fatal(err)
	}
	coord := benchCoordinator(n, w)
	worker := benchWorker()
	s, err := nodes.New(nodes.WithHome(home), nodes.WithCoordinatorModel(coord.Name()), nodes.WithModel(worker.Name()),
		nodes.WithModelOptions(models.WithModels(coord, worker), models.WithoutRetry()), nodes.WithMaxConcurrent(w))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	b.StartTimer()
	res, err := s.Run(ctx, "Write the notes.")
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
	if res.Output != "all notes written" {
		b.Fatalf("output %q", res.Output)
	}
	completed := 0
	for _, node := range res.Board.Nodes {
		if node.Status == nodes.NodeCompleted {
			completed++
		}
	}
	if completed != n {
		b.Fatalf("%d of %d nodes completed", completed, n)
	}
	s.Close() // state.db's log is folded in
	disk, db = diskUsage(home), diskUsage(home, "state.db", "state.db-wal")
	b.StartTimer()
	return disk, db
}

// benchCoordinator spawns w workers and creates n nodes in its first turn, then waits for the
// stage, and finishes once the stage is complete (or at the first refused call, saying so).
func benchCoordinator(n, w int) *scripted.Model {
	return scripted.NewFunc("bench-coordinator", func(_ context.Context, req providers.Request) (scripted.Turn, error) {
		text, results := scripted.Last(req)
		switch {
		case len(req.Messages) == 1:
			calls := make([]tools.Call, 0, w+n)
			for i := range w {
				calls = append(calls, scripted.Call("spawn_worker", map[string]any{"name": fmt.Sprintf("w%d", i+1), "role": "writer"}))
			}
			for i := range n {
				calls = append(calls, scripted.Call("create_work_node", map[string]any{"task": fmt.Sprintf("Write note %d.", i+1)}))
			}
			return scTurn(req, calls...), nil
		case strings.Contains(text, "Stage 1 is complete"):
			return scTurn(req, scripted.Call("finish", map[string]string{"output": "all notes written"})), nil
		}
		for _, r := range results {
			if r.IsError {
				return scTurn(req, scripted.Call("finish", map[string]string{"output": "FAILED: " + r.Content})), nil
			}
		}
		return scTurn(req, scripted.Call("wait", map[string]string{"until": "stage"})), nil
	})
}

// BenchmarkResume1000 measures how long a squad takes, once told to resume a run of 1,000
// nodes that was paused while its workers ran, to start its first assignment again.
func BenchmarkResume1000(b *testing.B) {
	const n, w = 1000, 50
	for b.Loop() {
		b.StopTimer()
		home := b.TempDir()
		opts := func(workerModel *scripted.Model) []nodes.Option {
			coord := benchCoordinator(n, w)
			return []nodes.Option{nodes.WithHome(home), nodes.WithCoordinatorModel(coord.Name()), nodes.WithModel(workerModel.Name()),
				nodes.WithModelOptions(models.WithModels(coord, workerModel), models.WithoutRetry()), nodes.WithMaxConcurrent(w)}
		}
		// The run to resume: its workers wait until the run is paused.
		stuck := scripted.NewFunc("bench-worker", func(ctx context.Context, _ providers.Request) (scripted.Turn, error) {
			<-ctx.Done()
			return scripted.Turn{}, ctx.Err()
		})
		s, err := nodes.New(opts(stuck)...)
		if err != nil {
			b.Fatal(err)
		}
		events, stop := s.Subscribe(0)
		run, err := s.Start(context.Background(), "Write the notes.")
		if err != nil {
			b.Fatal(err)
		}
		created, started := 0, 0
		for e := range events {
			switch e.Type {
			case eventlog.NodeCreated:
				created++
			case eventlog.NodeStarted:
				started++
			}
			if created == n && started > 0 {
				break
			}
		}
		stop()
		if err := run.Pause(); err != nil {
			b.Fatal(err)
		}
		if _, err := run.Wait(); err != nil {
			b.Fatal(err)
		}
		s.Close()

		s, err = nodes.New(opts(benchWorker())...)
		if err != nil {
			b.Fatal(err)
		}
		events, stop = s.Subscribe(0)
		b.StartTimer()
		start := time.Now()
		run, err = s.Resume(context.Background(), run.ID())
		if err != nil {
			b.Fatal(err)
		}
		var first time.Duration
		for e := range events {
			if e.Type == eventlog.NodeStarted && e.Time.After(start) {
				first = time.Since(start)
				break
			}
		}
		b.StopTimer()
		stop()
		if err := run.Pause(); err != nil {
			b.Fatal(err)
		}
		if _, err := run.Wait(); err != nil {
			b.Fatal(err)
		}
		s.Close()
		b.ReportMetric(float64(first.Microseconds())/1000, "ms-to-first-start")
		b.StartTimer()
	}
}

// benchWorker is a worker that writes a note on its node and publishes it.
func benchWorker() *scripted.Model { return noteWorker("bench-worker", nil) }

// noteWorker is benchWorker named name; before, when set, is called before it writes a note on
// a node, and an error it returns ends the model's turn.
func noteWorker(name string, before func(ctx context.Context, node string) error) *scripted.Model {
	return scripted.NewFunc(name, func(ctx context.Context, req providers.Request) (scripted.Turn, error) {
		if scCalled(req)["write_file"] == 0 {
			node := scNode(req)
			if before != nil {
				if err := before(ctx, node); err != nil {
					return scripted.Turn{}, err
				}
			}
			return scTurn(req, scripted.Call("write_file", map[string]string{"path": "nodes/" + node + "/scratch/note.md", "content": "A note on " + node + ".\n"})), nil
		}
		return scTurn(req, scripted.Call("publish", map[string]string{"summary": "note.md"})), nil
	})
}

// diskUsage returns the bytes of the files under dir, or of those named (any of names).
func diskUsage(dir string, names ...string) int64 {
	var disk int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && (len(names) == 0 || slices.Contains(names, d.Name())) {
			if info, err := d.Info(); err == nil {
				disk += info.Size()
			}
		}
		return nil
	})
	return disk
}

// BenchmarkInfiniteCycles runs an infinite agent for 1,000 cycles (AGIRAPH_BENCH_CYCLES), each
// woken by a message from the human: the coordinator puts a node on the board, a worker writes
// a note and publishes, and the coordinator closes the cycle. What a cycle costs must not grow
// with the cycles before it: it reports ms per cycle over the first and the last tenth of the
// cycles, and the bytes on disk after the run.
func BenchmarkInfiniteCycles(b *testing.B) {
	cycles := 1000
	if n, err := strconv.Atoi(os.Getenv("AGIRAPH_BENCH_CYCLES")); err == nil && n >= 10 {
		cycles = n
	}
	for b.Loop() {
		b.StopTimer()
		home := b.TempDir()
		agent := startCycles(b, home)
		b.StartTimer()
		took := make([]time.Duration, cycles)
		for i := range cycles {
			start := time.Now()
			agent.cycle(b, i)
			took[i] = time.Since(start)
		}
		b.StopTimer()
		agent.end(b)
		b.ReportMetric(msPerCycle(took[:cycles/10]), "ms/cycle-first10%")
		b.ReportMetric(msPerCycle(took[cycles-cycles/10:]), "ms/cycle-last10%")
		b.ReportMetric(float64(diskUsage(home)), "bytes-on-disk")
		b.StartTimer()
	}
}

// cycleAgent is an infinite agent, woken by a message from the human for each cycle: its
// coordinator puts a node on the board, a worker writes a note and publishes, and the
// coordinator closes the cycle.
type cycleAgent struct {
	s      *nodes.Squad
	run    *nodes.Run
	events <-chan eventlog.Event
	stop   func()
	cancel context.CancelFunc
}

// startCycles starts the agent in home; its first cycle runs on the goal.
func startCycles(tb testing.TB, home string) *cycleAgent {
	coord := scripted.NewFunc("cycles-coordinator", func(_ context.Context, req providers.Request) (scripted.Turn, error) {
		text := scSince(req) // a wake-up's message may come with the request to save notes
		switch {
		case strings.Contains(text, "GOAL:") || strings.Contains(text, "[Message from human]"):
			return scTurn(req, scripted.Call("create_work_node", map[string]any{"task": "Write this cycle's note."})), nil
		case strings.Contains(text, " completed: "):
			return scTurn(req, scripted.Call("finish", map[string]string{"output": "cycle done"})), nil
		case strings.Contains(text, "The run is ending"):
			return scripted.Turn{Text: "noted"}, nil
		}
		return scTurn(req, scripted.Call("wait", map[string]string{})), nil
	})
	worker := benchWorker()
	s, err := nodes.New(nodes.WithHome(home), nodes.WithMode(nodes.Infinite), nodes.WithCoordinatorModel(coord.Name()),
		nodes.WithModel(worker.Name()), nodes.WithModelOptions(models.WithModels(coord, worker), models.WithoutRetry()))
	if err != nil {
		tb.Fatal(err)
	}
	c := &cycleAgent{s: s}
	c.events, c.stop = s.Subscribe(0)
	var ctx context.Context
	ctx, c.cancel = context.WithTimeout(context.Background(), 10*time.Minute)
	if c.run, err = s.Start(ctx, "Write a note whenever the human asks."); err != nil {
		tb.Fatal(err)
	}
	return c
}

// cycle runs cycle i (from 0): the human's message, unless it is the first, and the cycle's end.
func (c *cycleAgent) cycle(tb testing.TB, i int) {
	if i > 0 {
		if err := c.run.Send("coordinator", fmt.Sprintf("Note %d, please.", i+1)); err != nil {
			tb.Fatal(err)
		}
	}
	if err := awaitCycle(c.events, c.run); err != nil {
		tb.Fatalf("cycle %d: %v", i+1, err)
	}
}

// end ends the agent's run and closes it.
func (c *cycleAgent) end(tb testing.TB) {
	defer c.cancel()
	defer c.s.Close()
	defer c.stop()
	if err := c.run.Pause(); err != nil {
		tb.Fatal(err)
	}
	if _, err := c.run.Wait(); err != nil {
		tb.Fatal(err)
	}
}

// awaitCycle waits for the end of a cycle, or for the run to end before it.
func awaitCycle(events <-chan eventlog.Event, run *nodes.Run) error {
	for {
		select {
		case e := <-events:
			if e.Type == "x.cycle_completed" {
				return nil
			}
		case <-run.Done():
			_, err := run.Wait()
			return fmt.Errorf("the run ended: %v", err)
		}
	}
}

func msPerCycle(took []time.Duration) float64 {
	var sum time.Duration
	for _, d := range took {
		sum += d
	}
	return float64(sum.Microseconds()) / 1000 / float64(len(took))
}
