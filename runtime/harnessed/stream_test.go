package harnessed_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/graph"
	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/providers/scripted"
	"github.com/agiraph/agiraph/runtime"
	"github.com/agiraph/agiraph/runtime/adapter"
	"github.com/agiraph/agiraph/runtime/harnessed"
	"github.com/agiraph/agiraph/tools"
	"github.com/agiraph/agiraph/tools/files"
)

// turnsStreamed returns, for each model_turn of events, the text of the text_delta events
// since the turn before, and the number of those events.
func turnsStreamed(events []runtime.Event) (texts []string, pieces []int) {
	var b strings.Builder
	n := 0
	for _, e := range events {
		switch e.Kind {
		case runtime.TextDelta:
			b.WriteString(e.Text)
			n++
		case runtime.ModelTurn:
			texts, pieces = append(texts, b.String()), append(pieces, n)
			b.Reset()
			n = 0
		}
	}
	return texts, pieces
}

// Every model call streams its text: the text_delta events before each model_turn, in order,
// add up to its text, in several pieces, each stamped with the assignment, node and worker; a
// turn without text has none.
func TestTextDeltasMakeEachTurnsText(t *testing.T) {
	a := assignment(t, "s1", "Write the notes.")
	model := scripted.New("w",
		scripted.Turn{Text: "Let me write the notes first.", Calls: []tools.Call{call("c1", "write_file", files.WriteArgs{Path: "notes.md", Content: "notes"})}},
		scripted.Turn{Text: "The notes are written; I publish them now.", Calls: []tools.Call{call("c2", "publish", adapter.PublishArgs{Summary: "notes"})}},
	)
	var rec recorder
	o, err := harnessed.New(model).Run(context.Background(), a, rec.sink)
	require.NoError(t, err)
	require.Equal(t, runtime.Published, o.Status)

	var turns []string
	for _, e := range rec.events {
		if e.Kind == runtime.ModelTurn {
			turns = append(turns, e.Text)
		}
	}
	require.Equal(t, []string{"Let me write the notes first.", "The notes are written; I publish them now."}, turns)
	streamed, pieces := turnsStreamed(rec.events)
	assert.Equal(t, turns, streamed, "each turn's deltas, in order")
	for i, n := range pieces {
		assert.Greater(t, n, 1, "turn %d in several pieces", i+1)
	}
	for _, e := range rec.events {
		if e.Kind == runtime.TextDelta {
			assert.NotEmpty(t, e.Text)
			assert.Equal(t, [3]string{"s1", "n1", "alice"}, [3]string{e.Assignment, e.Node, e.Worker})
			assert.False(t, e.Time.IsZero())
		}
	}

	// A turn of tool calls only streams nothing.
	var quiet recorder
	_, err = harnessed.New(scripted.New("q",
		scripted.Turn{Calls: []tools.Call{call("c1", "publish", adapter.PublishArgs{Summary: "nothing to say"})}},
	)).Run(context.Background(), assignment(t, "s2", "Publish."), quiet.sink)
	require.NoError(t, err)
	assert.NotContains(t, quiet.kinds(), runtime.TextDelta)
	assert.Contains(t, quiet.kinds(), runtime.ModelTurn)
}

// The coordinator's setup (its own tools, text ends the turn) streams its reply too.
func TestTextDeltasOfAConversationalAgent(t *testing.T) {
	a := assignment(t, "s3", "Say hello.")
	a.Tools = nil
	var rec recorder
	o, err := harnessed.New(scripted.New("c", scripted.Turn{Text: "Hello there, human."}),
		harnessed.WithTextEndsTurn(), harnessed.WithoutWorkTools()).Run(context.Background(), a, rec.sink)
	require.NoError(t, err)
	assert.Equal(t, "Hello there, human.", o.Summary)
	streamed, _ := turnsStreamed(rec.events)
	assert.Equal(t, []string{"Hello there, human."}, streamed)
}

// flaky streams "Hel" and fails with a retryable error on its first call, then answers.
type flaky struct{ calls int }

func (m *flaky) Name() string { return "test/flaky" }

func (m *flaky) Generate(_ context.Context, req providers.Request) (providers.Response, error) {
	m.calls++
	if m.calls == 1 {
		req.OnText("Hel")
		return providers.Response{}, &providers.Error{Kind: providers.ErrOverloaded, Provider: "test", Model: "flaky"}
	}
	for _, d := range []string{"Hello, ", "again."} {
		req.OnText(d)
	}
	return scripted.Turn{Calls: []tools.Call{call("c1", "publish", adapter.PublishArgs{Summary: "hello"})}, Text: "Hello, again."}.Response(m.Name()), nil
}

// A call tried again streams its text again, after the Retrying event: what a watcher sees
// starts over.
func TestTextDeltasStartAgainAfterARetry(t *testing.T) {
	m := providers.WithRetry(&flaky{}, providers.Retry{MaxAttempts: 2, InitialBackoff: time.Millisecond})
	var rec recorder
	_, err := harnessed.New(m).Run(context.Background(), assignment(t, "s4", "Greet."), rec.sink)
	require.NoError(t, err)
	var got []string
	for _, e := range rec.events {
		switch e.Kind {
		case runtime.TextDelta:
			got = append(got, e.Text)
		case runtime.Retrying, runtime.ModelTurn:
			got = append(got, string(e.Kind))
		}
	}
	assert.Equal(t, []string{"Hel", "retrying", "Hello, ", "again.", "model_turn"}, got)
}

// WithoutStreaming asks the model without OnText, and reports no deltas.
func TestWithoutStreaming(t *testing.T) {
	model := scripted.New("w", scripted.Turn{Text: "Publishing now.", Calls: []tools.Call{call("c1", "publish", adapter.PublishArgs{Summary: "done"})}}).KeepRequests()
	var rec recorder
	_, err := harnessed.New(model, harnessed.WithoutStreaming()).Run(context.Background(), assignment(t, "s5", "Publish."), rec.sink)
	require.NoError(t, err)
	require.Len(t, model.Requests(), 1)
	assert.Nil(t, model.Requests()[0].OnText)
	assert.NotContains(t, rec.kinds(), runtime.TextDelta)
	assert.Contains(t, rec.kinds(), runtime.ModelTurn)
}

// A worker run by a graph's node streams its text to the graph's messages stream too, as that
// node's: one message for each model call.
func TestWorkerInAGraphStreamsItsTextAsMessages(t *testing.T) {
	model := scripted.New("w",
		scripted.Turn{Text: "Let me write the notes first.", Calls: []tools.Call{call("c1", "write_file", files.WriteArgs{Path: "notes.md", Content: "notes"})}},
		scripted.Turn{Text: "The notes are written; I publish them now.", Calls: []tools.Call{call("c2", "publish", adapter.PublishArgs{Summary: "notes"})}},
	)
	a := assignment(t, "s1", "Write the notes.")
	type state struct{ Status runtime.Status }
	g := graph.New[state]()
	g.AddNode("writer", func(ctx context.Context, _ state) (state, error) {
		var rec recorder
		o, err := harnessed.New(model).Run(ctx, a, rec.sink)
		return state{Status: o.Status}, err
	})
	g.AddEdge(graph.START, "writer")
	c, err := g.Compile()
	require.NoError(t, err)

	var (
		messages []string
		ids      = map[string]int{}
		final    state
	)
	for ev, err := range c.Stream(context.Background(), state{}, graph.WithStreamMode(graph.ModeMessages|graph.ModeValues)) {
		require.NoError(t, err)
		if ev.Mode == graph.ModeValues {
			final = ev.Data.(state)
			continue
		}
		chunk := ev.Data.(graph.MessageChunk)
		assert.Equal(t, "writer", ev.Node)
		assert.Equal(t, "scripted/w", chunk.Model)
		i, ok := ids[chunk.ID]
		if !ok {
			i = len(messages)
			ids[chunk.ID] = i
			messages = append(messages, "")
		}
		messages[i] += chunk.Text
	}
	assert.Equal(t, runtime.Published, final.Status)
	assert.Equal(t, []string{"Let me write the notes first.", "The notes are written; I publish them now."}, messages)
}
