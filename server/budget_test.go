package server_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/models"
	"github.com/agiraph/agiraph/nodes"
	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/providers/scripted"
	"github.com/agiraph/agiraph/server/host"
)

// An agent created with a budget: its run that reaches the budget is over_budget, with an error naming the limit and
// what was spent; POST /budget raises it, and POST /resume then finishes the run. A budget
// lowered below what was spent is taken, and pauses the run resumed before its next model call.
func TestBudgetRoute(t *testing.T) {
	team := func(string) []nodes.Option {
		coord := scripted.NewFunc("budgeted", func(_ context.Context, req providers.Request) (scripted.Turn, error) {
			answers := 0
			for _, m := range req.Messages {
				for _, p := range m.Parts {
					if p.ToolResult != nil && strings.Contains(p.ToolResult.Content, "The human answered") {
						answers++
					}
				}
			}
			tn := turn(req, scripted.Call("ask_human", map[string]string{"question": "Go on?"}))
			if answers >= 2 {
				tn = turn(req, scripted.Call("finish", map[string]string{"output": "done"}))
			}
			tn.Usage = providers.Usage{InputTokens: 100}
			return tn, nil
		})
		return []nodes.Option{
			nodes.WithCoordinatorModel(coord.Name()), nodes.WithModel("scripted/unused"),
			nodes.WithModelOptions(models.WithModels(coord, scripted.New("unused")), models.WithoutRetry()),
			nodes.WithTick(20 * time.Millisecond),
		}
	}
	c := start(t, t.TempDir(), team)
	assert.Contains(t, c.errorOf("POST", "/agents", map[string]any{"goal": "spend", "budget": map[string]any{"soft": 2}}, http.StatusBadRequest),
		`bad field "budget": budget {USD:0 Tokens:0 Soft:2}: limits must not be negative`)
	require.Equal(t, http.StatusCreated, c.do("POST", "/agents", map[string]any{"id": "b", "goal": "spend", "budget": map[string]any{"tokens": 150}}, nil))
	respond := func() {
		t.Helper()
		c.await("b", host.StatusWaiting)
		require.Equal(t, http.StatusOK, c.do("POST", "/agents/b/respond", map[string]string{"response": "yes"}, nil))
	}
	respond() // the second question's turn reaches the limit
	over := c.await("b", host.StatusOverBudget)
	assert.Contains(t, over.Error, "paused over its budget: spent 200 tokens of 150")

	assert.Contains(t, c.errorOf("POST", "/agents/b/budget", map[string]any{"tokens": -5}, http.StatusBadRequest), "must not be negative")
	assert.Contains(t, c.errorOf("POST", "/agents/b/budget", map[string]any{"run": "nope", "tokens": 5}, http.StatusNotFound), `no run "nope"`)
	// A budget lowered below what was spent is taken: the run resumed pauses again at once,
	// its question still pending, and makes no model call.
	require.Equal(t, http.StatusOK, c.do("POST", "/agents/b/budget", map[string]any{"tokens": 50}, nil))
	require.Equal(t, http.StatusAccepted, c.do("POST", "/agents/b/resume", nil, nil))
	require.Eventually(t, func() bool {
		s := c.summary("b")
		return s.Status == host.StatusOverBudget && strings.Contains(s.Error, "spent 200 tokens of 50")
	}, deadline, 10*time.Millisecond, "the resumed run did not pause over the lowered budget, having spent nothing more")
	var set struct {
		Run    string
		Budget nodes.Budget
	}
	require.Equal(t, http.StatusOK, c.do("POST", "/agents/b/budget", map[string]any{"tokens": 1000}, &set))
	assert.Equal(t, over.Run, set.Run)
	assert.Equal(t, nodes.Budget{Tokens: 1000}, set.Budget)
	require.Equal(t, http.StatusAccepted, c.do("POST", "/agents/b/resume", nil, nil))
	respond()
	done := c.await("b", host.StatusComplete)
	assert.Equal(t, "done", done.Output)
}
