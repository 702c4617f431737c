package graph_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agiraph/agiraph/graph"
)

var (
	errRetryTransient = errors.New("transient failure")
	errRetryPermanent = errors.New("permanent failure")
)

// retryGraph is START -> flaky -> after -> END, where flaky is fn with the given options. after
// makes sure the run went on past flaky.
func retryGraph(fn graph.NodeFunc[engState], opts ...graph.NodeOption) *graph.StateGraph[engState] {
	g := graph.New[engState]()
	g.AddNode("flaky", fn, opts...)
	g.AddNode("after", engLog("after"))
	g.AddEdge(graph.START, "flaky")
	g.AddEdge("flaky", "after")
	g.AddEdge("after", graph.END)
	return g
}

func TestRetry(t *testing.T) {
	fast := graph.RetryPolicy{MaxAttempts: 3, InitialInterval: time.Millisecond, MaxInterval: 2 * time.Millisecond}
	tests := []struct {
		name string
		// failures says what attempt n (1-based) returns: nil for success.
		failures     func(n int) error
		policy       *graph.RetryPolicy
		parallel     bool // run flaky next to another node, so it runs in a goroutine
		wantAttempts int32
		wantErr      error    // nil: the run succeeds
		wantMsg      []string // substrings of the error
		noMsg        []string // substrings the error must not have
	}{
		{
			name:         "fails twice, succeeds on the third attempt",
			failures:     func(n int) error { return retryFailUntil(n, 3) },
			policy:       &graph.RetryPolicy{MaxAttempts: 5, InitialInterval: time.Millisecond},
			wantAttempts: 3,
		},
		{
			name:         "fails twice, succeeds on the third attempt, in a goroutine",
			failures:     func(n int) error { return retryFailUntil(n, 3) },
			policy:       &graph.RetryPolicy{MaxAttempts: 5, InitialInterval: time.Millisecond},
			parallel:     true,
			wantAttempts: 3,
		},
		{
			name:         "succeeds on the last allowed attempt",
			failures:     func(n int) error { return retryFailUntil(n, 3) },
			policy:       &fast,
			wantAttempts: 3,
		},
		{
			name:         "always fails: gives up after MaxAttempts",
			failures:     func(int) error { return errRetryTransient },
			policy:       &fast,
			wantAttempts: 3,
			wantErr:      errRetryTransient,
			wantMsg:      []string{"gave up after 3 attempts", "transient failure", `node "flaky"`},
		},
		{
			name:         "always fails, in a goroutine",
			failures:     func(int) error { return errRetryTransient },
			policy:       &fast,
			parallel:     true,
			wantAttempts: 3,
			wantErr:      errRetryTransient,
			wantMsg:      []string{"gave up after 3 attempts"},
		},
		{
			name:         "MaxAttempts 0 means 3",
			failures:     func(int) error { return errRetryTransient },
			policy:       &graph.RetryPolicy{InitialInterval: time.Millisecond},
			wantAttempts: 3,
			wantErr:      errRetryTransient,
			wantMsg:      []string{"gave up after 3 attempts"},
		},
		{
			name:         "MaxAttempts 1: no retry",
			failures:     func(int) error { return errRetryTransient },
			policy:       &graph.RetryPolicy{MaxAttempts: 1, InitialInterval: time.Millisecond},
			wantAttempts: 1,
			wantErr:      errRetryTransient,
			noMsg:        []string{"gave up"},
		},
		{
			name:         "no policy: no retry",
			failures:     func(int) error { return errRetryTransient },
			wantAttempts: 1,
			wantErr:      errRetryTransient,
			noMsg:        []string{"gave up"},
		},
		{
			name:     "RetryOn false: no retry",
			failures: func(int) error { return errRetryPermanent },
			policy: &graph.RetryPolicy{MaxAttempts: 5, InitialInterval: time.Millisecond,
				RetryOn: func(err error) bool { return !errors.Is(err, errRetryPermanent) }},
			wantAttempts: 1,
			wantErr:      errRetryPermanent,
			noMsg:        []string{"gave up"},
		},
		{
			name: "RetryOn: retried while transient, stops at a permanent error",
			failures: func(n int) error {
				if n < 3 {
					return fmt.Errorf("attempt %d: %w", n, errRetryTransient)
				}
				return errRetryPermanent
			},
			policy: &graph.RetryPolicy{MaxAttempts: 10, InitialInterval: time.Millisecond,
				RetryOn: func(err error) bool { return errors.Is(err, errRetryTransient) }},
			wantAttempts: 3,
			wantErr:      errRetryPermanent,
			wantMsg:      []string{"gave up after 3 attempts"},
		},
		{
			name: "a panic is retried",
			failures: func(n int) error {
				if n == 1 {
					panic("first attempt panics")
				}
				return nil
			},
			policy:       &fast,
			wantAttempts: 2,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var attempts atomic.Int32
			fn := func(context.Context, engState) (engState, error) {
				n := attempts.Add(1)
				if err := tc.failures(int(n)); err != nil {
					return engState{}, err
				}
				return engState{Log: []string{"flaky"}}, nil
			}
			var opts []graph.NodeOption
			if tc.policy != nil {
				opts = append(opts, graph.WithRetry(*tc.policy))
			}
			g := retryGraph(fn, opts...)
			if tc.parallel {
				g.AddNode("sibling", engLog("sibling"))
				g.AddEdge(graph.START, "sibling")
				g.AddEdge("sibling", graph.END)
			}
			out, err := engInvoke(t, context.Background(), engCompile(t, g), engState{})
			if got := attempts.Load(); got != tc.wantAttempts {
				t.Errorf("%d attempts, want %d", got, tc.wantAttempts)
			}
			if tc.wantErr == nil {
				if err != nil {
					t.Fatalf("Invoke: %v", err)
				}
				if !slices.Contains(out.Log, "flaky") || out.Log[len(out.Log)-1] != "after" {
					t.Errorf("Log = %q: the run did not go on after the retried node", out.Log)
				}
				return
			}
			var ne *graph.NodeError
			if !errors.As(err, &ne) || ne.Node != "flaky" {
				t.Fatalf("error %v is not a *NodeError of flaky", err)
			}
			if !errors.Is(err, tc.wantErr) {
				t.Errorf("error %v does not wrap %v", err, tc.wantErr)
			}
			engContainsAll(t, err, tc.wantMsg...)
			for _, s := range tc.noMsg {
				if strings.Contains(err.Error(), s) {
					t.Errorf("error %q contains %q", err, s)
				}
			}
		})
	}
}

func retryFailUntil(n, success int) error {
	if n < success {
		return fmt.Errorf("attempt %d: %w", n, errRetryTransient)
	}
	return nil
}

// Waits between attempts are at least the policy's nominal waits (or half of them with jitter),
// and grow by the backoff factor up to MaxInterval. Only lower bounds are checked.
func TestRetryBackoff(t *testing.T) {
	tests := []struct {
		name    string
		policy  graph.RetryPolicy
		minGaps []time.Duration
	}{
		{
			name:    "exponential",
			policy:  graph.RetryPolicy{MaxAttempts: 4, InitialInterval: 5 * time.Millisecond, BackoffFactor: 2},
			minGaps: []time.Duration{5 * time.Millisecond, 10 * time.Millisecond, 20 * time.Millisecond},
		},
		{
			name:    "capped by MaxInterval",
			policy:  graph.RetryPolicy{MaxAttempts: 4, InitialInterval: 5 * time.Millisecond, BackoffFactor: 3, MaxInterval: 8 * time.Millisecond},
			minGaps: []time.Duration{5 * time.Millisecond, 8 * time.Millisecond, 8 * time.Millisecond},
		},
		{
			name:    "factor 1: constant",
			policy:  graph.RetryPolicy{MaxAttempts: 3, InitialInterval: 4 * time.Millisecond, BackoffFactor: 1},
			minGaps: []time.Duration{4 * time.Millisecond, 4 * time.Millisecond},
		},
		{
			name:    "default factor is 2",
			policy:  graph.RetryPolicy{MaxAttempts: 3, InitialInterval: 4 * time.Millisecond},
			minGaps: []time.Duration{4 * time.Millisecond, 8 * time.Millisecond},
		},
		{
			name:    "jitter: at least half the nominal wait",
			policy:  graph.RetryPolicy{MaxAttempts: 4, InitialInterval: 6 * time.Millisecond, BackoffFactor: 2, Jitter: true},
			minGaps: []time.Duration{3 * time.Millisecond, 6 * time.Millisecond, 12 * time.Millisecond},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			var times []time.Time
			g := retryGraph(func(context.Context, engState) (engState, error) {
				mu.Lock()
				times = append(times, time.Now())
				mu.Unlock()
				return engState{}, errRetryTransient
			}, graph.WithRetry(tc.policy))
			_, err := engInvoke(t, context.Background(), engCompile(t, g), engState{})
			if !errors.Is(err, errRetryTransient) {
				t.Fatalf("error %v, want the node's failure", err)
			}
			if len(times) != len(tc.minGaps)+1 {
				t.Fatalf("%d attempts, want %d", len(times), len(tc.minGaps)+1)
			}
			for i, min := range tc.minGaps {
				gap := times[i+1].Sub(times[i])
				if gap < min {
					t.Errorf("wait before attempt %d was %s, want at least %s", i+2, gap, min)
				}
			}
		})
	}
}

func TestTimeout(t *testing.T) {
	t.Run("node that honours its context", func(t *testing.T) {
		nodeErr := make(chan error, 1)
		g := retryGraph(func(ctx context.Context, _ engState) (engState, error) {
			<-ctx.Done()
			nodeErr <- ctx.Err()
			return engState{}, ctx.Err()
		}, graph.WithTimeout(50*time.Millisecond))
		_, err := engInvoke(t, context.Background(), engCompile(t, g), engState{})
		retryCheckTimeout(t, err, "flaky", 50*time.Millisecond)
		// The run may return before the node does: wait for what the node saw.
		select {
		case err := <-nodeErr:
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("the node's context reported %v, want DeadlineExceeded", err)
			}
		case <-time.After(engGuard):
			t.Fatal("the node never saw its context end")
		}
	})

	t.Run("node that returns its own error after the deadline", func(t *testing.T) {
		g := retryGraph(func(ctx context.Context, _ engState) (engState, error) {
			<-ctx.Done()
			return engState{}, errors.New("gave up waiting")
		}, graph.WithTimeout(20*time.Millisecond))
		_, err := engInvoke(t, context.Background(), engCompile(t, g), engState{})
		retryCheckTimeout(t, err, "flaky", 20*time.Millisecond)
	})

	t.Run("node that ignores its context", func(t *testing.T) {
		release := make(chan struct{})
		t.Cleanup(func() { close(release) })
		g := retryGraph(func(context.Context, engState) (engState, error) {
			<-release
			return engState{Log: []string{"late"}}, nil
		}, graph.WithTimeout(50*time.Millisecond))
		out, err := engInvoke(t, context.Background(), engCompile(t, g), engState{})
		retryCheckTimeout(t, err, "flaky", 50*time.Millisecond)
		if len(out.Log) != 0 {
			t.Errorf("Log = %q: a timed-out node's update reached the state", out.Log)
		}
	})

	t.Run("one of parallel nodes times out", func(t *testing.T) {
		g := retryGraph(func(ctx context.Context, _ engState) (engState, error) {
			<-ctx.Done()
			return engState{}, ctx.Err()
		}, graph.WithTimeout(30*time.Millisecond))
		g.AddNode("sibling", engLog("sibling"))
		g.AddEdge(graph.START, "sibling")
		g.AddEdge("sibling", graph.END)
		_, err := engInvoke(t, context.Background(), engCompile(t, g), engState{})
		retryCheckTimeout(t, err, "flaky", 30*time.Millisecond)
	})

	t.Run("a node that finishes in time is not affected", func(t *testing.T) {
		g := retryGraph(func(ctx context.Context, _ engState) (engState, error) {
			if _, ok := ctx.Deadline(); !ok {
				return engState{}, errors.New("no deadline on the node's context")
			}
			return engState{Log: []string{"flaky"}}, nil
		}, graph.WithTimeout(time.Minute))
		out, err := engInvoke(t, context.Background(), engCompile(t, g), engState{})
		if err != nil {
			t.Fatal(err)
		}
		if want := "flaky after"; strings.Join(out.Log, " ") != want {
			t.Errorf("Log = %q, want %q", out.Log, want)
		}
	})

	t.Run("timeout then retry succeeds", func(t *testing.T) {
		var attempts atomic.Int32
		g := retryGraph(func(ctx context.Context, _ engState) (engState, error) {
			if attempts.Add(1) == 1 {
				<-ctx.Done()
				return engState{}, ctx.Err()
			}
			return engState{Log: []string{"flaky"}}, nil
		}, graph.WithTimeout(30*time.Millisecond), graph.WithRetry(graph.RetryPolicy{MaxAttempts: 3, InitialInterval: time.Millisecond}))
		out, err := engInvoke(t, context.Background(), engCompile(t, g), engState{})
		if err != nil {
			t.Fatalf("Invoke: %v", err)
		}
		if n := attempts.Load(); n != 2 {
			t.Errorf("%d attempts, want 2", n)
		}
		if want := "flaky after"; strings.Join(out.Log, " ") != want {
			t.Errorf("Log = %q, want %q", out.Log, want)
		}
	})

	t.Run("every attempt times out", func(t *testing.T) {
		var attempts atomic.Int32
		g := retryGraph(func(ctx context.Context, _ engState) (engState, error) {
			attempts.Add(1)
			<-ctx.Done()
			return engState{}, ctx.Err()
		}, graph.WithTimeout(10*time.Millisecond), graph.WithRetry(graph.RetryPolicy{MaxAttempts: 2, InitialInterval: time.Millisecond}))
		_, err := engInvoke(t, context.Background(), engCompile(t, g), engState{})
		retryCheckTimeout(t, err, "flaky", 10*time.Millisecond)
		engContainsAll(t, err, "gave up after 2 attempts")
		if n := attempts.Load(); n != 2 {
			t.Errorf("%d attempts, want 2", n)
		}
	})

	t.Run("RetryOn can refuse to retry timeouts", func(t *testing.T) {
		var attempts atomic.Int32
		g := retryGraph(func(ctx context.Context, _ engState) (engState, error) {
			attempts.Add(1)
			<-ctx.Done()
			return engState{}, ctx.Err()
		}, graph.WithTimeout(10*time.Millisecond), graph.WithRetry(graph.RetryPolicy{
			MaxAttempts: 5, InitialInterval: time.Millisecond,
			RetryOn: func(err error) bool {
				var te *graph.TimeoutError
				return !errors.As(err, &te)
			},
		}))
		_, err := engInvoke(t, context.Background(), engCompile(t, g), engState{})
		retryCheckTimeout(t, err, "flaky", 10*time.Millisecond)
		if n := attempts.Load(); n != 1 {
			t.Errorf("%d attempts, want 1", n)
		}
	})
}

func retryCheckTimeout(t *testing.T, err error, node string, timeout time.Duration) {
	t.Helper()
	var ne *graph.NodeError
	if !errors.As(err, &ne) || ne.Node != node {
		t.Fatalf("error %v is not a *NodeError of %s", err, node)
	}
	var te *graph.TimeoutError
	if !errors.As(err, &te) {
		t.Fatalf("error %v does not wrap a *TimeoutError", err)
	}
	if te.Node != node || te.Timeout != timeout {
		t.Errorf("TimeoutError{Node: %q, Timeout: %s}, want %q, %s", te.Node, te.Timeout, node, timeout)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("errors.Is(%v, context.DeadlineExceeded) is false", err)
	}
	if errors.Is(err, context.Canceled) {
		t.Errorf("error %v reports a cancellation", err)
	}
	engContainsAll(t, err, fmt.Sprintf("did not finish within %s", timeout))
}
