package replay_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/hooks"
	"github.com/agiraph/agiraph/nodes"
	"github.com/agiraph/agiraph/nodes/demo"
	"github.com/agiraph/agiraph/nodes/replay"
	"github.com/agiraph/agiraph/providers"
)

// A replay's clock follows the recording's: what the run writes with the time between model
// answers — its memory's daily log, which the coordinator's later prompts hold — says the
// recorded minute, though the recorded run took many minutes and its replay takes none.
func TestReplayKeepsTheRecordedClock(t *testing.T) {
	clock := &minutes{t: time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)}
	r := recordRun(t, "the state of AI chips", nil, append(demo.Team(), nodes.WithClock(clock.now), nodes.WithHooks(clock))...)
	require.Greater(t, clock.calls, 5, "the recorded run took minutes")
	for range 3 {
		got, err := replay.Play(t.Context(), r.path, t.TempDir())
		require.NoError(t, err)
		assert.Equal(t, r.res.Output, got.Output)
	}
}

// minutes is a clock that each model call moves on by a minute, as it starts.
type minutes struct {
	hooks.Base
	mu    sync.Mutex
	t     time.Time
	calls int
}

func (m *minutes) now() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.t
}

func (m *minutes) BeforeModel(context.Context, *providers.Request) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.t = m.t.Add(time.Minute)
	m.calls++
	return nil
}
