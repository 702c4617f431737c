package nodes_test

// Scenario tests: whole runs of a squad with scripted models (each deciding
// its turn from the conversation it is given), fake tools and shell-script agents, checked on
// the run's files, the agent's events and the board.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/agiraph/agiraph/models"
	"github.com/agiraph/agiraph/nodes"
	"github.com/agiraph/agiraph/nodes/eventlog"
	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/providers/scripted"
	"github.com/agiraph/agiraph/runtime"
	"github.com/agiraph/agiraph/runtime/autonomous"
	"github.com/agiraph/agiraph/runtime/claudecode"
	"github.com/agiraph/agiraph/tools"
	"github.com/agiraph/agiraph/tools/web"
)

// scTimeout bounds every scenario run; they take well under a second.
const scTimeout = 60 * time.Second

// scTurn answers with calls, given ids unique in the conversation.
func scTurn(req providers.Request, calls ...tools.Call) scripted.Turn {
	turn := 0
	for _, m := range req.Messages {
		if m.Role == providers.Assistant {
			turn++
		}
	}
	for i := range calls {
		calls[i].ID = fmt.Sprintf("call_%d_%d", turn, i+1)
	}
	return scripted.Turn{Calls: calls}
}

// scSince returns the text of the messages since the model's last answer (the messages of a
// wake-up, or a tool's results and the messages that came with them).
func scSince(req providers.Request) string {
	var b strings.Builder
	for i := len(req.Messages) - 1; i >= 0 && req.Messages[i].Role != providers.Assistant; i-- {
		b.WriteString(req.Messages[i].Text() + "\n")
	}
	return b.String()
}

// scAll returns every text and tool result of the conversation, joined.
func scAll(req providers.Request) string {
	var b strings.Builder
	for _, m := range req.Messages {
		for _, p := range m.Parts {
			switch p.Type {
			case providers.TextPart:
				b.WriteString(p.Text + "\n")
			case providers.ToolResultPart:
				b.WriteString(p.ToolResult.Content + "\n")
			}
		}
	}
	return b.String()
}

// scCalled counts the tool calls of the conversation by name.
func scCalled(req providers.Request) map[string]int {
	n := map[string]int{}
	for _, m := range req.Messages {
		for _, c := range m.ToolCalls() {
			n[c.Name]++
		}
	}
	return n
}

// scResults returns the results of the conversation's calls of tool name, in order.
func scResults(req providers.Request, name string) []tools.Result {
	var rs []tools.Result
	for _, m := range req.Messages {
		for _, p := range m.Parts {
			if p.Type == providers.ToolResultPart && p.ToolResult.Name == name {
				rs = append(rs, *p.ToolResult)
			}
		}
	}
	return rs
}

var scNodeRe = regexp.MustCompile(`on work node (n\d+)`)

// scNode returns the node a worker's system prompt puts it on.
func scNode(req providers.Request) string {
	if m := scNodeRe.FindStringSubmatch(req.System); m != nil {
		return m[1]
	}
	return "n0"
}

// scStrip undoes read_file's line numbers ("   1\ttext").
func scStrip(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if tab := strings.IndexByte(l, '\t'); tab > 0 && strings.TrimSpace(l[:tab]) != "" && strings.Trim(l[:tab], " 0123456789") == "" {
			lines[i] = l[tab+1:]
		}
	}
	return strings.Join(lines, "\n")
}

// scCoordinator is a coordinator that puts plan on the board at its first turn, waits, reads
// readPath once the first stage is complete and finishes with output(its content). It fails
// fast — finishing with the error — when a call of its plan is refused, when a read fails, or
// when the squad says nothing runs, so a broken run ends at once instead of at the timeout.
func scCoordinator(name string, plan func() []tools.Call, readPath string, output func(content string) string) *scripted.Model {
	return scripted.NewFunc(name, func(_ context.Context, req providers.Request) (scripted.Turn, error) {
		text, results := scripted.Last(req)
		finish := func(out string) (scripted.Turn, error) {
			return scTurn(req, scripted.Call("finish", map[string]string{"output": out})), nil
		}
		if len(req.Messages) == 1 {
			return scTurn(req, plan()...), nil
		}
		for _, r := range results {
			if r.IsError {
				return finish(fmt.Sprintf("FAILED: %s: %s", r.Name, r.Content))
			}
		}
		switch {
		case len(results) == 1 && results[0].Name == "read_file":
			return finish(output(scStrip(results[0].Content)))
		case len(results) > 0:
			return scTurn(req, scripted.Call("wait", map[string]string{})), nil
		case strings.Contains(text, "Stage 1 is complete"):
			return scTurn(req, scripted.Call("read_file", map[string]string{"path": readPath})), nil
		case strings.Contains(text, "Nothing is running"):
			return finish("STUCK: " + text)
		}
		return scTurn(req, scripted.Call("wait", map[string]string{})), nil
	})
}

// scSquad returns a squad (see newSquad) whose coordinator is coord and whose harnessed workers
// think with the first of workers by default; every model given is served by name.
func scSquad(t *testing.T, coord providers.Model, workers []providers.Model, opts ...nodes.Option) *nodes.Squad {
	t.Helper()
	all := append([]providers.Model{coord}, workers...)
	base := []nodes.Option{
		nodes.WithCoordinatorModel(coord.Name()), nodes.WithModel(workers[0].Name()),
		nodes.WithModelOptions(models.WithModels(all...)),
		nodes.WithAutonomous(autonomous.WithPollInterval(10 * time.Millisecond)),
	}
	return newSquad(t, append(base, opts...)...)
}

// scRun runs the squad toward goal within scTimeout.
func scRun(t *testing.T, s *nodes.Squad, goal string) nodes.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), scTimeout)
	defer cancel()
	res, err := s.Run(ctx, goal)
	if err != nil {
		dump(t, s)
		t.Fatalf("run: %v", err)
	}
	return res
}

func scEvents(t *testing.T, s *nodes.Squad) []eventlog.Event {
	t.Helper()
	evs, err := s.Events(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

// scInOrder checks that events of the types want happened in that order (others between).
func scInOrder(t *testing.T, evs []eventlog.Event, want ...eventlog.Type) {
	t.Helper()
	i := 0
	for _, e := range evs {
		if i < len(want) && e.Type == want[i] {
			i++
		}
	}
	if i < len(want) {
		var got []eventlog.Type
		for _, e := range evs {
			got = append(got, e.Type)
		}
		t.Errorf("events lack %s after %v in order; got %v", want[i], want[:i], got)
	}
}

// scMessages returns the messages the bus delivered (message.sent events).
func scMessages(t *testing.T, evs []eventlog.Event) []runtime.Message {
	t.Helper()
	var ms []runtime.Message
	for _, e := range evs {
		if e.Type != eventlog.MessageSent {
			continue
		}
		var m runtime.Message
		if err := e.Decode(&m); err != nil {
			t.Fatal(err)
		}
		ms = append(ms, m)
	}
	return ms
}

// scAwait polls the squad's events until cond holds or ctx ends; scripted models call it to
// wait for something another participant does.
func scAwait(ctx context.Context, s *nodes.Squad, cond func([]eventlog.Event) bool) error {
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for {
		evs, err := s.Events(0, 0)
		if err != nil {
			return err
		}
		if cond(evs) {
			return nil
		}
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-tick.C:
		}
	}
}

// scAwaitEvent waits, as scAwait, until one of the squad's events is one match accepts.
func scAwaitEvent(ctx context.Context, s *nodes.Squad, match func(eventlog.Event) bool) error {
	return scAwait(ctx, s, func(evs []eventlog.Event) bool { return slices.ContainsFunc(evs, match) })
}

// scSent counts the messages from → to among the bus's deliveries in evs.
func scSent(evs []eventlog.Event, from, to string) int {
	n := 0
	for _, e := range evs {
		var m runtime.Message
		if e.Type == eventlog.MessageSent && e.Decode(&m) == nil && m.From == from && m.To == to {
			n++
		}
	}
	return n
}

func scRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// scConversation reads the agent's conversation.jsonl.
func scConversation(t *testing.T, s *nodes.Squad) []map[string]any {
	t.Helper()
	var lines []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(scRead(t, s.Home().Conversation())), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("conversation.jsonl line %q: %v", l, err)
		}
		lines = append(lines, m)
	}
	return lines
}

// scSaid reports whether the conversation has a line from → to whose content holds text.
func scSaid(lines []map[string]any, from, to, text string) bool {
	for _, l := range lines {
		if strings.EqualFold(fmt.Sprint(l["from"]), from) && strings.EqualFold(fmt.Sprint(l["to"]), to) && strings.Contains(fmt.Sprint(l["content"]), text) {
			return true
		}
	}
	return false
}

func scRunDir(s *nodes.Squad, res nodes.Result) string {
	return filepath.Join(string(s.Home()), "runs", res.RunID)
}

func scScript(t *testing.T, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("testdata", "scenarios", name))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatal(err)
	}
	return p
}

// scNoSearchEnv keeps the environment's search backend out of the workers' tools, so the
// tests' fake backend is the only web_search.
func scNoSearchEnv(t *testing.T) {
	for _, k := range []string{web.EnvBrave, web.EnvSerper, web.EnvTavily, web.EnvSearXNG} {
		t.Setenv(k, "")
	}
}

// fakeSearch is a web search backend with canned results.
type fakeSearch struct {
	mu      sync.Mutex
	queries []string
}

func (f *fakeSearch) Search(_ context.Context, query string, n int) ([]web.Result, error) {
	f.mu.Lock()
	f.queries = append(f.queries, query)
	f.mu.Unlock()
	rs := []web.Result{
		{Title: "Python tops the 2026 language rankings", URL: "https://example.com/rankings-2026", Snippet: "1. Python 2. JavaScript 3. TypeScript, by usage in 2026."},
		{Title: "JavaScript and TypeScript in 2026", URL: "https://example.com/js-ts-2026", Snippet: "JavaScript stays second; TypeScript overtook Java."},
	}
	return rs[:min(n, len(rs))], nil
}

func (f *fakeSearch) Queries() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.queries)
}

// Scenario 1: one node, one worker that searches the web, writes research.md and publishes;
// the coordinator reads it and finishes.
func TestSingleNodeSmoke(t *testing.T) {
	scNoSearchEnv(t)
	const goal = "What are the top 3 programming languages in 2026?"
	coord := scCoordinator("smoke-coordinator", func() []tools.Call {
		return []tools.Call{scripted.Call("create_work_node", map[string]any{
			"task": "Search the web for the top 3 programming languages in 2026. Write research.md in your scratch folder, then publish.",
		})}
	}, "nodes/n1/published/research.md", func(content string) string {
		return "The top 3 programming languages in 2026, from the team's research:\n\n" + content
	}).KeepRequests()
	worker := scripted.NewFunc("smoke-worker", func(_ context.Context, req providers.Request) (scripted.Turn, error) {
		node := scNode(req)
		called := scCalled(req)
		switch {
		case called["web_search"] == 0:
			return scTurn(req, scripted.Call("web_search", map[string]any{"query": "top programming languages 2026"})), nil
		case called["write_file"] == 0:
			found := scResults(req, "web_search")[0].Content
			return scTurn(req, scripted.Call("write_file", map[string]string{
				"path": "nodes/" + node + "/scratch/research.md", "content": "# Top programming languages in 2026\n\n" + found + "\n",
			})), nil
		}
		return scTurn(req, scripted.Call("publish", map[string]string{"summary": "research.md: Python, JavaScript and TypeScript lead in 2026"})), nil
	})
	search := &fakeSearch{}
	s := scSquad(t, coord, []providers.Model{worker}, nodes.WithWorkerTools(func(nodes.Worker, nodes.Node) []tools.Tool {
		return []tools.Tool{web.Search(search)}
	}))
	start := time.Now()
	res := scRun(t, s, goal)
	if d := time.Since(start); d > scTimeout {
		t.Errorf("the run took %s", d)
	}

	for _, lang := range []string{"Python", "JavaScript", "TypeScript"} {
		if !strings.Contains(res.Output, lang) {
			t.Errorf("the output does not name %s:\n%s", lang, res.Output)
		}
	}
	if !strings.HasPrefix(res.Output, "The top 3 programming languages in 2026") {
		t.Errorf("output %q", res.Output)
	}
	if out := scRead(t, res.OutputPath); strings.TrimSpace(out) != strings.TrimSpace(res.Output) {
		t.Errorf("_output.md %q differs from the output %q", out, res.Output)
	}
	if q := search.Queries(); len(q) != 1 || !strings.Contains(q[0], "2026") {
		t.Errorf("searches %q", q)
	}
	dir := scRunDir(s, res)
	research := scRead(t, filepath.Join(dir, "nodes", "n1", "published", "research.md"))
	if !strings.Contains(research, "# Top programming languages in 2026") || !strings.Contains(research, "https://example.com/rankings-2026") {
		t.Errorf("research.md does not hold the search results:\n%s", research)
	}
	if len(res.Board.Nodes) != 1 || len(res.Board.Workers) != 1 {
		t.Fatalf("board %+v", res.Board)
	}
	n1 := res.Board.Nodes[0]
	if n1.Status != nodes.NodeCompleted || !slices.Equal(n1.Published, []string{"research.md"}) || !strings.Contains(n1.Summary, "Python") {
		t.Errorf("n1 %+v", n1)
	}
	if w := res.Board.Workers[0]; w.Status != nodes.WorkerIdle || w.Kind != nodes.Harnessed {
		t.Errorf("worker %+v", w)
	}

	evs := scEvents(t, s)
	scInOrder(t, evs, eventlog.AgentCreated, eventlog.AgentStarted, eventlog.StageStarted, eventlog.NodeCreated, eventlog.WorkerSpawned,
		eventlog.NodeAssigned, eventlog.WorkerBusy, eventlog.NodeStarted, eventlog.ToolCalled, eventlog.ToolResult,
		eventlog.NodeCompleted, eventlog.WorkerIdle, eventlog.StageCompleted, eventlog.AgentCompleted)
	searched := false
	for _, e := range evs {
		if e.Run != res.RunID && e.Type != eventlog.AgentCreated { // the agent is older than its runs
			t.Errorf("event %d %s of run %q", e.Seq, e.Type, e.Run)
		}
		var te runtime.ToolEvent
		if e.Type == eventlog.ToolResult && e.Node == "n1" && e.Decode(&te) == nil && te.Name == "web_search" && !te.IsError {
			searched = true
		}
	}
	if !searched {
		t.Error("no tool.result event of web_search on n1")
	}
	if last := evs[len(evs)-1]; last.Type != eventlog.AgentCompleted || !strings.HasPrefix(last.Text, "The top 3") {
		t.Errorf("last event %s %q", last.Type, last.Text)
	}

	conv := scConversation(t, s)
	if !scSaid(conv, "human", "coordinator", goal) {
		t.Errorf("conversation.jsonl lacks the goal: %v", conv)
	}
	for _, l := range conv {
		if l["run"] != res.RunID {
			t.Errorf("conversation line of run %v", l["run"])
		}
	}
	// The finish trace: the coordinator's tool calls are among the agent's events, from the
	// plan to finish with the output.
	var coordCalls []string
	for _, e := range evs {
		var te runtime.ToolEvent
		if e.Type == eventlog.ToolCalled && e.Worker == "coordinator" && e.Decode(&te) == nil {
			coordCalls = append(coordCalls, te.Name)
		}
	}
	for _, want := range []string{"create_work_node", "read_file", "finish"} {
		if !slices.Contains(coordCalls, want) {
			t.Errorf("the coordinator's tool calls %v lack %s", coordCalls, want)
		}
	}
	assert.NoFileExists(t, filepath.Join(dir, "coordinator", "log.jsonl"), "its events are the log")
	reqs := coord.Requests()
	if first := reqs[0].Messages[0].Text(); first != "GOAL: "+goal {
		t.Errorf("the coordinator's first message is %q", first)
	}
}

// Scenario 4: a worker splits its node into three sub-nodes — one for an autonomous CLI agent,
// one for a single-inference worker, one for whoever is free — checkpoints, and integrates
// their results when the squad gives its node back with them.
func TestRecursiveSpawning(t *testing.T) {
	script := scScript(t, "backend_agent.sh")
	coord := scCoordinator("rec-coordinator", func() []tools.Call {
		return []tools.Call{
			scripted.Call("spawn_worker", map[string]any{"name": "Scripty", "role": "backend", "kind": "autonomous", "command": []string{"sh", script, "{{.TaskFile}}"}}),
			scripted.Call("spawn_worker", map[string]any{"name": "Quick", "role": "devops", "single": true, "model": "scripted/rec-single"}),
			scripted.Call("spawn_worker", map[string]any{"name": "Lead", "role": "lead"}),
			scripted.Call("create_work_node", map[string]any{
				"task":   "Build a full-stack todo app: a FastAPI backend, a React frontend and a Docker setup. Split the work into sub-tasks, then integrate their results into integration.md and publish.",
				"worker": "Lead",
			}),
		}
	}, "nodes/n1/published/integration.md", func(content string) string { return "The todo app is built.\n\n" + content })
	worker := scripted.NewFunc("rec-worker", func(_ context.Context, req providers.Request) (scripted.Turn, error) {
		node := scNode(req)
		task := req.Messages[0].Text()
		called := scCalled(req)
		scratch := "nodes/" + node + "/scratch/"
		switch {
		case strings.Contains(task, "Your sub-tasks have ended"):
			paths := regexp.MustCompile(`nodes/n\d+/published/\S+`).FindAllString(task, -1)
			switch {
			case called["read_file"] == 0:
				var calls []tools.Call
				for _, p := range paths {
					calls = append(calls, scripted.Call("read_file", map[string]string{"path": p}))
				}
				return scTurn(req, calls...), nil
			case called["write_file"] == 0:
				var b strings.Builder
				b.WriteString("# Integration\n")
				for i, r := range scResults(req, "read_file") {
					fmt.Fprintf(&b, "\n## %s\n\n%s\n", paths[i], scStrip(r.Content))
				}
				return scTurn(req, scripted.Call("write_file", map[string]string{"path": scratch + "integration.md", "content": b.String()})), nil
			}
			return scTurn(req, scripted.Call("publish", map[string]string{"summary": "integration.md brings the backend, the frontend and the Dockerfile together"})), nil
		case strings.Contains(task, "Build a full-stack todo app"):
			return scTurn(req,
				scripted.Call("create_work_node", map[string]any{"task": "Write the FastAPI backend of the todo app as backend.py.", "worker": "Scripty"}),
				scripted.Call("create_work_node", map[string]any{"task": "Write the Dockerfile of the todo app.", "worker": "Quick"}),
				scripted.Call("create_work_node", map[string]any{"task": "Write the React frontend of the todo app as App.jsx."}),
				scripted.Call("checkpoint", map[string]string{"summary": "split into backend, Docker and frontend sub-tasks; waiting for them"}),
			), nil
		case strings.Contains(task, "React frontend"):
			if called["write_file"] == 0 {
				return scTurn(req, scripted.Call("write_file", map[string]string{"path": scratch + "App.jsx", "content": "export default function App() { return <h1>Todos</h1>; }\n"})), nil
			}
			return scTurn(req, scripted.Call("publish", map[string]string{"summary": "App.jsx: the React frontend"})), nil
		}
		return scripted.Turn{Text: "I do not know this task: " + task}, nil
	}).KeepRequests()
	single := scripted.NewFunc("rec-single", func(_ context.Context, req providers.Request) (scripted.Turn, error) {
		if len(req.Tools) != 0 {
			return scripted.Turn{Text: "a single-inference worker was given tools"}, nil
		}
		return scripted.Turn{Text: "FROM python:3.12-slim\nRUN pip install fastapi uvicorn\nCOPY backend.py .\nCMD [\"uvicorn\", \"backend:app\"]\n"}, nil
	})
	s := scSquad(t, coord, []providers.Model{worker, single})
	res := scRun(t, s, "Create a full-stack todo app: REST API in Python (FastAPI) + frontend in React + Docker setup.")
	if !strings.Contains(res.Output, "# Integration") {
		t.Fatalf("output %q", res.Output)
	}

	b := res.Board
	if len(b.Nodes) != 4 {
		t.Fatalf("board has %d nodes, want 4: %+v", len(b.Nodes), b.Nodes)
	}
	n1, _ := b.Node("n1")
	if n1.Parent != "" || !slices.Equal(n1.Children, []string{"n2", "n3", "n4"}) || n1.Worker != "lead" || n1.Status != nodes.NodeCompleted {
		t.Errorf("n1 %+v", n1)
	}
	if n1.Attempts != 2 || len(n1.WaitingFor) != 0 {
		t.Errorf("n1 was assigned %d times (want 2: split, integrate), waits for %v", n1.Attempts, n1.WaitingFor)
	}
	wantChild := map[string]struct {
		worker, file, content string
	}{
		"n2": {"scripty", "backend.py", "FastAPI()"},
		"n3": {"quick", "result.md", "FROM python:3.12-slim"},
		"n4": {"", "App.jsx", "<h1>Todos</h1>"},
	}
	dir := scRunDir(s, res)
	for id, want := range wantChild {
		c, _ := b.Node(id)
		if c.Parent != "n1" || c.Status != nodes.NodeCompleted || c.CreatedBy != "Lead" || len(c.Children) != 0 {
			t.Errorf("child %s %+v", id, c)
		}
		if want.worker != "" && c.Worker != want.worker {
			t.Errorf("child %s ran on %s, want %s", id, c.Worker, want.worker)
		}
		if !slices.Equal(c.Published, []string{want.file}) {
			t.Errorf("child %s published %v, want %s", id, c.Published, want.file)
		}
		if got := scRead(t, filepath.Join(dir, "nodes", id, "published", want.file)); !strings.Contains(got, want.content) {
			t.Errorf("%s/%s: %q", id, want.file, got)
		}
		// The integration read every child's output.
		if !strings.Contains(res.Output, "nodes/"+id+"/published/"+want.file) || !strings.Contains(res.Output, want.content) {
			t.Errorf("the integration lacks %s's %s", id, want.file)
		}
		if !strings.Contains(scRead(t, filepath.Join(dir, "nodes", id, "_spec.md")), "Part of: n1") {
			t.Errorf("%s/_spec.md does not say it is part of n1", id)
		}
	}
	if n2, _ := b.Node("n2"); n2.Summary != "backend.py: a FastAPI app serving GET and POST /todos" {
		t.Errorf("the autonomous child's summary is %q, want _result.md's text", n2.Summary)
	}
	kinds := map[string]nodes.Worker{}
	for _, w := range b.Workers {
		kinds[w.ID] = w
	}
	if w := kinds["scripty"]; w.Kind != nodes.Autonomous {
		t.Errorf("Scripty %+v", w)
	}
	if w := kinds["quick"]; !w.Single || w.Kind != nodes.Harnessed {
		t.Errorf("Quick %+v", w)
	}
	if got := scRead(t, filepath.Join(dir, "nodes", "n1", "published", "integration.md")); !strings.Contains(got, "FROM python:3.12-slim") || !strings.Contains(got, "def list_todos") {
		t.Errorf("integration.md:\n%s", got)
	}
	// The second assignment of n1 listed its sub-nodes' results in its task.
	var second string
	for _, r := range worker.Requests() {
		if task := r.Messages[0].Text(); strings.Contains(task, "Your sub-tasks have ended") {
			second = task
		}
	}
	for _, want := range []string{"- n2 (completed): backend.py: a FastAPI app", "nodes/n2/published/backend.py", "nodes/n3/published/result.md", "nodes/n4/published/App.jsx"} {
		if !strings.Contains(second, want) {
			t.Errorf("n1's second task lacks %q:\n%s", want, second)
		}
	}
	evs := scEvents(t, s)
	created := 0
	for _, e := range evs {
		if e.Type == eventlog.NodeCreated {
			created++
		}
	}
	if created != 4 {
		t.Errorf("%d node.created events, want 4", created)
	}
}

// Scenario 8: an autonomous worker (a shell script standing in for a CLI agent) writes a
// program and _result.md; the program is published and works.
func TestAutonomousWorker(t *testing.T) {
	script := scScript(t, "csv2json_agent.sh")
	coord := scCoordinator("auto-coordinator", func() []tools.Call {
		return []tools.Call{
			scripted.Call("spawn_worker", map[string]any{"name": "Cody", "role": "coder", "kind": "autonomous", "command": []string{"sh", script, "{{.TaskFile}}"}}),
			scripted.Call("create_work_node", map[string]any{"task": "Write a CLI tool that converts CSV to JSON, as csv2json.sh; test it.", "worker": "Cody"}),
		}
	}, "nodes/n1/published/csv2json.sh", func(content string) string { return "csv2json.sh is ready:\n\n" + content })
	idle := scripted.NewFunc("auto-unused", func(context.Context, providers.Request) (scripted.Turn, error) {
		return scripted.Turn{Text: "no harnessed worker should run"}, nil
	})
	s := scSquad(t, coord, []providers.Model{idle})
	res := scRun(t, s, "Write a Python CLI tool that converts CSV to JSON.")
	if !strings.HasPrefix(res.Output, "csv2json.sh is ready") || !strings.Contains(res.Output, "awk") {
		t.Fatalf("output %q", res.Output)
	}
	dir := scRunDir(s, res)
	node := filepath.Join(dir, "nodes", "n1")
	n1, _ := res.Board.Node("n1")
	if n1.Status != nodes.NodeCompleted || n1.Worker != "cody" || !slices.Equal(n1.Published, []string{"csv2json.sh"}) {
		t.Errorf("n1 %+v", n1)
	}
	result := scRead(t, filepath.Join(node, "scratch", "_result.md"))
	if n1.Summary != strings.TrimSpace(result) || !strings.Contains(result, "CSV") {
		t.Errorf("n1's summary %q, _result.md %q", n1.Summary, result)
	}
	task := scRead(t, filepath.Join(node, "scratch", "_task.md"))
	if !strings.Contains(task, "converts CSV to JSON") {
		t.Errorf("_task.md lacks the task:\n%s", task)
	}
	// The process ran: the runtime reported its start (with its pid) and its output, in the
	// node's events; without bubblewrap the start also says that containment is weaker.
	evs := scEvents(t, s)
	var log strings.Builder
	for _, e := range evs {
		if e.Node == "n1" {
			fmt.Fprintf(&log, "%s %s\n", e.Type, e.Text)
		}
	}
	if !regexp.MustCompile(`x.runtime_started sh [^\n]*csv2json_agent.sh [^\n]* \(pid \d+\) in [^\n]*/nodes/n1/scratch; sandbox: writes only [^\n]*/nodes/n1/scratch, [^\n]*/workers/cody, /tmp \(its own\)(; containment is weaker here: [^\n]*)?\n`).MatchString(log.String()) {
		t.Errorf("n1's events do not report the process's start:\n%s", log.String())
	}
	if !strings.Contains(log.String(), "csv2json.sh passes its test") {
		t.Errorf("n1's events lack the agent's output:\n%s", log.String())
	}
	assert.NoFileExists(t, filepath.Join(node, "log.jsonl"), "its events are the log")
	scInOrder(t, evs, eventlog.WorkerSpawned, eventlog.NodeAssigned, eventlog.NodeStarted, eventlog.NodeCompleted, eventlog.AgentCompleted)
	for _, e := range evs {
		if e.Type == eventlog.NodeStarted && !strings.Contains(e.Text, "Cody (autonomous)") {
			t.Errorf("node.started %q", e.Text)
		}
	}

	// The program works.
	cmd := exec.Command("sh", filepath.Join(node, "published", "csv2json.sh"))
	cmd.Stdin = strings.NewReader("name,lang\nada,go\nlinus,c\n")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("csv2json.sh: %v", err)
	}
	var rows []map[string]string
	if err := json.Unmarshal(out, &rows); err != nil {
		t.Fatalf("csv2json.sh printed %q: %v", out, err)
	}
	if want := []map[string]string{{"name": "ada", "lang": "go"}, {"name": "linus", "lang": "c"}}; fmt.Sprint(rows) != fmt.Sprint(want) {
		t.Errorf("csv2json.sh converted to %v, want %v", rows, want)
	}
}

// The shell code of the mixed team.
const (
	scBuggyUtils = `# strutils.sh: string utilities.
upper() { printf '%s\n' "$1" | tr '[:lower:]' '[:upper:]'; }
reverse_words() { printf '%s\n' "$1"; }
`
	scFixedUtils = `# strutils.sh: string utilities.
upper() { printf '%s\n' "$1" | tr '[:lower:]' '[:upper:]'; }
reverse_words() { out=""; for w in $1; do out="$w${out:+ $out}"; done; printf '%s\n' "$out"; }
`
	scTests = `# test_strutils.sh: tests of strutils.sh; run it beside strutils.sh.
. "$(dirname "$0")/strutils.sh"
[ "$(upper abc)" = "ABC" ] || { echo "FAIL upper"; exit 1; }
[ "$(reverse_words 'a b c')" = "c b a" ] || { echo "FAIL reverse_words"; exit 1; }
echo PASS
`
)

// Scenario 10: a coder and a tester work in parallel and coordinate through messages — the
// coder sends its code, the tester reports a bug, the coder (woken by the mail in its
// checkpointed conversation) fixes it and replies — and a docs writer documents both.
func TestMixedTeamMessaging(t *testing.T) {
	var s *nodes.Squad // set before the run; the tester's model watches its events
	coord := scCoordinator("team-coordinator", func() []tools.Call {
		return []tools.Call{
			scripted.Call("spawn_worker", map[string]any{"name": "Coder", "role": "coder", "model": "scripted/team-coder"}),
			scripted.Call("spawn_worker", map[string]any{"name": "Tester", "role": "tester", "model": "scripted/team-tester"}),
			scripted.Call("spawn_worker", map[string]any{"name": "Docs", "role": "docs", "model": "scripted/team-docs"}),
			scripted.Call("create_work_node", map[string]any{"task": "Write a shell module of string utilities, strutils.sh, with upper and reverse_words. Coordinate with Tester.", "worker": "Coder"}),
			scripted.Call("create_work_node", map[string]any{"task": "Write tests for Coder's string utilities module, as test_strutils.sh. Coordinate with Coder.", "worker": "Tester"}),
			scripted.Call("create_work_node", map[string]any{
				"task": "Write README.md documenting the string utilities and their tests.", "worker": "Docs", "deps": []string{"n1", "n2"},
				"refs": map[string]string{"code": "nodes/n1/published/strutils.sh", "tests": "nodes/n2/published/test_strutils.sh"},
			}),
		}
	}, "nodes/n3/published/README.md", func(content string) string { return content })
	coder := scripted.NewFunc("team-coder", func(_ context.Context, req providers.Request) (scripted.Turn, error) {
		scratch := "nodes/" + scNode(req) + "/scratch/"
		text, _ := scripted.Last(req)
		switch {
		case strings.Contains(text, "[Message from Tester]: found a bug in reverse_words"):
			return scTurn(req,
				scripted.Call("write_file", map[string]string{"path": scratch + "strutils.sh", "content": scFixedUtils}),
				scripted.Call("send_message", map[string]string{"to": "Tester", "content": "fixed reverse_words in strutils.sh:\n" + scFixedUtils}),
				scripted.Call("publish", map[string]string{"summary": "strutils.sh: upper and reverse_words (fixed after Tester's report)"}),
			), nil
		case scCalled(req)["write_file"] == 0:
			return scTurn(req,
				scripted.Call("write_file", map[string]string{"path": scratch + "strutils.sh", "content": scBuggyUtils}),
				scripted.Call("send_message", map[string]string{"to": "Tester", "content": "strutils.sh is written; here it is:\n" + scBuggyUtils}),
				scripted.Call("checkpoint", map[string]string{"summary": "strutils.sh written and sent to Tester; waiting for the tests"}),
			), nil
		}
		return scTurn(req, scripted.Call("checkpoint", map[string]string{"summary": "nothing new"})), nil
	}).KeepRequests()
	tester := scripted.NewFunc("team-tester", func(ctx context.Context, req providers.Request) (scripted.Turn, error) {
		scratch := "nodes/" + scNode(req) + "/scratch/"
		all := scAll(req)
		called := scCalled(req)
		fromCoder := strings.Count(all, "[Message from Coder]:")
		switch {
		case fromCoder == 0:
			// Wait until Coder's message is on its way, then fetch it.
			if err := scAwait(ctx, s, func(evs []eventlog.Event) bool { return scSent(evs, "Coder", "Tester") >= 1 }); err != nil {
				return scripted.Turn{}, err
			}
			return scTurn(req, scripted.Call("check_messages", map[string]string{})), nil
		case called["write_file"] == 0:
			if !strings.Contains(all, "reverse_words()") {
				return scripted.Turn{Text: "Coder's message lacks the code"}, nil
			}
			return scTurn(req, scripted.Call("write_file", map[string]string{"path": scratch + "test_strutils.sh", "content": scTests})), nil
		case called["send_message"] == 0:
			// Report the bug once Coder's first assignment has ended, so the mail wakes it.
			if err := scAwaitEvent(ctx, s, func(e eventlog.Event) bool {
				return e.Type == eventlog.NodeCompleted && e.Node == "n1" && strings.HasPrefix(e.Text, "checkpointed:")
			}); err != nil {
				return scripted.Turn{}, err
			}
			return scTurn(req, scripted.Call("send_message", map[string]string{"to": "Coder", "content": "found a bug in reverse_words: reverse_words 'a b c' prints 'a b c', not 'c b a'"})), nil
		case fromCoder < 2:
			if err := scAwait(ctx, s, func(evs []eventlog.Event) bool { return scSent(evs, "Coder", "Tester") >= 2 }); err != nil {
				return scripted.Turn{}, err
			}
			return scTurn(req, scripted.Call("check_messages", map[string]string{})), nil
		}
		return scTurn(req, scripted.Call("publish", map[string]string{"summary": "test_strutils.sh tests upper and reverse_words of Coder's strutils.sh"})), nil
	})
	docs := scripted.NewFunc("team-docs", func(_ context.Context, req providers.Request) (scripted.Turn, error) {
		called := scCalled(req)
		switch {
		case called["read_file"] == 0:
			return scTurn(req,
				scripted.Call("read_file", map[string]string{"path": "nodes/n1/published/strutils.sh"}),
				scripted.Call("read_file", map[string]string{"path": "nodes/n2/published/test_strutils.sh"}),
			), nil
		case called["write_file"] == 0:
			var b strings.Builder
			b.WriteString("# strutils\n\nString utilities for the shell.\n\n## Functions\n\n")
			rs := scResults(req, "read_file")
			for _, m := range regexp.MustCompile(`(?m)^(\w+)\(\)`).FindAllStringSubmatch(scStrip(rs[0].Content), -1) {
				fmt.Fprintf(&b, "- `%s`\n", m[1])
			}
			b.WriteString("\n## Tests\n\n")
			if strings.Contains(rs[1].Content, "test_strutils.sh") {
				b.WriteString("Run `sh test_strutils.sh` beside strutils.sh.\n")
			}
			return scTurn(req, scripted.Call("write_file", map[string]string{"path": "nodes/" + scNode(req) + "/scratch/README.md", "content": b.String()})), nil
		}
		return scTurn(req, scripted.Call("publish", map[string]string{"summary": "README.md documents strutils.sh and its tests"})), nil
	})
	s = scSquad(t, coord, []providers.Model{coder, tester, docs})
	res := scRun(t, s, "Create a shell package with a module, tests, and documentation. The code writer and test writer should coordinate.")
	if !strings.Contains(res.Output, "- `upper`") || !strings.Contains(res.Output, "- `reverse_words`") || !strings.Contains(res.Output, "sh test_strutils.sh") {
		t.Fatalf("output %q", res.Output)
	}

	dir := scRunDir(s, res)
	code := scRead(t, filepath.Join(dir, "nodes", "n1", "published", "strutils.sh"))
	tests := scRead(t, filepath.Join(dir, "nodes", "n2", "published", "test_strutils.sh"))
	readme := scRead(t, filepath.Join(dir, "nodes", "n3", "published", "README.md"))
	if code != scFixedUtils {
		t.Errorf("strutils.sh is not the fixed code:\n%s", code)
	}
	if !strings.Contains(tests, "strutils.sh") || !strings.Contains(tests, "reverse_words") {
		t.Errorf("the tests do not reference the coder's code:\n%s", tests)
	}
	if !strings.Contains(readme, "reverse_words") {
		t.Errorf("README.md:\n%s", readme)
	}
	for _, n := range res.Board.Nodes {
		if n.Status != nodes.NodeCompleted {
			t.Errorf("%s is %s", n.ID, n.Status)
		}
	}
	if n1, _ := res.Board.Node("n1"); n1.Attempts != 1 || n1.Worker != "coder" {
		t.Errorf("the coder's node was assigned %d times (want 1: woken in the same assignment), to %s", n1.Attempts, n1.Worker)
	}
	// The tests pass against the fixed code, and failed against the code first sent.
	work := t.TempDir()
	for name, content := range map[string]string{"strutils.sh": code, "test_strutils.sh": tests} {
		if err := os.WriteFile(filepath.Join(work, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := exec.Command("sh", filepath.Join(work, "test_strutils.sh")).CombinedOutput(); err != nil || strings.TrimSpace(string(out)) != "PASS" {
		t.Errorf("the tests on the fixed code: %s, %v", out, err)
	}
	if err := os.WriteFile(filepath.Join(work, "strutils.sh"), []byte(scBuggyUtils), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("sh", filepath.Join(work, "test_strutils.sh")).CombinedOutput(); err == nil || !strings.Contains(string(out), "FAIL reverse_words") {
		t.Errorf("the tests on the buggy code: %s, %v", out, err)
	}

	// Messages went both ways, through the bus: Coder → Tester, Tester → Coder, Coder → Tester.
	evs := scEvents(t, s)
	var between []string
	for _, m := range scMessages(t, evs) {
		if (m.From == "Coder" && m.To == "Tester") || (m.From == "Tester" && m.To == "Coder") {
			between = append(between, m.From+"→"+m.To+": "+firstLineOf(m.Body))
		}
	}
	want := []string{
		"Coder→Tester: strutils.sh is written; here it is:",
		"Tester→Coder: found a bug in reverse_words: reverse_words 'a b c' prints 'a b c', not 'c b a'",
		"Coder→Tester: fixed reverse_words in strutils.sh:",
	}
	if !slices.Equal(between, want) {
		t.Errorf("messages between Coder and Tester:\n%s\nwant:\n%s", strings.Join(between, "\n"), strings.Join(want, "\n"))
	}
	kept, err := nodes.ReadFiles(nodes.WithHome(string(s.Home()))).Messages(filepath.Base(dir))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range [][2]string{{"Coder", "Tester"}, {"Tester", "Coder"}} {
		if !slices.ContainsFunc(kept, func(m runtime.Message) bool { return m.From == want[0] && m.To == want[1] }) {
			t.Errorf("the run's messages lack one from %s to %s", want[0], want[1])
		}
	}
	// Coder was woken in the same conversation: its last request holds its first turn and the bug report.
	reqs := coder.Requests()
	lastReq := reqs[len(reqs)-1]
	if len(reqs) != 2 || scCalled(lastReq)["checkpoint"] != 1 || !strings.Contains(scAll(lastReq), "found a bug in reverse_words") {
		t.Errorf("the coder made %d requests; the last does not continue its first conversation", len(reqs))
	}
	// The tester ran while the coder did: it got the code before the coder's node was done.
	scInOrder(t, evs, eventlog.NodeStarted, eventlog.NodeStarted, eventlog.NodeCompleted, eventlog.NodeCompleted, eventlog.NodeCompleted)
	started := map[string]int64{}
	for _, e := range evs {
		if e.Type == eventlog.NodeStarted {
			if _, ok := started[e.Node]; !ok {
				started[e.Node] = e.Seq
			}
		}
	}
	for _, e := range evs {
		if e.Type == eventlog.NodeCompleted && e.Node == "n1" && started["n2"] > e.Seq {
			t.Error("the tester started only after the coder's node ended; they should run in parallel")
			break
		}
	}
	if started["n3"] == 0 {
		t.Error("the docs node never started")
	}
}

func firstLineOf(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// A worker may not read another worker's notebook or another node's scratch folder, nor write
// another node's published outputs; it is told so, naming the path, and the run goes on.
func TestWorkerCannotReadAnotherWorkersNotes(t *testing.T) {
	coord := scCoordinator("iso-coordinator", func() []tools.Call {
		return []tools.Call{
			scripted.Call("spawn_worker", map[string]any{"name": "Ann", "model": "scripted/iso-ann"}),
			scripted.Call("spawn_worker", map[string]any{"name": "Ben", "model": "scripted/iso-ben"}),
			scripted.Call("create_work_node", map[string]any{"task": "Write notes.md, then publish.", "worker": "Ann"}),
			scripted.Call("create_work_node", map[string]any{"task": "Review Ann's notes; write review.md, then publish.", "worker": "Ben", "deps": []string{"n1"}}),
		}
	}, "nodes/n2/published/review.md", func(content string) string { return content })
	ann := scripted.NewFunc("iso-ann", func(_ context.Context, req providers.Request) (scripted.Turn, error) {
		if scCalled(req)["write_file"] == 0 {
			return scTurn(req,
				scripted.Call("write_file", map[string]string{"path": "workers/ann/notebook.md", "content": "Ann's private notes: the launch code is 1234.\n"}),
				scripted.Call("write_file", map[string]string{"path": "nodes/n1/scratch/_draft.md", "content": "Ann's unpublished draft.\n"}),
				scripted.Call("write_file", map[string]string{"path": "nodes/n1/scratch/notes.md", "content": "Ann's public notes.\n"}),
			), nil
		}
		return scTurn(req, scripted.Call("publish", map[string]string{"summary": "notes.md"})), nil
	})
	probes := []struct {
		tool, path string
	}{
		{"read_file", "workers/ann/notebook.md"},
		{"read_file", "nodes/n1/scratch/_draft.md"},
		{"write_file", "nodes/n1/published/hack.md"},
		{"read_file", "nodes/n1/published/notes.md"},
	}
	ben := scripted.NewFunc("iso-ben", func(_ context.Context, req providers.Request) (scripted.Turn, error) {
		called := scCalled(req)
		switch {
		case called["read_file"] == 0:
			var calls []tools.Call
			for _, p := range probes {
				args := map[string]string{"path": p.path}
				if p.tool == "write_file" {
					args["content"] = "Ben was here.\n"
				}
				calls = append(calls, scripted.Call(p.tool, args))
			}
			return scTurn(req, calls...), nil
		case called["publish"] == 0 && called["write_file"] == 1:
			_, results := scripted.Last(req)
			var b strings.Builder
			b.WriteString("# Review\n\n")
			for _, r := range results {
				fmt.Fprintf(&b, "- %s error=%v: %s\n", r.Name, r.IsError, firstLineOf(r.Content))
			}
			return scTurn(req, scripted.Call("write_file", map[string]string{"path": "nodes/n2/scratch/review.md", "content": b.String()})), nil
		}
		return scTurn(req, scripted.Call("publish", map[string]string{"summary": "review.md"})), nil
	}).KeepRequests()
	s := scSquad(t, coord, []providers.Model{ann, ben})
	res := scRun(t, s, "Write notes and review them.")
	if !strings.HasPrefix(res.Output, "# Review") {
		t.Fatalf("output %q", res.Output)
	}
	for _, n := range res.Board.Nodes {
		if n.Status != nodes.NodeCompleted {
			t.Errorf("%s is %s", n.ID, n.Status)
		}
	}

	// Ben's second request holds the results of his probes.
	reqs := ben.Requests()
	if len(reqs) < 2 {
		t.Fatalf("Ben made %d requests", len(reqs))
	}
	_, results := scripted.Last(reqs[1])
	if len(results) != len(probes) {
		t.Fatalf("Ben's second request holds %d results, want %d", len(results), len(probes))
	}
	for i, p := range probes[:3] {
		r := results[i]
		if !r.IsError || !strings.Contains(r.Content, p.path) || !strings.Contains(r.Content, "not allowed") {
			t.Errorf("%s %s: error=%v %q; want a refusal naming the path", p.tool, p.path, r.IsError, r.Content)
		}
		if strings.Contains(r.Content, "1234") || strings.Contains(r.Content, "unpublished draft") {
			t.Errorf("%s %s leaked the content: %q", p.tool, p.path, r.Content)
		}
	}
	if r := results[3]; r.IsError || !strings.Contains(r.Content, "Ann's public notes.") {
		t.Errorf("reading Ann's published notes: error=%v %q", r.IsError, r.Content)
	}
	// The refusals are tool.result events too.
	refused := 0
	for _, e := range scEvents(t, s) {
		var te runtime.ToolEvent
		if e.Type == eventlog.ToolResult && e.Node == "n2" && e.Worker == "ben" && e.Decode(&te) == nil && te.IsError && strings.Contains(te.Result, "not allowed") {
			refused++
		}
	}
	if refused != 3 {
		t.Errorf("%d refused tool.result events on n2, want 3", refused)
	}
	// Nothing changed where Ben may not write; Ann's files are as she left them.
	dir := scRunDir(s, res)
	if _, err := os.Stat(filepath.Join(dir, "nodes", "n1", "published", "hack.md")); !os.IsNotExist(err) {
		t.Errorf("hack.md in n1's published outputs: %v", err)
	}
	if got := scRead(t, filepath.Join(dir, "workers", "ann", "notebook.md")); got != "Ann's private notes: the launch code is 1234.\n" {
		t.Errorf("Ann's notebook %q", got)
	}
	if got := scRead(t, filepath.Join(dir, "nodes", "n1", "scratch", "_draft.md")); got != "Ann's unpublished draft.\n" {
		t.Errorf("Ann's draft %q", got)
	}
	if n1, _ := res.Board.Node("n1"); !slices.Equal(n1.Published, []string{"notes.md"}) {
		t.Errorf("n1 published %v", n1.Published)
	}
}

// Scenario 5: a worker asks the human; the run waits; the human answers (with Answer, or with
// Send to the worker by name); the worker continues in the same conversation with the answer.
func TestHumanInTheLoop(t *testing.T) {
	const (
		question = "Should I use PostgreSQL or SQLite?"
		answer   = "PostgreSQL, it's for a production web app"
	)
	for _, how := range []string{"Answer", "Send"} {
		t.Run(how, func(t *testing.T) {
			coord := scCoordinator("hitl-coordinator", func() []tools.Call {
				return []tools.Call{
					scripted.Call("spawn_worker", map[string]any{"name": "Dana", "role": "dba"}),
					scripted.Call("create_work_node", map[string]any{"task": "Set up a database for our project: write db.md in your scratch folder, then publish.", "worker": "Dana"}),
				}
			}, "nodes/n1/published/db.md", func(content string) string { return content })
			worker := scripted.NewFunc("hitl-worker", func(_ context.Context, req providers.Request) (scripted.Turn, error) {
				called := scCalled(req)
				switch {
				case called["ask_human"] == 0:
					return scTurn(req, scripted.Call("ask_human", map[string]string{"question": question})), nil
				case called["write_file"] == 0:
					said := scResults(req, "ask_human")[0].Content
					choice := "SQLite"
					if strings.Contains(said, "PostgreSQL") {
						choice = "PostgreSQL"
					}
					return scTurn(req, scripted.Call("write_file", map[string]string{
						"path":    "nodes/" + scNode(req) + "/scratch/db.md",
						"content": "# Database\n\nChoice: " + choice + "\n\n" + said + "\n",
					})), nil
				}
				return scTurn(req, scripted.Call("publish", map[string]string{"summary": "db.md: the database set-up"})), nil
			}).KeepRequests()
			s := scSquad(t, coord, []providers.Model{worker})
			events, stop := s.Subscribe(0)
			defer stop()
			ctx, cancel := context.WithTimeout(context.Background(), scTimeout)
			defer cancel()
			r, err := s.Start(ctx, "Set up a database for our project.")
			if err != nil {
				t.Fatal(err)
			}
			var asked eventlog.Event
		watch:
			for {
				select {
				case e := <-events:
					if e.Type == eventlog.HumanQuestion {
						asked = e
						break watch
					}
				case <-r.Done():
					res, err := r.Wait()
					dump(t, s)
					t.Fatalf("the run ended before the question: %+v, %v", res.Output, err)
				case <-ctx.Done():
					dump(t, s)
					t.Fatal("no human.question event")
				}
			}
			if asked.Text != question || asked.Node != "n1" || asked.Worker != "dana" {
				t.Errorf("human.question %+v", asked)
			}
			b, err := r.Board()
			if err != nil {
				t.Fatal(err)
			}
			n1, _ := b.Node("n1")
			dana, _ := b.Worker("Dana")
			if n1.Status != nodes.NodeWaiting || n1.Question != question || dana.Status != nodes.WorkerWaiting || dana.Node != "n1" {
				t.Errorf("while waiting: n1 %s %q, Dana %s on %q", n1.Status, n1.Question, dana.Status, dana.Node)
			}
			if n := len(worker.Requests()); n != 1 {
				t.Errorf("the worker was asked %d times before the answer, want 1", n)
			}
			if how == "Answer" {
				err = r.Answer("Dana", answer)
			} else {
				err = r.Send("Dana", answer)
			}
			if err != nil {
				t.Fatal(err)
			}
			select {
			case <-r.Done():
			case <-ctx.Done():
				dump(t, s)
				t.Fatal("the run did not end after the answer")
			}
			res, err := r.Wait()
			if err != nil {
				dump(t, s)
				t.Fatal(err)
			}
			if !strings.Contains(res.Output, "Choice: PostgreSQL") {
				t.Errorf("output %q", res.Output)
			}
			dir := scRunDir(s, res)
			if db := scRead(t, filepath.Join(dir, "nodes", "n1", "published", "db.md")); !strings.Contains(db, "Choice: PostgreSQL") || !strings.Contains(db, answer) {
				t.Errorf("db.md %q", db)
			}
			n1, _ = res.Board.Node("n1")
			if n1.Status != nodes.NodeCompleted || n1.Question != "" || n1.Answer != "" || n1.Attempts != 1 {
				t.Errorf("n1 after the answer %+v", n1)
			}
			reqs := worker.Requests()
			if len(reqs) < 2 {
				t.Fatalf("the worker made %d requests", len(reqs))
			}
			if reqs[1].Messages[0].Text() != reqs[0].Messages[0].Text() || scCalled(reqs[1])["ask_human"] != 1 {
				t.Error("the worker did not continue its conversation")
			}
			if rs := scResults(reqs[1], "ask_human"); len(rs) != 1 || rs[0].IsError || !strings.Contains(rs[0].Content, answer) {
				t.Errorf("ask_human's result in the second request: %+v", rs)
			}
			evs := scEvents(t, s)
			scInOrder(t, evs, eventlog.NodeStarted, eventlog.HumanQuestion, eventlog.HumanResponse, eventlog.NodeStarted, eventlog.NodeCompleted, eventlog.AgentCompleted)
			for _, e := range evs {
				if e.Type == eventlog.HumanResponse && (e.Text != answer || !strings.EqualFold(e.Worker, "dana")) {
					t.Errorf("human.response %+v", e)
				}
			}
			msgs := scMessages(t, evs)
			if !slices.ContainsFunc(msgs, func(m runtime.Message) bool { return m.From == "Dana" && m.To == "human" && m.Body == question }) {
				t.Errorf("the question did not go to the human through the bus: %+v", msgs)
			}
			conv := scConversation(t, s)
			if !scSaid(conv, "human", "dana", answer) {
				t.Errorf("conversation.jsonl lacks the answer: %v", conv)
			}
			if !scSaid(conv, "dana", "human", question) {
				t.Errorf("conversation.jsonl lacks the question: %v", conv)
			}
		})
	}
}

// Workers of one team think with different models: one named at spawn_worker, one by its role
// (WithRoleModel), the rest with the squad's default.
func TestWorkersOnDifferentModels(t *testing.T) {
	scNoSearchEnv(t)
	writer := func(name string) *scripted.Model {
		return scripted.NewFunc(name, func(_ context.Context, req providers.Request) (scripted.Turn, error) {
			if scCalled(req)["write_file"] == 0 {
				return scTurn(req, scripted.Call("write_file", map[string]string{"path": "nodes/" + scNode(req) + "/scratch/by.md", "content": name})), nil
			}
			return scTurn(req, scripted.Call("publish", map[string]string{"summary": "written by " + name})), nil
		}).KeepRequests()
	}
	def, named, byRole := writer("default"), writer("named"), writer("analyst")
	coord := scCoordinator("mix-coordinator", func() []tools.Call {
		return []tools.Call{
			scripted.Call("spawn_worker", map[string]any{"name": "Nia", "model": "scripted/named"}),
			scripted.Call("spawn_worker", map[string]any{"name": "Ray", "role": "analyst"}),
			scripted.Call("create_work_node", map[string]any{"task": "Write by.md.", "worker": "Nia"}),
			scripted.Call("create_work_node", map[string]any{"task": "Write by.md.", "worker": "Ray"}),
			scripted.Call("create_work_node", map[string]any{"task": "Write by.md."}),
		}
	}, "nodes/n1/published/by.md", func(content string) string { return content })
	s := scSquad(t, coord, []providers.Model{def, named, byRole}, nodes.WithRoleModel("analyst", "scripted/analyst"))
	res := scRun(t, s, "Three writers.")
	want := map[string]string{"n1": "named", "n2": "analyst", "n3": "default"}
	for id, model := range want {
		n, _ := res.Board.Node(id)
		if n.Summary != "written by "+model {
			t.Errorf("%s was written by %q, want %s", id, n.Summary, model)
		}
	}
	for _, m := range []*scripted.Model{def, named, byRole} {
		if len(m.Requests()) == 0 {
			t.Errorf("model %s was never used", m.Name())
		}
	}
}

// A claude-code worker in a squad: the coordinator spawns it and hands it a node; the CLI (a
// stand-in script speaking stream-json) writes its program in the node's scratch folder; the
// node publishes it, with the CLI's summary, usage and cost.
func TestClaudeCodeWorker(t *testing.T) {
	scNoSearchEnv(t)
	bin, err := filepath.Abs(filepath.Join("testdata", "scenarios", "fake_claude.sh"))
	if err != nil {
		t.Fatal(err)
	}
	coord := scCoordinator("cc-coordinator", func() []tools.Call {
		return []tools.Call{
			scripted.Call("spawn_worker", map[string]any{"name": "Cody", "kind": "claude-code", "model": "sonnet"}),
			scripted.Call("create_work_node", map[string]any{"task": "Write a CLI that converts CSV to JSON.", "worker": "Cody"}),
		}
	}, "nodes/n1/published/csv2json.sh", func(content string) string { return content })
	s := scSquad(t, coord, []providers.Model{scripted.New("unused")}, nodes.WithClaudeCode(claudecode.WithBinary(bin)))
	res := scRun(t, s, "A CSV to JSON converter.")
	n1, _ := res.Board.Node("n1")
	if n1.Status != nodes.NodeCompleted || n1.Summary != "csv2json.sh converts CSV on stdin to JSON lines." || !slices.Equal(n1.Published, []string{"csv2json.sh"}) {
		t.Fatalf("n1 %+v", n1)
	}
	if res.Usage.CostUSD < 0.004 {
		t.Errorf("usage %+v: want the CLI's cost counted", res.Usage)
	}
	prog := filepath.Join(scRunDir(s, res), "nodes", "n1", "published", "csv2json.sh")
	cmd := exec.Command("sh", prog)
	cmd.Stdin = strings.NewReader("name,lang\nada,go\n")
	out, err := cmd.Output()
	if err != nil || strings.TrimSpace(string(out)) != `{"name":"ada","lang":"go"}` {
		t.Fatalf("the program printed %q, %v", out, err)
	}
	var sawCall bool
	for _, e := range scEvents(t, s) {
		if e.Type == eventlog.ToolCalled && e.Node == "n1" && strings.HasPrefix(e.Text, "Write") {
			sawCall = true
		}
	}
	if !sawCall {
		t.Error("the CLI's tool call did not reach the events")
	}
}
