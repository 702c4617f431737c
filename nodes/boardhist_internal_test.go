package nodes

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/nodes/store"
)

// Records written before their documents' keys left out the run's id, and before they left
// out their versions, read as they did; a run's records of both kinds read together.
func TestBoardRecordsOfBothFormsRead(t *testing.T) {
	hr := histReader{run: "r1"}
	read := func(v int64, rec string) []store.Doc {
		t.Helper()
		docs, err := hr.read(v, []byte(rec))
		require.NoError(t, err)
		return docs
	}
	node := func(v int64, value string) []store.Doc {
		return []store.Doc{{Key: "node/r1/n1", Version: v, Value: []byte(value)}}
	}
	created := `{"id":"n1","task":"Write note 1.","stage":1,"status":"pending","created_by":"coordinator","created":"2026-11-28T04:19:24Z","updated":"2026-11-28T04:19:24Z"}`
	assert.Equal(t, []store.Doc{{Key: "run/r1", Version: 1, Value: []byte(`{"goal":"Write the notes.","stage":0}`)}},
		read(1, `[{"key":"run/r1","version":1,"value":{"goal":"Write the notes.","stage":0}}]`))
	assert.Equal(t, node(8, created), read(8, `[{"key":"node/r1/n1","version":8,"value":`+created+`}]`))
	running := read(9, `[{"key":"node/r1/n1","version":9,"base":8,"set":{"status":"running","worker":"w1"}}]`)
	require.Len(t, running, 1)
	assert.JSONEq(t, `{"id":"n1","task":"Write note 1.","stage":1,"status":"running","worker":"w1","created_by":"coordinator","created":"2026-11-28T04:19:24Z","updated":"2026-11-28T04:19:24Z"}`, string(running[0].Value))
	assert.Equal(t, "node/r1/n1", running[0].Key)
	assert.EqualValues(t, 9, running[0].Version)

	// The records written since, after those.
	done := read(10, `[{"k":"node/n1","base":9,"set":{"status":"completed"},"unset":["worker"]},{"k":"run","value":{"goal":"Write the notes.","stage":1}},{"key":"bus/x","value":{}}]`)
	require.Len(t, done, 3)
	assert.Equal(t, "node/r1/n1", done[0].Key)
	assert.EqualValues(t, 10, done[0].Version)
	assert.JSONEq(t, `{"id":"n1","task":"Write note 1.","stage":1,"status":"completed","created_by":"coordinator","created":"2026-11-28T04:19:24Z","updated":"2026-11-28T04:19:24Z"}`, string(done[0].Value))
	assert.Equal(t, store.Doc{Key: "run/r1", Version: 10, Value: []byte(`{"goal":"Write the notes.","stage":1}`)}, done[1])
	assert.Equal(t, store.Doc{Key: "bus/x", Version: 10, Value: []byte(`{}`)}, done[2])
}

// A record holds a document of its run's board by its key without the run's id, and any other
// by its key.
func TestBoardRecordsKeyTheirDocuments(t *testing.T) {
	for key, want := range map[string]histDoc{
		"run/r1":       {Rel: "run"},
		"node/r1/n1":   {Rel: "node/n1"},
		"worker/r1/w1": {Rel: "worker/w1"},
		"node/r10/n1":  {Key: "node/r10/n1"},
		"run/r10":      {Key: "run/r10"},
		"r1":           {Key: "r1"},
		"/r1":          {Key: "/r1"},
		"bus/r1/x/y":   {Rel: "bus/x/y"},
	} {
		h := wholeDoc("r1", store.Doc{Key: key})
		assert.Equal(t, want, h, key)
		assert.Equal(t, key, h.key("r1"), key)
	}
}
