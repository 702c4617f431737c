package runtime_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/internal/leaktest"
	"github.com/agiraph/agiraph/runtime"
)

// emitting is a worker that reports an event from next every 10ms for four times stall, then
// publishes, unless its context ends first.
func emitting(stall time.Duration, next func(i int) runtime.Event) runtimeFunc {
	return func(ctx context.Context, a runtime.Assignment, sink runtime.Sink) (runtime.Outcome, error) {
		sink(runtime.Event{Kind: runtime.Started, Text: "fake-cli"})
		for start, i := time.Now(), 0; time.Since(start) < 4*stall; i++ {
			select {
			case <-ctx.Done():
				err := context.Cause(ctx)
				return runtime.Outcome{Status: runtime.StatusOf(ctx, err)}, err
			case <-time.After(10 * time.Millisecond):
			}
			sink(next(i))
		}
		return runtime.Outcome{Status: runtime.Published, Summary: "done"}, nil
	}
}

func TestWatchOutputIsNoProgress(t *testing.T) {
	defer leaktest.Check(t)()
	const stall = 200 * time.Millisecond
	// A CLI that retries an endpoint that never answers prints a line per attempt and nothing
	// else: it is stalled.
	retrying := emitting(stall, func(i int) runtime.Event {
		if i%5 == 4 {
			return runtime.Event{Kind: runtime.Retrying, Text: "connection refused"}
		}
		return runtime.Event{Kind: runtime.Output, Text: "Reconnecting... " + strconv.Itoa(i)}
	})
	start := time.Now()
	o, err := runtime.Watch(retrying, stall).Run(context.Background(), runtime.Assignment{Dir: runtime.NodeDir(t.TempDir())}, func(runtime.Event) {})
	require.Error(t, err)
	assert.Equal(t, runtime.Stalled, o.Status)
	assert.True(t, errors.Is(err, runtime.ErrStalled), "%v", err)
	assert.Less(t, time.Since(start), 2*stall, "stalled within the window, not at the end of the output")
	assert.Contains(t, err.Error(), "last progress: started: fake-cli")
	assert.Contains(t, err.Error(), "latest event: ", "the error tells what the worker printed since")
}

func TestWatchToolCallsAreProgress(t *testing.T) {
	defer leaktest.Check(t)()
	const stall = 200 * time.Millisecond
	// A worker calls a tool every quarter of the stall (by the clock, however slow the machine
	// makes its ticks) and prints in between: it gets on.
	last := time.Now()
	working := emitting(stall, func(i int) runtime.Event {
		if time.Since(last) >= stall/4 {
			last = time.Now()
			return runtime.Event{Kind: runtime.ToolCalled, Tool: &runtime.ToolEvent{Name: "bash"}}
		}
		return runtime.Event{Kind: runtime.Output, Text: "line " + strconv.Itoa(i)}
	})
	o, err := runtime.Watch(working, stall).Run(context.Background(), runtime.Assignment{Dir: runtime.NodeDir(t.TempDir())}, nil)
	require.NoError(t, err)
	assert.Equal(t, runtime.Published, o.Status)
}

func TestWatchMessagesAndTurnsAreProgress(t *testing.T) {
	defer leaktest.Check(t)()
	const stall = 200 * time.Millisecond
	kinds := []runtime.Kind{runtime.ModelTurn, runtime.ToolResult, runtime.MessageSent, runtime.MessageReceived, runtime.AskedHuman, runtime.Compacted}
	working := emitting(stall, func(i int) runtime.Event {
		if i%10 == 9 {
			return runtime.Event{Kind: kinds[(i/10)%len(kinds)], Text: "x"}
		}
		return runtime.Event{Kind: runtime.Retrying, Text: "overloaded"}
	})
	o, err := runtime.Watch(working, stall).Run(context.Background(), runtime.Assignment{Dir: runtime.NodeDir(t.TempDir())}, nil)
	require.NoError(t, err)
	assert.Equal(t, runtime.Published, o.Status)
}
