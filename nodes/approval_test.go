package nodes_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/hooks"
	"github.com/agiraph/agiraph/nodes"
	"github.com/agiraph/agiraph/nodes/eventlog"
	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/providers/scripted"
	"github.com/agiraph/agiraph/tools"
)

// A worker's tool call that needs approval waits for the human, across a restart of the squad;
// answers that are no verdict, or edits the tool's schema refuses, are refused naming the tool;
// the edited call then runs, once, and the run finishes with what it wrote.
func TestApprovalSurvivesRestartThenRunsEdited(t *testing.T) {
	home := t.TempDir()
	coord := scCoordinator("approval-coordinator", func() []tools.Call {
		return []tools.Call{
			scripted.Call("spawn_worker", map[string]any{"name": "Dana"}),
			scripted.Call("create_work_node", map[string]any{"task": "Write note.md, then publish.", "worker": "Dana"}),
		}
	}, "nodes/n1/published/note.md", func(content string) string { return content })
	worker := scripted.NewFunc("approval-worker", func(_ context.Context, req providers.Request) (scripted.Turn, error) {
		if scCalled(req)["write_file"] == 0 {
			return scTurn(req, scripted.Call("write_file", map[string]string{
				"path": "nodes/" + scNode(req) + "/scratch/note.md", "content": "drop the tables"})), nil
		}
		return scTurn(req, scripted.Call("publish", map[string]string{"summary": "note.md"})), nil
	})
	open := func() *nodes.Squad {
		return scSquad(t, coord, []providers.Model{worker}, nodes.WithHome(home),
			nodes.WithHooks(hooks.Approvals(hooks.Policy{Tools: []string{"write_*"}, Workers: []string{"dana"}})))
	}

	s := open()
	events, stop := s.Subscribe(0)
	ctx, cancel := context.WithTimeout(context.Background(), scTimeout)
	defer cancel()
	r, err := s.Start(ctx, "Write a note.")
	require.NoError(t, err)
	asked := waitFor(t, events, "human.question", func(e eventlog.Event) bool { return e.Type == eventlog.HumanQuestion })
	stop()
	assert.Contains(t, asked.Text, "Approve the call of write_file")
	b, err := r.Board()
	require.NoError(t, err)
	n1, _ := b.Node("n1")
	require.NotNil(t, n1.Approval, "the node holds the call to approve")
	assert.Equal(t, "write_file", n1.Approval.Tool)
	assert.Equal(t, "dana", n1.Approval.Worker)
	require.NoError(t, r.Pause())
	_, err = r.Wait()
	require.NoError(t, err)
	require.NoError(t, s.Close())

	s = open() // a new process on the same home
	r, err = s.Resume(ctx, asked.Run)
	require.NoError(t, err)
	b, err = r.Board()
	require.NoError(t, err)
	n1, _ = b.Node("n1")
	require.Equal(t, nodes.NodeWaiting, n1.Status)
	require.NotNil(t, n1.Approval)

	err = r.Answer("Dana", "perhaps")
	require.ErrorIs(t, err, hooks.ErrBadVerdict)
	assert.Contains(t, err.Error(), "write_file")
	err = r.Answer("Dana", hooks.Edit(json.RawMessage(`{"path":"x"}`)))
	require.ErrorIs(t, err, hooks.ErrBadVerdict)
	assert.Contains(t, err.Error(), "the edited arguments of write_file")

	edited, err := json.Marshal(map[string]string{"path": "nodes/n1/scratch/note.md", "content": "keep the tables"})
	require.NoError(t, err)
	require.NoError(t, r.Answer("Dana", hooks.Edit(edited)))
	res, err := r.Wait()
	require.NoError(t, err)
	assert.Equal(t, "keep the tables\n", res.Output)
	assert.Equal(t, "keep the tables", scRead(t, filepath.Join(scRunDir(s, res), "nodes", "n1", "published", "note.md")))
	n1, _ = res.Board.Node("n1")
	assert.Nil(t, n1.Approval)
	assert.Equal(t, nodes.NodeCompleted, n1.Status)
	var hooked []string
	for _, e := range scEvents(t, s) {
		if e.Type == eventlog.Hooked {
			hooked = append(hooked, e.Text)
		}
	}
	assert.Equal(t, []string{`the human edited the arguments of write_file to ` + string(edited)}, hooked)
}

// The coordinator's calls can need approval too: the run waits with the call in its state, and
// a rejection reaches the coordinator as the call's error result.
func TestCoordinatorCallRejected(t *testing.T) {
	coord := scCoordinator("approval-coordinator", func() []tools.Call {
		return []tools.Call{scripted.Call("spawn_worker", map[string]any{"name": "Dana"})}
	}, "", func(content string) string { return content })
	s := scSquad(t, coord, []providers.Model{scripted.New("unused")},
		nodes.WithHooks(hooks.Approvals(hooks.Policy{Tools: []string{"spawn_worker"}, Workers: []string{"coordinator"}})))
	events, stop := s.Subscribe(0)
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), scTimeout)
	defer cancel()
	r, err := s.Start(ctx, "Hire someone.")
	require.NoError(t, err)
	waitFor(t, events, "human.question", func(e eventlog.Event) bool { return e.Type == eventlog.HumanQuestion })
	require.ErrorIs(t, r.Answer("coordinator", "later"), hooks.ErrBadVerdict)
	require.NoError(t, r.Answer("coordinator", hooks.Reject("no hiring this quarter")))
	res, err := r.Wait()
	require.NoError(t, err)
	assert.Equal(t, "FAILED: spawn_worker: The call of spawn_worker was refused: the human rejected it: no hiring this quarter", res.Output)
	_, ok := res.Board.Worker("Dana")
	assert.False(t, ok, "the rejected call did not run")
}
