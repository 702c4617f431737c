package nodes_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/nodes"
	"github.com/agiraph/agiraph/nodes/eventlog"
	"github.com/agiraph/agiraph/nodes/triggers"
	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/providers/scripted"
	"github.com/agiraph/agiraph/tools"
)

// An infinite agent's scheduler lives with the agent, not with a run: paused with End, the
// agent is woken by its heartbeat — the firing goes into its run and WithWake is asked to
// resume it — and the resumed run does the next cycle, once.
func TestTriggerWakesAPausedAgent(t *testing.T) {
	clock := triggers.NewFakeClock(time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC))
	var cycle atomic.Int32
	front := tools.Func("fetch_front_page", "Fetch the front page's AI posts.", func(context.Context, struct{}) (string, error) {
		n := int(cycle.Load())*2 + 2
		var ids []string
		for i := 1; i <= n; i++ {
			ids = append(ids, fmt.Sprintf("post-%d", i))
		}
		return strings.Join(ids, "\n"), nil
	})
	woken := make(chan string, 4)
	s := scSquad(t, monitor(), []providers.Model{scripted.New("unused")},
		nodes.WithMode(nodes.Infinite), nodes.WithTriggerClock(clock), nodes.WithCoordinatorTools(front),
		nodes.WithWake(func(run string) { woken <- run }))
	events, stop := s.Subscribe(0)
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), scTimeout)
	defer cancel()

	first, err := s.Start(ctx, "Monitor the front page: every cycle, report the new AI posts.")
	require.NoError(t, err)
	waitFor(t, events, "cycle 1", func(e eventlog.Event) bool { return e.Type == "x.cycle_completed" })
	require.NoError(t, first.Pause())
	res, err := first.Wait()
	require.NoError(t, err)
	assert.False(t, res.Finished, "an infinite run is never complete")
	assert.Contains(t, res.Output, "post-2")

	cycle.Add(1)
	clock.Advance(30 * time.Minute) // the heartbeat comes due with no run in progress
	var id string
	select {
	case id = <-woken:
	case <-ctx.Done():
		t.Fatal("the heartbeat did not wake the agent")
	}
	assert.Equal(t, res.RunID, id)

	second, err := s.Resume(ctx, id)
	require.NoError(t, err)
	e := waitFor(t, events, "cycle 2", func(e eventlog.Event) bool { return e.Type == "x.cycle_completed" })
	assert.Contains(t, e.Text, "post-3")
	assert.NotContains(t, e.Text, "post-1", "a post reported in cycle 1 is not reported again")
	require.NoError(t, second.Pause())
	_, err = second.Wait()
	require.NoError(t, err)
	ts, err := s.Triggers()
	require.NoError(t, err)
	require.Len(t, ts, 1)
	assert.Equal(t, 1, ts[0].Fired)
}
