package nodes_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/nodes"
	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/providers/scripted"
	"github.com/agiraph/agiraph/tools"
)

// A squad's tools (WithTools) are what its workers may use, and spawn_worker's tools a choice
// among them: a harnessed worker is offered only those, beside the work tools; a tool outside
// the squad's is refused by name.
func TestToolsPerSquadAndWorker(t *testing.T) {
	scNoSearchEnv(t)
	var mu sync.Mutex
	offered := map[string][]string{} // node → the tools its worker was offered
	worker := scripted.NewFunc("tools-worker", func(_ context.Context, req providers.Request) (scripted.Turn, error) {
		var names []string
		for _, s := range req.Tools {
			names = append(names, s.Name)
		}
		mu.Lock()
		offered[scNode(req)] = names
		mu.Unlock()
		return scTurn(req, scripted.Call("publish", map[string]string{"summary": "done"})), nil
	})
	var refused string
	coord := scripted.NewFunc("tools-coordinator", func(_ context.Context, req providers.Request) (scripted.Turn, error) {
		text, results := scripted.Last(req)
		finish := scTurn(req, scripted.Call("finish", map[string]string{"output": "done"}))
		switch {
		case len(req.Messages) == 1:
			return scTurn(req,
				scripted.Call("spawn_worker", map[string]any{"name": "Nia", "tools": []string{"write_file"}}),
				scripted.Call("spawn_worker", map[string]any{"name": "Webby", "tools": []string{"web_fetch"}}),
				scripted.Call("create_work_node", map[string]any{"task": "Write.", "worker": "Nia"}),
				scripted.Call("create_work_node", map[string]any{"task": "Write too."}),
			), nil
		case len(results) > 0:
			for _, r := range results {
				if r.IsError {
					refused = r.Content
				}
			}
			return scTurn(req, scripted.Call("wait", map[string]string{})), nil
		case strings.Contains(text, "Stage 1 is complete") || strings.Contains(text, "Nothing is running"):
			return finish, nil
		}
		return scTurn(req, scripted.Call("wait", map[string]string{})), nil
	})
	s := scSquad(t, coord, []providers.Model{worker}, nodes.WithTools("read_file", "write_file", "bash"))
	res := scRun(t, s, "Two writers.")
	require.True(t, res.Finished)

	assert.Contains(t, refused, `no tool "web_fetch"`)
	_, spawned := res.Board.Worker("Webby")
	assert.False(t, spawned, "a worker with a tool outside the team's is not spawned")
	nia, _ := res.Board.Worker("Nia")
	assert.Equal(t, []string{"write_file"}, nia.Tools)

	mu.Lock()
	defer mu.Unlock()
	for _, work := range []string{"publish", "ask_human", "send_message"} {
		assert.Contains(t, offered["n1"], work)
		assert.Contains(t, offered["n2"], work)
	}
	assert.Contains(t, offered["n1"], "write_file")
	for _, name := range []string{"read_file", "bash", "web_fetch", "memory_search", "read_ref"} {
		assert.NotContains(t, offered["n1"], name)
	}
	for _, name := range []string{"read_file", "write_file", "bash"} {
		assert.Contains(t, offered["n2"], name)
	}
	for _, name := range []string{"web_fetch", "memory_search", "edit_file", "schedule"} {
		assert.NotContains(t, offered["n2"], name)
	}
}

// A squad is offered every built-in tool when WithTools chose none, and New refuses a name that
// is not one.
func TestToolNames(t *testing.T) {
	scNoSearchEnv(t)
	var got []string
	var once sync.Once
	worker := scripted.NewFunc("all-tools-worker", func(_ context.Context, req providers.Request) (scripted.Turn, error) {
		once.Do(func() {
			for _, s := range req.Tools {
				got = append(got, s.Name)
			}
		})
		return scTurn(req, scripted.Call("publish", map[string]string{"summary": "done"})), nil
	})
	coord := scCoordinator("all-tools-coordinator", func() []tools.Call {
		return []tools.Call{scripted.Call("create_work_node", map[string]any{"task": "Write."})}
	}, "nodes/n1/_spec.md", func(string) string { return "done" })
	s := scSquad(t, coord, []providers.Model{worker})
	scRun(t, s, "One writer.")
	for _, name := range nodes.ToolNames() {
		if name != "web_search" { // offered only with a search backend
			assert.Contains(t, got, name)
		}
	}

	_, err := nodes.New(nodes.WithHome(t.TempDir()), nodes.WithModelResolver(func(string) (providers.Model, error) { return worker, nil }),
		nodes.WithTools("read_file", "teleport"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), `"teleport"`)
	assert.ErrorContains(t, nodes.CheckTools([]string{"bash", "rm_rf"}), `no tool "rm_rf"`)
	assert.NoError(t, nodes.CheckTools(nodes.ToolNames()))
}
