package runtime_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/runtime"
)

// An outcome's JSON — kept with each step of a worker that reports one — holds the fields that
// are set, under their names, and reads back the same.
func TestOutcomeJSONHoldsWhatIsSet(t *testing.T) {
	b, err := json.Marshal(runtime.Outcome{Status: runtime.Published, Summary: "note.md", Published: []string{"note.md"}})
	require.NoError(t, err)
	assert.JSONEq(t, `{"Status":"published","Summary":"note.md","Published":["note.md"]}`, string(b))

	full := runtime.Outcome{Status: runtime.Waiting, Summary: "s", Usage: providers.Usage{InputTokens: 3}, Published: []string{"a"},
		Result: json.RawMessage(`{"x":1}`), Suggestions: []string{"more"}, SubNodes: []runtime.SubNode{{Task: "t"}},
		Question: "q", Default: "d", Session: "s1", Turns: 2, Unread: []runtime.Message{{From: "human", To: "w1", Body: "hi"}}}
	b, err = json.Marshal(full)
	require.NoError(t, err)
	var back runtime.Outcome
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, full, back)
}
