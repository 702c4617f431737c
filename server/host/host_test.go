package host_test

import (
	"context"
	"fmt"
	"strings"
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
	"github.com/agiraph/agiraph/tools"
)

// deadline bounds every wait for an agent's status: generous, never a timed assertion.
const deadline = 60 * time.Second

// demoTeam gives every agent the offline demo team.
func demoTeam(string) []nodes.Option {
	return append(demo.Team(), nodes.WithModelOptions(models.WithoutRetry()), nodes.WithTick(20*time.Millisecond))
}

// gateTeam is a team whose coordinator, on its first turn of a run, says so on reached (if it is
// not full) and holds until gate is closed or the run's context ends; then it finishes the run.
func gateTeam(gate <-chan struct{}, reached chan<- string) func(string) []nodes.Option {
	coord := scripted.NewFunc("gate", func(ctx context.Context, req providers.Request) (scripted.Turn, error) {
		text, _ := scripted.Last(req)
		if strings.Contains(text, "The run is ending") {
			return scripted.Turn{Text: "Nothing to remember."}, nil
		}
		select {
		case reached <- goalOf(req):
		default:
		}
		select {
		case <-gate:
		case <-ctx.Done():
			return scripted.Turn{}, ctx.Err()
		}
		finish := scripted.Call("finish", map[string]string{"output": "done: " + goalOf(req)})
		finish.ID = fmt.Sprintf("finish-%d", len(req.Messages)) // one of its own in the conversation
		return scripted.Turn{Calls: []tools.Call{finish}}, nil
	})
	return func(string) []nodes.Option {
		return []nodes.Option{
			nodes.WithCoordinatorModel(coord.Name()), nodes.WithModel("scripted/unused"),
			nodes.WithModelOptions(models.WithModels(coord, scripted.New("unused")), models.WithoutRetry()),
			nodes.WithTick(20 * time.Millisecond),
		}
	}
}

// goalOf returns the goal of the run req is a turn of.
func goalOf(req providers.Request) string {
	for _, m := range req.Messages {
		for _, p := range m.Parts {
			if _, g, ok := strings.Cut(p.Text, "GOAL: "); ok {
				g, _, _ = strings.Cut(g, "\n")
				return g
			}
		}
	}
	return ""
}

// open opens a host on root; cleanup closes it.
func open(t *testing.T, root string, opts ...host.Option) *host.Host {
	t.Helper()
	h, err := host.New(append([]host.Option{host.WithRoot(root)}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, h.Close()) })
	return h
}

// await waits until agent id's status is one of want, and returns its summary.
func await(t *testing.T, h *host.Host, id string, want ...string) host.Summary {
	t.Helper()
	end := time.Now().Add(deadline)
	for {
		sum, err := h.Summary(id)
		require.NoError(t, err)
		for _, w := range want {
			if sum.Status == w {
				return sum
			}
		}
		require.False(t, time.Now().After(end), "agent %s is %s (%s), not %v", id, sum.Status, sum.Error, want)
		time.Sleep(10 * time.Millisecond)
	}
}

// An agent made, run, read and deleted through the host's Go API alone, with no HTTP.
func TestAgentThroughTheGoAPI(t *testing.T) {
	ctx := context.Background()
	h := open(t, t.TempDir(), host.WithSquadOptions(demoTeam))
	started, err := h.Create("ada", "the state of AI chips", "", "")
	require.NoError(t, err)
	assert.Equal(t, "ada", started.ID)
	assert.Equal(t, host.StatusWorking, started.Status)
	assert.NotEmpty(t, started.Run)

	_, err = h.Create("ada", "again", "", "")
	assert.ErrorIs(t, err, host.ErrExists)
	_, err = h.Create("bob", "chips", "", "forever")
	assert.ErrorIs(t, err, host.ErrInvalid)
	assert.ErrorContains(t, err, "forever")
	_, err = h.Create("../out", "chips", "", "")
	assert.ErrorIs(t, err, host.ErrInvalid)

	done := await(t, h, "ada", host.StatusComplete)
	assert.Contains(t, done.Output, "# Report")
	a, err := h.Agent(ctx, "ada")
	require.NoError(t, err)
	b, run, err := a.Board()
	require.NoError(t, err)
	assert.Equal(t, started.Run, run)
	assert.NotEmpty(t, b.Nodes)
	assert.Equal(t, len(b.Nodes), done.Nodes)
	evs, err := a.Events(0, 0)
	require.NoError(t, err)
	require.NotEmpty(t, evs)
	assert.Equal(t, eventlog.AgentCompleted, evs[len(evs)-1].Type)
	assert.ErrorIs(t, a.Stop(ctx), nodes.ErrNoRun, "no run in progress")
	list, err := h.List()
	require.NoError(t, err)
	require.Len(t, list, 1)
	assert.Equal(t, "ada", list[0].ID)

	followed := a.Follow(ctx, 0)
	first := <-followed
	assert.Equal(t, evs[0].Seq, first.Seq, "from the first")
	for e := range followed {
		if e.Type == eventlog.AgentCompleted {
			break
		}
	}

	require.NoError(t, h.Delete("ada"))
	for range followed { // it ends: the agent is deleted
	}
	_, err = h.Summary("ada")
	assert.ErrorIs(t, err, host.ErrNotFound)
	_, err = h.Agent(ctx, "ada")
	assert.ErrorIs(t, err, host.ErrNotFound)
	assert.ErrorIs(t, h.Delete("ada"), host.ErrNotFound)
	list, err = h.List()
	require.NoError(t, err)
	assert.Empty(t, list)

	require.NoError(t, h.Close())
	_, err = h.List()
	assert.ErrorIs(t, err, host.ErrClosed)
	_, err = h.Create("cy", "chips", "", "")
	assert.ErrorIs(t, err, host.ErrClosed)
}

// Beyond WithMaxRuns, a run waits "queued" for a place, and takes it once a run ends; an agent
// whose run is in progress refuses another.
func TestRunSlots(t *testing.T) {
	ctx := context.Background()
	gate, reached := make(chan struct{}), make(chan string, 1)
	h := open(t, t.TempDir(), host.WithMaxRuns(1), host.WithSquadOptions(gateTeam(gate, reached)))
	_, err := h.Create("first", "one", "", "")
	require.NoError(t, err)
	require.Equal(t, "one", <-reached, "the first run has the place")
	second, err := h.Create("second", "two", "", "")
	require.NoError(t, err)
	assert.Equal(t, host.StatusQueued, await(t, h, "second", host.StatusQueued).Status, second.Status)

	first, err := h.Agent(ctx, "first")
	require.NoError(t, err)
	_, err = first.Run("another")
	assert.ErrorIs(t, err, host.ErrBusy)
	status, _ := first.State()
	assert.Equal(t, host.StatusWorking, status)

	close(gate)
	assert.Equal(t, "done: one", await(t, h, "first", host.StatusComplete).Output)
	assert.Equal(t, "done: two", await(t, h, "second", host.StatusComplete).Output)
	again, err := first.Run("three")
	require.NoError(t, err)
	assert.Contains(t, []string{host.StatusWorking, host.StatusQueued}, again.Status, "its place may not be free yet")
	assert.Equal(t, "done: three", await(t, h, "first", host.StatusComplete).Output)
}

// A run in progress when the host closed is "interrupted"; New resumes it, unless WithoutResume
// is given, which leaves it for Resume.
func TestNewResumesRuns(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	held, reached := make(chan struct{}), make(chan string, 1) // never opened
	first, err := host.New(host.WithRoot(root), host.WithSquadOptions(gateTeam(held, reached)))
	require.NoError(t, err)
	_, err = first.Create("ada", "chips", "", "")
	require.NoError(t, err)
	<-reached
	require.NoError(t, first.Close())

	open := make(chan struct{})
	close(open)
	idle, err := host.New(host.WithRoot(root), host.WithoutResume(), host.WithSquadOptions(gateTeam(open, nil)))
	require.NoError(t, err)
	sum, err := idle.Summary("ada")
	require.NoError(t, err)
	assert.Equal(t, host.StatusInterrupted, sum.Status, "not resumed")
	require.NoError(t, idle.Close())

	h, err := host.New(host.WithRoot(root), host.WithSquadOptions(gateTeam(open, nil)))
	require.NoError(t, err)
	defer h.Close()
	done := await(t, h, "ada", host.StatusComplete)
	assert.Equal(t, "done: chips", done.Output)
	assert.Equal(t, sum.Run, done.Run, "the same run, resumed")
	a, err := h.Agent(ctx, "ada")
	require.NoError(t, err)
	_, err = a.Resume("nosuch")
	assert.ErrorIs(t, err, host.ErrNotFound)
}
