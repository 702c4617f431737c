package nodes_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/nodes"
	"github.com/agiraph/agiraph/nodes/eventlog"
	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/providers/scripted"
	"github.com/agiraph/agiraph/tools"
)

// operatorSquad is a squad whose coordinator plans n1 and n2 after it, and finishes with the
// summaries once the stage is complete; the worker's model fails on n1 until fixed is set, and
// tasks records the task of each node its worker was given.
func operatorSquad(t *testing.T, fixed *atomic.Bool, mu *sync.Mutex, tasks map[string]string) *nodes.Squad {
	worker := scripted.NewFunc("operator-worker", func(_ context.Context, req providers.Request) (scripted.Turn, error) {
		node := scNode(req)
		if node == "n1" && !fixed.Load() {
			return scripted.Turn{}, errors.New("the model is down")
		}
		mu.Lock()
		tasks[node] = req.Messages[0].Text()
		mu.Unlock()
		return scTurn(req, scripted.Call("publish", map[string]string{"summary": node + " done"})), nil
	})
	coord := stageCoordinator("operator-coordinator", map[string]any{"task": "First."}, map[string]any{"task": "Second, after the first.", "deps": []string{"n1"}})
	return scSquad(t, coord, []providers.Model{worker}, nodes.WithMaxAttempts(1))
}

// stageCoordinator is a coordinator that creates nodes (the create_work_node arguments) at its
// first turn, finishes once the stage is complete, and waits otherwise (for the human, say).
func stageCoordinator(name string, nodeArgs ...map[string]any) *scripted.Model {
	return scripted.NewFunc(name, func(_ context.Context, req providers.Request) (scripted.Turn, error) {
		text, _ := scripted.Last(req)
		switch {
		case len(req.Messages) == 1:
			var calls []tools.Call
			for _, a := range nodeArgs {
				calls = append(calls, scripted.Call("create_work_node", a))
			}
			return scTurn(req, calls...), nil
		case strings.Contains(text, "Stage 1 is complete"):
			return scTurn(req, scripted.Call("finish", map[string]string{"output": "finished"})), nil
		}
		return scTurn(req, scripted.Call("wait", map[string]string{})), nil
	})
}

// awaitFailed starts a run of s and waits until n1 failed for good.
func awaitFailed(t *testing.T, s *nodes.Squad) *nodes.Run {
	ctx, cancel := context.WithTimeout(context.Background(), scTimeout)
	t.Cleanup(cancel)
	h, err := s.Start(ctx, "Two steps.")
	require.NoError(t, err)
	require.NoError(t, scAwaitEvent(ctx, s, func(e eventlog.Event) bool { return e.Type == eventlog.NodeFailed && e.Node == "n1" }))
	return h
}

// The human retries a failed node: a new attempt runs it, and the nodes after it go on.
func TestOperatorRetriesANode(t *testing.T) {
	scNoSearchEnv(t)
	var fixed atomic.Bool
	var mu sync.Mutex
	tasks := map[string]string{}
	s := operatorSquad(t, &fixed, &mu, tasks)
	h := awaitFailed(t, s)

	_, err := h.Retry("n2")
	require.ErrorIs(t, err, nodes.ErrNodeState)
	assert.Contains(t, err.Error(), "node n2 is pending")
	_, err = h.Retry("n9")
	require.ErrorIs(t, err, nodes.ErrNoNode)

	fixed.Store(true)
	n, err := h.Retry("n1")
	require.NoError(t, err)
	assert.Equal(t, nodes.NodePending, n.Status)
	res, err := h.Wait()
	require.NoError(t, err)
	require.True(t, res.Finished)
	for _, id := range []string{"n1", "n2"} {
		n, _ := res.Board.Node(id)
		assert.Equal(t, nodes.NodeCompleted, n.Status, id)
	}
	assert.Equal(t, 1, count(scEvents(t, s), eventlog.NodeRetried, "n1"))
}

// The human skips a failed node: it is marked skipped, the node after it runs, told so.
func TestOperatorSkipsANode(t *testing.T) {
	scNoSearchEnv(t)
	var fixed atomic.Bool
	var mu sync.Mutex
	tasks := map[string]string{}
	s := operatorSquad(t, &fixed, &mu, tasks)
	h := awaitFailed(t, s)

	n, err := h.Skip("n1", "the first step is not needed")
	require.NoError(t, err)
	assert.Equal(t, nodes.NodeSkipped, n.Status)
	res, err := h.Wait()
	if err != nil {
		dump(t, s)
	}
	require.NoError(t, err)
	require.True(t, res.Finished)
	n1, _ := res.Board.Node("n1")
	assert.Equal(t, nodes.NodeSkipped, n1.Status)
	assert.Equal(t, "skipped by the human: the first step is not needed", n1.Summary)
	n2, _ := res.Board.Node("n2")
	assert.Equal(t, nodes.NodeCompleted, n2.Status)
	mu.Lock()
	defer mu.Unlock()
	assert.Contains(t, tasks["n2"], "n1 (skipped by the human: the first step is not needed)")
	evs := scEvents(t, s)
	assert.Equal(t, 1, count(evs, eventlog.NodeSkipped, "n1"))

	_, err = h.Skip("n2", "")
	require.ErrorIs(t, err, nodes.ErrNoRun, "the run has ended")
}

// count counts the events of type ty about node.
func count(evs []eventlog.Event, ty eventlog.Type, node string) int {
	n := 0
	for _, e := range evs {
		if e.Type == ty && e.Node == node {
			n++
		}
	}
	return n
}
