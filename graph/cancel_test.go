package graph_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agiraph/agiraph/graph"
	"github.com/agiraph/agiraph/internal/leaktest"
)

// canFanOut fans out n Sends to a worker that reports its start on started and then blocks until
// its context is done. A quiet worker then returns no error.
func canFanOut(n int, started chan<- int, sawDone *atomic.Int32, quiet ...bool) *graph.StateGraph[engState] {
	g := graph.New[engState]()
	g.AddRouter(graph.START, func(context.Context, engState) graph.Next[engState] {
		sends := make([]graph.Send[engState], n)
		for i := range sends {
			sends[i] = graph.Send[engState]{Node: "worker", Arg: engState{I: i}}
		}
		return graph.Next[engState]{Sends: sends}
	}, "worker")
	g.AddNode("worker", func(ctx context.Context, s engState) (engState, error) {
		started <- s.I
		<-ctx.Done()
		sawDone.Add(1)
		if len(quiet) > 0 && quiet[0] {
			return engState{Items: []int{s.I}}, nil
		}
		return engState{}, ctx.Err()
	})
	g.AddNode("after", engLog("after"))
	g.AddEdge("worker", "after")
	g.AddEdge("after", graph.END)
	return g
}

func TestCancelFanOut(t *testing.T) {
	tests := []struct {
		name        string
		n           int
		opts        []graph.Option
		cancelAfter int // cancel once this many workers started
		maxStarted  int // at most this many start in all
		quiet       bool
	}{
		{name: "100 sends, cancelled when all run", n: 100, cancelAfter: 100, maxStarted: 100},
		{name: "100 sends, cancelled when some run", n: 100, cancelAfter: 10, maxStarted: 100},
		{name: "bounded: no task starts after the cancellation", n: 100, opts: []graph.Option{graph.WithMaxConcurrency(5)},
			cancelAfter: 5, maxStarted: 5},
		{name: "bounded, workers return no error: no task starts after the cancellation", n: 100,
			opts: []graph.Option{graph.WithMaxConcurrency(5)}, cancelAfter: 5, maxStarted: 5, quiet: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			defer leaktest.Check(t)()
			started := make(chan int, tc.n)
			var sawDone atomic.Int32
			c := engCompile(t, canFanOut(tc.n, started, &sawDone, tc.quiet))
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			type result struct {
				out engState
				err error
			}
			res := make(chan result, 1)
			go func() {
				out, err := c.Invoke(ctx, engState{}, tc.opts...)
				res <- result{out, err}
			}()
			for range tc.cancelAfter {
				engWait(t, started, "a worker to start")
			}
			cancel()
			var r result
			select {
			case r = <-res:
			case <-time.After(engGuard):
				t.Fatal("Invoke did not return after the cancellation")
			}
			if !errors.Is(r.err, context.Canceled) {
				t.Fatalf("error %v, want context.Canceled", r.err)
			}
			if errors.Is(r.err, context.DeadlineExceeded) {
				t.Errorf("error %v reports a deadline", r.err)
			}
			if len(r.out.Log) != 0 || len(r.out.Items) != 0 {
				t.Errorf("Log = %q, %d items: the run went on after the cancellation", r.out.Log, len(r.out.Items))
			}
			total := tc.cancelAfter + len(started)
			if total > tc.maxStarted {
				t.Errorf("%d workers started, want at most %d", total, tc.maxStarted)
			}
			if got := int(sawDone.Load()); got != total {
				t.Errorf("%d of %d started workers saw the cancellation", got, total)
			}
		})
	}
}

func TestCancelDeadline(t *testing.T) {
	defer leaktest.Check(t)()
	started := make(chan int, 50)
	var sawDone atomic.Int32
	c := engCompile(t, canFanOut(50, started, &sawDone))
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := engInvoke(t, ctx, c, engState{})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("error %v, want context.DeadlineExceeded", err)
	}
	var te *graph.TimeoutError
	if errors.As(err, &te) {
		t.Errorf("error %v is a node timeout; the run's deadline passed", err)
	}
	if got := int(sawDone.Load()); got != 50 {
		t.Errorf("%d workers saw the deadline, want 50", got)
	}
}

func TestCancelCases(t *testing.T) {
	tests := []struct {
		name string
		// build returns the graph; cancel cancels the run's context, for nodes to call.
		build     func(cancel context.CancelFunc, ran *atomic.Int32) *graph.StateGraph[engState]
		before    bool // cancel before Invoke
		wantRan   int32
		wantInMsg string
	}{
		{
			name:   "cancelled before the run",
			before: true,
			build: func(_ context.CancelFunc, ran *atomic.Int32) *graph.StateGraph[engState] {
				g := graph.New[engState]()
				g.AddNode("a", func(context.Context, engState) (engState, error) { ran.Add(1); return engState{}, nil })
				g.AddEdge(graph.START, "a")
				g.AddEdge("a", graph.END)
				return g
			},
			wantRan:   0,
			wantInMsg: "before step 1",
		},
		{
			name: "cancelled by a node between supersteps: the next step does not run",
			build: func(cancel context.CancelFunc, ran *atomic.Int32) *graph.StateGraph[engState] {
				g := graph.New[engState]()
				g.AddNode("a", func(context.Context, engState) (engState, error) {
					ran.Add(1)
					cancel()
					return engState{Log: []string{"a"}}, nil
				})
				g.AddNode("b", func(context.Context, engState) (engState, error) { ran.Add(1); return engState{}, nil })
				g.AddEdge(graph.START, "a")
				g.AddEdge("a", "b")
				g.AddEdge("b", graph.END)
				return g
			},
			wantRan: 1,
		},
		{
			name: "cancelled during a retry wait",
			build: func(cancel context.CancelFunc, ran *atomic.Int32) *graph.StateGraph[engState] {
				g := graph.New[engState]()
				g.AddNode("a", func(context.Context, engState) (engState, error) {
					ran.Add(1)
					go func() { time.Sleep(10 * time.Millisecond); cancel() }()
					return engState{}, errors.New("flaky")
				}, graph.WithRetry(graph.RetryPolicy{MaxAttempts: 5, InitialInterval: time.Hour}))
				g.AddEdge(graph.START, "a")
				g.AddEdge("a", graph.END)
				return g
			},
			wantRan: 1,
		},
		{
			name: "cancelled while a node with a timeout runs",
			build: func(cancel context.CancelFunc, ran *atomic.Int32) *graph.StateGraph[engState] {
				g := graph.New[engState]()
				g.AddNode("a", func(ctx context.Context, _ engState) (engState, error) {
					ran.Add(1)
					cancel()
					<-ctx.Done()
					return engState{}, ctx.Err()
				}, graph.WithTimeout(time.Hour))
				g.AddEdge(graph.START, "a")
				g.AddEdge("a", graph.END)
				return g
			},
			wantRan: 1,
		},
		{
			name: "cancelled while parallel nodes run",
			build: func(cancel context.CancelFunc, ran *atomic.Int32) *graph.StateGraph[engState] {
				g := graph.New[engState]()
				g.AddNode("a", func(ctx context.Context, _ engState) (engState, error) {
					ran.Add(1)
					cancel()
					return engState{Log: []string{"a"}}, nil
				})
				g.AddNode("b", func(ctx context.Context, _ engState) (engState, error) {
					ran.Add(1)
					<-ctx.Done()
					return engState{}, ctx.Err()
				})
				g.AddEdge(graph.START, "a")
				g.AddEdge(graph.START, "b")
				g.AddEdge("a", graph.END)
				g.AddEdge("b", graph.END)
				return g
			},
			wantRan: 2,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			defer leaktest.Check(t)()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var ran atomic.Int32
			c := engCompile(t, tc.build(cancel, &ran))
			if tc.before {
				cancel()
			}
			_, err := engInvoke(t, ctx, c, engState{})
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("error %v, want context.Canceled", err)
			}
			if n := ran.Load(); n != tc.wantRan {
				t.Errorf("%d nodes ran, want %d", n, tc.wantRan)
			}
			if tc.wantInMsg != "" {
				engContainsAll(t, err, tc.wantInMsg)
			}
		})
	}
}

// The cause given to context.WithCancelCause is what the run reports.
func TestCancelCause(t *testing.T) {
	defer leaktest.Check(t)()
	cause := errors.New("operator pressed stop")
	started := make(chan int, 10)
	var sawDone atomic.Int32
	c := engCompile(t, canFanOut(10, started, &sawDone))
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	go func() {
		for range 10 {
			<-started
		}
		cancel(cause)
	}()
	_, err := engInvoke(t, ctx, c, engState{})
	if !errors.Is(err, cause) {
		t.Errorf("error %v does not wrap the cancellation's cause", err)
	}
	if !errors.Is(err, context.Canceled) {
		t.Errorf("error %v does not wrap context.Canceled", err)
	}
}

// After a run that failed, timed out or was cancelled, no goroutine of the engine is left.
func TestCancelNoLeakAfterFailures(t *testing.T) {
	defer leaktest.Check(t)()
	g := graph.New[engState]()
	g.AddRouter(graph.START, func(context.Context, engState) graph.Next[engState] {
		var n graph.Next[engState]
		for i := range 20 {
			n.Sends = append(n.Sends, graph.Send[engState]{Node: "w", Arg: engState{I: i}})
		}
		return n
	}, "w")
	g.AddNode("w", func(ctx context.Context, s engState) (engState, error) {
		if s.I == 7 {
			return engState{}, errEngSentinel
		}
		<-ctx.Done()
		return engState{}, ctx.Err()
	}, graph.WithTimeout(time.Hour), graph.WithRetry(graph.RetryPolicy{MaxAttempts: 2, InitialInterval: time.Millisecond,
		RetryOn: func(err error) bool { return errors.Is(err, errEngSentinel) }}))
	g.AddEdge("w", graph.END)
	c := engCompile(t, g, graph.WithMaxConcurrency(8))
	for range 3 {
		_, err := engInvoke(t, context.Background(), c, engState{})
		if !errors.Is(err, errEngSentinel) {
			t.Fatalf("error %v, want the sentinel", err)
		}
		engContainsAll(t, err, "gave up after 2 attempts")
	}
}
