package server_test

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/models"
	"github.com/agiraph/agiraph/nodes"
	"github.com/agiraph/agiraph/nodes/eventlog"
	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/providers/scripted"
	"github.com/agiraph/agiraph/server/host"
)

// A team that says what it does: the coordinator (whose first turn waits for gate, after
// closing asked) puts one node on the board for Dana, who writes and publishes; each turn has
// text.
func talkingTeam(asked, gate chan struct{}) func(string) []nodes.Option {
	var once sync.Once
	coord := scripted.NewFunc("talk-coordinator", func(ctx context.Context, req providers.Request) (scripted.Turn, error) {
		text, _ := scripted.Last(req)
		switch {
		case len(req.Messages) == 1:
			once.Do(func() { close(asked) })
			select {
			case <-gate:
			case <-ctx.Done():
				return scripted.Turn{}, ctx.Err()
			}
			t := turn(req,
				scripted.Call("spawn_worker", map[string]any{"name": "Dana", "role": "writer"}),
				scripted.Call("create_work_node", map[string]any{"task": "Write notes.md in your scratch folder, then publish.", "worker": "Dana"}),
			)
			t.Text = "Dana will write the notes."
			return t, nil
		case strings.Contains(text, "Stage 1 is complete"):
			t := turn(req, scripted.Call("finish", map[string]string{"output": "The notes are written."}))
			t.Text = "The notes are done; I finish."
			return t, nil
		}
		return turn(req, scripted.Call("wait", map[string]string{})), nil
	})
	worker := scripted.NewFunc("talk-worker", func(_ context.Context, req providers.Request) (scripted.Turn, error) {
		for _, m := range req.Messages {
			for _, c := range m.ToolCalls() {
				if c.Name == "write_file" {
					t := turn(req, scripted.Call("publish", map[string]string{"summary": "notes.md"}))
					t.Text = "Written; I publish them."
					return t, nil
				}
			}
		}
		t := turn(req, scripted.Call("write_file", map[string]string{"path": "nodes/n1/scratch/notes.md", "content": "# Notes\n"}))
		t.Text = "I write the notes first."
		return t, nil
	})
	return func(string) []nodes.Option {
		return []nodes.Option{
			nodes.WithCoordinatorModel(coord.Name()), nodes.WithModel(worker.Name()),
			nodes.WithModelOptions(models.WithModels(coord, worker), models.WithoutRetry()),
			nodes.WithTick(20 * time.Millisecond),
		}
	}
}

// The event stream of a run in progress carries the models' text as it is generated:
// text.delta events without an id, whose data names the run, the worker and the node, and whose
// pieces add up, worker by worker, to the texts of the x.model_turn events; the logged events
// keep ids 1, 2, 3... without a gap. A client reconnecting with Last-Event-ID gets the logged
// events after it, and no delta.
func TestEventStreamCarriesTextDeltas(t *testing.T) {
	asked, gate := make(chan struct{}), make(chan struct{})
	c := start(t, t.TempDir(), talkingTeam(asked, gate))
	require.Equal(t, http.StatusCreated, c.do("POST", "/agents", map[string]string{"id": "talker", "goal": "Write the notes."}, nil))
	select {
	case <-asked: // the run is in progress: the stream follows the squad's events live
	case <-time.After(deadline):
		close(gate)
		t.Fatal("the coordinator was never asked")
	}
	s := openStream(t, c.ts, "/agents/talker/events/stream", "")
	got := s.until(t, eventlog.AgentStarted)
	close(gate)
	got = append(got, s.until(t, eventlog.AgentCompleted)...)
	c.await("talker", host.StatusComplete)

	for i, e := range got {
		require.True(t, e.hasID)
		require.Equal(t, int64(i+1), e.id, "logged event %d (%s)", i+1, e.typ)
	}
	require.NotEmpty(t, s.live, "no text.delta on the stream")
	streamed, turns := map[string]string{}, map[string]string{}
	nodeOf := map[string]string{}
	for _, e := range s.live {
		assert.False(t, e.hasID, "a delta has no id")
		assert.Equal(t, "text.delta", e.typ)
		assert.Equal(t, eventlog.TextDelta, e.event.Type)
		assert.Zero(t, e.event.Seq)
		assert.NotEmpty(t, e.event.Run)
		require.NotEmpty(t, e.event.Worker)
		streamed[e.event.Worker] += e.event.Text
		nodeOf[e.event.Worker] = e.event.Node
	}
	for _, e := range got {
		if e.typ == "x.model_turn" {
			turns[e.event.Worker] += e.event.Text
		}
	}
	assert.Equal(t, map[string]string{
		"coordinator": "Dana will write the notes.The notes are done; I finish.",
		"dana":        "I write the notes first.Written; I publish them.",
	}, turns)
	assert.Equal(t, turns, streamed, "each worker's deltas add up to its turns' texts")
	assert.Equal(t, map[string]string{"coordinator": "", "dana": "n1"}, nodeOf)

	// Reconnecting: the logged events after Last-Event-ID, numbered on, and no delta.
	mid := got[len(got)/2].id
	again := openStream(t, c.ts, "/agents/talker/events/stream", strconv.FormatInt(mid, 10))
	rest := again.until(t, eventlog.AgentCompleted)
	for i, e := range rest {
		require.Equal(t, mid+int64(i+1), e.id)
	}
	assert.Len(t, rest, len(got)-int(mid))
	assert.Empty(t, again.live)
}
