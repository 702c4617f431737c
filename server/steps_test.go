package server_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/models"
	"github.com/agiraph/agiraph/nodes"
	"github.com/agiraph/agiraph/nodes/demo"
	"github.com/agiraph/agiraph/nodes/eventlog"
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

// A fork into a new agent makes an agent listed beside the first, whose run, from the tick
// where the question was pending, goes on with another answer; its conversation, event log and
// daily log have what the first agent had then, and nothing of the answer given later.
func TestForkIntoANewAgent(t *testing.T) {
	root := t.TempDir()
	c := start(t, root, askingTeam)
	require.Equal(t, http.StatusCreated, c.do("POST", "/agents", map[string]string{"id": "asker", "goal": "Study a market."}, nil))
	c.await("asker", host.StatusWaiting)
	require.Equal(t, http.StatusOK, c.do("POST", "/agents/asker/respond", map[string]string{"response": "the European one"}, nil))
	run := c.await("asker", host.StatusComplete).Run
	asked := askedTick(t, c, "asker", run)

	c.errorOf("POST", "/agents/asker/runs/"+run+"/fork", map[string]any{"tick": asked, "agent": "../x"}, http.StatusBadRequest)
	c.errorOf("POST", "/agents/asker/runs/"+run+"/fork", map[string]any{"tick": asked, "agent": "asker"}, http.StatusConflict)

	var forked host.Summary
	require.Equal(t, http.StatusCreated, c.do("POST", "/agents/asker/runs/"+run+"/fork", map[string]any{"tick": asked, "answer": "the Asian one", "agent": "asker-2"}, &forked))
	assert.Equal(t, "asker-2", forked.ID)
	var list struct{ Agents []host.Summary }
	require.Equal(t, http.StatusOK, c.do("GET", "/agents", nil, &list))
	assert.Len(t, list.Agents, 2)
	done := c.await("asker-2", host.StatusComplete)
	assert.Equal(t, forked.Run, done.Run)
	assert.Equal(t, "Looked at: The human answered: the Asian one", done.Output)

	var conv struct {
		Entries []struct{ Content string } `json:"entries"`
	}
	require.Equal(t, http.StatusOK, c.do("GET", "/agents/asker-2/conversation", nil, &conv))
	var said []string
	for _, e := range conv.Entries {
		said = append(said, e.Content)
	}
	assert.Contains(t, said, "Which market?")
	assert.Contains(t, said, "the Asian one")
	assert.NotContains(t, said, "the European one")
	var evs struct{ Events []eventlog.Event }
	require.Equal(t, http.StatusOK, c.do("GET", "/agents/asker-2/events", nil, &evs))
	require.NotEmpty(t, evs.Events)
	assert.Equal(t, int64(1), evs.Events[0].Seq)
	for _, e := range evs.Events {
		assert.NotContains(t, e.Text+string(e.Data), "European", "event %d", e.Seq)
	}
	logs, err := filepath.Glob(filepath.Join(root, "agents", "asker-2", "memory", "2*.md"))
	require.NoError(t, err)
	require.NotEmpty(t, logs)
	for _, l := range logs {
		b, err := os.ReadFile(l)
		require.NoError(t, err)
		assert.NotContains(t, string(b), "European")
		assert.Contains(t, string(b), run+" started")
	}
}

// askedTick returns the tick of agent's run at which the coordinator's question was pending.
func askedTick(t *testing.T, c *api, agent, run string) int {
	t.Helper()
	var list stepList
	require.Equal(t, http.StatusOK, c.do("GET", "/agents/"+agent+"/runs/"+run+"/steps", nil, &list))
	for _, st := range list.Steps {
		if st.Question != "" {
			return st.Tick
		}
	}
	t.Fatalf("no step of run %s had a question pending: %+v", run, list.Steps)
	return 0
}
