package host

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/nodes/workspace"
)

// A fleet's replicas read an agent's meta from the registry, whatever their folders; the replica
// holding the agent writes it, another is refused. An agent whose registry row has no meta yet
// (made when the replicas shared their folder) is read from its agent.json.
func TestFleetKeepsMeta(t *testing.T) {
	a, b := twoFleets(t)
	sa := &Host{cfg: config{root: t.TempDir()}, fleet: a}
	sb := &Host{cfg: config{root: t.TempDir()}, fleet: b}
	ok, err := a.register("ada")
	require.NoError(t, err)
	require.True(t, ok)

	_, err = sb.readMeta("ada")
	assert.ErrorIs(t, err, fs.ErrNotExist, "registered, no meta yet")
	_, err = a.take("ada")
	require.NoError(t, err)
	want := meta{ID: "ada", Goal: "AI chips", Status: StatusWorking, Run: "r1"}
	require.NoError(t, a.setMeta("ada", want))
	got, err := sb.readMeta("ada")
	require.NoError(t, err)
	assert.Equal(t, want, got, "read by another replica, from another folder")
	assert.ErrorIs(t, b.setMeta("ada", meta{ID: "ada", Status: StatusIdle}), ErrElsewhere)
	got, err = sa.readMeta("ada")
	require.NoError(t, err)
	assert.Equal(t, want, got)

	ok, err = a.register("bob")
	require.NoError(t, err)
	require.True(t, ok)
	old := meta{ID: "bob", Goal: "robots", Status: StatusComplete, Output: "done"}
	require.NoError(t, os.MkdirAll(sa.agentDir("bob"), 0o755))
	require.NoError(t, workspace.WriteJSON(filepath.Join(sa.agentDir("bob"), metaFile), old))
	got, err = sa.readMeta("bob")
	require.NoError(t, err)
	assert.Equal(t, old, got, "from its agent.json")
}
