package nodes_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/nodes"
	"github.com/agiraph/agiraph/nodes/bus"
	"github.com/agiraph/agiraph/nodes/eventlog"
	"github.com/agiraph/agiraph/nodes/store"
	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/providers/scripted"
)

// budgetCoordinator asks the human one question a turn, each call spending 100 tokens, until
// done is set; then it finishes. told is set when it reads the squad's note on its budget.
func budgetCoordinator(calls *atomic.Int32, told, done *atomic.Bool) *scripted.Model {
	return scripted.NewFunc("budgeted", func(_ context.Context, req providers.Request) (scripted.Turn, error) {
		calls.Add(1)
		if strings.Contains(scSince(req), "Budget: the run has spent") {
			told.Store(true)
		}
		turn := scTurn(req, scripted.Call("ask_human", map[string]string{"question": "Go on?"}))
		if done.Load() {
			turn = scTurn(req, scripted.Call("finish", map[string]string{"output": "done"}))
		}
		turn.Usage = providers.Usage{InputTokens: 90, OutputTokens: 10}
		return turn, nil
	})
}

// answerUntilDone answers every question of r's coordinator until the run ends, and returns how
// it ended.
func answerUntilDone(t *testing.T, r *nodes.Run, events <-chan eventlog.Event) (nodes.Result, error) {
	t.Helper()
	for {
		select {
		case <-r.Done():
			return r.Wait()
		case e := <-events:
			if e.Type == eventlog.HumanQuestion && e.Run == r.ID() {
				if err := r.Answer(bus.Coordinator, "yes"); err != nil {
					require.ErrorIs(t, err, nodes.ErrNoRun)
				}
			}
		}
	}
}

// A run's budget: past its soft limit the coordinator is told, at its hard limit the run pauses
// with an error naming the limit and what was spent, having made no model call past it; the
// spending survives a restart (the run pauses again at once); raised, the run resumes and
// finishes, its usage counting every call.
func TestBudgetSoftThenHardThenRaised(t *testing.T) {
	var calls atomic.Int32
	var told, done atomic.Bool
	coord := budgetCoordinator(&calls, &told, &done)
	home := t.TempDir()
	budget := nodes.Budget{Tokens: 350, Soft: 0.5}
	s := scSquad(t, coord, []providers.Model{scripted.New("unused")}, nodes.WithHome(home), nodes.WithBudget(budget))
	events, stop := s.Subscribe(0)
	r := start(t, s, "spend")
	res, err := answerUntilDone(t, r, events)
	stop()
	require.ErrorIs(t, err, nodes.ErrOverBudget)
	var be *nodes.BudgetError
	require.ErrorAs(t, err, &be)
	assert.Equal(t, budget, be.Budget)
	assert.Equal(t, 400, be.Spent.InputTokens+be.Spent.OutputTokens, "four turns of 100 tokens: 200 and 300 were under the limit")
	assert.Contains(t, err.Error(), "spent 400 tokens of 350")
	assert.Equal(t, int32(4), calls.Load(), "no model call past the limit")
	assert.Equal(t, be.Spent, res.Usage)
	assert.False(t, res.Finished)
	assert.True(t, told.Load(), "the coordinator was told of the soft limit")
	var budgetEvents, pausedText []string
	for _, e := range scEvents(t, s) {
		switch e.Type {
		case eventlog.Budget:
			budgetEvents = append(budgetEvents, e.Text)
		case eventlog.AgentPaused:
			pausedText = append(pausedText, e.Text)
		}
	}
	assert.Equal(t, []string{"soft limit reached: 200 tokens of 350"}, budgetEvents)
	require.Len(t, pausedText, 1)
	assert.Contains(t, pausedText[0], "paused over its budget: spent 400 tokens of 350")
	require.NoError(t, s.Close())

	// A restart keeps what was spent: resumed under the same budget, the run pauses again at once.
	s = scSquad(t, coord, []providers.Model{scripted.New("unused")}, nodes.WithHome(home), nodes.WithBudget(budget))
	_, err = resume(scContext(t), s, r.ID())
	require.ErrorAs(t, err, &be)
	assert.Equal(t, 400, be.Spent.InputTokens+be.Spent.OutputTokens)
	assert.Equal(t, int32(4), calls.Load())

	require.ErrorContains(t, s.SetBudget(context.Background(), r.ID(), nodes.Budget{Tokens: -1}), "must not be negative")
	require.ErrorContains(t, s.SetBudget(context.Background(), "nope", nodes.Budget{Tokens: 1}), `run "nope"`)
	raised := nodes.Budget{Tokens: 10_000}
	require.NoError(t, s.SetBudget(context.Background(), r.ID(), raised))
	got, err := s.BudgetOf(context.Background(), r.ID())
	require.NoError(t, err)
	assert.Equal(t, raised, got)
	done.Store(true)
	r, err = s.Resume(scContext(t), r.ID())
	require.NoError(t, err)
	if err := r.Answer(bus.Coordinator, "yes"); err != nil { // the pause came before or after an answer
		require.ErrorIs(t, err, nodes.ErrNoQuestion)
	}
	res, err = r.Wait()
	require.NoError(t, err)
	assert.True(t, res.Finished)
	assert.Equal(t, "done", res.Output)
	assert.Equal(t, 100*int(calls.Load()), res.Usage.InputTokens+res.Usage.OutputTokens, "every call counted, those before the restart too")
}

// A work node's budget: once its work reaches it the coordinator is told, and the node does
// not start again — its worker's mail does not wake it — until set_budget raises it.
func TestNodeBudget(t *testing.T) {
	var workerCalls atomic.Int32
	worker := scripted.NewFunc("thrifty", func(_ context.Context, req providers.Request) (scripted.Turn, error) {
		turn := scTurn(req, scripted.Call("publish", map[string]string{"summary": "done at last"}))
		if workerCalls.Add(1) == 1 {
			turn = scTurn(req, scripted.Call("checkpoint", map[string]string{"summary": "half done"}))
		}
		turn.Usage = providers.Usage{InputTokens: 150, OutputTokens: 50}
		return turn, nil
	})
	var sawBudget, raised atomic.Bool
	coord := scripted.NewFunc("planner", func(_ context.Context, req providers.Request) (scripted.Turn, error) {
		since, called := scSince(req), scCalled(req)
		switch {
		case len(req.Messages) == 1:
			return scTurn(req, scripted.Call("spawn_worker", map[string]any{"name": "Ann"}),
				scripted.Call("create_work_node", map[string]any{"task": "Write a.md.", "worker": "Ann", "budget": map[string]any{"tokens": 150}})), nil
		case strings.Contains(since, "completed"):
			return scTurn(req, scripted.Call("finish", map[string]string{"output": "done"})), nil
		case strings.Contains(since, "Node n1 reached its budget: it spent 200 tokens of 150"):
			sawBudget.Store(true)
			return scTurn(req, scripted.Call("send_message", map[string]string{"to": "Ann", "content": "Go on."})), nil
		case strings.Contains(since, "Nothing is running") && called["send_message"] > 0 && called["set_budget"] == 0:
			raised.Store(true)
			return scTurn(req, scripted.Call("set_budget", map[string]any{"node": "n1", "budget": map[string]any{"tokens": 1000}})), nil
		}
		return scTurn(req, scripted.Call("wait", map[string]string{})), nil
	})
	s := scSquad(t, coord, []providers.Model{worker})
	res := scRun(t, s, "write")
	assert.Equal(t, "done", res.Output)
	assert.True(t, sawBudget.Load(), "the coordinator was told")
	assert.True(t, raised.Load(), "the node waited, its mail unread, until its budget was raised")
	assert.Equal(t, int32(2), workerCalls.Load())
	n1 := res.Board.Nodes[0]
	assert.Equal(t, nodes.NodeCompleted, n1.Status)
	assert.Equal(t, nodes.Budget{Tokens: 1000}, n1.Budget)
	assert.Equal(t, 400, n1.Spent.InputTokens+n1.Spent.OutputTokens, "both runs of the assignment counted, once each")
	assert.Equal(t, 400, res.Usage.InputTokens+res.Usage.OutputTokens, "the run's usage: the node's")
}

// A worker's budget counts what it spends across its nodes: once it is reached the coordinator
// is told, and the worker's next node waits — the board idle — until set_budget raises it.
func TestWorkerBudget(t *testing.T) {
	worker := scripted.NewFunc("thrifty", func(_ context.Context, req providers.Request) (scripted.Turn, error) {
		turn := scTurn(req, scripted.Call("publish", map[string]string{"summary": "done with " + scNode(req)}))
		turn.Usage = providers.Usage{InputTokens: 200}
		return turn, nil
	})
	var raised atomic.Bool
	coord := scripted.NewFunc("planner", func(_ context.Context, req providers.Request) (scripted.Turn, error) {
		since, called := scSince(req), scCalled(req)
		switch {
		case len(req.Messages) == 1:
			return scTurn(req, scripted.Call("spawn_worker", map[string]any{"name": "Ann", "budget": map[string]any{"tokens": 150}}),
				scripted.Call("create_work_node", map[string]any{"task": "Write a.md.", "worker": "Ann"}),
				scripted.Call("create_work_node", map[string]any{"task": "Write b.md.", "worker": "Ann", "deps": []string{"n1"}})), nil
		case strings.Contains(since, "done with n2"):
			return scTurn(req, scripted.Call("finish", map[string]string{"output": "done"})), nil
		case strings.Contains(since, "Nothing is running") && called["set_budget"] == 0:
			raised.Store(true)
			return scTurn(req, scripted.Call("set_budget", map[string]any{"worker": "Ann", "budget": map[string]any{"tokens": 1000}})), nil
		}
		return scTurn(req, scripted.Call("wait", map[string]string{})), nil
	})
	s := scSquad(t, coord, []providers.Model{worker})
	res := scRun(t, s, "write")
	assert.Equal(t, "done", res.Output)
	assert.True(t, raised.Load(), "n2 waited until Ann's budget was raised")
	require.Len(t, res.Board.Workers, 1)
	ann := res.Board.Workers[0]
	assert.Equal(t, nodes.Budget{Tokens: 1000}, ann.Budget)
	assert.Equal(t, 400, ann.Spent.InputTokens)
	var told bool
	for _, e := range scEvents(t, s) {
		told = told || (e.Type == eventlog.MessageSent && strings.Contains(e.Text, "Worker Ann reached its budget: it spent 200 tokens of 150"))
	}
	assert.True(t, told, "the coordinator was told")
}

// budgetReads counts the reads of runs' budgets in the store it wraps.
type budgetReads struct {
	store.Store
	n atomic.Int32
}

func (b *budgetReads) Doc(ctx context.Context, key string) (store.Doc, error) {
	if strings.HasPrefix(key, "budget/") {
		b.n.Add(1)
	}
	return b.Store.Doc(ctx, key)
}

// A run's ticks do not read its budget from the store: it is read once, and a budget set while
// the run goes on is the one that holds.
func TestBudgetReadOnceARun(t *testing.T) {
	st := &budgetReads{Store: store.NewMemory()}
	s := newSquad(t, nodes.WithStore(st))
	res := run(t, s, "AI chips")
	require.True(t, res.Finished)
	assert.Equal(t, int32(1), st.n.Load(), "reads of the run's budget")

	raised := nodes.Budget{Tokens: 1 << 20}
	require.NoError(t, s.SetBudget(context.Background(), res.RunID, raised))
	got, err := s.BudgetOf(context.Background(), res.RunID)
	require.NoError(t, err)
	assert.Equal(t, raised, got)
	assert.Equal(t, int32(1), st.n.Load(), "reads of the run's budget")
}
