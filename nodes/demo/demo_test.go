package demo_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/nodes"
	"github.com/agiraph/agiraph/nodes/demo"
	"github.com/agiraph/agiraph/nodes/eventlog"
	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/tools"
)

// ask gives the model a conversation and returns the calls and the text of its answer.
func ask(t *testing.T, m providers.Model, msgs ...providers.Message) ([]tools.Call, string) {
	t.Helper()
	resp, err := m.Generate(context.Background(), providers.Request{Messages: msgs})
	require.NoError(t, err)
	return resp.Message.ToolCalls(), resp.Message.Text()
}

func names(calls []tools.Call) []string {
	var out []string
	for _, c := range calls {
		out = append(out, c.Name)
	}
	return out
}

func assistant(calls ...tools.Call) providers.Message {
	m := providers.Message{Role: providers.Assistant}
	for i := range calls {
		m.Parts = append(m.Parts, providers.Part{Type: providers.ToolCallPart, ToolCall: &calls[i]})
	}
	return m
}

func results(text string, rs ...tools.Result) providers.Message {
	m := providers.ToolResults(rs)
	if text != "" {
		m.Parts = append(m.Parts, providers.Text(text))
	}
	return m
}

// News that arrive together, or beside tool results, are all acted on, one after the other,
// and nothing is done twice: the coordinator does not wait while something is due.
func TestCoordinatorActsOnEveryNews(t *testing.T) {
	coord := demo.Models()[0]
	goal := providers.UserText("GOAL: tea")
	first, text := ask(t, coord, goal)
	require.Equal(t, []string{"create_work_node", "create_work_node", "create_work_node", "write_file"}, names(first))
	require.NotEmpty(t, text)

	var rs []tools.Result
	for i, c := range first {
		rs = append(rs, tools.Result{CallID: c.ID, Name: c.Name, Content: fmt.Sprintf("Created node n%d (stage 1).", i+1)})
	}
	wait := tools.Call{ID: "w1", Name: "wait", Args: json.RawMessage(`{}`)}
	conv := []providers.Message{goal, assistant(first...), results("", rs...), assistant(wait)}
	// The worker's question and the end of stage 1 arrive beside the result of wait, with a
	// word from the human.
	conv = append(conv, results("[Message from Alice]: "+demo.Question+"\n\n[Message from human]: how is it going?\n\n[Message from squad]: Stage 1 is complete (policy \"all\"): 3 of 3 nodes done.",
		tools.Result{CallID: "w1", Name: "wait", Content: "Waiting."}))

	calls, _ := ask(t, coord, conv...)
	require.Equal(t, []string{"send_message"}, names(calls))
	assert.Contains(t, string(calls[0].Args), `"to":"Alice"`)
	conv = append(conv, assistant(calls...), results("", tools.Result{CallID: calls[0].ID, Name: "send_message", Content: "Sent to Alice."}))

	calls, _ = ask(t, coord, conv...)
	require.Equal(t, []string{"reconvene", "create_work_node"}, names(calls))
	conv = append(conv, assistant(calls...), results("",
		tools.Result{CallID: calls[0].ID, Name: "reconvene", Content: "Stage 2 started."},
		tools.Result{CallID: calls[1].ID, Name: "create_work_node", Content: "Created node n4 (stage 2)."}))

	// Nothing but the human's message is left: a reply in text, which ends the turn.
	calls, text = ask(t, coord, conv...)
	require.Empty(t, calls)
	require.Equal(t, demo.Reply, text)
	conv = append(conv, providers.Message{Role: providers.Assistant, Parts: []providers.Part{providers.Text(text)}})

	// Woken by the end of stage 2 (beside nothing else): it reads the report, then finishes.
	conv = append(conv, providers.UserText("[Message from squad]: Stage 2 is complete (policy \"all\"): 1 of 1 nodes done."))
	calls, _ = ask(t, coord, conv...)
	require.Equal(t, []string{"read_file"}, names(calls))
	assert.Contains(t, string(calls[0].Args), "nodes/n4/published/report.md")
	conv = append(conv, assistant(calls...), results("", tools.Result{CallID: calls[0].ID, Name: "read_file", Content: "     1\t# Report\n     2\tdone"}))
	calls, _ = ask(t, coord, conv...)
	require.Equal(t, []string{"finish"}, names(calls))
	assert.JSONEq(t, `{"output":"# Report\ndone"}`, string(calls[0].Args))
}

// The variant with a sub-node and a question to the human runs to the end on a real squad: the
// worker on the current state waits for its sub-node and integrates its details, the worker on
// the open questions gets the human's answer, and the report holds both.
func TestVariantRuns(t *testing.T) {
	s, err := nodes.New(append(demo.Team(demo.WithSubNodes(), demo.WithHumanQuestion()),
		nodes.WithHome(t.TempDir()), nodes.WithTick(10*time.Millisecond))...)
	require.NoError(t, err)
	defer s.Close()

	events, stop := s.Subscribe(0)
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	r, err := s.Start(ctx, "tea")
	require.NoError(t, err)
	questions := make(chan eventlog.Event, 4)
	go func() {
		for e := range events {
			if e.Type == eventlog.HumanQuestion {
				questions <- e
				_ = r.Answer(e.Worker, "yes") // the output below shows whether it was heard
			}
		}
	}()
	res, err := r.Wait()
	require.NoError(t, err)

	require.Len(t, questions, 1, "one question to the human")
	q := <-questions
	assert.Equal(t, demo.HumanQuestion, q.Text)
	assert.Equal(t, "n3", q.Node)

	for _, want := range []string{"# Report", "## Findings: " + demo.Aspects[0], "## Findings: " + demo.Aspects[1], "## Findings: " + demo.Aspects[2],
		"### Details on the current state", "- Asked the human: " + demo.HumanQuestion + " The human answered: yes"} {
		assert.Contains(t, res.Output, want)
	}
	require.Len(t, res.Board.Nodes, 5)
	for _, n := range res.Board.Nodes {
		assert.Equal(t, nodes.NodeCompleted, n.Status, "node %s", n.ID)
	}
	n4, _ := res.Board.Node("n4")
	assert.Equal(t, "n2", n4.Parent, "n4 is n2's sub-node")
	n2, _ := res.Board.Node("n2")
	assert.Equal(t, n2.Worker, n4.Worker, "n2's worker takes its sub-node")
	n5, _ := res.Board.Node("n5")
	assert.Equal(t, 2, n5.Stage)
	assert.Equal(t, []string{"n1", "n2", "n3"}, n5.Deps)

	evs, err := s.Events(0, 0)
	require.NoError(t, err)
	var completed []string
	for _, e := range evs {
		if e.Type == eventlog.NodeCompleted {
			completed = append(completed, e.Node)
		}
	}
	slices.Sort(completed)
	// n2 ends twice: checkpointed to wait for n4, then published.
	assert.Equal(t, []string{"n1", "n2", "n2", "n3", "n4", "n5"}, completed)
	assert.True(t, strings.HasPrefix(res.Output, "# Report"))
}

// The team answers at once unless it is given a pace; then every model waits it before each
// answer, and the wait ends with the context.
func TestPace(t *testing.T) {
	goal := providers.Request{Messages: []providers.Message{providers.UserText("GOAL: tea")}}
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		for _, m := range demo.Models() {
			_, err := m.Generate(ctx, goal)
			require.NoError(t, err, "%s answers at once by default", m.Name())
		}
		for _, m := range demo.Models(demo.WithPace(time.Hour)) {
			_, err := m.Generate(ctx, goal)
			require.ErrorIs(t, err, context.DeadlineExceeded, "%s waits its pace", m.Name())
		}
	})
}

// A team is paced where a person watches, at a terminal; not where a script reads or writes a
// pipe, a file or /dev/null (a character device, but no terminal).
func TestPaceAt(t *testing.T) {
	null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	require.NoError(t, err)
	defer null.Close()
	file, err := os.Create(filepath.Join(t.TempDir(), "out"))
	require.NoError(t, err)
	defer file.Close()
	assert.Zero(t, demo.PaceAt(null, null), "a script run with </dev/null >/dev/null")
	assert.Zero(t, demo.PaceAt(null, file), "output to a file is a script's")
	assert.Zero(t, demo.PaceAt(nil, &strings.Builder{}), "a test's streams")
	if runtime.GOOS != "linux" {
		t.Log("a terminal is opened here on Linux only (/dev/ptmx); the rest was checked")
		return
	}
	tty, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0) // a pseudo-terminal's controlling side
	require.NoError(t, err)
	defer tty.Close()
	assert.Equal(t, demo.Pace, demo.PaceAt(tty, tty), "a terminal")
	assert.Zero(t, demo.PaceAt(tty, file), "a terminal's input, a file's output")
}

// A paced run stopped while the coordinator waits its pace stops at once, and resumes where it
// was.
func TestPacedRunStops(t *testing.T) {
	home := t.TempDir()
	s, err := nodes.New(append(demo.Team(demo.WithPace(time.Hour)), nodes.WithHome(home), nodes.WithTick(10*time.Millisecond))...)
	require.NoError(t, err)
	events, stop := s.Subscribe(0)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for e := range events {
			if e.Type == eventlog.AgentStarted {
				cancel() // the coordinator waits its pace of an hour for its first answer
			}
		}
	}()
	res, err := s.Run(ctx, "tea")
	stop()
	require.ErrorIs(t, err, nodes.ErrInterrupted)
	require.NotEmpty(t, res.RunID)
	evs, err := s.Events(0, 0)
	require.NoError(t, err)
	for _, e := range evs {
		assert.NotEqual(t, eventlog.NodeCreated, e.Type, "the coordinator answered")
	}
	require.NoError(t, s.Close())

	s, err = nodes.New(append(demo.Team(), nodes.WithHome(home), nodes.WithTick(10*time.Millisecond))...)
	require.NoError(t, err)
	defer s.Close()
	r, err := s.Resume(context.Background(), res.RunID)
	require.NoError(t, err)
	done, err := r.Wait()
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(done.Output, "# Report"))
}
