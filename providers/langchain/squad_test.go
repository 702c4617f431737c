package langchain_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/agiraph/agiraph/nodes/nodestest"
	"github.com/agiraph/agiraph/providers/providertest"
)

// A whole squad over Chat Completions (langchaingo's client behind the bridge): the coordinator
// and the worker are openai/* models of models.New, talking real HTTP to a fake server.
func TestSquadOverTheWire(t *testing.T) {
	srv := providertest.NewOpenAIFunc(t, providertest.SquadScript)
	nodestest.OverTheWire(t, "openai/gpt-4o", srv.URL())
	for _, r := range srv.Requests() {
		assert.Equal(t, "Bearer test-key", r.Header.Get("Authorization"), "request %d", r.Index)
		assert.Equal(t, "gpt-4o", r.Model, "request %d", r.Index)
	}
}
