package nodes_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/nodes"
	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/providers/scripted"
	"github.com/agiraph/agiraph/runtime/bus"
	"github.com/agiraph/agiraph/runtime/eventlog"
)

// An answer nobody asked for is refused with ErrNoQuestion — for the coordinator as for a
// worker — and leaves no trace; the answer to a question asked is logged, and written to the
// conversation, once.
func TestAnswerWithoutQuestion(t *testing.T) {
	coord := scripted.NewFunc("asks-when-told", func(_ context.Context, req providers.Request) (scripted.Turn, error) {
		seen := scripted.Results(req)
		all := ""
		for _, m := range req.Messages {
			for _, p := range m.Parts {
				all += p.Text
			}
		}
		switch {
		case seen["ask_human"] != "":
			return scTurn(req, scripted.Call("finish", map[string]string{"output": "colour: " + seen["ask_human"]})), nil
		case strings.Contains(all, "ask me"):
			return scTurn(req, scripted.Call("ask_human", map[string]string{"question": "Which colour?"})), nil
		case seen["spawn_worker"] == "":
			return scTurn(req, scripted.Call("spawn_worker", map[string]any{"name": "Dana", "role": "painter"})), nil
		}
		return scTurn(req, scripted.Call("wait", map[string]string{})), nil
	})
	s := scSquad(t, coord, []providers.Model{scripted.New("unused")})
	events, stop := s.Subscribe(0)
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), scTimeout)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		res, err := s.Run(ctx, "paint")
		if err == nil {
			assert.Equal(t, "colour: The human answered: blue", res.Output)
		}
		done <- err
	}()
	waitFor(t, events, "worker.spawned", func(e eventlog.Event) bool { return e.Type == eventlog.WorkerSpawned })

	err := s.Answer(bus.Coordinator, "red")
	require.ErrorIs(t, err, nodes.ErrNoQuestion)
	assert.Contains(t, err.Error(), "coordinator")
	err = s.Answer("Dana", "red")
	require.ErrorIs(t, err, nodes.ErrNoQuestion)
	assert.Contains(t, err.Error(), "Dana")

	require.NoError(t, s.Send("", "ask me"))
	waitFor(t, events, "human.question", func(e eventlog.Event) bool { return e.Type == eventlog.HumanQuestion })
	require.NoError(t, s.Answer(bus.Coordinator, "blue"))
	require.NoError(t, <-done)

	var responses []string
	evs, err := s.Events(0, 0)
	require.NoError(t, err)
	for _, e := range evs {
		if e.Type == eventlog.HumanResponse {
			responses = append(responses, e.Text)
		}
	}
	assert.Equal(t, []string{"blue"}, responses)
	entries, _, err := s.Conversation(0, 0)
	require.NoError(t, err)
	var said []string
	for _, e := range entries {
		if e.From == bus.Human {
			said = append(said, e.Content)
		}
	}
	assert.Equal(t, []string{"paint", "ask me", "blue"}, said)
}

// Once the coordinator finished a run, nothing is done to it while it closes (its last turn
// stores what is worth remembering): Stop, End, Send and Answer find no run in progress, and
// no agent.paused follows the run's completion.
func TestFinishedRunTakesNoMoreOrders(t *testing.T) {
	closing, release := make(chan struct{}), make(chan struct{})
	coord := scripted.NewFunc("finishes", func(ctx context.Context, req providers.Request) (scripted.Turn, error) {
		text, _ := scripted.Last(req)
		if strings.Contains(text, "The run is ending") {
			close(closing)
			select {
			case <-release:
			case <-ctx.Done():
				return scripted.Turn{}, ctx.Err()
			}
			return scripted.Turn{Text: "Nothing to remember."}, nil
		}
		return scTurn(req, scripted.Call("finish", map[string]string{"output": "done"})), nil
	})
	s := scSquad(t, coord, []providers.Model{scripted.New("unused")})
	ctx, cancel := context.WithTimeout(context.Background(), scTimeout)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		res, err := s.Run(ctx, "finish at once")
		assert.True(t, res.Finished)
		done <- err
	}()
	<-closing
	require.ErrorIs(t, s.Stop(), nodes.ErrNoRun)
	require.ErrorIs(t, s.End(), nodes.ErrNoRun)
	require.ErrorIs(t, s.Send("", "more"), nodes.ErrNoRun)
	require.ErrorIs(t, s.Answer(bus.Coordinator, "yes"), nodes.ErrNoRun)
	close(release)
	require.NoError(t, <-done)
	ts := types(t, s)
	assert.Contains(t, ts, eventlog.AgentCompleted)
	assert.NotContains(t, ts, eventlog.AgentPaused)
}
