package nodes_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/models"
	"github.com/agiraph/agiraph/nodes"
	"github.com/agiraph/agiraph/nodes/bus"
	"github.com/agiraph/agiraph/nodes/eventlog"
	"github.com/agiraph/agiraph/nodes/memory"
	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/providers/scripted"
)

// rememberingCoordinator is colourCoordinator, but for its last turns: once the sketch is
// painted it rewrites MEMORY.md, then finishes with "painted".
func rememberingCoordinator() *scripted.Model {
	return scripted.NewFunc("colours-remembered", func(ctx context.Context, req providers.Request) (scripted.Turn, error) {
		text, _ := scripted.Last(req)
		switch calls := scCalled(req); {
		case calls["memory_write"] == 0 && strings.Contains(text, "Node n2"):
			return scTurn(req, scripted.Call("memory_write", map[string]string{"path": "MEMORY.md", "content": "# Sketches\n\nOne painted.", "mode": "replace"})), nil
		case calls["memory_write"] == 1 && calls["finish"] == 0:
			return scTurn(req, scripted.Call("finish", map[string]string{"output": "painted"})), nil
		}
		return colourTurn(ctx, req)
	})
}

// memoryFiles returns the memory files of m (see memory.Store.List) and their contents.
func memoryFiles(t *testing.T, m *memory.Store) map[string]string {
	t.Helper()
	paths, err := m.List()
	require.NoError(t, err)
	out := map[string]string{}
	for _, p := range paths {
		out[p], err = m.Read(p)
		require.NoError(t, err)
	}
	return out
}

// eventLines returns what identifies each of events, but the time.
func eventLines(evs []eventlog.Event) []string {
	var out []string
	for _, e := range evs {
		out = append(out, fmt.Sprint(e.Seq, e.Type, e.Run, e.Node, e.Worker, e.Text))
	}
	return out
}

// A run that writes memory and events after the tick where its coordinator asked the human,
// forked into a new agent at that tick: the new agent's memory, event log and conversation are
// the agent's at the tick, the agent's own are unchanged, and the fork goes on to its end in
// the new agent.
func TestForkAgentKeepsMemoryAndEventsAsOfTheTick(t *testing.T) {
	coord, worker := rememberingCoordinator(), taskWorker()
	s := scSquad(t, coord, []providers.Model{worker})
	require.NoError(t, s.Memory().Write("human", "MEMORY.md", "# Sketches\n\nNone yet.", false))
	events, stop := s.Subscribe(0)
	t.Cleanup(stop)
	r := start(t, s, "paint a sketch")
	waitFor(t, events, "human.question", func(e eventlog.Event) bool { return e.Type == eventlog.HumanQuestion })
	atTick := memoryFiles(t, s.Memory())
	require.NoError(t, r.Answer(bus.Coordinator, "blue"))
	res, err := r.Wait()
	require.NoError(t, err)
	require.Equal(t, "painted", res.Output)
	after := memoryFiles(t, s.Memory())
	require.NotEqual(t, atTick, after, "the run wrote no memory after the tick")

	tick := questionTick(t, s, r.ID())
	all, err := s.Events(0, 0)
	require.NoError(t, err)
	conv, _, err := s.Conversation(0, 0)
	require.NoError(t, err)

	home := filepath.Join(t.TempDir(), "painter-2")
	id, err := s.ForkAgent(scContext(t), r.ID(), tick, home)
	require.NoError(t, err)
	assert.Equal(t, fmt.Sprintf("%s.fork%d", r.ID(), tick), id)

	// The agent forked is as it was.
	assert.Equal(t, after, memoryFiles(t, s.Memory()))
	again, err := s.Events(0, 0)
	require.NoError(t, err)
	assert.Equal(t, eventLines(all), eventLines(again))

	f, err := nodes.New(nodes.WithHome(home), nodes.WithCoordinatorModel(coord.Name()), nodes.WithModel(worker.Name()),
		nodes.WithModelOptions(models.WithModels(coord, worker), models.WithoutRetry()))
	require.NoError(t, err)
	t.Cleanup(func() { f.Close() })
	assert.Equal(t, atTick, memoryFiles(t, f.Memory()))
	// The events up to the question, numbered as they were, and none of the answer and after.
	forked, err := f.Events(0, 0)
	require.NoError(t, err)
	require.Less(t, len(forked), len(all))
	assert.Equal(t, eventLines(all[:len(forked)]), eventLines(forked))
	assert.True(t, slices.ContainsFunc(forked, func(e eventlog.Event) bool { return e.Type == eventlog.HumanQuestion }))
	assert.False(t, slices.ContainsFunc(forked, func(e eventlog.Event) bool { return e.Type == eventlog.HumanResponse }))
	fconv, _, err := f.Conversation(0, 0)
	require.NoError(t, err)
	require.NotEmpty(t, fconv)
	assert.Equal(t, conv[:len(fconv)], fconv)
	assert.Equal(t, "Which colour?", fconv[len(fconv)-1].Content, "the conversation goes past the question pending at the tick")

	h, err := f.Resume(scContext(t), id)
	require.NoError(t, err)
	require.NoError(t, h.Answer(bus.Coordinator, "green"))
	fres, err := h.Wait()
	require.NoError(t, err)
	assert.Equal(t, "painted", fres.Output)
	n2, ok := fres.Board.Node("n2")
	require.True(t, ok)
	assert.Equal(t, "Paint the sketch green", n2.Task)
	assert.Equal(t, after, memoryFiles(t, s.Memory()), "the fork wrote the agent's memory")
}

func TestForkAgentRefuses(t *testing.T) {
	s, r, _ := paintedBlue(t)
	tick := questionTick(t, s, r.ID())
	full := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(full, "x"), nil, 0o644))
	_, err := s.ForkAgent(scContext(t), r.ID(), tick, full)
	require.ErrorContains(t, err, "not an empty folder")
	_, err = s.ForkAgent(scContext(t), r.ID(), tick, filepath.Join(t.TempDir(), "a"), nodes.ForkWithAnswer("green"))
	require.ErrorContains(t, err, "ForkWithAnswer")
	_, err = s.ForkAgent(scContext(t), r.ID(), 999, filepath.Join(t.TempDir(), "a"))
	require.ErrorContains(t, err, "no tick 999")
}
