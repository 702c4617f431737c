package anthropic_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/graph"
	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/providers/providertest"
)

// A graph's node that calls the model with graph.OnText streams the answer's text deltas, as the
// Messages API sends them, in the graph's messages mode.
func TestGraphMessagesModeOverTheWire(t *testing.T) {
	const answer = "Paris is the capital of France, and it has been for a long time."
	s := providertest.NewAnthropic(t, providertest.Reply{Text: answer})
	m := newModel(t, s)
	type state struct{ Answer string }
	g := graph.New[state]()
	g.AddNode("chat", func(ctx context.Context, _ state) (state, error) {
		resp, err := m.Generate(ctx, providers.Request{Messages: []providers.Message{providers.UserText("Capital of France?")}, OnText: graph.OnText(ctx, m.Name())})
		return state{Answer: resp.Message.Text()}, err
	})
	g.AddEdge(graph.START, "chat")
	c, err := g.Compile()
	require.NoError(t, err)

	var chunks []graph.MessageChunk
	for ev, err := range c.Stream(context.Background(), state{}, graph.WithStreamMode(graph.ModeMessages)) {
		require.NoError(t, err)
		assert.Equal(t, "chat", ev.Node)
		chunks = append(chunks, ev.Data.(graph.MessageChunk))
	}
	require.Greater(t, len(chunks), 1, "the answer in several deltas")
	text := ""
	for _, c := range chunks {
		text += c.Text
		assert.Equal(t, chunks[0].ID, c.ID)
		assert.Equal(t, m.Name(), c.Model)
	}
	assert.Equal(t, answer, text)
}
