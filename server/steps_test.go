package server_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/models"
	"github.com/agiraph/agiraph/nodes"
	"github.com/agiraph/agiraph/nodes/demo"
	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/providers/scripted"
	"github.com/agiraph/agiraph/server/host"
)

// askingTeam's coordinator asks the human which market to study and finishes with the answer.
func askingTeam(string) []nodes.Option {
	coord := scripted.NewFunc("asking-coordinator", func(_ context.Context, req providers.Request) (scripted.Turn, error) {
		for _, m := range req.Messages {
			for _, p := range m.Parts {
				if p.Type == providers.ToolResultPart && p.ToolResult.Name == "ask_human" {
					return turn(req, scripted.Call("finish", map[string]string{"output": "Looked at: " + p.ToolResult.Content})), nil
				}
			}
		}
		return turn(req, scripted.Call("ask_human", map[string]string{"question": "Which market?"})), nil
	})
	return []nodes.Option{
		nodes.WithCoordinatorModel(coord.Name()), nodes.WithModel(demo.WorkerModel),
		nodes.WithModelOptions(models.WithModels(append(demo.Models(), coord)...), models.WithoutRetry()),
		nodes.WithTick(20 * time.Millisecond),
	}
}

type stepList struct {
	Run   string `json:"run"`
	Steps []struct {
		Tick     int    `json:"tick"`
		Question string `json:"question"`
		Output   string `json:"output"`
	} `json:"steps"`
}

// A run's steps list its ticks, with the question pending and the output; a step has its
// state and its diff to the one before; a fork from the tick where the question was pending,
// with another answer, ends with another output, and the run forked keeps its own.
func TestStepsAndFork(t *testing.T) {
	c := start(t, t.TempDir(), askingTeam)
	require.Equal(t, http.StatusCreated, c.do("POST", "/agents", map[string]string{"id": "asker", "goal": "Study a market."}, nil))
	c.await("asker", host.StatusWaiting)
	require.Equal(t, http.StatusOK, c.do("POST", "/agents/asker/respond", map[string]string{"response": "the European one"}, nil))
	done := c.await("asker", host.StatusComplete)
	run := done.Run

	var list stepList
	require.Equal(t, http.StatusOK, c.do("GET", "/agents/asker/runs/"+run+"/steps", nil, &list))
	require.NotEmpty(t, list.Steps)
	asked := 0
	for _, st := range list.Steps {
		if st.Question == "Which market?" && asked == 0 {
			asked = st.Tick
		}
	}
	require.NotZero(t, asked, "no step had the question pending: %+v", list.Steps)
	assert.Equal(t, "Looked at: The human answered: the European one", list.Steps[len(list.Steps)-1].Output)

	var step struct {
		Step struct {
			Tick     int            `json:"tick"`
			Question string         `json:"question"`
			Workers  []nodes.Worker `json:"workers"`
		} `json:"step"`
		Diff []struct {
			ID     string         `json:"id"`
			Kind   string         `json:"kind"`
			Fields map[string]any `json:"fields"`
		} `json:"diff"`
	}
	require.Equal(t, http.StatusOK, c.do("GET", "/agents/asker/runs/"+run+"/steps/1", nil, &step))
	assert.Equal(t, 1, step.Step.Tick)
	assert.Equal(t, len(step.Step.Workers), len(step.Diff), "the first step's diff has every worker, as added")

	c.errorOf("GET", "/agents/asker/runs/"+run+"/steps/999", nil, http.StatusNotFound)
	c.errorOf("GET", "/agents/asker/runs/nosuch/steps", nil, http.StatusNotFound)
	c.errorOf("POST", "/agents/asker/runs/"+run+"/fork", map[string]any{"tick": 0}, http.StatusBadRequest)
	c.errorOf("POST", "/agents/asker/runs/"+run+"/fork", map[string]any{"tick": 999}, http.StatusNotFound)
	if asked > 1 {
		msg := c.errorOf("POST", "/agents/asker/runs/"+run+"/fork", map[string]any{"tick": 1, "answer": "x"}, http.StatusBadRequest)
		assert.Contains(t, msg, "asked nothing at tick 1")
	}

	var forked host.Summary
	require.Equal(t, http.StatusAccepted, c.do("POST", "/agents/asker/runs/"+run+"/fork", map[string]any{"tick": asked, "answer": "the Asian one"}, &forked))
	require.NotEqual(t, run, forked.Run)
	fdone := c.await("asker", host.StatusComplete)
	assert.Equal(t, forked.Run, fdone.Run)
	assert.Equal(t, "Looked at: The human answered: the Asian one", fdone.Output)

	var again stepList
	require.Equal(t, http.StatusOK, c.do("GET", "/agents/asker/runs/"+run+"/steps", nil, &again))
	assert.Equal(t, list, again, "the run forked changed")
}
