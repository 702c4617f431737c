package sqlite_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/agiraph/agiraph/checkpoint"
	"github.com/agiraph/agiraph/checkpoint/sqlite"
)

// stepper does what the graph engine does per superstep with the default durability: one task
// write of about 150 bytes for the current checkpoint, then the next checkpoint, with a snapshot
// of the state every 100 steps.
type stepper struct {
	s     *sqlite.Saver
	cfg   checkpoint.Config
	run   string
	cur   checkpoint.Config
	step  int
	value []byte
	state []byte
}

func newStepper(s *sqlite.Saver) *stepper {
	return &stepper{
		s: s, cfg: checkpoint.Config{ThreadID: "thread-" + uuid.NewString()}, run: uuid.NewString(),
		value: []byte(`{"update":{"messages":[{"role":"assistant","content":"` + strings.Repeat("x", 90) + `"}]},"goto":["tools"]}`),
		state: []byte(`{"messages":[]}`),
	}
}

func (st *stepper) do(ctx context.Context) error {
	if st.cur.CheckpointID != "" {
		w := checkpoint.Write{TaskID: "0", Node: "agent", Kind: checkpoint.WriteUpdate, Value: st.value}
		if err := st.s.PutWrites(ctx, st.cur, []checkpoint.Write{w}); err != nil {
			return err
		}
	}
	cp := checkpoint.Checkpoint{
		ID: uuid.Must(uuid.NewV7()).String(), ParentID: st.cur.CheckpointID, Step: st.step, Source: checkpoint.SourceLoop,
		RunID: st.run, Next: []checkpoint.Task{{ID: "0", Node: "agent"}}, Format: 1, CreatedAt: time.Now(),
	}
	if st.step%100 == 0 {
		cp.State = st.state
	}
	cfg, err := st.s.Put(ctx, st.cfg, cp)
	st.cur, st.step = cfg, st.step+1
	return err
}

func fileSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// syncModes are the durability settings the step benchmarks run with.
var syncModes = []struct {
	name string
	opts []sqlite.Option
}{
	{"normal", nil},
	{"full", []sqlite.Option{sqlite.WithSynchronous(sqlite.SyncFull)}},
}

// BenchmarkPutStep: one step (a 150-byte PutWrites and a Put) per op, with the default options,
// on one thread; it reports the time per step and the size of the database and its log at the end.
func BenchmarkPutStep(b *testing.B) {
	for _, bc := range syncModes {
		b.Run(bc.name, func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "bench.db")
			s, err := sqlite.Open(path, bc.opts...)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			st := newStepper(s)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if err := st.do(ctx); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/1e3/float64(b.N), "us/step")
			b.ReportMetric(float64(fileSize(path)+fileSize(path+"-wal")), "db_bytes")
			b.ReportMetric(float64(fileSize(path+"-wal")), "wal_bytes")
		})
	}
}

// BenchmarkPutStepParallel: steps as BenchmarkPutStep, from 32 threads at once (a squad's
// workers), whose writes the Saver groups into shared commits.
func BenchmarkPutStepParallel(b *testing.B) {
	for _, bc := range syncModes {
		b.Run(bc.name, func(b *testing.B) {
			s, err := sqlite.Open(filepath.Join(b.TempDir(), "bench.db"), bc.opts...)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			ctx := context.Background()
			b.SetParallelism(16) // 32 goroutines on two cores
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				st := newStepper(s)
				for pb.Next() {
					if err := st.do(ctx); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/1e3/float64(b.N), "us/step")
		})
	}
}

// Benchmark500Steps: a fresh database per op (opened and closed within the op), 500 steps into it;
// db_bytes is the size of the database and its log after the 500 steps, with the Saver still
// open, closed_bytes after Close.
func Benchmark500Steps(b *testing.B) {
	const steps = 500
	ctx := context.Background()
	var open, closed int64
	b.ReportAllocs()
	for b.Loop() {
		path := filepath.Join(b.TempDir(), "bench.db")
		s, err := sqlite.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		st := newStepper(s)
		for range steps {
			if err := st.do(ctx); err != nil {
				b.Fatal(err)
			}
		}
		open = fileSize(path) + fileSize(path+"-wal")
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
		closed = fileSize(path) + fileSize(path+"-wal")
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/1e3/float64(b.N*steps), "us/step")
	b.ReportMetric(float64(open), "db_bytes")
	b.ReportMetric(float64(closed), "closed_bytes")
}

// BenchmarkGet: Get of the latest checkpoint (with its write) of a thread of 200 steps, and of a
// checkpoint by ID, as the engine does when it resumes and walks parents.
func BenchmarkGet(b *testing.B) {
	ctx := context.Background()
	s, err := sqlite.Open(filepath.Join(b.TempDir(), "bench.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	st := newStepper(s)
	for range 200 {
		if err := st.do(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("latest", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := s.Get(ctx, st.cfg); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("byID", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := s.Get(ctx, st.cur); err != nil {
				b.Fatal(err)
			}
		}
	})
}
