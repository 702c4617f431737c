package nodes_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/checkpoint"
	"github.com/agiraph/agiraph/models"
	"github.com/agiraph/agiraph/nodes"
	"github.com/agiraph/agiraph/nodes/demo"
	"github.com/agiraph/agiraph/nodes/eventlog"
	"github.com/agiraph/agiraph/nodes/store"
	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/providers/scripted"
	"github.com/agiraph/agiraph/sandbox"
	"github.com/agiraph/agiraph/tools"
)

// newSquad returns a squad in a temporary home playing the demo team, plus options.
func newSquad(t *testing.T, opts ...nodes.Option) *nodes.Squad {
	t.Helper()
	base := append(demo.Team(),
		nodes.WithHome(t.TempDir()),
		nodes.WithModelOptions(models.WithoutRetry()),
		nodes.WithTick(20*time.Millisecond),
	)
	s, err := nodes.New(append(base, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// One squad at a time works from a home: a second New on it, in the same process, is refused at
// once while the first is open, naming this process; the first works on; once it is closed, the
// home opens again.
func TestHomeOpenTwiceInProcess(t *testing.T) {
	home := t.TempDir()
	opts := append(demo.Team(), nodes.WithHome(home), nodes.WithTick(20*time.Millisecond))
	first, err := nodes.New(opts...)
	require.NoError(t, err)

	_, err = nodes.New(opts...)
	require.ErrorIs(t, err, nodes.ErrHomeInUse)
	assert.Contains(t, err.Error(), fmt.Sprintf("%s is in use by process %d since ", home, os.Getpid()))
	assert.Contains(t, err.Error(), "close the squad open on it, or use another home")

	res := run(t, first, "AI chips")
	assert.True(t, res.Finished, "the first squad's run")
	require.NoError(t, first.Close())
	second, err := nodes.New(opts...)
	require.NoError(t, err, "the home of a closed squad")
	b, err := second.ReadBoard(res.RunID)
	require.NoError(t, err)
	assert.Len(t, b.Nodes, 4, "the first squad's board")
	require.NoError(t, second.Close())
}

func run(t *testing.T, s *nodes.Squad, goal string) nodes.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := s.Run(ctx, goal)
	if err != nil {
		dump(t, s)
		t.Fatalf("run: %v", err)
	}
	return res
}

func types(t *testing.T, s *nodes.Squad) []eventlog.Type {
	t.Helper()
	evs, err := s.Events(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var ts []eventlog.Type
	for _, e := range evs {
		ts = append(ts, e.Type)
	}
	return ts
}

// Scenario 3: the coordinator grows the board — three parallel research nodes, a
// reconvene, a synthesis node that reads their published outputs — and finishes with the report.
func TestDeepResearch(t *testing.T) {
	s := newSquad(t)
	res := run(t, s, "AI chips")
	if !strings.Contains(res.Output, "# Report") {
		t.Fatalf("output %q", res.Output)
	}
	for _, a := range demo.Aspects {
		if !strings.Contains(res.Output, a) {
			t.Errorf("the report lacks the %s", a)
		}
	}
	if b, err := os.ReadFile(res.OutputPath); err != nil || !strings.Contains(string(b), "# Report") {
		t.Fatalf("_output.md: %q, %v", b, err)
	}
	if len(res.Board.Nodes) != 4 {
		t.Fatalf("board has %d nodes, want 4", len(res.Board.Nodes))
	}
	for _, n := range res.Board.Nodes {
		if n.Status != nodes.NodeCompleted {
			t.Errorf("node %s is %s", n.ID, n.Status)
		}
	}
	if n4, _ := res.Board.Node("n4"); n4.Stage != 2 || !slices.Equal(n4.Deps, []string{"n1", "n2", "n3"}) {
		t.Errorf("synthesis node %+v", n4)
	}
	workers := map[string]bool{}
	for _, n := range res.Board.Nodes[:3] {
		workers[n.Worker] = true
	}
	if len(workers) != 3 {
		t.Errorf("the research nodes ran on %d workers, want 3 in parallel", len(workers))
	}
	ts := types(t, s)
	for _, want := range []eventlog.Type{eventlog.AgentStarted, eventlog.NodeCreated, eventlog.WorkerSpawned, eventlog.NodeAssigned,
		eventlog.NodeStarted, eventlog.ToolCalled, eventlog.NodeCompleted, eventlog.MessageSent, eventlog.MessageReceived,
		eventlog.StageReconvened, eventlog.StageStarted, eventlog.AgentCompleted} {
		if !slices.Contains(ts, want) {
			t.Errorf("no %s event", want)
		}
	}
	// The folder layout.
	run := filepath.Join(string(s.Home()), "runs", res.RunID)
	for _, p := range []string{"_plan.md", "nodes/n1/_spec.md", "nodes/n4/_refs.json", "nodes/n1/_status.md",
		"nodes/n1/published/findings.md", "nodes/n4/published/report.md",
		"workers/alice/identity.md", "workers/alice/memory.md", "workers/alice/notebook.md", "workers/alice/history.jsonl", "workers/alice/conversation.jsonl"} {
		if _, err := os.Stat(filepath.Join(run, p)); err != nil {
			t.Errorf("missing %s", p)
		}
	}
	assert.NoFileExists(t, filepath.Join(run, "nodes/n1/_refs.json"), "a node without inputs has no _refs.json")
	msgs, _ := filepath.Glob(filepath.Join(run, "_messages", "0*_*.md"))
	if len(msgs) == 0 {
		t.Error("no message files in _messages/")
	}
}

// dump logs the squad's events, to see what a failed run did.
func dump(t *testing.T, s *nodes.Squad) {
	evs, _ := s.Events(0, 0)
	for _, e := range evs {
		t.Logf("%d %s node=%s worker=%s %s", e.Seq, e.Type, e.Node, e.Worker, clip(e.Text))
	}
}

func clip(s string) string {
	s = strings.ReplaceAll(s, "\n", " | ")
	if len(s) > 160 {
		return s[:160] + "…"
	}
	return s
}

// A squad whose model cannot be made says so at once, naming what to set.
func TestNewChecksTheModels(t *testing.T) {
	_, err := nodes.New(nodes.WithHome(t.TempDir()), nodes.WithModel("anthropic/claude-sonnet-4-5"))
	if err == nil || !strings.Contains(err.Error(), "providers/anthropic") {
		t.Fatalf("New = %v, want an error naming the package to import", err) // its key: providers/anthropic's tests
	}
	if _, err := nodes.New(nodes.WithHome(t.TempDir()), nodes.WithModel("nope/x")); err == nil {
		t.Fatal("an unknown provider was accepted")
	}
}

// The conversation with the human goes on across runs, numbered, and is read a page at a time.
func TestConversationAcrossRuns(t *testing.T) {
	s := newSquad(t)
	run(t, s, "first goal")
	run(t, s, "second goal")
	all, total, err := s.Conversation(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if total != len(all) || total < 4 {
		t.Fatalf("%d entries, total %d", len(all), total)
	}
	for i, e := range all {
		if e.Seq != int64(i+1) {
			t.Fatalf("entry %d has seq %d", i, e.Seq)
		}
	}
	if all[0].Content != "first goal" || all[0].From != "human" {
		t.Fatalf("first entry %+v", all[0])
	}
	runs := map[string]bool{}
	for _, e := range all {
		runs[e.Run] = true
	}
	if len(runs) != 2 {
		t.Fatalf("entries of %d runs, want 2", len(runs))
	}
	page, _, err := s.Conversation(2, 2)
	if err != nil || len(page) != 2 || page[0].Seq != 3 || page[1].Seq != 4 {
		t.Fatalf("page after 2: %+v, %v", page, err)
	}
}

// gateSaver holds the first Get of a run's ticks — the first thing a run does once it is in
// progress — until release is closed, and says when it got there.
type gateSaver struct {
	checkpoint.Saver
	once             sync.Once
	entered, release chan struct{}
}

func (g *gateSaver) Get(ctx context.Context, cfg checkpoint.Config) (*checkpoint.Tuple, error) {
	g.once.Do(func() {
		close(g.entered)
		<-g.release
	})
	return g.Saver.Get(ctx, cfg)
}

// gatedStore is a store whose saver is a gateSaver.
type gatedStore struct {
	store.Store
	gate *gateSaver
}

func (g gatedStore) Saver() checkpoint.Saver { return g.gate }

// The goal is the first line of a run's conversation: a message the human sends as soon as
// the run is in progress, before it took its first step, comes after it.
func TestGoalComesFirstInTheConversation(t *testing.T) {
	st := store.NewMemory()
	gate := &gateSaver{Saver: st.Saver(), entered: make(chan struct{}), release: make(chan struct{})}
	s := newSquad(t, nodes.WithStore(gatedStore{st, gate}))
	r, err := s.Start(context.Background(), "AI chips")
	require.NoError(t, err)
	<-gate.entered
	require.NoError(t, r.Send("", "keep it short"))
	close(gate.release)
	_, err = r.Wait()
	require.NoError(t, err)

	all, _, err := s.Conversation(0, 0)
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(all), 2)
	assert.Equal(t, nodes.Entry{Seq: 1, Run: all[0].Run, From: "human", To: "coordinator", Content: "AI chips", Key: all[0].Run + "/goal", Time: all[0].Time}, all[0])
	assert.Equal(t, "keep it short", all[1].Content, "the human's message")
	assert.Equal(t, all[0].Run, all[1].Run)
}

// A damaged record of a node fails that node, named with where it is and how to repair it, and
// is left as it is; the rest of the board reads, and the run resumes.
func TestDamagedBoardRecordIsNamed(t *testing.T) {
	s := newSquad(t)
	res := run(t, s, "AI chips")
	db, err := sql.Open("sqlite", filepath.Join(string(s.Home()), "state.db"))
	require.NoError(t, err)
	defer db.Close()
	key := "node/" + res.RunID + "/n2"
	_, err = db.Exec(`UPDATE squad_docs SET value = '{not json' WHERE key = ?`, key)
	require.NoError(t, err)
	b, err := s.ReadBoard(res.RunID)
	require.NoError(t, err)
	n2, ok := b.Node("n2")
	require.True(t, ok)
	assert.Equal(t, nodes.NodeFailed, n2.Status)
	assert.Contains(t, n2.Damaged, key)
	assert.Contains(t, n2.Damaged, "Repair")
	n1, _ := b.Node("n1")
	assert.Equal(t, nodes.NodeCompleted, n1.Status)
	again, err := resume(context.Background(), s, res.RunID)
	require.NoError(t, err)
	assert.True(t, again.Finished)
	assert.Equal(t, res.Output, again.Output)
	var got string
	require.NoError(t, db.QueryRow(`SELECT value FROM squad_docs WHERE key = ?`, key).Scan(&got))
	assert.Equal(t, "{not json", got, "the damaged record was changed")
}

// The squad's graph, drawn: the six nodes of a tick and the loop back.
func TestMermaid(t *testing.T) {
	m := nodes.Mermaid()
	for _, edge := range []string{"__start__ --> intake", "intake --> route_frontier", "route_frontier -.-> dispatch",
		"dispatch --> collect", "collect --> reconcile_inbox", "reconcile_inbox --> decide_next",
		"decide_next -.-> route_frontier", "decide_next -.-> __end__"} {
		if !strings.Contains(m, edge) {
			t.Errorf("the drawing lacks %q:\n%s", edge, m)
		}
	}
}

// resume resumes run id and waits for it to end.
func resume(ctx context.Context, s *nodes.Squad, id string) (nodes.Result, error) {
	r, err := s.Resume(ctx, id)
	if err != nil {
		return nodes.Result{}, err
	}
	return r.Wait()
}

// Work that ends between two ticks frees its worker at the next reconcile: the squad waits for
// it rather than spawn another, so a team of W workers with W places stays W workers.
func TestTeamDoesNotGrowWhileWorkersAreReleased(t *testing.T) {
	const n, w = 60, 4
	coord, worker := benchCoordinator(n, w), benchWorker()
	s, err := nodes.New(nodes.WithHome(t.TempDir()), nodes.WithCoordinatorModel(coord.Name()), nodes.WithModel(worker.Name()),
		nodes.WithModelOptions(models.WithModels(coord, worker), models.WithoutRetry()), nodes.WithMaxConcurrent(w))
	require.NoError(t, err)
	defer s.Close()
	res := run(t, s, "Write the notes.")
	require.Equal(t, "all notes written", res.Output)
	var names []string
	for _, wk := range res.Board.Workers {
		names = append(names, wk.Name)
	}
	assert.Equal(t, []string{"w1", "w2", "w3", "w4"}, names)
	done := 0
	for _, nd := range res.Board.Nodes {
		if nd.Status == nodes.NodeCompleted {
			done++
		}
	}
	assert.Equal(t, n, done)
}

// nodes.WithSandbox is asked once for each assignment: the node.started event and the worker's
// processes go by the same answer.
func TestSandboxChosenOnceAnAssignment(t *testing.T) {
	var asked atomic.Int32
	worker := scripted.NewFunc("policy-worker", func(_ context.Context, req providers.Request) (scripted.Turn, error) {
		return scTurn(req, scripted.Call("publish", map[string]string{"summary": "done"})), nil
	})
	plan := func() []tools.Call {
		return []tools.Call{scripted.Call("create_work_node", map[string]any{"task": "One."}),
			scripted.Call("create_work_node", map[string]any{"task": "Two.", "deps": []string{"n1"}})}
	}
	coord := scCoordinator("policy-coord", plan, "nodes/n2/_spec.md", func(c string) string { return c })
	s := scSquad(t, coord, []providers.Model{worker}, nodes.WithSandbox(func(_ nodes.Worker, _ nodes.Node, scope sandbox.Policy) sandbox.Policy {
		asked.Add(1)
		return scope
	}))
	res := scRun(t, s, "two nodes")
	assert.Contains(t, res.Output, "Two.")
	assert.Equal(t, int32(2), asked.Load())
}
