package nodes_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/internal/clitest"
	"github.com/agiraph/agiraph/nodes"
	"github.com/agiraph/agiraph/nodes/eventlog"
	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/providers/providertest"
	"github.com/agiraph/agiraph/providers/scripted"
	"github.com/agiraph/agiraph/runtime/claudecode"
	"github.com/agiraph/agiraph/tools"
)

// A real Claude Code worker in a squad reaches it through the work tools over MCP: its model
// (a fake Messages API) tells the coordinator it starts, searches the agent's memory (a team
// tool, served beside the work tools), tries to write it (not allowed to this worker), asks for
// a sub-node, writes a file and publishes. The message reaches the coordinator, the search
// answers, the write is refused, the sub-node lands on the board under the worker's node and is
// done by another worker, and the file is published.
func TestRealClaudeCodeWorkerOverMCP(t *testing.T) {
	bin := clitest.Claude.Bin(t, "claude", "CLAUDE_BIN")
	scNoSearchEnv(t)
	reply := func(id, name string, args any) providertest.Reply {
		raw, err := json.Marshal(args)
		require.NoError(t, err)
		return providertest.Reply{Calls: []tools.Call{{ID: id, Name: name, Args: raw}}}
	}
	var mu sync.Mutex
	var searched, wrote string // the results of memory_search and memory_write, as the model saw them
	fake := providertest.NewAnthropicFunc(t, func(r providertest.Request) providertest.Reply {
		msgs := r.Messages()
		if len(msgs) == 0 {
			return providertest.Reply{Text: "OK"}
		}
		b, _ := json.Marshal(msgs[len(msgs)-1])
		switch last := string(b); {
		case strings.Contains(last, `"tool_use_id":"toolu_send"`):
			return reply("toolu_search", "mcp__agiraph__memory_search", map[string]any{"query": "survey"})
		case strings.Contains(last, `"tool_use_id":"toolu_search"`):
			mu.Lock()
			searched = last
			mu.Unlock()
			return reply("toolu_remember", "mcp__agiraph__memory_write", map[string]any{"path": "knowledge/survey.md", "content": "# Survey\n"})
		case strings.Contains(last, `"tool_use_id":"toolu_remember"`):
			mu.Lock()
			wrote = last
			mu.Unlock()
			return reply("toolu_sub", "mcp__agiraph__create_work_node", map[string]any{"task": "Survey the northern region."})
		case strings.Contains(last, `"tool_use_id":"toolu_sub"`):
			return reply("toolu_write", "Bash", map[string]string{"command": "printf '# Survey\\n\\nThe south is done.\\n' > survey.md", "description": "Write the survey"})
		case strings.Contains(last, `"tool_use_id":"toolu_write"`):
			return reply("toolu_publish", "mcp__agiraph__publish", map[string]string{"summary": "survey.md; the north is a sub-node"})
		case strings.Contains(last, `"tool_use_id":"toolu_publish"`):
			return providertest.Reply{Text: "Published."}
		case strings.Contains(last, "Split the survey."):
			return reply("toolu_send", "mcp__agiraph__send_message", map[string]string{"to": "coordinator", "content": "Starting the survey."})
		}
		return providertest.Reply{Text: "OK"}
	})

	var heard []string
	coord := scripted.NewFunc("cc-mcp-coordinator", func(_ context.Context, req providers.Request) (scripted.Turn, error) {
		text, _ := scripted.Last(req)
		mu.Lock()
		heard = append(heard, text)
		mu.Unlock()
		switch {
		case len(req.Messages) == 1:
			return scTurn(req,
				scripted.Call("spawn_worker", map[string]any{"name": "Cody", "kind": "claude-code", "model": "claude-sonnet-4-5"}),
				scripted.Call("create_work_node", map[string]any{"task": "Split the survey.", "worker": "Cody"})), nil
		case strings.Contains(text, "Stage 1 is complete"):
			return scTurn(req, scripted.Call("finish", map[string]string{"output": "surveyed"})), nil
		}
		return scTurn(req, scripted.Call("wait", map[string]string{})), nil
	})
	worker := scripted.NewFunc("cc-mcp-worker", func(_ context.Context, req providers.Request) (scripted.Turn, error) {
		return scTurn(req, scripted.Call("publish", map[string]string{"summary": "the north is done"})), nil
	})
	s := scSquad(t, coord, []providers.Model{worker}, nodes.WithClaudeCode(claudecode.WithBinary(bin),
		claudecode.WithEnv(clitest.ClaudeEnv(t, fake.URL())), claudecode.WithMaxTurns(10)))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	res, err := s.Run(ctx, "Survey the land.")
	if err != nil {
		dump(t, s)
	}
	require.NoError(t, err)
	require.True(t, res.Finished)

	n1, ok := res.Board.Node("n1")
	require.True(t, ok)
	assert.Equal(t, nodes.NodeCompleted, n1.Status)
	assert.Equal(t, []string{"survey.md"}, n1.Published)
	require.Len(t, n1.Children, 1, "the sub-node the CLI asked for over MCP")
	sub, ok := res.Board.Node(n1.Children[0])
	require.True(t, ok)
	assert.Equal(t, "Survey the northern region.", sub.Task)
	assert.Equal(t, "n1", sub.Parent)
	assert.Equal(t, nodes.NodeCompleted, sub.Status)
	assert.Equal(t, "the north is done", sub.Summary)

	// The event log has the call of send_message, then the message it sent (the CLI runs the
	// call before the message that makes it has ended, and before its output shows the call).
	evs, err := s.Events(0, 0)
	require.NoError(t, err)
	var order []string
	for _, e := range evs {
		switch {
		case e.Type == eventlog.ToolCalled && strings.HasPrefix(e.Text, "mcp__agiraph__send_message "):
			order = append(order, "called send_message")
		case e.Type == eventlog.MessageSent && e.Text == "Starting the survey.":
			order = append(order, "sent")
		}
	}
	assert.Equal(t, []string{"called send_message", "sent"}, order)

	mu.Lock()
	defer mu.Unlock()
	assert.Contains(t, strings.Join(heard, "\n"), "Starting the survey.", "the coordinator heard the worker's message")
	require.NotEmpty(t, searched)
	assert.NotContains(t, searched, `"is_error":true`, "memory_search is served")
	require.NotEmpty(t, wrote)
	assert.Contains(t, wrote, `"is_error":true`, "memory_write is not served to a worker without the agent's memory")
}
