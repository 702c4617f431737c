package memory_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/nodes/memory"
)

// An entry logged once is not logged again: later that day, the next day, or by a step run
// again after a crash; another writer's same words are another entry.
func TestLogOnce(t *testing.T) {
	c := &clock{t: time.Date(2026, 2, 10, 23, 59, 0, 0, time.UTC)}
	s, home := open(t, memory.WithClock(c.now))
	require.NoError(t, s.LogOnce("squad", "run r1 started: tea"))
	require.NoError(t, s.LogOnce("squad", "run r1 started: tea"))
	c.set(time.Date(2026, 2, 11, 0, 1, 0, 0, time.UTC))
	require.NoError(t, s.LogOnce("squad", "run r1 started: tea"))
	require.NoError(t, s.LogOnce("coord", "run r1 started: tea"))
	require.NoError(t, s.LogOnce("squad", "run r1 finished:\ntwo lines"))
	require.NoError(t, s.LogOnce("squad", "run r1 finished:\ntwo lines"))

	day1, err := os.ReadFile(filepath.Join(home.MemoryDir(), "2026-02-10.md"))
	require.NoError(t, err)
	assert.Equal(t, "- 23:59 squad: run r1 started: tea\n", string(day1))
	day2, err := os.ReadFile(filepath.Join(home.MemoryDir(), "2026-02-11.md"))
	require.NoError(t, err)
	assert.Equal(t, "- 00:01 coord: run r1 started: tea\n- 00:01 squad: run r1 finished:\n  two lines\n", string(day2))
}
