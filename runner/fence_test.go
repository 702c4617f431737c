package runner_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/checkpoint"
	"github.com/agiraph/agiraph/checkpoint/postgres"
	"github.com/agiraph/agiraph/graph"
	"github.com/agiraph/agiraph/internal/pgtest"
	"github.com/agiraph/agiraph/runner"
)

// A process that lost its lease while a node that ignores its context runs saves nothing after
// it: its checkpoint writes are fenced by the lease.
func TestLostLeaseSavesNothing(t *testing.T) {
	ctx := context.Background()
	url := pgtest.Start(t)
	r := open(t, url)
	started, release := make(chan struct{}), make(chan struct{})
	var attempts atomic.Int32
	g, err := runner.Register(r, "write", steps(t, []string{"draft", "stuck"}, map[string]graph.NodeFunc[doc]{
		"stuck": func(context.Context, doc) (doc, error) {
			if attempts.Add(1) == 1 {
				close(started)
				<-release // ignores its context
				return doc{Log: []string{"zombie"}}, nil
			}
			return doc{Log: []string{"stuck"}}, nil
		},
	}))
	require.NoError(t, err)
	require.NoError(t, r.Start(ctx))
	require.NoError(t, g.Invoke(ctx, "t", doc{}))
	<-started

	// Another process takes the thread over (as a watchdog does once the lease expired).
	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, `UPDATE agiraph_runs SET generation = generation + 1, owner = 'another process' WHERE thread_id = 't'`)
	require.NoError(t, err)
	close(release) // the zombie node returns, and its run tries to save it
	require.NoError(t, r.Stop(ctx))

	saver, err := postgres.Open(ctx, url)
	require.NoError(t, err)
	defer saver.Close()
	list, err := saver.List(ctx, checkpoint.Config{ThreadID: "t"}, checkpoint.ListOptions{})
	require.NoError(t, err)
	require.NotEmpty(t, list)
	for _, tuple := range list {
		for _, w := range tuple.Writes {
			assert.NotContains(t, string(w.Value), "zombie", "a write of the process that lost its lease was saved (%s of %s)", w.Kind, w.Node)
		}
		assert.NotContains(t, string(tuple.Checkpoint.State), "zombie", "a checkpoint of the process that lost its lease was saved")
	}
}
