package harnessed

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/runtime"
	"github.com/agiraph/agiraph/tools"
)

// A turn of three calls as this version's steps save it: the model step saves the answer, whose
// calls become the pending calls, each tools step adds what it ran, the last one makes the
// results a message and clears them.
func TestReduceKeepsDeltas(t *testing.T) {
	calls := []tools.Call{{ID: "c1", Name: "a"}, {ID: "c2", Name: "b"}, {ID: "c3", Name: "c"}}
	results := []tools.Result{{CallID: "c1", Content: "1"}, {CallID: "c2", Content: "2"}, {CallID: "c3", Content: "3"}}
	held := runtime.Message{From: "bob", Body: "hi"}
	answer := providers.Message{Role: providers.Assistant, Parts: []providers.Part{providers.Text("on it")}}
	for i := range calls {
		answer.Parts = append(answer.Parts, providers.Part{Type: providers.ToolCallPart, ToolCall: &calls[i]})
	}
	done := providers.ToolResults(results)

	s := reduce(state{}, state{Delta: true, Conversation: []providers.Message{providers.UserText("task")}})
	model := s.update()
	model.Conversation, model.Asks, model.Turns = []providers.Message{answer}, true, 1
	s = reduce(s, model)
	assert.Equal(t, calls, s.Pending)
	assert.Equal(t, 1, s.Turns)

	step := s.update()
	step.Ran, step.Results, step.Held = 1, results[:1], []runtime.Message{held}
	step.Report = runtime.Outcome{SubNodes: []runtime.SubNode{{Task: "sub"}}}
	s = reduce(s, step)
	assert.Equal(t, calls[1:], s.Pending)
	assert.Equal(t, results[:1], s.Results)
	assert.Equal(t, []runtime.Message{held}, s.Held)

	step = s.update()
	step.Ran, step.Results = 1, results[1:2]
	step.Report = runtime.Outcome{SubNodes: []runtime.SubNode{{Task: "sub 2"}}}
	s = reduce(s, step)
	assert.Equal(t, results[:2], s.Results)

	last := s.update()
	last.Ran, last.Conversation = 1, []providers.Message{done}
	last.Report = runtime.Outcome{Status: runtime.Checkpointed, Summary: "ok", Unread: []runtime.Message{held}}
	s = reduce(s, last)
	assert.Empty(t, s.Pending)
	assert.Nil(t, s.Results)
	assert.Nil(t, s.Held)
	assert.Equal(t, []providers.Message{providers.UserText("task"), answer, done}, s.Conversation)
	assert.Equal(t, conversationChars(s.Conversation), s.Chars, "the characters counted")
	assert.Equal(t, runtime.Outcome{Status: runtime.Checkpointed, Summary: "ok",
		SubNodes: []runtime.SubNode{{Task: "sub"}, {Task: "sub 2"}}, Unread: []runtime.Message{held}}, s.Report)
	assert.False(t, s.Delta || s.Reset || s.Woken || s.Asks || s.Ran != 0, "a state keeps none of an update's flags")

	// Woken, the report starts afresh; a compaction replaces the conversation.
	wake := s.update()
	wake.Woken, wake.Conversation = true, []providers.Message{providers.UserText("news")}
	s = reduce(s, wake)
	assert.Equal(t, runtime.Outcome{}, s.Report)
	assert.Len(t, s.Conversation, 4)
	compact := s.update()
	compact.Reset, compact.Conversation, compact.Compactions = true, []providers.Message{providers.UserText("summary")}, 1
	s = reduce(s, compact)
	assert.Equal(t, []providers.Message{providers.UserText("summary")}, s.Conversation)
	assert.Equal(t, len("summary"), s.Chars)
	assert.Equal(t, 1, s.Compactions)
}

// Checkpoints of assignments that ran before this version hold updates with every field whole
// but the conversation; they still rebuild the state they made, and this version's updates
// continue from it.
func TestReduceReadsUpdatesOfEarlierVersions(t *testing.T) {
	steps := []string{
		`{"conversation":[{"role":"user","parts":[{"type":"text","text":"task"}]}],"usage":{},"report":{}}`,
		`{"conversation":[{"role":"assistant","parts":[{"type":"text","text":"on it"}]}],"pending":[{"ID":"c1","Name":"a"},{"ID":"c2","Name":"b"},{"ID":"c3","Name":"c"}],"turns":1,"usage":{},"report":{}}`,
		`{"pending":[{"ID":"c2","Name":"b"},{"ID":"c3","Name":"c"}],"results":[{"CallID":"c1","Content":"1"}],"turns":1,"usage":{},"report":{"SubNodes":[{"task":"sub"}]}}`,
	}
	var s state
	for _, b := range steps {
		var u state
		require.NoError(t, json.Unmarshal([]byte(b), &u))
		s = reduce(s, u)
	}
	require.Len(t, s.Pending, 2)
	assert.Equal(t, "c2", s.Pending[0].ID)
	assert.Equal(t, []tools.Result{{CallID: "c1", Content: "1"}}, s.Results)
	assert.Len(t, s.Report.SubNodes, 1)
	assert.Len(t, s.Conversation, 2)
	assert.Equal(t, len("task")+len("on it"), s.Chars)

	step := s.update()
	step.Ran, step.Results = 1, []tools.Result{{CallID: "c2", Content: "2"}}
	s = reduce(s, step)
	assert.Equal(t, "c3", s.Pending[0].ID)
	assert.Len(t, s.Results, 2)
	assert.Len(t, s.Report.SubNodes, 1)
}
