package langgraphapi_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/checkpoint"
	"github.com/agiraph/agiraph/graph"
	"github.com/agiraph/agiraph/models"
	"github.com/agiraph/agiraph/nodes"
	"github.com/agiraph/agiraph/nodes/demo"
	"github.com/agiraph/agiraph/nodes/store"
	"github.com/agiraph/agiraph/nodes/triggers"
	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/providers/scripted"
	"github.com/agiraph/agiraph/server/host"
	"github.com/agiraph/agiraph/server/langgraphapi"
)

// chat is the state of the test graphs.
type chat struct {
	Messages []string `json:"messages,omitempty" graph:"append"`
	Topic    string   `json:"topic,omitempty"`
}

// gate lets a test hold the "slow" graph's node until it says.
type gate struct {
	entered chan struct{} // a value each time the node starts
	release chan struct{} // closed to let the node finish
	once    sync.Once
}

func newGate() *gate { return &gate{entered: make(chan struct{}, 16), release: make(chan struct{})} }

func (g *gate) open() { g.once.Do(func() { close(g.release) }) }

// graphs registers the test graphs:
//   - echo: START → greet → END, greet appends "hello <topic>" and emits a custom event;
//   - approve: START → draft → review → END, review asks for approval with an interrupt;
//   - slow: START → wait → END, wait appends "done" once the gate is released;
//   - writer: START → write → END, write asks a scripted model about the topic, streaming its
//     answer "once upon a <topic>" (graph.OnText), and appends the answer.
func register(t *testing.T, h *langgraphapi.Handler, st store.Store, g *gate) {
	t.Helper()
	echo := graph.New[chat]()
	echo.AddNode("greet", func(ctx context.Context, s chat) (chat, error) {
		graph.Emit(ctx, map[string]string{"greeting": s.Topic})
		return chat{Messages: []string{"hello " + s.Topic}}, nil
	})
	echo.AddEdge(graph.START, "greet")
	echo.AddEdge("greet", graph.END)

	approve := graph.New[chat]()
	approve.AddNode("draft", func(ctx context.Context, s chat) (chat, error) {
		return chat{Messages: []string{"draft about " + s.Topic}}, nil
	})
	approve.AddNode("review", review)
	approve.AddEdge(graph.START, "draft")
	approve.AddEdge("draft", "review")
	approve.AddEdge("review", graph.END)

	slow := graph.New[chat]()
	slow.AddNode("wait", func(ctx context.Context, s chat) (chat, error) {
		g.entered <- struct{}{}
		select {
		case <-g.release:
			return chat{Messages: []string{"done " + s.Topic}}, nil
		case <-ctx.Done():
			return chat{}, ctx.Err()
		}
	})
	slow.AddEdge(graph.START, "wait")
	slow.AddEdge("wait", graph.END)

	model := scripted.NewFunc("writer", func(_ context.Context, req providers.Request) (scripted.Turn, error) {
		return scripted.Turn{Text: "once upon a " + req.Messages[0].Parts[0].Text}, nil
	})
	writer := graph.New[chat]()
	writer.AddNode("write", func(ctx context.Context, s chat) (chat, error) {
		resp, err := model.Generate(ctx, providers.Request{Messages: []providers.Message{providers.UserText(s.Topic)}, OnText: graph.OnText(ctx, model.Name())})
		if err != nil {
			return chat{}, err
		}
		return chat{Messages: []string{resp.Message.Parts[0].Text}}, nil
	})
	writer.AddEdge(graph.START, "write")
	writer.AddEdge("write", graph.END)

	for id, b := range map[string]*graph.StateGraph[chat]{"echo": echo, "approve": approve, "slow": slow, "writer": writer} {
		c, err := b.Compile(graph.WithCheckpointer(st.Saver()))
		require.NoError(t, err)
		require.NoError(t, langgraphapi.Register(h, id, c, st.Saver()))
	}
}

// review asks "publish?" with an interrupt and appends "review: <the answer>".
func review(ctx context.Context, _ chat) (chat, error) {
	answer, err := graph.Interrupt[string](ctx, map[string]string{"question": "publish?"})
	if err != nil {
		return chat{}, err
	}
	return chat{Messages: []string{"review: " + answer}}, nil
}

// fan is the state of the graph fanout. Its topic is always sent, even when empty: what a task
// wrote leaves it out.
type fan struct {
	Topic  string `json:"topic"`
	Draft  string `json:"draft,omitempty"`
	Review string `json:"review,omitempty"`
}

// fanOut is the graph fanout, the Go twin of testdata/compare/graph.mjs's: drafter and reviewer run in
// one superstep, each writing a field of its own.
func fanOut(t *testing.T, saver checkpoint.Saver) *graph.Compiled[fan] {
	t.Helper()
	b := graph.New[fan]()
	b.AddNode("drafter", func(_ context.Context, s fan) (fan, error) { return fan{Draft: "a draft on " + s.Topic}, nil })
	b.AddNode("reviewer", func(_ context.Context, s fan) (fan, error) { return fan{Review: "a review of " + s.Topic}, nil })
	b.AddEdge(graph.START, "drafter")
	b.AddEdge(graph.START, "reviewer")
	b.AddEdge("drafter", graph.END)
	b.AddEdge("reviewer", graph.END)
	c, err := b.Compile(graph.WithCheckpointer(saver))
	require.NoError(t, err)
	return c
}

// api is a test's server with its store.
type api struct {
	t    *testing.T
	url  string // where the server is
	srv  *httptest.Server
	h    *langgraphapi.Handler
	st   store.Store
	gate *gate
	host *host.Host // its agents are the threads of the "squad" assistant
	// clock is the crons' clock, which the test moves (the scripts too, at /__test/advance).
	clock *triggers.FakeClock
}

func newAPI(t *testing.T) *api {
	st := store.NewMemory()
	hs, err := host.New(host.WithRoot(t.TempDir()), host.WithSquadOptions(demoTeam))
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, hs.Close()) })
	a := &api{t: t, st: st, gate: newGate(), host: hs, clock: triggers.NewFakeClock(time.Now().UTC().Truncate(time.Minute))}
	a.open()
	return a
}

// demoTeam gives every agent the offline demo team, whose researcher on the open questions asks
// the human demo.HumanQuestion.
func demoTeam(string) []nodes.Option {
	return append(demo.Team(demo.WithHumanQuestion()), nodes.WithModelOptions(models.WithoutRetry()), nodes.WithTick(20*time.Millisecond))
}

// open starts a handler on the api's store.
func (a *api) open() {
	a.h = langgraphapi.New(a.st, langgraphapi.WithClock(a.clock))
	register(a.t, a.h, a.st, a.gate)
	require.NoError(a.t, langgraphapi.RegisterHost(a.h, "squad", a.host))
	mux := http.NewServeMux()
	mux.Handle("/", withGate(a.h, a.gate))
	mux.HandleFunc("POST /__test/advance", func(w http.ResponseWriter, r *http.Request) {
		a.clock.Advance(time.Minute)
		w.WriteHeader(http.StatusNoContent)
	})
	a.srv = httptest.NewServer(mux)
	a.url = a.srv.URL
	a.t.Cleanup(a.close)
}

// withGate serves h, and the gate of the slow graph for the scripts and processes that work it
// through the server.
func withGate(h http.Handler, g *gate) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/", h)
	mux.HandleFunc("POST /__test/release", func(w http.ResponseWriter, r *http.Request) {
		g.open()
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("GET /__test/entered", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-g.entered:
			w.WriteHeader(http.StatusNoContent)
		case <-r.Context().Done():
		}
	})
	return mux
}

func (a *api) close() {
	a.srv.Close()
	require.NoError(a.t, a.h.Close())
}

// call sends a request and decodes the JSON answer into out (when not nil); it returns the status.
func (a *api) call(method, path string, body any, out any) int {
	a.t.Helper()
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		require.NoError(a.t, err)
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, a.url+path, r)
	require.NoError(a.t, err)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(a.t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(a.t, err)
	if out != nil && len(bytes.TrimSpace(b)) > 0 {
		require.NoError(a.t, json.Unmarshal(b, out), "%s %s answered %s", method, path, b)
	}
	return resp.StatusCode
}

type obj = map[string]any

// must calls and requires the status.
func (a *api) must(status int, method, path string, body any) obj {
	a.t.Helper()
	var out obj
	var raw any
	got := a.call(method, path, body, &raw)
	require.Equal(a.t, status, got, "%s %s answered %v", method, path, raw)
	out, _ = raw.(obj)
	return out
}

func (a *api) list(method, path string, body any) []obj {
	a.t.Helper()
	var out []obj
	require.Equal(a.t, http.StatusOK, a.call(method, path, body, &out), "%s %s", method, path)
	return out
}

// event is a server-sent event.
type event struct {
	ID, Name string
	Data     any
}

// stream sends a request and reads its server-sent events to the end.
func (a *api) stream(method, path string, body any, header http.Header) []event {
	a.t.Helper()
	b, err := json.Marshal(body)
	require.NoError(a.t, err)
	req, err := http.NewRequest(method, a.url+path, bytes.NewReader(b))
	require.NoError(a.t, err)
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(a.t, err)
	defer resp.Body.Close()
	require.Equal(a.t, http.StatusOK, resp.StatusCode)
	require.Equal(a.t, "text/event-stream", resp.Header.Get("Content-Type"))
	return readEvents(a.t, resp.Body)
}

func readEvents(t *testing.T, r io.Reader) []event {
	var out []event
	var cur event
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			out = append(out, cur)
			cur = event{}
		case strings.HasPrefix(line, "event: "):
			cur.Name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "id: "):
			cur.ID = strings.TrimPrefix(line, "id: ")
		case strings.HasPrefix(line, "data: "):
			require.NoError(t, json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &cur.Data))
		}
	}
	return out
}

func names(evs []event) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.Name)
	}
	return out
}

func TestAssistants(t *testing.T) {
	a := newAPI(t)
	all := a.list("POST", "/assistants/search", obj{})
	require.Len(t, all, 5)
	found := a.list("POST", "/assistants/search", obj{"graph_id": "echo"})
	require.Len(t, found, 1)
	id := found[0]["assistant_id"].(string)
	assert.Equal(t, "echo", found[0]["graph_id"])
	assert.Equal(t, obj{"created_by": "system"}, found[0]["metadata"])

	// By its ID or its graph's.
	assert.Equal(t, id, a.must(200, "GET", "/assistants/"+id, nil)["assistant_id"])
	assert.Equal(t, id, a.must(200, "GET", "/assistants/echo", nil)["assistant_id"])
	assert.Contains(t, a.must(404, "GET", "/assistants/nope", nil)["detail"], `"nope"`)

	g := a.must(200, "GET", "/assistants/approve/graph", nil)
	assert.Equal(t, []any{
		obj{"source": "__start__", "target": "draft", "conditional": false},
		obj{"source": "draft", "target": "review", "conditional": false},
		obj{"source": "review", "target": "__end__", "conditional": false},
	}, g["edges"])
	require.Len(t, g["nodes"], 4)
	assert.Equal(t, obj{"id": "draft", "type": "runnable", "metadata": obj{},
		"data": obj{"id": []any{"agiraph", "graph", "node"}, "name": "draft"}}, g["nodes"].([]any)[1])

	s := a.must(200, "GET", "/assistants/echo/schemas", nil)
	assert.Equal(t, "echo", s["graph_id"])
	props := s["state_schema"].(obj)["properties"].(obj)
	assert.Contains(t, props, "messages")
	assert.Contains(t, props, "topic")
}

func TestThreads(t *testing.T) {
	a := newAPI(t)
	th := a.must(200, "POST", "/threads", obj{"metadata": obj{"owner": "ana", "graph_id": "echo"}})
	id := th["thread_id"].(string)
	assert.Equal(t, "idle", th["status"])
	assert.Contains(t, a.must(409, "POST", "/threads", obj{"thread_id": id})["detail"], id)
	assert.Equal(t, id, a.must(200, "POST", "/threads", obj{"thread_id": id, "if_exists": "do_nothing"})["thread_id"])
	a.must(422, "POST", "/threads", obj{"thread_id": "not-a-uuid"})

	patched := a.must(200, "PATCH", "/threads/"+id, obj{"metadata": obj{"tag": "x"}})
	assert.Equal(t, obj{"owner": "ana", "graph_id": "echo", "tag": "x"}, patched["metadata"])
	a.must(404, "GET", "/threads/00000000-0000-0000-0000-000000000000", nil)

	// A run gives the thread its state; state, history, update and copy read and change it.
	out := a.must(200, "POST", "/threads/"+id+"/runs/wait", obj{"assistant_id": "echo", "input": obj{"topic": "go"}})
	assert.Equal(t, obj{"messages": []any{"hello go"}, "topic": "go"}, out)
	st := a.must(200, "GET", "/threads/"+id+"/state", nil)
	assert.Equal(t, obj{"messages": []any{"hello go"}, "topic": "go"}, st["values"])
	assert.Equal(t, []any{}, st["next"])
	cp := st["checkpoint"].(obj)["checkpoint_id"].(string)

	upd := a.must(200, "POST", "/threads/"+id+"/state", obj{"values": obj{"messages": []string{"edited"}}, "as_node": "greet"})
	assert.NotEqual(t, cp, upd["checkpoint"].(obj)["checkpoint_id"])
	a.must(422, "POST", "/threads/"+id+"/state", obj{"values": obj{"nope": 1}})
	a.must(422, "POST", "/threads/"+id+"/state", obj{"values": obj{}, "as_node": "nope"})
	assert.Equal(t, []any{"hello go", "edited"}, a.must(200, "GET", "/threads/"+id+"/state", nil)["values"].(obj)["messages"])
	old := a.must(200, "GET", "/threads/"+id+"/state/"+cp, nil)
	assert.Equal(t, []any{"hello go"}, old["values"].(obj)["messages"])
	at := a.must(200, "POST", "/threads/"+id+"/state/checkpoint", obj{"checkpoint": obj{"checkpoint_id": cp}})
	assert.Equal(t, old["values"], at["values"])

	hist := a.list("POST", "/threads/"+id+"/history", obj{"limit": 2})
	require.Len(t, hist, 2)
	assert.Equal(t, []any{"hello go", "edited"}, hist[0]["values"].(obj)["messages"])
	assert.Equal(t, cp, hist[1]["checkpoint"].(obj)["checkpoint_id"])

	cpy := a.must(200, "POST", "/threads/"+id+"/copy", nil)
	assert.NotEqual(t, id, cpy["thread_id"])
	assert.Equal(t, []any{"hello go", "edited"}, cpy["values"].(obj)["messages"])

	found := a.list("POST", "/threads/search", obj{"metadata": obj{"tag": "x"}})
	assert.Len(t, found, 2)
	found = a.list("POST", "/threads/search", obj{"ids": []string{id}, "values": obj{"topic": "go"}})
	require.Len(t, found, 1)
	assert.Equal(t, id, found[0]["thread_id"])

	a.must(204, "DELETE", "/threads/"+id, nil)
	a.must(404, "GET", "/threads/"+id, nil)
	a.must(404, "GET", "/threads/"+id+"/state", nil)
	assert.Equal(t, []any{"hello go", "edited"}, a.must(200, "GET", "/threads/"+cpy["thread_id"].(string)+"/state", nil)["values"].(obj)["messages"])
}

// TestPatchState: PATCH /threads/{id}/state merges metadata into the latest state's, or that of
// the state at a checkpoint, kept by the checkpointer and found by the history's filter.
func TestPatchState(t *testing.T) {
	a := newAPI(t)
	id := a.must(200, "POST", "/threads", nil)["thread_id"].(string)
	a.must(422, "PATCH", "/threads/"+id+"/state", obj{"metadata": obj{"tag": "x"}}) // no graph yet
	a.must(200, "POST", "/threads/"+id+"/runs/wait", obj{"assistant_id": "echo", "input": obj{"topic": "go"}})
	first := a.must(200, "GET", "/threads/"+id+"/state", nil)["checkpoint"].(obj)["checkpoint_id"].(string)
	a.must(200, "POST", "/threads/"+id+"/runs/wait", obj{"assistant_id": "echo", "input": obj{"topic": "again"}})

	a.must(204, "PATCH", "/threads/"+id+"/state", obj{"metadata": obj{"tag": "x", "by": "ann"}})
	a.must(204, "PATCH", "/threads/"+id+"/state", obj{"metadata": obj{"tag": "y"}})
	meta := a.must(200, "GET", "/threads/"+id+"/state", nil)["metadata"].(obj)
	assert.Equal(t, "y", meta["tag"])
	assert.Equal(t, "ann", meta["by"])
	assert.Equal(t, "loop", meta["source"])

	a.must(204, "PATCH", "/threads/"+id+"/state", obj{"metadata": obj{"tag": "first"}, "checkpoint": obj{"checkpoint_id": first}})
	assert.Equal(t, "first", a.must(200, "GET", "/threads/"+id+"/state/"+first, nil)["metadata"].(obj)["tag"])
	found := a.list("POST", "/threads/"+id+"/history", obj{"metadata": obj{"tag": "first"}})
	require.Len(t, found, 1)
	assert.Equal(t, first, found[0]["checkpoint"].(obj)["checkpoint_id"])

	assert.Contains(t, a.must(422, "PATCH", "/threads/"+id+"/state", obj{"metadata": obj{"n": 1}})["detail"], `"n"`)
	a.must(422, "PATCH", "/threads/"+id+"/state", obj{})
	a.must(404, "PATCH", "/threads/"+id+"/state", obj{"metadata": obj{"tag": "x"}, "checkpoint_id": "nope"})
	a.must(404, "PATCH", "/threads/00000000-0000-0000-0000-000000000000/state", obj{"metadata": obj{"tag": "x"}})

	// A thread of the graph that has no state yet.
	fresh := a.must(200, "POST", "/threads", obj{"metadata": obj{"graph_id": "echo"}})["thread_id"].(string)
	assert.Contains(t, a.must(404, "PATCH", "/threads/"+fresh+"/state", obj{"metadata": obj{"tag": "x"}})["detail"], "no state yet")
}

func TestStreamModes(t *testing.T) {
	a := newAPI(t)
	id := a.must(200, "POST", "/threads", nil)["thread_id"].(string)
	evs := a.stream("POST", "/threads/"+id+"/runs/stream", obj{
		"assistant_id": "echo", "input": obj{"topic": "sse"},
		"stream_mode": []string{"values", "updates", "custom", "debug", "events"},
	}, nil)
	require.NotEmpty(t, evs)
	assert.Equal(t, "metadata", evs[0].Name)
	assert.Equal(t, "1", evs[0].ID)
	runID := evs[0].Data.(obj)["run_id"].(string)
	var values []any
	var sawUpdate, sawCustom, sawTask, sawCheckpoint, sawChain bool
	for _, e := range evs {
		switch e.Name {
		case "values":
			values = append(values, e.Data)
		case "updates":
			sawUpdate = assert.Equal(t, obj{"greet": obj{"messages": []any{"hello sse"}}}, e.Data) || sawUpdate
		case "custom":
			sawCustom = assert.Equal(t, obj{"greeting": "sse"}, e.Data)
		case "debug":
			switch e.Data.(obj)["type"] {
			case "task_result":
				sawTask = true
			case "checkpoint":
				sawCheckpoint = true
			}
		case "events":
			sawChain = sawChain || e.Data.(obj)["event"] == "on_chain_end"
		}
	}
	assert.Equal(t, obj{"messages": []any{"hello sse"}, "topic": "sse"}, values[len(values)-1])
	assert.True(t, sawUpdate && sawCustom && sawTask && sawCheckpoint && sawChain, "%v", names(evs))

	run := a.must(200, "GET", "/threads/"+id+"/runs/"+runID, nil)
	assert.Equal(t, "success", run["status"])
	assert.Equal(t, "idle", a.must(200, "GET", "/threads/"+id, nil)["status"])
	assert.Len(t, a.list("GET", "/threads/"+id+"/runs", nil), 1)
}

// TestTaskEvents: the tasks mode shows each task's input, what triggered it and its result, as
// LangGraph's server does; in events mode the run's chain is LangGraph's and a task paused by an
// interrupt does not end.
func TestTaskEvents(t *testing.T) {
	a := newAPI(t)
	id := a.must(200, "POST", "/threads", nil)["thread_id"].(string)
	evs := a.stream("POST", "/threads/"+id+"/runs/stream", obj{
		"assistant_id": "approve", "input": obj{"topic": "go"}, "stream_mode": []string{"tasks", "events"},
	}, nil)
	var tasks, chains []obj
	for _, e := range evs {
		switch e.Name {
		case "tasks":
			d := e.Data.(obj)
			delete(d, "id")
			tasks = append(tasks, d)
		case "events":
			d := e.Data.(obj)
			chains = append(chains, obj{"event": d["event"], "name": d["name"]})
		}
	}
	assert.Equal(t, []obj{
		{"name": "draft", "input": obj{"topic": "go"}, "triggers": []any{"branch:to:draft"}, "interrupts": []any{}},
		{"name": "draft", "result": obj{"messages": []any{"draft about go"}}, "error": nil, "interrupts": []any{}},
		{"name": "review", "input": obj{"topic": "go", "messages": []any{"draft about go"}}, "triggers": []any{"branch:to:review"}, "interrupts": []any{}},
		{"name": "review", "result": obj{}, "error": nil, "interrupts": []any{obj{"id": tasks[3]["interrupts"].([]any)[0].(obj)["id"], "value": obj{"question": "publish?"}}}},
	}, tasks)
	assert.Equal(t, []obj{
		{"event": "on_chain_start", "name": "LangGraph"},
		{"event": "on_chain_start", "name": "draft"},
		{"event": "on_chain_end", "name": "draft"},
		{"event": "on_chain_start", "name": "review"},
		{"event": "on_chain_end", "name": "LangGraph"},
	}, chains)
}

func TestTaskResults(t *testing.T) {
	a := newAPI(t)
	require.NoError(t, langgraphapi.Register(a.h, "fanout", fanOut(t, a.st.Saver()), a.st.Saver()))
	id := a.must(200, "POST", "/threads", nil)["thread_id"].(string)
	wrote := map[string]any{"drafter": obj{"draft": "a draft on go"}, "reviewer": obj{"review": "a review of go"}}

	results := func(tasks []any) map[string]any {
		out := map[string]any{}
		for _, task := range tasks {
			out[task.(obj)["name"].(string)] = task.(obj)["result"]
		}
		return out
	}
	var streamed []any
	for _, e := range a.stream("POST", "/threads/"+id+"/runs/stream", obj{"assistant_id": "fanout", "input": obj{"topic": "go"}, "stream_mode": "tasks"}, nil) {
		if d, ok := e.Data.(obj); ok && d["result"] != nil {
			streamed = append(streamed, d)
		}
	}
	assert.Equal(t, wrote, results(streamed), "each task's result, as the run streams it, is what it wrote")

	history := a.list("POST", "/threads/"+id+"/history", obj{})
	require.Len(t, history, 2)
	assert.Equal(t, wrote, results(history[1]["tasks"].([]any)), "the input's checkpoint lists its tasks with what each wrote")
	assert.Empty(t, history[0]["tasks"])
}

func TestMessagesModes(t *testing.T) {
	a := newAPI(t)
	id := a.must(200, "POST", "/threads", nil)["thread_id"].(string)
	evs := a.stream("POST", "/threads/"+id+"/runs/stream", obj{
		"assistant_id": "writer", "input": obj{"topic": "time"}, "stream_mode": []string{"messages-tuple", "messages"},
	}, nil)
	var tuples, partials []string
	var msgID string
	for _, e := range evs {
		switch e.Name {
		case "messages":
			pair := e.Data.([]any)
			require.Len(t, pair, 2)
			chunk, meta := pair[0].(obj), pair[1].(obj)
			assert.Equal(t, "AIMessageChunk", chunk["type"])
			assert.Equal(t, "write", meta["langgraph_node"])
			assert.Equal(t, "scripted/writer", meta["ls_model_name"])
			assert.Equal(t, id, meta["thread_id"])
			assert.Equal(t, "writer", meta["graph_id"])
			tuples = append(tuples, chunk["content"].(string))
			msgID = chunk["id"].(string)
		case "messages/metadata":
			require.Contains(t, e.Data.(obj), msgID)
		case "messages/partial":
			partials = append(partials, e.Data.([]any)[0].(obj)["content"].(string))
		}
	}
	assert.Equal(t, []string{"once ", "upon ", "a ", "time"}, tuples)
	assert.Equal(t, []string{"once ", "once upon ", "once upon a ", "once upon a time"}, partials)
	assert.Less(t, slices.Index(names(evs), "messages/metadata"), slices.Index(names(evs), "messages/partial"), "%v", names(evs))

	evs = a.stream("POST", "/threads/"+id+"/runs/stream", obj{"assistant_id": "writer", "input": obj{"topic": "go"}}, nil)
	assert.NotContains(t, names(evs), "messages", "tokens stream only when asked")
}

func TestStatelessRuns(t *testing.T) {
	a := newAPI(t)
	out := a.must(200, "POST", "/runs/wait", obj{"assistant_id": "echo", "input": obj{"topic": "once"}})
	assert.Equal(t, obj{"messages": []any{"hello once"}, "topic": "once"}, out)
	assert.Empty(t, a.list("POST", "/threads/search", obj{}), "the temporary thread is deleted")

	// Fields given as null are as not given.
	out = a.must(200, "POST", "/runs/wait", obj{"assistant_id": "echo", "input": obj{"topic": "n"}, "interrupt_before": nil, "interrupt_after": nil})
	assert.Equal(t, obj{"messages": []any{"hello n"}, "topic": "n"}, out)

	evs := a.stream("POST", "/runs/stream", obj{"assistant_id": "echo", "input": obj{"topic": "s"}, "on_completion": "keep"}, nil)
	assert.Equal(t, []string{"metadata", "values", "values"}, names(evs))
	assert.Len(t, a.list("POST", "/threads/search", obj{}), 1)
}

func TestInterruptAndCommand(t *testing.T) {
	a := newAPI(t)
	id := a.must(200, "POST", "/threads", nil)["thread_id"].(string)
	out := a.must(200, "POST", "/threads/"+id+"/runs/wait", obj{"assistant_id": "approve", "input": obj{"topic": "cats"}})
	pending := out["__interrupt__"].([]any)
	require.Len(t, pending, 1)
	assert.Equal(t, obj{"question": "publish?"}, pending[0].(obj)["value"])
	th := a.must(200, "GET", "/threads/"+id, nil)
	assert.Equal(t, "interrupted", th["status"])
	assert.Len(t, th["interrupts"], 1)
	st := a.must(200, "GET", "/threads/"+id+"/state", nil)
	assert.Equal(t, []any{"review"}, st["next"])
	task := st["tasks"].([]any)[0].(obj)
	assert.Equal(t, []any{"__pregel_pull", "review"}, task["path"])
	assert.Equal(t, pending, task["interrupts"])

	// Invalid commands are refused before anything runs.
	a.must(422, "POST", "/threads/"+id+"/runs/wait", obj{"assistant_id": "approve", "command": obj{}})
	a.must(422, "POST", "/threads/"+id+"/runs/wait", obj{"assistant_id": "approve", "command": obj{"goto": "nowhere"}})
	a.must(422, "POST", "/threads/"+id+"/runs/wait", obj{"assistant_id": "approve", "command": obj{"update": obj{"nope": 1}}})
	a.must(422, "POST", "/threads/"+id+"/runs/wait", obj{"assistant_id": "approve", "command": obj{"goto": obj{"node": "draft", "input": 1}}})

	out = a.must(200, "POST", "/threads/"+id+"/runs/wait", obj{"assistant_id": "approve", "command": obj{"resume": "yes", "update": obj{"topic": "dogs"}}})
	assert.Equal(t, obj{"messages": []any{"draft about cats", "review: yes"}, "topic": "dogs"}, out)
	assert.Equal(t, "idle", a.must(200, "GET", "/threads/"+id, nil)["status"])
}

func TestErrors(t *testing.T) {
	a := newAPI(t)
	id := a.must(200, "POST", "/threads", nil)["thread_id"].(string)
	none := "00000000-0000-0000-0000-000000000000"
	for _, c := range []struct {
		status       int
		method, path string
		body         any
	}{
		{404, "POST", "/threads/" + id + "/runs", obj{"assistant_id": "nope"}},
		{404, "POST", "/threads/" + none + "/runs", obj{"assistant_id": "echo"}},
		{404, "GET", "/threads/" + id + "/runs/" + none, nil},
		{404, "GET", "/threads/" + id + "/runs/" + none + "/join", nil},
		{404, "POST", "/threads/" + id + "/runs/" + none + "/cancel", nil},
		{422, "POST", "/threads/" + id + "/runs", obj{"assistant_id": "echo", "stream_mode": "nope"}},
		{422, "POST", "/threads/" + id + "/runs", obj{"assistant_id": "echo", "input": obj{"nope": 1}}},
		{422, "POST", "/threads/" + id + "/runs", obj{"assistant_id": "echo", "multitask_strategy": "nope"}},
		{422, "POST", "/threads/" + id + "/runs", obj{"assistant_id": "echo", "interrupt_before": []string{"nope"}}},
		{422, "POST", "/threads", "not an object"},
	} {
		body := a.must(c.status, c.method, c.path, c.body)
		assert.NotEmpty(t, body["detail"], "%s %s", c.method, c.path)
	}
	// if_not_exists creates the thread.
	out := a.must(200, "POST", "/threads/"+none+"/runs/wait", obj{"assistant_id": "echo", "input": obj{"topic": "new"}, "if_not_exists": "create"})
	assert.Equal(t, []any{"hello new"}, out["messages"])
	a.must(200, "GET", "/threads/"+none, nil)
}

// busy starts a run of the slow graph on a new thread and waits until its node runs.
func (a *api) busy() (thread, run string) {
	a.t.Helper()
	thread = a.must(200, "POST", "/threads", nil)["thread_id"].(string)
	return thread, a.busyOn(thread)
}

// busyOn starts a run of the slow graph on thread and waits until its node runs.
func (a *api) busyOn(thread string) (run string) {
	a.t.Helper()
	run = a.must(200, "POST", "/threads/"+thread+"/runs", obj{"assistant_id": "slow", "input": obj{"topic": "first"}})["run_id"].(string)
	<-a.gate.entered
	return run
}

func TestMultitask(t *testing.T) {
	t.Run("reject", func(t *testing.T) {
		a := newAPI(t)
		thread, run := a.busy()
		assert.Equal(t, "busy", a.must(200, "GET", "/threads/"+thread, nil)["status"])
		body := a.must(409, "POST", "/threads/"+thread+"/runs", obj{"assistant_id": "slow", "input": obj{"topic": "second"}})
		assert.Contains(t, body["detail"], run)
		a.gate.open()
		assert.Equal(t, []any{"done first"}, a.must(200, "GET", "/threads/"+thread+"/runs/"+run+"/join", nil)["messages"])
	})
	t.Run("enqueue", func(t *testing.T) {
		a := newAPI(t)
		thread, first := a.busy()
		second := a.must(200, "POST", "/threads/"+thread+"/runs", obj{"assistant_id": "echo", "input": obj{"topic": "second"}, "multitask_strategy": "enqueue"})
		assert.Equal(t, "pending", second["status"])
		// The thread stays the slow graph's while its run is in flight: its state reads through it.
		th := a.must(200, "GET", "/threads/"+thread, nil)
		assert.Equal(t, "slow", th["metadata"].(obj)["graph_id"])
		a.gate.open()
		out := a.must(200, "GET", "/threads/"+thread+"/runs/"+second["run_id"].(string)+"/join", nil)
		assert.Equal(t, []any{"done first", "hello second"}, out["messages"])
		assert.Equal(t, "success", a.must(200, "GET", "/threads/"+thread+"/runs/"+first, nil)["status"])
	})
	t.Run("interrupt", func(t *testing.T) {
		a := newAPI(t)
		thread, first := a.busy()
		second := a.must(200, "POST", "/threads/"+thread+"/runs", obj{"assistant_id": "echo", "input": obj{"topic": "second"}, "multitask_strategy": "interrupt"})
		out := a.must(200, "GET", "/threads/"+thread+"/runs/"+second["run_id"].(string)+"/join", nil)
		assert.Equal(t, []any{"hello second"}, out["messages"])
		assert.Equal(t, "interrupted", a.must(200, "GET", "/threads/"+thread+"/runs/"+first, nil)["status"])
	})
	t.Run("rollback", func(t *testing.T) {
		a := newAPI(t)
		thread := a.must(200, "POST", "/threads", nil)["thread_id"].(string)
		a.must(200, "POST", "/threads/"+thread+"/runs/wait", obj{"assistant_id": "echo", "input": obj{"topic": "zero"}})
		first := a.busyOn(thread) // its input sets the topic to "first"
		second := a.must(200, "POST", "/threads/"+thread+"/runs", obj{"assistant_id": "echo", "input": obj{}, "multitask_strategy": "rollback"})
		out := a.must(200, "GET", "/threads/"+thread+"/runs/"+second["run_id"].(string)+"/join", nil)
		// The second run starts from the state before the first: the topic it greets is "zero".
		assert.Equal(t, obj{"messages": []any{"hello zero", "hello zero"}, "topic": "zero"}, out)
		a.must(404, "GET", "/threads/"+thread+"/runs/"+first, nil)
		assert.Len(t, a.list("GET", "/threads/"+thread+"/runs", nil), 2)
	})
}

func TestCancel(t *testing.T) {
	a := newAPI(t)
	thread, run := a.busy()
	a.must(204, "POST", "/threads/"+thread+"/runs/"+run+"/cancel?wait=1", nil)
	assert.Equal(t, "interrupted", a.must(200, "GET", "/threads/"+thread+"/runs/"+run, nil)["status"])
	assert.Equal(t, "idle", a.must(200, "GET", "/threads/"+thread, nil)["status"])
}

func TestRestartContinuesRuns(t *testing.T) {
	a := newAPI(t)
	threadID, running := a.busy()
	queued := a.must(200, "POST", "/threads/"+threadID+"/runs", obj{"assistant_id": "echo", "input": obj{"topic": "later"}, "multitask_strategy": "enqueue"})["run_id"].(string)

	// The handler stops with one run running and one queued; another opens on the same store.
	a.close()
	a.open()
	a.gate.open()
	out := a.must(200, "GET", "/threads/"+threadID+"/runs/"+queued+"/join", nil)
	assert.Equal(t, []any{"done first", "hello later"}, out["messages"])
	assert.Equal(t, "success", a.must(200, "GET", "/threads/"+threadID+"/runs/"+running, nil)["status"])
}

func TestRunOptions(t *testing.T) {
	a := newAPI(t)
	id := a.must(200, "POST", "/threads", nil)["thread_id"].(string)

	// interrupt_before pauses before the node; a run without input goes on.
	out := a.must(200, "POST", "/threads/"+id+"/runs/wait", obj{"assistant_id": "approve", "input": obj{"topic": "x"}, "interrupt_before": []string{"review"}})
	assert.Equal(t, []any{"draft about x"}, out["messages"])
	assert.Equal(t, []any{"review"}, a.must(200, "GET", "/threads/"+id+"/state", nil)["next"])
	out = a.must(200, "POST", "/threads/"+id+"/runs/wait", obj{"assistant_id": "approve"})
	require.Contains(t, out, "__interrupt__", "the review asks once it runs")
	out = a.must(200, "POST", "/threads/"+id+"/runs/wait", obj{"assistant_id": "approve", "command": obj{"resume": "ok"}})
	assert.Equal(t, []any{"draft about x", "review: ok"}, out["messages"])

	// checkpoint_id runs from an earlier checkpoint: the first draft's.
	hist := a.list("POST", "/threads/"+id+"/history", obj{"limit": 100})
	var drafted string
	for _, st := range hist {
		if msgs, _ := st["values"].(obj)["messages"].([]any); len(msgs) == 1 && len(st["next"].([]any)) == 1 && st["next"].([]any)[0] == "review" {
			drafted = st["checkpoint"].(obj)["checkpoint_id"].(string)
		}
	}
	require.NotEmpty(t, drafted)
	out = a.must(200, "POST", "/threads/"+id+"/runs/wait", obj{"assistant_id": "approve", "checkpoint_id": drafted, "command": obj{"resume": "again"}})
	assert.Equal(t, []any{"draft about x", "review: again"}, out["messages"])
}

func TestRegister(t *testing.T) {
	st := store.NewMemory()
	h := langgraphapi.New(st)
	defer h.Close()
	register(t, h, st, newGate())
	g := graph.New[chat]()
	g.AddNode("n", func(context.Context, chat) (chat, error) { return chat{}, nil })
	g.AddEdge(graph.START, "n")
	g.AddEdge("n", graph.END)
	c, err := g.Compile()
	require.NoError(t, err)
	assert.ErrorContains(t, langgraphapi.Register(h, "echo", c, st.Saver()), `"echo" is registered already`)
	assert.ErrorContains(t, langgraphapi.Register(h, "", c, st.Saver()), "empty graph ID")
	assert.ErrorContains(t, langgraphapi.Register(h, "other", c, nil), "checkpointer")
}

func TestStoreItems(t *testing.T) {
	a := newAPI(t)
	a.must(204, "PUT", "/store/items", obj{"namespace": []string{"docs", "x/y"}, "key": "k.1", "value": obj{"n": 1}})
	got := a.must(200, "GET", "/store/items?namespace=docs.x%2Fy&key=k.1", nil)
	assert.Equal(t, obj{"n": float64(1)}, got["value"])
	assert.Equal(t, []any{"docs", "x/y"}, got["namespace"])
	assert.Equal(t, obj{"namespaces": []any{[]any{"docs", "x/y"}}}, a.must(200, "POST", "/store/namespaces", obj{}))
	assert.Empty(t, a.must(200, "POST", "/store/items/search", obj{"namespace_prefix": []string{"doc"}})["items"], "a prefix is whole labels")
	for _, bad := range []obj{
		{"namespace": []string{"a.b"}, "key": "k", "value": obj{}},
		{"namespace": []string{"a", ""}, "key": "k", "value": obj{}},
		{"namespace": []string{}, "key": "k", "value": obj{}},
		{"namespace": []string{"a"}, "key": "", "value": obj{}},
		{"namespace": []string{"a"}, "key": "k", "value": []int{1}},
		{"namespace": []string{"a"}, "key": "k", "value": obj{}, "ttl": 5},
	} {
		a.must(422, "PUT", "/store/items", bad)
	}
	a.must(422, "POST", "/store/items/search", obj{"namespace_prefix": []string{"a.b"}})
	a.must(204, "DELETE", "/store/items", obj{"namespace": []string{"docs", "x/y"}, "key": "k.1"})
	var none any
	require.Equal(t, 200, a.call("GET", "/store/items?namespace=docs.x%2Fy&key=k.1", nil, &none))
	assert.Nil(t, none)
}

func TestAssistantEditsRefused(t *testing.T) {
	a := newAPI(t)
	a.must(422, "POST", "/assistants", obj{})
	a.must(422, "POST", "/assistants", obj{"graph_id": "echo", "assistant_id": "not-a-uuid"})
	a.must(404, "POST", "/assistants", obj{"graph_id": "nope"})
	a.must(404, "PATCH", "/assistants/nope", obj{"name": "x"})
	a.must(404, "PATCH", "/assistants/echo", obj{"graph_id": "nope"})
	a.must(404, "POST", "/assistants/nope/versions", obj{})
	a.must(404, "POST", "/assistants/nope/latest", obj{"version": 1})
	a.must(404, "DELETE", "/assistants/nope", nil)

	// A registered graph's assistant, deleted, is made again when the graph is registered again.
	a.must(200, "DELETE", "/assistants/echo", nil)
	a.must(404, "GET", "/assistants/echo", nil)
	a.close()
	a.open()
	assert.Equal(t, float64(1), a.must(200, "GET", "/assistants/echo", nil)["version"])
}
