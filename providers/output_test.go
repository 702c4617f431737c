package providers_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/providers/scripted"
)

type verdict struct {
	Pass   bool   `json:"pass"`
	Reason string `json:"reason"`
}

func ask() providers.Request {
	return providers.Request{Messages: []providers.Message{providers.UserText("Is 7 prime?")}}
}

func TestGenerateDecodes(t *testing.T) {
	m := scripted.New("judge", scripted.Turn{Text: "```json\n{\"pass\": true, \"reason\": \"only 1 and 7\"}\n```"}).KeepRequests()
	v, resp, err := providers.Generate[verdict](context.Background(), m, ask())
	require.NoError(t, err)
	assert.Equal(t, verdict{Pass: true, Reason: "only 1 and 7"}, v, "a code fence around the JSON is tolerated")
	assert.Equal(t, providers.StopEnd, resp.StopReason)
	out := m.Requests()[0].Output
	require.NotNil(t, out, "the model is asked for the output")
	assert.Equal(t, "verdict", out.Name)
	assert.JSONEq(t, `{"type":"object","additionalProperties":false,"required":["pass","reason"],
		"properties":{"pass":{"type":"boolean"},"reason":{"type":"string"}}}`, string(out.Schema))
}

func TestGenerateKeepsGivenOutput(t *testing.T) {
	m := scripted.New("judge", scripted.Turn{Text: "no"}, scripted.JSON(verdict{Pass: true})).KeepRequests()
	req := ask()
	req.Output = &providers.Output{Name: "answer", Strict: true, Repairs: 1}
	_, _, err := providers.Generate[verdict](context.Background(), m, req)
	require.NoError(t, err)
	out := m.Requests()[1].Output
	assert.Equal(t, "answer", out.Name)
	assert.True(t, out.Strict)
	assert.Contains(t, m.Requests()[1].Messages[2].Text(), "not a valid answer: answer is not valid JSON (invalid character")
}

func TestGenerateRefusal(t *testing.T) {
	m := scripted.New("judge", scripted.Turn{Text: "I can't help with that.", Stop: providers.StopRefusal})
	_, _, err := providers.Generate[verdict](context.Background(), m, ask())
	var oe *providers.OutputError
	require.ErrorAs(t, err, &oe)
	assert.ErrorIs(t, err, providers.ErrRefused)
	assert.Equal(t, 1, oe.Attempts, "a refusal is not repaired")
	assert.Equal(t, "I can't help with that.", oe.Answer)
}

func TestGenerateNoRepairs(t *testing.T) {
	m := scripted.New("judge", scripted.JSON(map[string]any{"pass": "yes"}))
	req := ask()
	req.Output = &providers.Output{Repairs: -1}
	_, _, err := providers.Generate[verdict](context.Background(), m, req)
	assert.EqualError(t, err, `providers: scripted/judge gave no valid verdict (answers: 1): verdict.reason: missing required property; verdict.pass: expected boolean, got string`)
}

func TestGenerateMistakes(t *testing.T) {
	m := scripted.New("judge")
	ctx := context.Background()
	_, _, err := providers.Generate[[]string](ctx, m, ask())
	assert.ErrorContains(t, err, "result type []string must be a struct")

	_, _, err = providers.GenerateJSON(ctx, m, ask())
	assert.ErrorContains(t, err, "the request has no Output")

	req := ask()
	req.Output = &providers.Output{Name: "a b", Schema: []byte(`{"type":"object"}`)}
	_, _, err = providers.GenerateJSON(ctx, m, req)
	assert.ErrorContains(t, err, `output name "a b"`)

	req.Output = &providers.Output{Schema: []byte(`{"type":"array"}`)}
	_, _, err = providers.GenerateJSON(ctx, m, req)
	assert.ErrorContains(t, err, `output result: the schema must be a JSON object with "type":"object" at its root`)

	req.Output = &providers.Output{Schema: []byte(`{"type":"object","properties":{"a":{"type":"bogus"}}}`)}
	_, _, err = providers.GenerateJSON(ctx, m, req)
	assert.ErrorContains(t, err, `unknown type "bogus"`)

	req.Output = &providers.Output{Schema: []byte(`{"type":"object"}`)}
	req.Tools = []providers.ToolSpec{{Name: "search"}}
	_, _, err = providers.GenerateJSON(ctx, m, req)
	assert.ErrorContains(t, err, "offers tools")

	req = ask()
	req.Output = &providers.Output{Schema: []byte(`{"type":"object"}`)}
	_, _, err = providers.Generate[verdict](ctx, m, req)
	assert.ErrorContains(t, err, "has a schema of its own")
}

// A model without native structured output, behind WithTextTools, is told the schema in its
// system prompt.
func TestTextToolsPromptOutput(t *testing.T) {
	m := scripted.New("plain", scripted.JSON(verdict{Pass: true, Reason: "r"})).KeepRequests()
	_, _, err := providers.Generate[verdict](context.Background(), providers.WithTextTools(m), ask())
	require.NoError(t, err)
	got := m.Requests()[0]
	assert.Nil(t, got.Output)
	assert.True(t, strings.Contains(got.System, "Answer with only a JSON object, the verdict") &&
		strings.Contains(got.System, `"required":["pass","reason"]`), "system prompt: %s", got.System)
}

func TestOutputErrorUnwraps(t *testing.T) {
	err := error(&providers.OutputError{Model: "m", Name: "n", Attempts: 2, Err: providers.ErrRefused})
	assert.True(t, errors.Is(err, providers.ErrRefused))
}
