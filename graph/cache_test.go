package graph_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/checkpoint"
	"github.com/agiraph/agiraph/graph"
)

// A thread invoked again and again (an agent woken by each message) starts each run from the
// state its last run cached: no checkpoint but the latest is read, a failed step resumes from the
// cache too, and the checkpoints saved — snapshots included — are those a run without the cache
// saves.
func TestCache_RunStartsFromTheCachedState(t *testing.T) {
	ctx := context.Background()
	const invokes = 60
	run := func(cache *graph.StateCache[dlState]) *countingSaver {
		saver := &countingSaver{Saver: checkpoint.NewMemory()}
		opts := []graph.Option{graph.WithThread("woken")}
		if cache != nil {
			opts = append(opts, graph.WithStateCache(cache))
		}
		var failed atomic.Bool
		flaky := func(n int) bool { return n == 30*(dlStepsPerInvoke+1)+5 && !failed.Swap(true) }
		for i := range invokes {
			n := i * (dlStepsPerInvoke + 1)
			out, err := dlGraph(t, saver, flaky).Invoke(ctx, dlState{Log: []string{dlEntry(n)}}, opts...)
			if i == 30 {
				require.Error(t, err, "the flaky step did not fail")
				out, err = dlGraph(t, saver, nil).Resume(ctx, nil, opts...)
			}
			require.NoError(t, err, "invoke %d", i)
			dlMain(t, out.Log, n+dlStepsPerInvoke+1)
		}
		return saver
	}
	cached := run(graph.NewStateCache[dlState](1))
	assert.Zero(t, cached.list.Load(), "no run read the checkpoints before the latest")
	rebuilt := run(nil)
	assert.Positive(t, rebuilt.list.Load())
	bytes, snapshots := cached.stored()
	wantBytes, wantSnapshots := rebuilt.stored()
	assert.Equal(t, wantSnapshots, snapshots, "snapshots")
	assert.Equal(t, wantBytes, bytes, "bytes stored")
}

// The saver stays the truth: a thread that another graph (another process) moved on since the
// state was cached is rebuilt from its checkpoints.
func TestCache_ThreadMovedOnElsewhereIsRebuilt(t *testing.T) {
	ctx := context.Background()
	saver := checkpoint.NewMemory()
	cache := graph.NewStateCache[dlState](4)
	thread := graph.WithThread("shared")
	step := dlStepsPerInvoke + 1
	_, err := dlGraph(t, saver, nil).Invoke(ctx, dlState{Log: []string{dlEntry(0)}}, thread, graph.WithStateCache(cache))
	require.NoError(t, err)
	_, err = dlGraph(t, saver, nil).Invoke(ctx, dlState{Log: []string{dlEntry(step)}}, thread)
	require.NoError(t, err)
	out, err := dlGraph(t, saver, nil).Invoke(ctx, dlState{Log: []string{dlEntry(2 * step)}}, thread, graph.WithStateCache(cache))
	require.NoError(t, err)
	dlMain(t, out.Log, 3*step)
	snap, err := dlGraph(t, saver, nil).State(ctx, thread, graph.WithStateCache(cache))
	require.NoError(t, err)
	dlMain(t, snap.Values.Log, 3*step)

	// Evicted (a cache of one thread, two threads taking turns): rebuilt, and right.
	small := graph.NewStateCache[dlState](1)
	for i := range 3 {
		for _, id := range []string{"a", "b"} {
			out, err := dlGraph(t, saver, nil).Invoke(ctx, dlState{Log: []string{dlEntry(i * step)}}, graph.WithThread(id), graph.WithStateCache(small))
			require.NoError(t, err)
			dlMain(t, out.Log, (i+1)*step)
		}
	}
}

// A cached state handed out twice — to State's snapshot and to the next run — is not shared
// where either appends: what one appends the other does not see, under -race too.
func TestCache_StatesHandedOutDoNotShareAppends(t *testing.T) {
	ctx := context.Background()
	saver := checkpoint.NewMemory()
	cache := graph.NewStateCache[dlState](1)
	opts := []graph.Option{graph.WithThread("t"), graph.WithStateCache(cache)}
	step := dlStepsPerInvoke + 1
	_, err := dlGraph(t, saver, nil).Invoke(ctx, dlState{Log: []string{dlEntry(0)}}, opts...)
	require.NoError(t, err)

	snap, err := dlGraph(t, saver, nil).State(ctx, opts...)
	require.NoError(t, err)
	snap.Values.Log = append(snap.Values.Log, "the caller's own entry")
	out, err := dlGraph(t, saver, nil).Invoke(ctx, dlState{Log: []string{dlEntry(step)}}, opts...)
	require.NoError(t, err)
	dlMain(t, out.Log, 2*step)
	dlMain(t, snap.Values.Log[:step], step)

	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			s, err := dlGraph(t, saver, nil).State(ctx, opts...)
			if assert.NoError(t, err) {
				n := len(s.Values.Log)
				assert.GreaterOrEqual(t, n, 2*step)
				s.Values.Log = append(s.Values.Log, "mine", string(rune('a'+i)))
				assert.Equal(t, dlEntry(n-1), s.Values.Log[n-1])
			}
		})
	}
	out, err = dlGraph(t, saver, nil).Invoke(ctx, dlState{Log: []string{dlEntry(2 * step)}}, opts...)
	wg.Wait()
	require.NoError(t, err)
	dlMain(t, out.Log, 3*step)
}

// A cache made for another state type is refused when the run starts.
func TestCache_OfAnotherTypeIsRefused(t *testing.T) {
	_, err := dlGraph(t, checkpoint.NewMemory(), nil).Invoke(context.Background(), dlState{}, graph.WithThread("t"), graph.WithStateCache(graph.NewStateCache[int](1)))
	require.ErrorContains(t, err, "WithStateCache")
}
