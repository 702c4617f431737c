package nodes_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/checkpoint/sqlite"
	"github.com/agiraph/agiraph/nodes"
	"github.com/agiraph/agiraph/nodes/store/sqlitestore"
)

// The agents' file tools sync what they write when the squad's store syncs its commits, and
// only then: a store whose commits survive a power failure must not keep a step that names a
// file the failure lost, while the default store may lose its latest commits as the system may
// lose the latest files.
func TestFileToolsSyncWhenTheStoreSyncsCommits(t *testing.T) {
	assert.False(t, nodes.FileToolsSynced(newSquad(t)), "the default store")

	st, err := sqlitestore.Open(filepath.Join(t.TempDir(), "full.db"), sqlite.WithSynchronous(sqlite.SyncFull))
	require.NoError(t, err)
	defer st.Close()
	s := openOn(t, st, t.TempDir())
	defer s.Close()
	assert.True(t, nodes.FileToolsSynced(s), "a store that syncs each commit")
}
