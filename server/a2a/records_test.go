package a2a_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/nodes"
	"github.com/agiraph/agiraph/nodes/store"
	"github.com/agiraph/agiraph/server"
	"github.com/agiraph/agiraph/server/a2a"
	"github.com/agiraph/agiraph/server/host"
)

// sharedStore gives every agent's squad the store st, as a fleet gives an agent's squad the
// store its replicas share.
func sharedStore(st store.Store) server.Option {
	return server.WithHost(host.WithSquadOptions(func(id string) []nodes.Option {
		return append(team(id), nodes.WithStore(st))
	}))
}

// Two hosts with roots of their own and one store for the agent: the records of its tasks,
// kept by one, are the other's.
func TestRecordsInTheAgentsStore(t *testing.T) {
	st := store.NewMemory()
	rootA := t.TempDir()
	f := start(t, rootA, sharedStore(st))
	f.agent("ada")
	run := f.await("ada", host.StatusComplete).Run
	var cfg a2a.TaskPushConfig
	params := map[string]any{"taskId": run, "pushNotificationConfig": map[string]string{"id": "hook", "url": "https://hooks.example/a2a", "token": "secret"}}
	require.Nil(t, f.call("ada", "tasks/pushNotificationConfig/set", params, &cfg))
	f.close()

	rootB := t.TempDir()
	require.NoError(t, os.CopyFS(rootB, os.DirFS(filepath.Join(rootA))))
	require.NoError(t, os.RemoveAll(filepath.Join(rootB, "a2a")), "the other host has the agent's folder, not the server's records")
	g := start(t, rootB, sharedStore(st))
	g.await("ada", host.StatusComplete)
	require.Nil(t, g.call("ada", "tasks/pushNotificationConfig/get", map[string]any{"id": run, "pushNotificationConfigId": "hook"}, &cfg))
	assert.Equal(t, "https://hooks.example/a2a", cfg.Config.URL)
	assert.Equal(t, "secret", cfg.Config.Token)
	doc, err := st.Doc(t.Context(), "a2a/"+run)
	require.NoError(t, err)
	assert.Contains(t, string(doc.Value), "hooks.example", "the record is a document of the agent's store")
}

// The records a server kept before in files under its root are read.
func TestRecordsOfBefore(t *testing.T) {
	root := t.TempDir()
	f := start(t, root)
	f.agent("ada")
	run := f.await("ada", host.StatusComplete).Run
	f.close()
	dir := filepath.Join(root, "a2a", "ada")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, run+".json"),
		[]byte(`{"state": "completed", "push": [{"id": "old", "url": "https://hooks.example/old", "token": "t"}]}`), 0o644))

	g := start(t, root)
	g.await("ada", host.StatusComplete)
	var list []a2a.TaskPushConfig
	require.Nil(t, g.call("ada", "tasks/pushNotificationConfig/list", map[string]any{"id": run}, &list))
	require.Len(t, list, 1)
	assert.Equal(t, "https://hooks.example/old", list[0].Config.URL)
	// A change is kept in the store; the record of before with it.
	require.Nil(t, g.call("ada", "tasks/pushNotificationConfig/delete", map[string]any{"id": run, "pushNotificationConfigId": "old"}, nil))
	require.Nil(t, g.call("ada", "tasks/pushNotificationConfig/list", map[string]any{"id": run}, &list))
	assert.Empty(t, list)
}
