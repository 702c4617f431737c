package harnessed_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/providers/scripted"
	"github.com/agiraph/agiraph/runtime"
	"github.com/agiraph/agiraph/runtime/harnessed"
	"github.com/agiraph/agiraph/tools"
)

// A node with an output schema: publish shows the schema, refuses a result that does not match
// it with what is wrong (the model fixes it on its next turn), and the valid result is in the
// outcome and published as result.json.
func TestPublishTakesAResultOfTheOutputSchema(t *testing.T) {
	a := assignment(t, "a1", "Rate the draft.")
	a.OutputSchema = json.RawMessage(`{"type":"object","additionalProperties":false,"required":["score"],
		"properties":{"score":{"type":"integer","minimum":1,"maximum":5},"notes":{"type":"string"}}}`)
	model := scripted.New("rater",
		scripted.Turn{Calls: []tools.Call{call("c1", "publish", map[string]any{"summary": "rated", "result": map[string]any{"score": 9}})}},
		scripted.Turn{Calls: []tools.Call{call("c2", "publish", map[string]any{"summary": "rated", "result": map[string]any{"score": 4, "notes": "clear"}})}},
	).KeepRequests()
	o, err := harnessed.New(model).Run(context.Background(), a, nil)
	require.NoError(t, err)
	require.Equal(t, runtime.Published, o.Status)
	assert.JSONEq(t, `{"score": 4, "notes": "clear"}`, string(o.Result))
	assert.Equal(t, []string{runtime.ResultFile}, o.Published)
	b, err := os.ReadFile(filepath.Join(a.Dir.Published(), runtime.ResultFile))
	require.NoError(t, err)
	assert.JSONEq(t, `{"score": 4, "notes": "clear"}`, string(b))

	reqs := model.Requests()
	var publish providers.ToolSpec
	for _, s := range reqs[0].Tools {
		if s.Name == "publish" {
			publish = s
		}
	}
	assert.Contains(t, string(publish.Schema), `"maximum":5`, "the model sees the result's schema in publish's")
	refused := lastResults(reqs[1])
	require.Len(t, refused, 1)
	assert.True(t, refused[0].IsError)
	assert.Contains(t, refused[0].Content, "result.score: 9 is greater than maximum 5")
}

// Without an output schema, publish takes no result.
func TestPublishWithoutOutputSchemaTakesNoResult(t *testing.T) {
	a := assignment(t, "a1", "Write it.")
	model := scripted.New("w", scripted.Turn{Calls: []tools.Call{call("c1", "publish", map[string]any{"summary": "done"})}}).KeepRequests()
	o, err := harnessed.New(model).Run(context.Background(), a, nil)
	require.NoError(t, err)
	assert.Nil(t, o.Result)
	for _, s := range model.Requests()[0].Tools {
		if s.Name == "publish" {
			assert.NotContains(t, string(s.Schema), "result")
		}
	}
}

// A single-inference worker on a node with an output schema asks for structured output, has a
// wrong answer repaired, and publishes the valid result as result.json.
func TestSingleInferenceResult(t *testing.T) {
	a := assignment(t, "a1", "Name three primes.")
	a.OutputSchema = json.RawMessage(`{"type":"object","required":["primes"],"properties":{"primes":{"type":"array","items":{"type":"integer"}}}}`)
	model := scripted.New("w",
		scripted.Turn{Text: "2, 3, 5", Usage: providers.Usage{OutputTokens: 5}},
		scripted.Turn{Text: `{"primes": [2, 3, 5]}`, Usage: providers.Usage{OutputTokens: 7}},
	).KeepRequests()
	o, err := harnessed.New(model, harnessed.WithSingleInference()).Run(context.Background(), a, nil)
	require.NoError(t, err)
	require.Equal(t, runtime.Published, o.Status)
	assert.JSONEq(t, `{"primes": [2, 3, 5]}`, string(o.Result))
	assert.Equal(t, 12, o.Usage.OutputTokens, "the usage of both answers")
	assert.Equal(t, []string{runtime.ResultFile}, o.Published)
	reqs := model.Requests()
	require.Len(t, reqs, 2)
	require.NotNil(t, reqs[0].Output)
	assert.JSONEq(t, string(a.OutputSchema), string(reqs[0].Output.Schema))
}
