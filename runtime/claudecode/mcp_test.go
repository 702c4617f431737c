package claudecode_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/providers/providertest"
	"github.com/agiraph/agiraph/runtime"
	"github.com/agiraph/agiraph/runtime/claudecode"
	"github.com/agiraph/agiraph/runtime/runtimetest"
	"github.com/agiraph/agiraph/tools"
)

// call is a reply of the fake API that calls one tool.
func call(id, name string, args any) providertest.Reply {
	raw, _ := json.Marshal(args)
	return providertest.Reply{Calls: []tools.Call{{ID: id, Name: name, Args: raw}}}
}

// The real Claude Code CLI reaches the run through the work tools over MCP: the scripted model
// sends the coordinator two messages, asks for a sub-node and publishes with the squad's own
// tools (mcp__agiraph__*); both messages are sent through the mailbox, each after its call was
// reported (the order of the event log, where the bus logs a message when it is sent), and the
// sub-node and the published file are in the outcome.
func TestRealCLIWorkToolsOverMCP(t *testing.T) {
	bin := claudeBinary(t)
	a := assignment(t, "Split the survey.")
	box := &runtimetest.Mailbox{}
	a.Mailbox = box
	scratch := a.Dir.Scratch()
	fake := providertest.NewAnthropicFunc(t, func(r providertest.Request) providertest.Reply {
		last := lastMessage(r)
		switch {
		case strings.Contains(last, `"tool_use_id":"toolu_send"`):
			return call("toolu_again", "mcp__agiraph__send_message", map[string]string{"to": "coordinator", "content": "Still surveying."})
		case strings.Contains(last, `"tool_use_id":"toolu_again"`):
			return call("toolu_sub", "mcp__agiraph__create_work_node", map[string]any{"task": "Survey the northern region."})
		case strings.Contains(last, `"tool_use_id":"toolu_sub"`):
			return call("toolu_write", "Write", map[string]string{"file_path": filepath.Join(scratch, "survey.md"), "content": "# Survey\n\nThe south is done.\n"})
		case strings.Contains(last, `"tool_use_id":"toolu_write"`):
			return call("toolu_publish", "mcp__agiraph__publish", map[string]string{"summary": "survey.md; the north is a sub-node"})
		case strings.Contains(last, `"tool_use_id":"toolu_publish"`):
			return providertest.Reply{Text: "Published."}
		case strings.Contains(last, "Split the survey."):
			return call("toolu_send", "mcp__agiraph__send_message", map[string]string{"to": "coordinator", "content": "Starting the survey."})
		}
		return providertest.Reply{Text: "OK"}
	})
	// What happened, in order: the calls of send_message reported, the messages sent through
	// the mailbox, and their MessageSent events.
	var mu sync.Mutex
	var order []string
	note := func(s string) {
		mu.Lock()
		defer mu.Unlock()
		order = append(order, s)
	}
	box.OnSend(func(m runtime.Message) error { note("sent " + m.Body); return nil })
	rec := newRecorder(t)
	sink := func(e runtime.Event) {
		rec.sink(e)
		switch {
		case e.Kind == runtime.ToolCalled && e.Tool.Name == "mcp__agiraph__send_message":
			note("called " + e.Tool.ID)
		case e.Kind == runtime.MessageSent:
			note("event " + e.Message.Body)
		}
	}
	rt := claudecode.New(claudecode.WithBinary(bin), claudecode.WithModel("claude-sonnet-4-5"),
		claudecode.WithEnv(offlineEnv(t, fake.URL())), claudecode.WithMaxTurns(10))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	o, err := rt.Run(ctx, a, sink)
	require.NoError(t, err, "events %s", rec.kinds())

	assert.Equal(t, runtime.Published, o.Status)
	assert.Equal(t, "survey.md; the north is a sub-node", o.Summary)
	assert.Equal(t, []string{"survey.md"}, o.Published)
	require.Len(t, o.SubNodes, 1)
	assert.Equal(t, "Survey the northern region.", o.SubNodes[0].Task)
	assert.Equal(t, []runtime.Message{{To: "coordinator", Body: "Starting the survey."}, {To: "coordinator", Body: "Still surveying."}}, box.Sent())
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []string{
		"called toolu_send", "sent Starting the survey.", "event Starting the survey.",
		"called toolu_again", "sent Still surveying.", "event Still surveying.",
	}, order)
	var called []string
	for _, e := range rec.of(runtime.ToolCalled) {
		called = append(called, e.Tool.ID)
	}
	assert.Equal(t, []string{"toolu_send", "toolu_again", "toolu_sub", "toolu_write", "toolu_publish"}, called, "each call reported once")
}

// A question over MCP ends the assignment Waiting; run again with the answer (the CLI's session
// resumed), the worker goes on and publishes.
func TestRealCLIAsksOverMCP(t *testing.T) {
	bin := claudeBinary(t)
	a := assignment(t, "Pick a colour.")
	scratch := a.Dir.Scratch()
	fake := providertest.NewAnthropicFunc(t, func(r providertest.Request) providertest.Reply {
		last := lastMessage(r)
		switch {
		case strings.Contains(last, `"tool_use_id":"toolu_ask"`):
			return providertest.Reply{Text: "Waiting for the human."}
		case strings.Contains(last, `"tool_use_id":"toolu_write"`):
			return call("toolu_publish", "mcp__agiraph__publish", map[string]string{"summary": "colour.md"})
		case strings.Contains(last, `"tool_use_id":"toolu_publish"`):
			return providertest.Reply{Text: "Published."}
		case strings.Contains(last, "their answer"):
			return call("toolu_write", "Write", map[string]string{"file_path": filepath.Join(scratch, "colour.md"), "content": "teal\n"})
		case strings.Contains(last, "Pick a colour."):
			return call("toolu_ask", "mcp__agiraph__ask_human", map[string]string{"question": "Which colour?"})
		}
		return providertest.Reply{Text: "OK"}
	})
	rt := claudecode.New(claudecode.WithBinary(bin), claudecode.WithModel("claude-sonnet-4-5"),
		claudecode.WithEnv(offlineEnv(t, fake.URL())), claudecode.WithMaxTurns(10))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	rec := newRecorder(t)
	o, err := rt.Run(ctx, a, rec.sink)
	require.NoError(t, err, "events %s", rec.kinds())
	assert.Equal(t, runtime.Waiting, o.Status)
	assert.Equal(t, "Which colour?", o.Question)
	require.NotEmpty(t, o.Session)

	a.Session, a.Answer = o.Session, "Teal."
	o, err = rt.Run(ctx, a, newRecorder(t).sink)
	require.NoError(t, err)
	assert.Equal(t, runtime.Published, o.Status)
	assert.Equal(t, []string{"colour.md"}, o.Published)
}
