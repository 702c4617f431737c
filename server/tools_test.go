package server_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/models"
	"github.com/agiraph/agiraph/nodes"
	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/providers/scripted"
	"github.com/agiraph/agiraph/server/host"
	"github.com/agiraph/agiraph/tools"
)

// stageTeam is a team whose coordinator creates nodes (the create_work_node arguments) at its
// first turn and finishes once the stage is complete, and whose workers think with work.
func stageTeam(nodeArgs []map[string]any, work scripted.Func, opts ...nodes.Option) func(string) []nodes.Option {
	return func(string) []nodes.Option {
		coord := scripted.NewFunc("stage-coordinator", func(_ context.Context, req providers.Request) (scripted.Turn, error) {
			text, _ := scripted.Last(req)
			switch {
			case len(req.Messages) == 1:
				var calls []tools.Call
				for _, a := range nodeArgs {
					calls = append(calls, scripted.Call("create_work_node", a))
				}
				return turn(req, calls...), nil
			case strings.Contains(text, "Stage 1 is complete"):
				return turn(req, scripted.Call("finish", map[string]string{"output": "finished"})), nil
			}
			return turn(req, scripted.Call("wait", map[string]string{})), nil
		})
		worker := scripted.NewFunc("stage-worker", work)
		return append([]nodes.Option{
			nodes.WithCoordinatorModel(coord.Name()), nodes.WithModel(worker.Name()),
			nodes.WithModelOptions(models.WithModels(coord, worker), models.WithoutRetry()),
			nodes.WithTick(20 * time.Millisecond),
		}, opts...)
	}
}

// oneNodeTeam is a team of one node, whose worker publishes at once; offered records the tools
// the worker was offered.
func oneNodeTeam(offered *[]string, mu *sync.Mutex) func(string) []nodes.Option {
	return stageTeam([]map[string]any{{"task": "Write."}}, func(_ context.Context, req providers.Request) (scripted.Turn, error) {
		mu.Lock()
		*offered = (*offered)[:0]
		for _, s := range req.Tools {
			*offered = append(*offered, s.Name)
		}
		mu.Unlock()
		return turn(req, scripted.Call("publish", map[string]string{"summary": "done"})), nil
	})
}

// POST /agents takes the tools the agent's workers may use, by name: its workers are offered
// only those (and the work tools), from a server started again on the root too; an unknown
// name is refused with 422, naming it.
func TestAgentTools(t *testing.T) {
	var mu sync.Mutex
	var offered []string
	c := start(t, t.TempDir(), oneNodeTeam(&offered, &mu))

	msg := c.errorOf("POST", "/agents", map[string]any{"goal": "x", "tools": []string{"read_file", "teleport"}}, http.StatusUnprocessableEntity)
	assert.Contains(t, msg, `"teleport"`)
	assert.Zero(t, c.agentCount())

	var created host.Summary
	require.Equal(t, http.StatusCreated, c.do("POST", "/agents", map[string]any{"id": "picky", "goal": "Write.", "tools": []string{"read_file", "write_file"}}, &created))
	assert.Equal(t, []string{"read_file", "write_file"}, created.Tools)
	c.await("picky", host.StatusComplete)
	mu.Lock()
	got := append([]string(nil), offered...)
	mu.Unlock()
	assert.Subset(t, got, []string{"read_file", "write_file", "publish", "ask_human"})
	for _, name := range []string{"bash", "edit_file", "web_fetch", "memory_search"} {
		assert.NotContains(t, got, name)
	}

	// A server started again: the agent keeps its tools for its next run.
	require.NoError(t, c.srv.Close())
	c2 := start(t, c.root, oneNodeTeam(&offered, &mu))
	assert.Equal(t, []string{"read_file", "write_file"}, c2.summary("picky").Tools)
	require.Equal(t, http.StatusAccepted, c2.do("POST", "/agents/picky/runs", map[string]string{"goal": "Write again."}, nil))
	c2.await("picky", host.StatusComplete)
	mu.Lock()
	defer mu.Unlock()
	assert.Contains(t, offered, "write_file")
	assert.NotContains(t, offered, "bash")
}
