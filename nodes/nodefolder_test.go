package nodes_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/models"
	"github.com/agiraph/agiraph/nodes"
	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/providers/scripted"
)

// A node's folder holds its views from its creation; its scratch/ and published/ come with its
// first assignment, so that a turn creating many nodes makes a folder each, not three.
func TestANodesWorkFoldersComeWithItsFirstAssignment(t *testing.T) {
	coord := scripted.NewFunc("folders-coordinator", func(_ context.Context, req providers.Request) (scripted.Turn, error) {
		if len(req.Messages) == 1 {
			return scTurn(req, scripted.Call("create_work_node", map[string]any{"task": "Write a note."})), nil
		}
		return scTurn(req, scripted.Call("finish", map[string]string{"output": "left pending"})), nil
	})
	home := t.TempDir()
	s, err := nodes.New(nodes.WithHome(home), nodes.WithCoordinatorModel(coord.Name()), nodes.WithModel(coord.Name()),
		nodes.WithModelOptions(models.WithModels(coord), models.WithoutRetry()))
	require.NoError(t, err)
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := s.Run(ctx, "Leave a node pending.", nodes.WithRunID("r1"))
	require.NoError(t, err)
	require.Len(t, res.Board.Nodes, 1)
	assert.Equal(t, nodes.NodePending, res.Board.Nodes[0].Status)
	entries, err := os.ReadDir(filepath.Join(home, "runs", "r1", "nodes", "n1"))
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	assert.Equal(t, []string{"_spec.md", "_status.md"}, names, "a pending node has its views only")
}
