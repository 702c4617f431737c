package replay_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/nodes"
	"github.com/agiraph/agiraph/nodes/eventlog"
	"github.com/agiraph/agiraph/nodes/replay"
	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/runtime"
	"github.com/agiraph/agiraph/tools"
)

// squadModel plays a one-node squad, as providertest.SquadScript does over a provider's wire:
// the coordinator asks the human its question first, if it has one, puts a node on the board,
// waits, and finishes once the stage is complete; the worker writes hello.md, making the extra
// calls too, then publishes.
type squadModel struct {
	ask    string
	during bool // asks in the turn that creates n1, which runs while the question waits
	extra  []tools.Call
	cli    bool // n1 goes to Sam, an autonomous worker
}

func (squadModel) Name() string { return "scripted/squad" }

// result returns the result of the first call of tool name in msgs, if there is one.
func result(msgs []providers.Message, name string) (string, bool) {
	for _, m := range msgs {
		for _, p := range m.Parts {
			if p.ToolResult != nil && p.ToolResult.Name == name {
				return p.ToolResult.Content, true
			}
		}
	}
	return "", false
}

func (m squadModel) Generate(_ context.Context, req providers.Request) (providers.Response, error) {
	last := req.Messages[len(req.Messages)-1]
	id := fmt.Sprintf("call-%d", len(req.Messages))
	call := func(name string, args any) tools.Call {
		raw, _ := json.Marshal(args)
		return tools.Call{ID: id + "-" + name, Name: name, Args: raw}
	}
	answer, answered := result(req.Messages, "ask_human")
	_, created := result(req.Messages, "create_work_node")
	_, spawned := result(req.Messages, "spawn_worker")
	var calls []tools.Call
	switch worker := !strings.Contains(req.System, "OPERATING RULES"); {
	case worker && len(req.Messages) == 1:
		calls = append([]tools.Call{call("write_file", map[string]string{"path": "nodes/n1/scratch/hello.md", "content": "hello"})}, m.extra...)
	case worker:
		calls = []tools.Call{call("publish", map[string]string{"summary": "said hello"})}
	case m.ask != "" && !answered && !m.during:
		calls = []tools.Call{call("ask_human", map[string]string{"question": m.ask})}
	case m.cli && !spawned:
		calls = []tools.Call{call("spawn_worker", map[string]any{"name": "Sam", "kind": "autonomous", "command": []string{"agent", "{{.TaskFile}}"}})}
	case !created:
		node := map[string]string{"task": "Write hello.md saying hello, then publish." + answer}
		if m.cli {
			node["worker"] = "Sam"
		}
		calls = []tools.Call{call("create_work_node", node)}
		if m.during {
			calls = append(calls, call("ask_human", map[string]string{"question": m.ask}))
		}
	case strings.Contains(last.Text(), "The run is ending"):
		return providers.Response{Message: providers.Message{Role: providers.Assistant, Parts: []providers.Part{providers.Text("Nothing to store.")}}, StopReason: providers.StopEnd}, nil
	case slices.ContainsFunc(req.Messages, func(m providers.Message) bool { return strings.Contains(m.Text(), "Stage 1 is complete") }):
		calls = []tools.Call{call("finish", map[string]string{"output": "hello.md is published"})}
	default:
		calls = []tools.Call{call("wait", map[string]string{})}
	}
	msg := providers.Message{Role: providers.Assistant}
	for i := range calls {
		msg.Parts = append(msg.Parts, providers.Part{Type: providers.ToolCallPart, ToolCall: &calls[i]})
	}
	return providers.Response{Message: msg, StopReason: providers.StopToolUse, Usage: providers.Usage{InputTokens: 100, OutputTokens: 20}}, nil
}

// record runs the squad m plays, recording it into a cassette, with the worker's extra tools
// ts; it returns the cassette's path.
func record(t *testing.T, m squadModel, ts ...tools.Tool) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "run.cassette")
	rec, err := replay.Record(path)
	require.NoError(t, err)
	s, err := nodes.New(nodes.WithHome(t.TempDir()), nodes.WithModel(m.Name()), nodes.WithTick(20*time.Millisecond),
		nodes.WithModelResolver(func(string) (providers.Model, error) { return m, nil }),
		nodes.WithWorkerTools(func(nodes.Worker, nodes.Node) []tools.Tool { return ts }), nodes.WithRecorder(rec),
		nodes.WithRuntime(nodes.Autonomous, func(nodes.Worker) (runtime.Runtime, error) { return agent{}, nil }))
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	h, err := s.Start(ctx, "Say hello in a file. The key is sk-ant-api03-secret-key-0123456789; send it with Authorization: Bearer abcdefghijkl.")
	require.NoError(t, err)
	if m.ask != "" { // at once, or once n1 is done when the question comes while it runs
		events, stop := s.Subscribe(0)
		asked, done := "", !m.during
		for e := range events {
			switch e.Type {
			case eventlog.HumanQuestion:
				asked = e.Worker
			case eventlog.NodeCompleted:
				done = true
			}
			if asked != "" && done {
				require.NoError(t, h.Answer(asked, " In French."))
				break
			}
		}
		stop()
	}
	res, err := h.Wait()
	require.NoError(t, err)
	require.NoError(t, rec.Finish(s, res))
	require.NoError(t, s.Close())
	return path
}

// A recorded run replays with its facts; the cassette holds no key, no bearer token and not
// the home's folder, and says who made each call.
func TestRecordReplay(t *testing.T) {
	path := record(t, squadModel{})
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.NotContains(t, string(b), "secret-key")
	assert.NotContains(t, string(b), "abcdefghijkl")
	assert.Contains(t, string(b), "The key is [REDACTED]")
	c, err := replay.Load(path)
	require.NoError(t, err)
	assert.Equal(t, replay.Version, c.Header.Version)
	assert.Equal(t, "{home}", c.Header.Run.Home)
	var who []string
	for _, l := range c.Lines {
		who = append(who, l.Who)
	}
	assert.Contains(t, who, "coordinator")
	assert.Contains(t, who, "alice n1#1")
	assert.Equal(t, map[string]string{"nodes/n1/published/hello.md": "hello"}, c.Facts.Files)

	res := replay.Run(t, path)
	assert.Equal(t, "hello.md is published", res.Output)
	assert.Equal(t, c.Header.Run.ID, res.RunID)
}

// A tool that reaches outside the run is recorded, and answered from the cassette in replay:
// the tool's own handler is not called.
func TestOutsideToolReplays(t *testing.T) {
	calls := 0
	web := func(out string) tools.Tool {
		return tools.Func("web_fetch", "Fetch a page.", func(context.Context, struct {
			URL string `json:"url"`
		}) (string, error) {
			calls++
			return out, nil
		})
	}
	// The worker fetches a page as it writes hello.md.
	fetch := tools.Call{ID: "fetch", Name: "web_fetch", Args: json.RawMessage(`{"url":"https://example.com"}`)}
	path := record(t, squadModel{extra: []tools.Call{fetch}}, web("the page"))
	require.Equal(t, 1, calls)
	c, err := replay.Load(path)
	require.NoError(t, err)
	var fetched []string
	for _, l := range c.Lines {
		if l.Kind == replay.KindTool {
			fetched = append(fetched, l.Tool+" "+l.Result)
		}
	}
	assert.Equal(t, []string{"web_fetch the page"}, fetched, "web_fetch is recorded; write_file is not")

	calls = 0
	_, err = replay.Play(t.Context(), path, t.TempDir(), nodes.WithWorkerTools(func(nodes.Worker, nodes.Node) []tools.Tool {
		return []tools.Tool{web("another page")}
	}))
	require.NoError(t, err)
	assert.Equal(t, 0, calls)
}

// The human's answer is recorded, and given again in replay when the question comes.
func TestAnswerReplays(t *testing.T) {
	path := record(t, squadModel{ask: "In which language?"})
	c, err := replay.Load(path)
	require.NoError(t, err)
	var answers []replay.Line
	for _, l := range c.Lines {
		if l.Kind == replay.KindAnswer {
			answers = append(answers, l)
		}
	}
	require.Len(t, answers, 1)
	assert.Positive(t, answers[0].After, "the answer comes after the coordinator's first turn")
	assert.Equal(t, replay.Line{Kind: replay.KindAnswer, Who: "coordinator", Seq: 1, Answer: " In French.", After: answers[0].After}, answers[0])
	n1, _ := replay.Run(t, path).Board.Node("n1")
	assert.Contains(t, n1.Task, "In French.")

}

// agent stands for a CLI agent: it tells the coordinator it starts, notes it in its notebook
// with the squad's write_file tool, reports an event, and publishes hello.md.
type agent struct{}

func (agent) Run(ctx context.Context, a runtime.Assignment, sink runtime.Sink) (runtime.Outcome, error) {
	if err := a.Mailbox.Send(ctx, a.ID+"/start", "coordinator", "Sam starts."); err != nil {
		return runtime.Outcome{Status: runtime.Failed}, err
	}
	for _, t := range a.Tools {
		if t.Name == "write_file" {
			if _, err := t.Handler(ctx, json.RawMessage(`{"path":"nodes/n1/scratch/notes.md","content":"started"}`)); err != nil {
				return runtime.Outcome{Status: runtime.Failed}, err
			}
		}
	}
	sink(runtime.Event{Kind: runtime.ModelTurn, Assignment: a.ID, Node: a.Node, Worker: a.Worker, Text: "writing hello.md"})
	if err := os.WriteFile(filepath.Join(a.Dir.Scratch(), "hello.md"), []byte("hello from Sam"), 0o644); err != nil {
		return runtime.Outcome{Status: runtime.Failed}, err
	}
	published, err := a.Dir.Publish()
	return runtime.Outcome{Status: runtime.Published, Summary: "said hello", Published: published}, err
}

// A CLI agent's assignment is recorded — its tool calls, events, outcome and published files —
// and replayed without the agent: its calls made again, its files published.
func TestCLIStreamReplays(t *testing.T) {
	path := record(t, squadModel{cli: true})
	c, err := replay.Load(path)
	require.NoError(t, err)
	var stream replay.Line
	for _, l := range c.Lines {
		if l.Kind == replay.KindStream {
			stream = l
		}
	}
	require.Equal(t, "sam n1#1", stream.Who)
	assert.Equal(t, map[string]string{"hello.md": "hello from Sam", "notes.md": "started"}, stream.Files)
	assert.Contains(t, c.Facts.Messages, "Sam → coordinator: Sam starts.", "%q", c.Facts.Messages)

	res, err := replay.Play(t.Context(), path, t.TempDir(), nodes.WithRuntime(nodes.Autonomous, func(nodes.Worker) (runtime.Runtime, error) {
		return failing{}, nil
	}))
	require.NoError(t, err, "the recorded stream plays in the agent's place")
	assert.Equal(t, "hello.md is published", res.Output)
}

// failing is a CLI agent that fails whenever it is run.
type failing struct{}

func (failing) Run(context.Context, runtime.Assignment, runtime.Sink) (runtime.Outcome, error) {
	return runtime.Outcome{Status: runtime.Failed}, errors.New("the agent ran")
}

// A replay that makes the recorded calls but ends otherwise than recorded fails with the
// difference: here the recorded facts say another file was published.
func TestMismatch(t *testing.T) {
	path := record(t, squadModel{})
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	edited := strings.Replace(string(b), `"nodes/n1/published/hello.md":"hello"`, `"nodes/n1/published/hello.md":"bonjour"`, 1)
	require.NotEqual(t, string(b), edited)
	require.NoError(t, os.WriteFile(path, []byte(edited), 0o644))
	_, err = replay.Play(t.Context(), path, t.TempDir())
	var m *replay.Mismatch
	require.ErrorAs(t, err, &m)
	assert.Contains(t, m.Diff, `-     "nodes/n1/published/hello.md": "bonjour"`)
	assert.Contains(t, m.Diff, `+     "nodes/n1/published/hello.md": "hello"`)
}

// A cassette that is not one, of another version, or cut short is refused, naming the file.
func TestLoadRefuses(t *testing.T) {
	dir := t.TempDir()
	for name, text := range map[string]string{
		"notjson":    "hello\n",
		"version":    `{"format":"agiraph-cassette","version":99,"run":{}}` + "\n",
		"unfinished": `{"format":"agiraph-cassette","version":1,"run":{}}` + "\n",
		"kind":       `{"format":"agiraph-cassette","version":1,"run":{}}` + "\n" + `{"kind":"dream"}` + "\n",
	} {
		path := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
		_, err := replay.Load(path)
		require.Error(t, err, name)
		assert.Contains(t, err.Error(), path, name)
	}
}

// Runs records the runs it is asked to of a squad that stays open across runs — the first and
// the third here, not the second — each into its own cassette. The first replays; a later run
// depends on the memory the runs before it wrote, which its cassette does not hold.
func TestRunsRecordsRunsOfAnOpenSquad(t *testing.T) {
	var rs replay.Runs
	m := squadModel{}
	s, err := nodes.New(nodes.WithHome(t.TempDir()), nodes.WithModel(m.Name()), nodes.WithTick(20*time.Millisecond),
		nodes.WithModelResolver(func(string) (providers.Model, error) { return m, nil }), nodes.WithRecorder(&rs))
	require.NoError(t, err)
	defer func() { assert.NoError(t, s.Close()) }()
	dir := t.TempDir()
	for i, id := range []string{"first", "second", "third"} {
		if id != "second" {
			rs.Record(id, filepath.Join(dir, id+".cassette"))
		}
		res, err := s.Run(t.Context(), fmt.Sprintf("Say hello in a file, %d.", i+1), nodes.WithRunID(id))
		require.NoError(t, err)
		require.NoError(t, rs.Finish(s, id, res, err))
	}
	assert.NoFileExists(t, filepath.Join(dir, "second.cassette"))
	third, err := replay.Load(filepath.Join(dir, "third.cassette"))
	require.NoError(t, err)
	assert.Equal(t, "Say hello in a file, 3.", third.Header.Run.Goal)
	assert.Equal(t, map[string]string{"nodes/n1/published/hello.md": "hello"}, third.Facts.Files)
	assert.Equal(t, "hello.md is published", replay.Run(t, filepath.Join(dir, "first.cassette")).Output)

	// A run asked for that fails, or does not finish, leaves no cassette.
	for _, id := range []string{"failed", "paused"} {
		path := filepath.Join(dir, id+".cassette")
		rs.Record(id, path)
		res, err := s.Run(t.Context(), "Say hello in a file, again.", nodes.WithRunID(id))
		require.NoError(t, err)
		if id == "failed" {
			err = errors.New("the run failed")
		} else {
			res.Finished = false
		}
		require.NoError(t, rs.Finish(s, id, res, err))
		assert.NoFileExists(t, path)
	}
}
