package providertest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/providers"
)

// place is the result type TestStructuredOutput asks for.
type place struct {
	City string   `json:"city" jsonschema:"description=The city's name"`
	Tags []string `json:"tags"`
}

// TestStructuredOutput tests an adapter's structured output end to end against a fake of its
// API: start starts the fake (NewAnthropic, NewOpenAI, …) and model makes the adapter's model
// talking to it. It checks that providers.Generate sends the API's native structured-output
// field with the schema of the result type (strict where the API has the choice), that a wrong
// answer gets a repair turn showing the model the failing path, and that an answer never valid
// ends in a *providers.OutputError naming the type and the path.
func TestStructuredOutput(t *testing.T, start func(T, ...Reply) *Server, model func(t *testing.T, s *Server) providers.Model) {
	ctx := context.Background()
	ask := providers.Request{
		Messages: []providers.Message{providers.UserText("Where is the Louvre?")},
		Output:   &providers.Output{Strict: true},
	}
	wrong := Reply{Text: `{"city": 75, "tags": []}`, Usage: providers.Usage{InputTokens: 10, OutputTokens: 5}}
	right := Reply{Text: `{"city": "Paris", "tags": ["museum"]}`, Usage: providers.Usage{InputTokens: 20, OutputTokens: 5}}

	t.Run("native", func(t *testing.T) {
		s := start(t, right)
		got, _, err := providers.Generate[place](ctx, model(t, s), ask)
		require.NoError(t, err)
		assert.Equal(t, place{City: "Paris", Tags: []string{"museum"}}, got)
		f := s.Requests()[0].Format()
		require.NotNil(t, f, "the request has no structured-output field: %s", s.Requests()[0].Body)
		schema, err := providers.SchemaFor(reflect.TypeFor[place]())
		require.NoError(t, err)
		var want map[string]any
		require.NoError(t, json.Unmarshal(schema, &want))
		assert.Equal(t, want, f.Schema)
		if f.Name != "" { // the OpenAI APIs name the schema and may be strict
			assert.Equal(t, "place", f.Name)
			assert.True(t, f.Strict)
		}
	})
	t.Run("repaired", func(t *testing.T) {
		s := start(t, wrong, right)
		got, resp, err := providers.Generate[place](ctx, model(t, s), ask)
		require.NoError(t, err)
		assert.Equal(t, "Paris", got.City)
		assert.Equal(t, 30, resp.Usage.InputTokens, "the usage of both answers")
		reqs := s.Requests()
		require.Len(t, reqs, 2)
		assert.True(t, bytes.Contains(reqs[1].Body, []byte("place.city: expected string, got integer")),
			"the repair turn shows the failing path: %s", reqs[1].Body)
		assert.NotNil(t, reqs[1].Format(), "the repair turn asks for the format again")
	})
	t.Run("never valid", func(t *testing.T) {
		s := start(t, wrong, wrong, wrong)
		_, _, err := providers.Generate[place](ctx, model(t, s), ask)
		var oe *providers.OutputError
		require.True(t, errors.As(err, &oe), "error %v (%T) is not an *OutputError", err, err)
		assert.Equal(t, "place", oe.Name)
		assert.Equal(t, 1+providers.DefaultRepairs, oe.Attempts)
		assert.ErrorContains(t, err, "place.city: expected string, got integer")
		assert.Zero(t, s.Remaining())
	})
}
