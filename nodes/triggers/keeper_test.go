package triggers_test

import (
	"errors"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/nodes/triggers"
)

// memKeeper keeps triggers in memory; fail makes Save fail.
type memKeeper struct {
	data []byte
	fail error
}

func (k *memKeeper) Load() ([]byte, error) { return slices.Clone(k.data), nil }
func (k *memKeeper) Save(data []byte) error {
	if k.fail != nil {
		return k.fail
	}
	k.data = slices.Clone(data)
	return nil
}

// A scheduler with a keeper of its own saves its triggers there, not in the file at its path,
// and one opened on the keeper again has them; a keeper that refuses a save refuses the change.
func TestKeeperKeepsTheTriggers(t *testing.T) {
	path := filepath.Join(t.TempDir(), "triggers.json")
	k := &memKeeper{}
	clock := triggers.NewFakeClock(base)
	s, err := triggers.Open(path, func(triggers.Firing) {}, triggers.WithClock(clock), triggers.WithKeeper(k))
	require.NoError(t, err)
	_, err = s.Add(triggers.Trigger{Type: triggers.Delayed, Delay: triggers.Duration(10 * time.Minute), Action: wake("check")})
	require.NoError(t, err)
	assert.NoFileExists(t, path)
	assert.Contains(t, string(k.data), `"delayed"`)

	k.fail = errors.New("the store is full")
	_, err = s.Add(triggers.Trigger{Type: triggers.Delayed, Delay: triggers.Duration(time.Minute), Action: wake("lost")})
	require.ErrorIs(t, err, k.fail)
	require.NoError(t, s.Close())

	k.fail = nil
	again, err := triggers.Open(path, func(triggers.Firing) {}, triggers.WithClock(clock), triggers.WithKeeper(k))
	require.NoError(t, err)
	defer again.Close()
	ts := again.List()
	require.Len(t, ts, 1)
	assert.Equal(t, "check", ts[0].Action.Task)
}
