package nodes_test

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
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

// A team whose coordinator and worker say something at their turns.
func talkativeTeam() (coord, worker *scripted.Model) {
	coord = scripted.NewFunc("talk-coordinator", func(_ context.Context, req providers.Request) (scripted.Turn, error) {
		text, _ := scripted.Last(req)
		switch {
		case len(req.Messages) == 1:
			t := scTurn(req, scripted.Call("create_work_node", map[string]any{"task": "Write notes.md in your scratch folder, then publish."}))
			t.Text = "One node will do: the notes."
			return t, nil
		case strings.Contains(text, "Stage 1 is complete"):
			t := scTurn(req, scripted.Call("finish", map[string]string{"output": "The notes are written."}))
			t.Text = "The notes are done, so I finish."
			return t, nil
		}
		return scTurn(req, scripted.Call("wait", map[string]string{})), nil
	})
	worker = scripted.NewFunc("talk-worker", func(_ context.Context, req providers.Request) (scripted.Turn, error) {
		if scCalled(req)["write_file"] == 0 {
			t := scTurn(req, scripted.Call("write_file", map[string]string{"path": "nodes/" + scNode(req) + "/scratch/notes.md", "content": "# Notes\n"}))
			t.Text = "I write the notes first."
			return t, nil
		}
		t := scTurn(req, scripted.Call("publish", map[string]string{"summary": "notes.md"}))
		t.Text = "The notes are written; I publish them."
		return t, nil
	})
	return coord, worker
}

// A subscriber sees the models' text as it is generated — text.delta events with Seq 0, naming
// the run, the worker and the node, whose pieces before each x.model_turn of a worker add up to
// its text — among the logged events, whose Seqs stay 1, 2, 3...; the event log, the node logs
// and every other file of the agent hold none of them.
func TestSubscribersSeeTextDeltas(t *testing.T) {
	home := t.TempDir()
	coord, worker := talkativeTeam()
	s := scSquad(t, coord, []providers.Model{worker}, nodes.WithHome(home))
	events, stop := s.Subscribe(0)
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), scTimeout)
	defer cancel()
	r, err := s.Start(ctx, "Write the notes.")
	require.NoError(t, err)

	var logged, deltas []eventlog.Event
	turns, streamed := map[string][]string{}, map[string][]string{}
	pending := map[string]*strings.Builder{}
	deadline := time.After(scTimeout)
	for completed := false; !completed; {
		select {
		case e, ok := <-events:
			require.True(t, ok, "the events ended before the run completed")
			if e.Type == eventlog.TextDelta {
				deltas = append(deltas, e)
				if pending[e.Worker] == nil {
					pending[e.Worker] = &strings.Builder{}
				}
				pending[e.Worker].WriteString(e.Text)
				continue
			}
			logged = append(logged, e)
			if e.Type == "x.model_turn" {
				turns[e.Worker] = append(turns[e.Worker], e.Text)
				var text string
				if b := pending[e.Worker]; b != nil {
					text = b.String()
					b.Reset()
				}
				streamed[e.Worker] = append(streamed[e.Worker], text)
			}
			completed = e.Type == eventlog.AgentCompleted
		case <-deadline:
			t.Fatal("the run did not complete")
		}
	}
	res, err := r.Wait()
	require.NoError(t, err)
	require.True(t, res.Finished)

	// The deltas: live, named, and each turn's text in pieces.
	require.NotEmpty(t, deltas)
	nodesSeen := map[string]string{}
	for _, e := range deltas {
		assert.Zero(t, e.Seq)
		assert.Equal(t, res.RunID, e.Run)
		assert.NotEmpty(t, e.Text)
		assert.False(t, e.Time.IsZero())
		nodesSeen[e.Worker] = e.Node
	}
	require.Len(t, nodesSeen, 2, "the coordinator's deltas and the worker's: %v", nodesSeen)
	assert.Equal(t, "", nodesSeen[bus.Coordinator], "the coordinator is on no node")
	for w, n := range nodesSeen {
		if w != bus.Coordinator {
			assert.Equal(t, "n1", n, "the worker %s's node", w)
			assert.Equal(t, []string{"I write the notes first.", "The notes are written; I publish them."}, turns[w])
		}
	}
	assert.Contains(t, turns[bus.Coordinator], "One node will do: the notes.")
	assert.Contains(t, turns[bus.Coordinator], "The notes are done, so I finish.")
	assert.Equal(t, turns, streamed, "each model turn's text, from its deltas")
	assert.Greater(t, len(deltas), 4, "in pieces")

	// The logged events: numbered without gaps, as the log has them; no delta in any file.
	for i, e := range logged {
		require.Equal(t, int64(i+1), e.Seq, "logged event %d (%s)", i+1, e.Type)
	}
	onDisk, err := s.Events(0, 0)
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(onDisk), len(logged))
	for i, e := range onDisk {
		assert.NotEqual(t, eventlog.TextDelta, e.Type)
		assert.Equal(t, int64(i+1), e.Seq)
		if i < len(logged) {
			assert.Equal(t, logged[i].Type, e.Type, "event %d", i+1)
		}
	}
	files := 0
	require.NoError(t, filepath.WalkDir(home, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		files++
		assert.NotContains(t, string(b), "text_delta", path)
		assert.NotContains(t, string(b), "text.delta", path)
		return nil
	}))
	assert.NoFileExists(t, filepath.Join(home, "events.jsonl"), "the events are in the store")
	assert.Greater(t, files, 10)
}
