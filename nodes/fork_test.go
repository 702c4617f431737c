package nodes_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/nodes"
	"github.com/agiraph/agiraph/nodes/bus"
	"github.com/agiraph/agiraph/nodes/eventlog"
	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/providers/scripted"
)

// colourCoordinator has a sketch drafted (n1), then asks the human for a colour, has the sketch
// painted in it (n2), and finishes with "colour: <answer>".
func colourCoordinator() *scripted.Model { return scripted.NewFunc("colours", colourTurn) }

// colourTurn is colourCoordinator's turn.
func colourTurn(_ context.Context, req providers.Request) (scripted.Turn, error) {
	calls := scCalled(req)
	text, results := scripted.Last(req)
	answers := scResults(req, "ask_human")
	switch {
	case calls["create_work_node"] == 0:
		return scTurn(req, scripted.Call("create_work_node", map[string]string{"task": "Draft the sketch."})), nil
	case len(answers) > 0 && calls["create_work_node"] == 1:
		return scTurn(req, scripted.Call("create_work_node", map[string]string{"task": "Paint the sketch " + strings.TrimPrefix(answers[0].Content, "The human answered: ")})), nil
	case len(results) > 0:
		return scTurn(req, scripted.Call("wait", map[string]string{})), nil
	case strings.Contains(text, "Node n1") && calls["ask_human"] == 0:
		return scTurn(req, scripted.Call("ask_human", map[string]string{"question": "Which colour?"})), nil
	case strings.Contains(text, "Node n2"):
		return scTurn(req, scripted.Call("finish", map[string]string{"output": "colour: " + strings.TrimPrefix(answers[0].Content, "The human answered: ")})), nil
	}
	return scTurn(req, scripted.Call("wait", map[string]string{})), nil
}

// taskWorker writes its task's line about the sketch into its node's scratch/work.md and publishes it.
func taskWorker() *scripted.Model {
	return scripted.NewFunc("task-writer", func(_ context.Context, req providers.Request) (scripted.Turn, error) {
		if scCalled(req)["write_file"] == 0 {
			node := scNode(req)
			task := ""
			for _, l := range strings.Split(req.Messages[0].Text(), "\n") {
				if strings.Contains(l, "sketch") {
					task = strings.TrimSpace(l)
				}
			}
			return scTurn(req, scripted.Call("write_file", map[string]string{"path": "nodes/" + node + "/scratch/work.md", "content": task})), nil
		}
		return scTurn(req, scripted.Call("publish", map[string]string{"summary": "work.md"})), nil
	})
}

// paintedBlue runs colourCoordinator's run to its end, answering "blue", and returns the squad,
// the run and the squad's events from the first.
func paintedBlue(t *testing.T) (*nodes.Squad, *nodes.Run, <-chan eventlog.Event) {
	t.Helper()
	s := scSquad(t, colourCoordinator(), []providers.Model{taskWorker()})
	events, stop := s.Subscribe(0)
	t.Cleanup(stop)
	r := start(t, s, "paint a sketch")
	waitFor(t, events, "human.question", func(e eventlog.Event) bool { return e.Type == eventlog.HumanQuestion })
	require.NoError(t, r.Answer(bus.Coordinator, "blue"))
	res, err := r.Wait()
	require.NoError(t, err)
	require.Equal(t, "colour: blue", res.Output)
	return s, r, events
}

// questionTick returns the tick at whose end the coordinator's question was pending.
func questionTick(t *testing.T, s *nodes.Squad, run string) int {
	t.Helper()
	steps, err := s.Steps(context.Background(), run)
	require.NoError(t, err)
	for _, st := range steps {
		if st.Question != "" {
			return st.Tick
		}
	}
	t.Fatalf("no tick of run %s had a question pending", run)
	return 0
}

// A run forked at the tick where the coordinator's question was pending keeps what was done
// before (the draft), has nothing of what came after (the painting node, its file), and goes on
// with another answer to another output; the run forked is unchanged.
func TestForkWithAnotherAnswer(t *testing.T) {
	s, r, events := paintedBlue(t)
	home := s.Home()
	painted := filepath.Join(string(home.Run(r.ID())), "nodes", "n2", "published", "work.md")
	require.FileExists(t, painted)
	before, err := s.ReadBoard(r.ID())
	require.NoError(t, err)

	tick := questionTick(t, s, r.ID())

	// Forked without an answer, the fork waits for one, as the run did at the tick.
	f1, err := s.Fork(scContext(t), r.ID(), tick)
	require.NoError(t, err)
	waitFor(t, events, "the fork waiting", func(e eventlog.Event) bool { return e.Run == f1.ID() && e.Type == eventlog.AgentResumed })
	board, err := f1.Board()
	require.NoError(t, err)
	_, ok := board.Node("n2")
	assert.False(t, ok, "a node created after the tick is in the fork")
	n1, ok := board.Node("n1")
	require.True(t, ok)
	assert.Equal(t, nodes.NodeCompleted, n1.Status)
	dir := string(home.Run(f1.ID()))
	assert.FileExists(t, filepath.Join(dir, "nodes", "n1", "published", "work.md"))
	assert.NoDirExists(t, filepath.Join(dir, "nodes", "n2"), "a file published after the tick is in the fork")
	require.NoError(t, f1.Pause())
	_, err = f1.Wait()
	require.NoError(t, err)

	// Forked with another answer, it paints the sketch green.
	f2, err := s.Fork(scContext(t), r.ID(), tick, nodes.ForkWithAnswer("green"))
	require.NoError(t, err)
	res, err := f2.Wait()
	require.NoError(t, err)
	assert.Equal(t, "colour: green", res.Output)
	green, err := os.ReadFile(filepath.Join(string(home.Run(f2.ID())), "nodes", "n2", "published", "work.md"))
	require.NoError(t, err)
	assert.Equal(t, "Paint the sketch green", string(green))
	n2, ok := res.Board.Node("n2")
	require.True(t, ok)
	assert.Equal(t, "Paint the sketch green", n2.Task)

	// The run forked is as it was.
	blue, err := os.ReadFile(painted)
	require.NoError(t, err)
	assert.Equal(t, "Paint the sketch blue", string(blue))
	after, err := s.ReadBoard(r.ID())
	require.NoError(t, err)
	assert.Equal(t, before, after)
	rs, err := s.Steps(context.Background(), r.ID())
	require.NoError(t, err)
	assert.Equal(t, "colour: blue", rs[len(rs)-1].Output)
}

// Fork refuses what it cannot do, naming it: a tick the run does not have, an answer where no
// question was pending, a node or worker the tick did not have.
func TestForkRefuses(t *testing.T) {
	s, r, _ := paintedBlue(t)
	_, err := s.Fork(scContext(t), r.ID(), 999)
	require.ErrorContains(t, err, "no tick 999")
	_, err = s.Fork(scContext(t), r.ID(), 1, nodes.ForkWithAnswer("green"))
	require.ErrorContains(t, err, "asked the human nothing")
	_, err = s.Fork(scContext(t), r.ID(), 1, nodes.ForkWithNodeTask("n9", "x"))
	require.ErrorContains(t, err, "no node n9")
	_, err = s.Fork(scContext(t), r.ID(), 1, nodes.ForkWithWorkerModel("Zed", "x"))
	require.ErrorContains(t, err, "no worker Zed")
	_, err = s.Fork(scContext(t), "nosuchrun", 1)
	require.ErrorContains(t, err, "nosuchrun")
}
