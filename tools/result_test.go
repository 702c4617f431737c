package tools_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/tools"
)

// A result's JSON leaves out the flags that are false, and holds those that are true; a result
// written with both (as results were before) reads as it was.
func TestResultJSONLeavesOutFalseFlags(t *testing.T) {
	ok := tools.Result{CallID: "call_1", Name: "write_file", Content: "wrote 16 bytes"}
	b, err := json.Marshal(ok)
	require.NoError(t, err)
	assert.JSONEq(t, `{"CallID":"call_1","Name":"write_file","Content":"wrote 16 bytes"}`, string(b))

	failed := tools.Result{CallID: "call_2", Name: "read_file", Content: "no such file", IsError: true, Truncated: true}
	b, err = json.Marshal(failed)
	require.NoError(t, err)
	assert.JSONEq(t, `{"CallID":"call_2","Name":"read_file","Content":"no such file","IsError":true,"Truncated":true}`, string(b))

	var old tools.Result
	require.NoError(t, json.Unmarshal([]byte(`{"CallID":"call_1","Name":"write_file","Content":"wrote 16 bytes","IsError":false,"Truncated":false}`), &old))
	assert.Equal(t, ok, old)
	var back tools.Result
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, failed, back)
}
