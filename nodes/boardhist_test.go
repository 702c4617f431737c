package nodes_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The records of a run's board (from which its steps and forks read the board as a tick left
// it) hold a change of a node as what changed, not the node again, and key their documents
// without the run's id or version, which the record's key gives: they take less than 2.25 times
// the board they lead to, and the board of the last step is the board the run ended with.
func TestBoardRecordsHoldChanges(t *testing.T) {
	ctx := context.Background()
	s := newSquad(t)
	res := run(t, s, "AI chips")
	require.True(t, res.Finished)

	recs, err := s.Store().Docs(ctx, "hist/"+res.RunID+"/")
	require.NoError(t, err)
	recorded := 0
	for _, r := range recs {
		recorded += len(r.Value)
		var docs []map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(r.Value, &docs))
		for _, d := range docs {
			assert.NotContains(t, d, "version", "a record's version is its key's")
			assert.NotContains(t, d, "key", "a record's documents are keyed without their run's id")
		}
	}
	docs, err := s.Store().Docs(ctx, "node/"+res.RunID+"/", "worker/"+res.RunID+"/", "run/"+res.RunID)
	require.NoError(t, err)
	board := 0
	for _, d := range docs {
		if strings.HasSuffix(d.Key, res.RunID) || strings.Contains(d.Key, res.RunID+"/") {
			board += len(d.Value)
		}
	}
	t.Logf("%d records of %d bytes; the board's documents %d bytes", len(recs), recorded, board)
	assert.Less(t, recorded, board*9/4, "bytes of the records")

	steps, err := s.Steps(ctx, res.RunID)
	require.NoError(t, err)
	require.NotEmpty(t, steps)
	last := steps[len(steps)-1]
	assert.JSONEq(t, jsonOf(t, res.Board.Nodes), jsonOf(t, last.Nodes))
	assert.JSONEq(t, jsonOf(t, res.Board.Workers), jsonOf(t, last.Workers))
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

// A node whose assignments spent nothing keeps no count of what they spent.
func TestNodeKeepsNoCountOfNothingSpent(t *testing.T) {
	s := newSquad(t)
	res := run(t, s, "AI chips")
	require.True(t, res.Finished)
	docs, err := s.Store().Docs(context.Background(), "node/"+res.RunID+"/")
	require.NoError(t, err)
	require.NotEmpty(t, docs)
	for _, d := range docs {
		assert.Contains(t, string(d.Value), `"applied"`, d.Key)
		assert.NotContains(t, string(d.Value), `"counted"`, d.Key)
	}
}
