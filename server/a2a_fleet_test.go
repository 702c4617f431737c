package server_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/server/a2a"
	"github.com/agiraph/agiraph/server/host"
)

// The records of an agent's A2A tasks are kept in its store, which a fleet's replicas share:
// a replica on a root of its own reads the push notification config another replica set.
func TestA2ARecordsAcrossReplicas(t *testing.T) {
	dbURL, _ := fleetDB(t)
	a := startReplica(t, "A", dbURL, t.TempDir(), 0)
	b := startReplica(t, "B", dbURL, t.TempDir(), 0)
	require.Equal(t, http.StatusCreated, a.do("POST", "/agents", map[string]string{"id": "eps", "goal": "solar panels"}, nil))
	run := a.await("eps", host.StatusComplete).Run

	rpc := func(r *replica, method string, params any) (out struct {
		Result a2a.TaskPushConfig
		Error  *struct{ Message string }
	}) {
		t.Helper()
		body := map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
		require.Equal(t, http.StatusOK, r.do("POST", "/a2a/eps/", body, &out))
		return out
	}
	set := rpc(a, "tasks/pushNotificationConfig/set", map[string]any{"taskId": run,
		"pushNotificationConfig": map[string]string{"id": "hook", "url": "https://hooks.example/a2a", "token": "secret"}})
	require.Nil(t, set.Error)
	got := rpc(b, "tasks/pushNotificationConfig/get", map[string]any{"id": run, "pushNotificationConfigId": "hook"})
	require.Nil(t, got.Error, "B reads the config A set")
	assert.Equal(t, "https://hooks.example/a2a", got.Result.Config.URL)
}
