package server_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/models"
	"github.com/agiraph/agiraph/nodes"
	"github.com/agiraph/agiraph/nodes/eventlog"
	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/providers/scripted"
	"github.com/agiraph/agiraph/server"
	"github.com/agiraph/agiraph/server/host"
)

// goalTeam is a team whose coordinator does what its run's goal says: "wait" waits for the
// human (the run stays working), "fail" fails the run (its model errs), anything else finishes
// at once.
func goalTeam(string) []nodes.Option {
	coord := scripted.NewFunc("by-goal", func(_ context.Context, req providers.Request) (scripted.Turn, error) {
		text, _ := scripted.Last(req)
		goal := ""
		for _, m := range req.Messages {
			for _, p := range m.Parts {
				if _, g, ok := strings.Cut(p.Text, "GOAL: "); ok && goal == "" {
					goal, _, _ = strings.Cut(g, "\n")
				}
			}
		}
		switch {
		case strings.Contains(text, "The run is ending"):
			return scripted.Turn{Text: "Nothing to remember."}, nil
		case goal == "fail":
			return scripted.Turn{}, errors.New("the model is down")
		case goal == "wait":
			return turn(req, scripted.Call("wait", map[string]string{})), nil
		}
		return turn(req, scripted.Call("finish", map[string]string{"output": "done: " + goal})), nil
	})
	return []nodes.Option{
		nodes.WithCoordinatorModel(coord.Name()), nodes.WithModel("scripted/unused"),
		nodes.WithModelOptions(models.WithModels(coord, scripted.New("unused")), models.WithoutRetry()),
		nodes.WithTick(20 * time.Millisecond),
	}
}

// Each verb on an agent in each state answers as the state allows, and leaves the agent in the
// state it says: a run in progress can be stopped (its workers) or paused, not resumed; a paused
// or failed run can be resumed; a completed agent takes a message as the goal of a follow-up
// run; an agent never run takes one as its first; nobody waits for an answer where nobody asked.
func TestVerbsByState(t *testing.T) {
	verbs := []struct {
		name string
		body any
	}{
		{"runs", map[string]string{"goal": "wait"}},
		{"stop", nil},
		{"pause", nil},
		{"resume", map[string]string{}},
		{"send", map[string]string{"message": "wait"}},
		{"respond", map[string]string{"response": "yes"}},
	}
	const (
		idle, working, paused, completed, failed = host.StatusIdle, host.StatusWorking, host.StatusPaused, host.StatusComplete, host.StatusFailed
		ok, accepted, conflict                   = http.StatusOK, http.StatusAccepted, http.StatusConflict
	)
	type outcome struct {
		code  int
		state string
	}
	states := []string{idle, working, paused, completed, failed}
	want := map[string][]outcome{ // by verb, in the order of states
		"runs":    {{accepted, working}, {conflict, working}, {accepted, working}, {accepted, working}, {accepted, working}},
		"stop":    {{conflict, idle}, {ok, working}, {conflict, paused}, {conflict, completed}, {conflict, failed}},
		"pause":   {{conflict, idle}, {ok, paused}, {conflict, paused}, {conflict, completed}, {conflict, failed}},
		"resume":  {{conflict, idle}, {conflict, working}, {accepted, working}, {conflict, completed}, {accepted, working}},
		"send":    {{accepted, working}, {ok, working}, {conflict, paused}, {accepted, working}, {conflict, failed}},
		"respond": {{conflict, idle}, {conflict, working}, {conflict, paused}, {conflict, completed}, {conflict, failed}},
	}
	root := t.TempDir()
	for _, v := range verbs { // an agent never run: a folder without agent.json
		require.NoError(t, os.MkdirAll(filepath.Join(root, "agents", "idle-"+v.name), 0o755))
	}
	c := start(t, root, goalTeam)
	into := func(id, state string) {
		switch state {
		case idle:
			return
		case working, paused:
			require.Equal(t, http.StatusCreated, c.do("POST", "/agents", map[string]string{"id": id, "goal": "wait"}, nil))
			if state == paused {
				var s host.Summary
				require.Equal(t, http.StatusOK, c.do("POST", "/agents/"+id+"/pause", nil, &s))
				require.Equal(t, paused, s.Status)
			}
		case completed:
			require.Equal(t, http.StatusCreated, c.do("POST", "/agents", map[string]string{"id": id, "goal": "finish"}, nil))
			c.await(id, completed)
		case failed:
			require.Equal(t, http.StatusCreated, c.do("POST", "/agents", map[string]string{"id": id, "goal": "fail"}, nil))
			c.await(id, failed)
		}
	}
	for _, v := range verbs {
		for i, state := range states {
			id := state + "-" + v.name
			into(id, state)
			require.Equal(t, state, c.summary(id).Status, "%s before %s", id, v.name)
			var answer struct {
				host.Summary
				Error string `json:"error"`
			}
			code := c.do("POST", "/agents/"+id+"/"+v.name, v.body, &answer)
			got := outcome{code, c.summary(id).Status}
			if answer.Status != "" && answer.ID == id {
				got.state = answer.Status // the state the answer left it in, before a run that failed fails again
			}
			assert.Equal(t, want[v.name][i], got, "POST /%s on a %s agent: %s", v.name, state, answer.Error)
			if code == conflict {
				assert.NotEmpty(t, answer.Error, "POST /%s on a %s agent", v.name, state)
			}
		}
	}
}

// A paused run stays paused when the server closes and opens again — it is not taken for one the
// server interrupted, and not resumed by itself — and POST /resume continues it.
func TestPausedStaysPaused(t *testing.T) {
	root := t.TempDir()
	srv, err := server.New(server.WithHost(host.WithRoot(root), host.WithSquadOptions(goalTeam)))
	require.NoError(t, err)
	ts := serve(t, srv)
	c := &api{t: t, srv: srv, ts: ts, root: root}
	require.Equal(t, http.StatusCreated, c.do("POST", "/agents", map[string]string{"id": "p", "goal": "wait"}, nil))
	var paused host.Summary
	require.Equal(t, http.StatusOK, c.do("POST", "/agents/p/pause", nil, &paused))
	require.Equal(t, host.StatusPaused, paused.Status)
	require.NoError(t, srv.Close())
	ts.Close()

	c2 := start(t, root, goalTeam)
	assert.Equal(t, host.StatusPaused, c2.summary("p").Status)
	var resumed host.Summary
	require.Equal(t, http.StatusAccepted, c2.do("POST", "/agents/p/resume", nil, &resumed))
	assert.Equal(t, paused.Run, resumed.Run)
	assert.Equal(t, host.StatusWorking, c2.summary("p").Status)
}

// A trigger that comes due while the run is paused fires into it, and does not wake it: the run
// stays paused until POST /resume.
func TestTriggerDoesNotWakeAPausedRun(t *testing.T) {
	root := t.TempDir()
	srv, err := server.New(server.WithHost(host.WithRoot(root), host.WithSquadOptions(goalTeam)))
	require.NoError(t, err)
	ts := serve(t, srv)
	c := &api{t: t, srv: srv, ts: ts, root: root}
	require.Equal(t, http.StatusCreated, c.do("POST", "/agents", map[string]string{"id": "p", "goal": "wait"}, nil))
	require.Equal(t, http.StatusOK, c.do("POST", "/agents/p/pause", nil, nil))
	require.NoError(t, srv.Close())
	ts.Close()
	at := time.Now().Add(300 * time.Millisecond).UTC().Format(time.RFC3339Nano)
	trig := fmt.Sprintf(`{"next_id": 2, "triggers": [{"id": "t1", "type": "at_time", "action": {"kind": "wake", "task": "Look again."},
		"status": "active", "at": %q, "created": %q, "next": %q}]}`, at, at, at)
	require.NoError(t, os.WriteFile(filepath.Join(root, "agents", "p", "triggers.json"), []byte(trig), 0o644))

	c = start(t, root, goalTeam)
	c.awaitEvent("p", func(e eventlog.Event) bool { return e.Type == "x.trigger_fired" })
	agents := filepath.Join(root, "agents")
	require.Eventually(t, func() bool { // the squad the trigger opened closes again, or the run was woken
		return c.summary("p").Status != host.StatusPaused || openUnder(agents) == 0
	}, deadline, 10*time.Millisecond)
	assert.Equal(t, host.StatusPaused, c.summary("p").Status)
	require.Equal(t, http.StatusAccepted, c.do("POST", "/agents/p/resume", nil, nil))
	assert.Equal(t, host.StatusWorking, c.summary("p").Status)
}

// A verb on a queued run says that it is queued, not that the agent has no run.
func TestVerbsOnAQueuedRun(t *testing.T) {
	c := start(t, t.TempDir(), goalTeam, server.WithHost(host.WithMaxRuns(1)))
	require.Equal(t, http.StatusCreated, c.do("POST", "/agents", map[string]string{"id": "first", "goal": "wait"}, nil))
	c.awaitEvent("first", func(e eventlog.Event) bool { return e.Type == eventlog.AgentStarted }) // it has the place
	require.Equal(t, http.StatusCreated, c.do("POST", "/agents", map[string]string{"id": "second", "goal": "wait"}, nil))
	c.await("second", host.StatusQueued)
	for verb, body := range map[string]any{"send": map[string]string{"message": "hi"}, "stop": nil, "respond": map[string]string{"response": "yes"}} {
		msg := c.errorOf("POST", "/agents/second/"+verb, body, http.StatusConflict)
		assert.Contains(t, msg, "queued", verb)
		assert.NotContains(t, msg, "no run yet", verb)
	}
	assert.Equal(t, host.StatusQueued, c.summary("second").Status)
}
