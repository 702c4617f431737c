package nodes_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/models"
	"github.com/agiraph/agiraph/nodes"
	"github.com/agiraph/agiraph/nodes/store/sqlitestore"
)

// A run that ends notes in the store that its views are written, with the board's version: opened
// again in its home at that version, it does not read them back.
func TestEndedRunNotesItsViews(t *testing.T) {
	home := t.TempDir()
	coord, worker := benchCoordinator(3, 2), benchWorker()
	s, err := nodes.New(nodes.WithHome(home), nodes.WithCoordinatorModel(coord.Name()), nodes.WithModel(worker.Name()),
		nodes.WithModelOptions(models.WithModels(coord, worker), models.WithoutRetry()))
	require.NoError(t, err)
	res, err := s.Run(context.Background(), "Write the notes.")
	require.NoError(t, err)
	require.Equal(t, "all notes written", res.Output)
	require.NoError(t, s.Close())

	st, err := sqlitestore.Open(filepath.Join(home, "state.db"))
	require.NoError(t, err)
	defer st.Close()
	doc, err := st.Doc(context.Background(), "views/"+res.RunID)
	require.NoError(t, err)
	require.NotNil(t, doc.Value, "no note of the views")
	var note struct {
		Version int64  `json:"version"`
		Home    string `json:"home"`
	}
	require.NoError(t, json.Unmarshal(doc.Value, &note))
	assert.Positive(t, note.Version)
}
