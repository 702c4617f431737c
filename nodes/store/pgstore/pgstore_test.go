package pgstore_test

import (
	"context"
	"os"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/internal/pgtest"
	"github.com/agiraph/agiraph/nodes/eventlog"
	"github.com/agiraph/agiraph/nodes/store"
	"github.com/agiraph/agiraph/nodes/store/pgstore"
	"github.com/agiraph/agiraph/nodes/store/storetest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Run(m)) }

func open(t *testing.T, url string) *pgstore.DB {
	t.Helper()
	db, err := pgstore.Open(context.Background(), url)
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	return db
}

func agent(t *testing.T, db *pgstore.DB, id string) *pgstore.Store {
	t.Helper()
	s, err := db.Agent(id, db.Saver())
	require.NoError(t, err)
	return s
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return agent(t, open(t, pgtest.Start(t)), "a1") })
}

// TestAgentsApart: two agents of one database see their own documents, events and threads only,
// each numbered from 1.
func TestAgentsApart(t *testing.T) {
	ctx := context.Background()
	db := open(t, pgtest.Start(t))
	a, b := agent(t, db, "a"), agent(t, db, "b")
	for _, s := range []*pgstore.Store{a, b, a} {
		var ch store.Change
		require.NoError(t, ch.Put("run/r1", 1))
		ch.Events = []eventlog.Event{{Type: eventlog.AgentStarted}}
		require.NoError(t, s.Apply(ctx, ch))
	}
	evs, err := a.Events(ctx, 0, 0)
	require.NoError(t, err)
	assert.Len(t, evs, 2)
	evs, err = b.Events(ctx, 0, 0)
	require.NoError(t, err)
	require.Len(t, evs, 1)
	assert.Equal(t, int64(1), evs[0].Seq)

	_, err = db.Agent("a/b", db.Saver())
	require.Error(t, err)
	assert.Contains(t, err.Error(), `"a/b"`)
}

// Changes of one agent that put the same documents in opposite orders, at once, all commit: an
// agent's changes are made one at a time, so they never wait for each other's rows.
func TestChangesInOppositeOrdersCommit(t *testing.T) {
	ctx := context.Background()
	s := agent(t, open(t, pgtest.Start(t)), "a")
	var wg sync.WaitGroup
	errs := make(chan error, 200)
	for w := range 8 {
		wg.Go(func() {
			for i := range 25 {
				keys := []string{"node/r1/n1", "node/r1/n2", "node/r1/n3"}
				if w%2 == 1 {
					slices.Reverse(keys)
				}
				var ch store.Change
				for _, k := range keys {
					if err := ch.Put(k, i); err != nil {
						errs <- err
						return
					}
				}
				if err := s.Apply(ctx, ch); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
}
