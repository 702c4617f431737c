package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/models"
	"github.com/agiraph/agiraph/nodes"
	"github.com/agiraph/agiraph/nodes/demo"
	"github.com/agiraph/agiraph/nodes/eventlog"
	"github.com/agiraph/agiraph/nodes/triggers"
	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/providers/scripted"
	"github.com/agiraph/agiraph/server"
	"github.com/agiraph/agiraph/server/host"
)

// held is a model that, on the synthesis node, holds until its context ends: a run of the
// offline team played with it stays in progress once its research is done. reached is closed
// when it first holds.
type held struct {
	providers.Model
	once    sync.Once
	reached chan struct{}
}

func (h *held) Generate(ctx context.Context, req providers.Request) (providers.Response, error) {
	if len(req.Messages) > 0 && strings.Contains(req.Messages[0].Text(), "Synthesize") {
		h.once.Do(func() { close(h.reached) })
		<-ctx.Done()
		return providers.Response{}, ctx.Err()
	}
	return h.Model.Generate(ctx, req)
}

// heldTeam is the offline team whose synthesis holds (see held), under the same model names,
// so that the offline team can take its runs up again.
func heldTeam() (func(string) []nodes.Option, <-chan struct{}) {
	ms := demo.Models()
	for i, m := range ms {
		if m.Name() == demo.WorkerModel {
			ms[i] = &held{Model: m, reached: make(chan struct{})}
		}
	}
	var reached chan struct{}
	for _, m := range ms {
		if h, ok := m.(*held); ok {
			reached = h.reached
		}
	}
	return func(string) []nodes.Option {
		return []nodes.Option{
			nodes.WithModel(demo.WorkerModel), nodes.WithCoordinatorModel(demo.CoordinatorModel),
			nodes.WithModelOptions(models.WithModels(ms...), models.WithoutRetry()),
			nodes.WithTick(20 * time.Millisecond),
		}
	}, reached
}

// interrupted creates agent id toward goal on a server over root whose synthesis holds, and
// closes the server once the run holds there: the run is paused half done.
func interrupted(t *testing.T, root, id, goal string) host.Summary {
	t.Helper()
	team, reached := heldTeam()
	srv, err := server.New(server.WithHost(host.WithRoot(root), host.WithSquadOptions(team)))
	require.NoError(t, err)
	c := &api{t: t, srv: srv, ts: newTestServer(t, srv), root: root}
	var s host.Summary
	require.Equal(t, http.StatusCreated, c.do("POST", "/agents", map[string]string{"id": id, "goal": goal}, &s))
	select {
	case <-reached:
	case <-time.After(deadline):
		c.dump(id)
		t.Fatalf("agent %s never reached its synthesis", id)
	}
	require.Equal(t, host.StatusWorking, c.summary(id).Status)
	require.NoError(t, srv.Close())
	return s
}

// reference is the output of the offline team's run toward goal, run to the end on a server of
// its own.
func reference(t *testing.T, goal string) string {
	t.Helper()
	root := t.TempDir()
	srv, err := server.New(server.WithHost(host.WithRoot(root), host.WithSquadOptions(demoTeam)))
	require.NoError(t, err)
	defer srv.Close()
	c := &api{t: t, srv: srv, ts: newTestServer(t, srv), root: root}
	require.Equal(t, http.StatusCreated, c.do("POST", "/agents", map[string]string{"id": "reference", "goal": goal}, nil))
	out := c.await("reference", host.StatusComplete).Output
	require.NotEmpty(t, out)
	return out
}

// agentFile reads the agent's agent.json.
func agentFile(t *testing.T, root, id string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "agents", id, "agent.json"))
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(data, &m))
	return m
}

// events returns all the agent's events.
func (c *api) events(id string) []eventlog.Event {
	c.t.Helper()
	var evs struct{ Events []eventlog.Event }
	require.Equal(c.t, http.StatusOK, c.do("GET", "/agents/"+id+"/events", nil, &evs))
	return evs.Events
}

// checkEvents asserts that the agent's events are numbered 1, 2, 3… and that each node of its
// board completed once.
func (c *api) checkEvents(id string) []eventlog.Event {
	c.t.Helper()
	evs := c.events(id)
	completed := map[string]int{}
	for i, e := range evs {
		assert.Equal(c.t, int64(i+1), e.Seq, "event %d of %s", i+1, id)
		if e.Type == eventlog.NodeCompleted {
			completed[e.Node]++
		}
	}
	var board struct{ Nodes []nodes.Node }
	require.Equal(c.t, http.StatusOK, c.do("GET", "/agents/"+id+"/board", nil, &board))
	require.NotEmpty(c.t, board.Nodes)
	for _, n := range board.Nodes {
		assert.Equal(c.t, nodes.NodeCompleted, n.Status, "node %s of %s", n.ID, id)
		assert.Equal(c.t, 1, completed[n.ID], "node.completed events of node %s of %s", n.ID, id)
	}
	return evs
}

// Closing the server pauses a run half done: it is interrupted, with no output, and says so in
// agent.json. A server opened again on the root resumes it by itself, and it completes with the
// offline team's output, each node done once; a run that finished stays completed across
// restarts, and is not resumed again.
func TestCloseInterruptsAndRestartResumes(t *testing.T) {
	const goal = "AI chips"
	want := reference(t, goal)
	root := t.TempDir()
	created := interrupted(t, root, "alpha", goal)

	m := agentFile(t, root, "alpha")
	assert.Equal(t, host.StatusInterrupted, m["status"])
	assert.Empty(t, m["output"])
	assert.Empty(t, m["error"])
	assert.Equal(t, created.Run, m["run"])

	c := start(t, root, demoTeam)
	done := c.await("alpha", host.StatusComplete)
	assert.Equal(t, created.Run, done.Run)
	assert.Equal(t, want, done.Output)
	evs := c.checkEvents("alpha")
	resumed := 0
	for _, e := range evs {
		if e.Type == eventlog.AgentResumed {
			resumed++
		}
	}
	assert.Positive(t, resumed, "the run was resumed, not run again")
	require.NoError(t, c.srv.Close())
	assert.Equal(t, host.StatusComplete, agentFile(t, root, "alpha")["status"])

	// Opened again: the finished run stays completed, with its output, and nothing runs.
	c2 := start(t, root, demoTeam)
	again := c2.summary("alpha")
	assert.Equal(t, host.StatusComplete, again.Status)
	assert.Equal(t, want, again.Output)
	time.Sleep(200 * time.Millisecond) // time enough for a run to begin, were one begun
	assert.Equal(t, host.StatusComplete, c2.summary("alpha").Status)
	assert.Len(t, c2.events("alpha"), len(evs), "no event after the run completed")
}

// With WithoutResume a run paused by Close, or left working by a crash, stays interrupted until
// POST /resume, which completes it with the offline team's output.
func TestWithoutResumeWaitsForResume(t *testing.T) {
	const goal = "quantum sensors"
	want := reference(t, goal)
	root := t.TempDir()
	created := interrupted(t, root, "beta", goal)
	interrupted(t, root, "gamma", goal)

	// gamma's agent.json says working, as when the server is killed during its run.
	path := filepath.Join(root, "agents", "gamma", "agent.json")
	m := agentFile(t, root, "gamma")
	m["status"] = host.StatusWorking
	data, err := json.Marshal(m)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, data, 0o644))

	c := start(t, root, demoTeam, server.WithHost(host.WithoutResume()))
	assert.Equal(t, host.StatusInterrupted, agentFile(t, root, "gamma")["status"], "agent.json says what the summary says")
	before := map[string]int{"beta": len(c.events("beta")), "gamma": len(c.events("gamma"))}
	time.Sleep(200 * time.Millisecond) // time enough for a run to begin, were one begun
	for _, id := range []string{"beta", "gamma"} {
		s := c.summary(id)
		assert.Equal(t, host.StatusInterrupted, s.Status, id)
		assert.Empty(t, s.Output, id)
		assert.Len(t, c.events(id), before[id], "%s: no event before POST /resume", id)
	}

	var resumed host.Summary
	require.Equal(t, http.StatusAccepted, c.do("POST", "/agents/beta/resume", nil, &resumed))
	assert.Equal(t, created.Run, resumed.Run)
	assert.Equal(t, host.StatusWorking, resumed.Status)
	done := c.await("beta", host.StatusComplete)
	assert.Equal(t, want, done.Output)
	c.checkEvents("beta")
	assert.Equal(t, host.StatusInterrupted, c.summary("gamma").Status, "gamma was not resumed")

	require.Equal(t, http.StatusAccepted, c.do("POST", "/agents/gamma/resume", map[string]string{}, nil))
	assert.Equal(t, want, c.await("gamma", host.StatusComplete).Output)
	c.checkEvents("gamma")
}

// An agent deleted during its run stays forgotten: a server opened again on the root neither
// lists it nor resumes its run, whose files stay.
func TestDeletedAgentStaysForgotten(t *testing.T) {
	team, reached := heldTeam()
	root := t.TempDir()
	srv, err := server.New(server.WithHost(host.WithRoot(root), host.WithSquadOptions(team)))
	require.NoError(t, err)
	c := &api{t: t, srv: srv, ts: newTestServer(t, srv), root: root}
	require.Equal(t, http.StatusCreated, c.do("POST", "/agents", map[string]string{"id": "gone", "goal": "AI chips"}, nil))
	select {
	case <-reached:
	case <-time.After(deadline):
		t.Fatal("the run never reached its synthesis")
	}
	require.Equal(t, http.StatusOK, c.do("DELETE", "/agents/gone", nil, nil))
	require.NoError(t, srv.Close())
	m := agentFile(t, root, "gone")
	assert.Equal(t, true, m["deleted"])
	assert.Equal(t, host.StatusInterrupted, m["status"])
	files := nodes.ReadFiles(nodes.WithHome(filepath.Join(root, "agents", "gone")))
	events, err := files.Events(0, 0)
	require.NoError(t, err)

	c2 := start(t, root, demoTeam)
	c2.errorOf("GET", "/agents/gone", nil, http.StatusNotFound)
	var list struct{ Agents []host.Summary }
	c2.do("GET", "/agents", nil, &list)
	assert.Empty(t, list.Agents)
	time.Sleep(200 * time.Millisecond) // time enough for a run to begin, were one begun
	after, err := files.Events(0, 0)
	require.NoError(t, err)
	assert.Equal(t, len(events), len(after), "no event after the delete")
}

// A run in which nothing moves says what it waits on: the summary's stalled is the text of the
// last agent.waiting event, until something else happens.
func TestStalled(t *testing.T) {
	coord := scripted.NewFunc("stalling-coordinator", func(_ context.Context, req providers.Request) (scripted.Turn, error) {
		for _, m := range req.Messages {
			for _, p := range m.Parts {
				if p.Type == providers.ToolResultPart && p.ToolResult.Name == "ask_human" {
					return turn(req, scripted.Call("finish", map[string]string{"output": "Chose " + p.ToolResult.Content})), nil
				}
			}
		}
		return turn(req, scripted.Call("ask_human", map[string]string{"question": "Which one?"})), nil
	})
	team := func(string) []nodes.Option {
		return []nodes.Option{
			nodes.WithCoordinatorModel(coord.Name()), nodes.WithModel(demo.WorkerModel),
			nodes.WithModelOptions(models.WithModels(append(demo.Models(), coord)...), models.WithoutRetry()),
			nodes.WithTick(20 * time.Millisecond), nodes.WithStall(200 * time.Millisecond),
		}
	}
	c := start(t, t.TempDir(), team)
	require.Equal(t, http.StatusCreated, c.do("POST", "/agents", map[string]string{"id": "staller", "goal": "Pick one."}, nil))
	end := time.Now().Add(deadline)
	var s host.Summary
	for s = c.summary("staller"); s.Stalled == ""; s = c.summary("staller") {
		if time.Now().After(end) {
			c.dump("staller")
			t.Fatalf("never stalled: %+v", s)
		}
		time.Sleep(20 * time.Millisecond)
	}
	assert.Equal(t, host.StatusWaiting, s.Status)
	var waiting string
	for _, e := range c.events("staller") {
		if e.Type == eventlog.AgentWaiting {
			waiting = e.Text
		}
	}
	assert.Equal(t, waiting, s.Stalled)

	require.Equal(t, http.StatusOK, c.do("POST", "/agents/staller/respond", map[string]string{"response": "the second"}, nil))
	done := c.await("staller", host.StatusComplete)
	assert.Contains(t, done.Output, "the second")
	assert.Empty(t, done.Stalled, "events came after the agent.waiting")
}

// An infinite agent paused by Close is woken by its trigger: with WithoutResume it stays
// interrupted, at rest — no file of its open — until its heartbeat comes due, which opens it and
// resumes it for the next cycle; the heartbeat fires on time, not as one that came due while the
// agent was down.
func TestTriggerWakesAnInterruptedAgent(t *testing.T) {
	clock := triggers.NewFakeClock(time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC))
	coord := scripted.NewFunc("heartbeat-coordinator", func(_ context.Context, req providers.Request) (scripted.Turn, error) {
		text, results := scripted.Last(req)
		switch {
		case strings.Contains(text, "The run is ending"):
			return scripted.Turn{Text: "noted"}, nil
		case len(req.Messages) == 1:
			return turn(req, scripted.Call("schedule", map[string]any{"type": "heartbeat", "interval_seconds": 1800, "action": "Look again."})), nil
		case len(results) == 1 && results[0].Name == "schedule":
			return turn(req, scripted.Call("finish", map[string]string{"output": "first look"})), nil
		case strings.Contains(text, "[trigger"):
			return turn(req, scripted.Call("finish", map[string]string{"output": "woken by the heartbeat"})), nil
		}
		return turn(req, scripted.Call("wait", map[string]string{})), nil
	})
	team := func(string) []nodes.Option {
		return []nodes.Option{
			nodes.WithCoordinatorModel(coord.Name()), nodes.WithModel(demo.WorkerModel),
			nodes.WithModelOptions(models.WithModels(append(demo.Models(), coord)...), models.WithoutRetry()),
			nodes.WithTick(20 * time.Millisecond), nodes.WithTriggerClock(clock),
		}
	}
	root := t.TempDir()
	first, err := server.New(server.WithHost(host.WithRoot(root), host.WithSquadOptions(team)))
	require.NoError(t, err)
	c := &api{t: t, srv: first, ts: newTestServer(t, first), root: root}
	var s host.Summary
	require.Equal(t, http.StatusCreated, c.do("POST", "/agents", map[string]string{"id": "watcher", "goal": "Keep looking.", "mode": "infinite"}, &s))
	c.awaitEvent("watcher", func(e eventlog.Event) bool { return e.Type == "x.cycle_completed" })
	require.NoError(t, first.Close())
	assert.Equal(t, host.StatusInterrupted, agentFile(t, root, "watcher")["status"])

	c2 := start(t, root, team, server.WithHost(host.WithoutResume()))
	assert.Equal(t, host.StatusInterrupted, c2.summary("watcher").Status)
	requireNoneOpen(t, filepath.Join(root, "agents"))
	clock.Advance(30 * time.Minute)
	fired := c2.awaitEvent("watcher", func(e eventlog.Event) bool { return e.Type == "x.trigger_fired" })
	assert.NotContains(t, fired.Text, "came due while the agent was down")
	woken := c2.awaitEvent("watcher", func(e eventlog.Event) bool {
		return e.Type == "x.cycle_completed" && strings.Contains(e.Text, "woken by the heartbeat")
	})
	assert.Equal(t, s.Run, woken.Run)
	assert.Equal(t, host.StatusWorking, c2.summary("watcher").Status, "the woken run stays in progress, asleep")
}

// awaitEvent waits for an event of the agent that ok accepts, and returns it.
func (c *api) awaitEvent(id string, ok func(eventlog.Event) bool) eventlog.Event {
	c.t.Helper()
	end := time.Now().Add(deadline)
	for {
		for _, e := range c.events(id) {
			if ok(e) {
				return e
			}
		}
		if time.Now().After(end) {
			c.dump(id)
			c.t.Fatalf("agent %s: no such event", id)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// newTestServer serves srv over HTTP until the test ends.
func newTestServer(t *testing.T, srv *server.Server) *httptest.Server {
	ts := serve(t, srv)
	t.Cleanup(ts.Close)
	return ts
}
