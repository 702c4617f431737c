package host

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/checkpoint"
	"github.com/agiraph/agiraph/checkpoint/postgres"
	"github.com/agiraph/agiraph/internal/pgtest"
	"github.com/agiraph/agiraph/nodes/eventlog"
	"github.com/agiraph/agiraph/nodes/store"
)

// twoFleets opens two replicas' fleets on a new database; cleanup closes them.
func twoFleets(t *testing.T) (a, b *fleet) {
	t.Helper()
	url := pgtest.Start(t)
	for _, f := range []**fleet{&a, &b} {
		var err error
		*f, err = openFleet(context.Background(), config{pgURL: url})
		require.NoError(t, err)
		fl := *f
		t.Cleanup(func() { require.NoError(t, fl.close()) })
	}
	return a, b
}

// An agent's saver in a fleet writes while no other replica holds the agent, and is refused once
// another does.
func TestAgentSaverIsFencedByTheLease(t *testing.T) {
	ctx := context.Background()
	a, b := twoFleets(t)
	_, err := a.pool.Exec(ctx, `INSERT INTO `+agentsTable+` (id) VALUES ('ada')`)
	require.NoError(t, err)

	st, err := a.agentStore("ada")
	require.NoError(t, err)
	saver := st.Saver()
	cfg := checkpoint.Config{ThreadID: "run-1"}
	put := func(id string) error {
		_, err := saver.Put(ctx, cfg, checkpoint.Checkpoint{ID: id, Format: 1})
		return err
	}
	require.NoError(t, put("c1"), "no replica holds the agent")
	_, err = a.take("ada")
	require.NoError(t, err)
	require.NoError(t, put("c2"), "this replica holds it")
	_, err = a.pool.Exec(ctx, `UPDATE `+agentsTable+` SET expires_at = now() - interval '1 second' WHERE id = 'ada'`)
	require.NoError(t, err)
	_, err = b.take("ada") // the lease expired: another replica takes the agent
	require.NoError(t, err)
	assert.ErrorIs(t, put("c3"), postgres.ErrFenced)
	assert.ErrorIs(t, st.Apply(ctx, store.Change{Events: []eventlog.Event{{Type: eventlog.AgentStarted}}}), postgres.ErrFenced,
		"what the store applies alone is fenced too")
	got, err := saver.Get(ctx, cfg)
	require.NoError(t, err)
	assert.Equal(t, "c2", got.Checkpoint.ID)
	assert.Equal(t, "run-1", got.Config.ThreadID, "the agent's prefix is taken off")
}
