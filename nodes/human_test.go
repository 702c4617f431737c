package nodes_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/nodes"
	"github.com/agiraph/agiraph/nodes/bus"
	"github.com/agiraph/agiraph/nodes/eventlog"
	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/providers/scripted"
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
	r := start(t, s, "paint")
	waitFor(t, events, "worker.spawned", func(e eventlog.Event) bool { return e.Type == eventlog.WorkerSpawned })

	err := r.Answer(bus.Coordinator, "red")
	require.ErrorIs(t, err, nodes.ErrNoQuestion)
	assert.Contains(t, err.Error(), "coordinator")
	err = r.Answer("Dana", "red")
	require.ErrorIs(t, err, nodes.ErrNoQuestion)
	assert.Contains(t, err.Error(), "Dana")

	require.NoError(t, r.Send("", "ask me"))
	waitFor(t, events, "human.question", func(e eventlog.Event) bool { return e.Type == eventlog.HumanQuestion })
	require.NoError(t, r.Answer(bus.Coordinator, "blue"))
	res, err := r.Wait()
	require.NoError(t, err)
	assert.Equal(t, "colour: The human answered: blue", res.Output)

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
// stores what is worth remembering): Stop, Pause, Send and Answer find no run in progress, and
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
	r := start(t, s, "finish at once")
	<-closing
	require.ErrorIs(t, r.Stop(), nodes.ErrNoRun)
	require.ErrorIs(t, r.Pause(), nodes.ErrNoRun)
	require.ErrorIs(t, r.Send("", "more"), nodes.ErrNoRun)
	require.ErrorIs(t, r.Answer(bus.Coordinator, "yes"), nodes.ErrNoRun)
	close(release)
	res, err := r.Wait()
	require.NoError(t, err)
	assert.True(t, res.Finished)
	ts := types(t, s)
	assert.Contains(t, ts, eventlog.AgentCompleted)
	assert.NotContains(t, ts, eventlog.AgentPaused)
}

// What reads or acts on the run in progress does not wait for the lock a run's start and end,
// and a trigger's firing, hold while they work on the run's files.
func TestRunIsReachedWhileItsStartLockIsHeld(t *testing.T) {
	coord := scripted.NewFunc("waits", func(_ context.Context, req providers.Request) (scripted.Turn, error) {
		return scTurn(req, scripted.Call("wait", map[string]string{})), nil
	})
	s := scSquad(t, coord, []providers.Model{scripted.New("unused")})
	events, stop := s.Subscribe(0)
	defer stop()
	r := start(t, s, "wait")
	waitFor(t, events, "agent.started", func(e eventlog.Event) bool { return e.Type == eventlog.AgentStarted })

	release := nodes.HoldStartLock(s)
	reached := make(chan error, 1)
	go func() {
		_, err := r.Board()
		reached <- errors.Join(err, r.Send("", "hello"), r.Stop())
	}()
	select {
	case err := <-reached:
		require.NoError(t, err)
	case <-time.After(scTimeout): // a deadlock's bound, not a measure
		t.Fatal("the run could not be reached while its start lock was held")
	}
	release()
	require.NoError(t, r.Pause())
	_, err := r.Wait()
	require.NoError(t, err)
}

// start starts a run of s toward goal, within scTimeout.
func start(t *testing.T, s *nodes.Squad, goal string) *nodes.Run {
	r, err := s.Start(scContext(t), goal)
	require.NoError(t, err)
	return r
}
