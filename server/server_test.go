package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/agiraph/agiraph/internal/pgtest"
	"github.com/agiraph/agiraph/models"
	"github.com/agiraph/agiraph/nodes"
	"github.com/agiraph/agiraph/nodes/demo"
	"github.com/agiraph/agiraph/nodes/eventlog"
	"github.com/agiraph/agiraph/nodes/memory"
	"github.com/agiraph/agiraph/nodes/workspace"
	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/providers/scripted"
	"github.com/agiraph/agiraph/server"
	"github.com/agiraph/agiraph/server/host"
	"github.com/agiraph/agiraph/tools"
)

// TestMain runs the tests, or, when the environment says so, a replica of a fleet (see
// replicaMain); the tests' PostgreSQL cluster stops before goleak looks for goroutines left.
func TestMain(m *testing.M) {
	if cfg := os.Getenv(replicaEnv); cfg != "" {
		os.Exit(replicaMain(cfg))
	}
	goleak.VerifyTestMain(withPostgres{m})
}

// withPostgres runs the tests through pgtest.Run.
type withPostgres struct{ m *testing.M }

func (w withPostgres) Run() int { return pgtest.Run(w.m) }

// deadline bounds every wait for an agent's status: generous, never a timed assertion.
const deadline = 60 * time.Second

// demoTeam gives every agent the offline demo team.
func demoTeam(string) []nodes.Option {
	return append(demo.Team(),
		nodes.WithModelOptions(models.WithoutRetry()),
		nodes.WithTick(20*time.Millisecond),
	)
}

// serve serves srv over HTTP; the test server's client sends srv's token with every request.
func serve(t *testing.T, srv *server.Server) *httptest.Server {
	ts := httptest.NewServer(srv)
	ts.Client().Transport = bearer{token: srv.Token(), next: ts.Client().Transport}
	return ts
}

// bearer is a transport that adds the token to requests.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// api is a client of a server under test.
type api struct {
	t    *testing.T
	srv  *server.Server
	ts   *httptest.Server
	root string
}

// start serves a server over root with the given squad options (and server options); cleanup
// closes it.
func start(t *testing.T, root string, team func(string) []nodes.Option, opts ...server.Option) *api {
	t.Helper()
	srv, err := server.New(append([]server.Option{server.WithHost(host.WithRoot(root), host.WithSquadOptions(team))}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	ts := serve(t, srv)
	t.Cleanup(ts.Close)
	t.Cleanup(func() {
		if err := srv.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return &api{t: t, srv: srv, ts: ts, root: root}
}

// do sends a request with a body (a string is sent as is, anything else as JSON) and decodes
// the JSON answer into out when out is not nil. It returns the status.
func (c *api) do(method, path string, body any, out any) int {
	c.t.Helper()
	var r io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		r = strings.NewReader(b)
	default:
		data, err := json.Marshal(b)
		if err != nil {
			c.t.Fatal(err)
		}
		r = strings.NewReader(string(data))
	}
	req, err := http.NewRequest(method, c.ts.URL+path, r)
	if err != nil {
		c.t.Fatal(err)
	}
	if method == http.MethodPost {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.ts.Client().Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatal(err)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			c.t.Fatalf("%s %s: %d %q: %v", method, path, resp.StatusCode, data, err)
		}
	}
	return resp.StatusCode
}

// errorOf sends a request that should fail with status and returns its error message.
func (c *api) errorOf(method, path string, body any, status int) string {
	c.t.Helper()
	var e struct {
		Error string `json:"error"`
	}
	if got := c.do(method, path, body, &e); got != status {
		c.t.Fatalf("%s %s: status %d (%q), want %d", method, path, got, e.Error, status)
	}
	if e.Error == "" {
		c.t.Fatalf("%s %s: no error message", method, path)
	}
	return e.Error
}

func (c *api) summary(id string) host.Summary {
	c.t.Helper()
	var s host.Summary
	if st := c.do("GET", "/agents/"+id, nil, &s); st != http.StatusOK {
		c.t.Fatalf("GET /agents/%s: %d", id, st)
	}
	return s
}

// await polls the agent until its status is one of want, and fails on "failed" unless wanted.
func (c *api) await(id string, want ...string) host.Summary {
	c.t.Helper()
	end := time.Now().Add(deadline)
	for {
		s := c.summary(id)
		if slices.Contains(want, s.Status) {
			return s
		}
		if s.Status == host.StatusFailed || time.Now().After(end) {
			c.dump(id)
			c.t.Fatalf("agent %s is %s (%s), want %v", id, s.Status, s.Error, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// dump logs the agent's events.
func (c *api) dump(id string) {
	var evs struct{ Events []eventlog.Event }
	c.do("GET", "/agents/"+id+"/events", nil, &evs)
	for _, e := range evs.Events {
		c.t.Logf("%d %s node=%s worker=%s %q", e.Seq, e.Type, e.Node, e.Worker, e.Text)
	}
}

func TestAgentLifecycle(t *testing.T) {
	c := start(t, t.TempDir(), demoTeam)
	var created host.Summary
	if st := c.do("POST", "/agents", map[string]string{"id": "alpha", "goal": "AI chips"}, &created); st != http.StatusCreated {
		t.Fatalf("create: %d", st)
	}
	if created.ID != "alpha" || created.Status != host.StatusWorking || created.Goal != "AI chips" || created.Run == "" || created.Mode != "finite" {
		t.Fatalf("created %+v", created)
	}
	done := c.await("alpha", host.StatusComplete)
	if !strings.Contains(done.Output, "# Report") || done.Run != created.Run || done.Nodes != 4 || done.Workers == 0 {
		t.Fatalf("completed %+v", done)
	}
	if done.Created.IsZero() || done.Updated.Before(done.Created) {
		t.Errorf("times: created %v, updated %v", done.Created, done.Updated)
	}

	var list struct{ Agents []host.Summary }
	if st := c.do("GET", "/agents", nil, &list); st != http.StatusOK || len(list.Agents) != 1 || list.Agents[0].ID != "alpha" {
		t.Fatalf("list: %d %+v", st, list)
	}

	// The board, read from disk now that no run is in progress.
	var board struct {
		Run     string
		Nodes   []nodes.Node
		Workers []nodes.Worker
	}
	if st := c.do("GET", "/agents/alpha/board", nil, &board); st != http.StatusOK || board.Run != created.Run || len(board.Nodes) != 4 {
		t.Fatalf("board: %d %+v", st, board)
	}
	for _, n := range board.Nodes {
		if n.Status != nodes.NodeCompleted {
			t.Errorf("node %s is %s", n.ID, n.Status)
		}
	}
	var node struct {
		Node      nodes.Node
		Spec      string
		Published []string
	}
	if st := c.do("GET", "/agents/alpha/board/n4", nil, &node); st != http.StatusOK {
		t.Fatalf("board/n4: %d", st)
	}
	if node.Node.ID != "n4" || !strings.Contains(node.Spec, "Synthesize") || !slices.Contains(node.Published, "report.md") {
		t.Errorf("board/n4: %+v", node)
	}
	if msg := c.errorOf("GET", "/agents/alpha/board/n9", nil, http.StatusNotFound); !strings.Contains(msg, "n9") {
		t.Errorf("unknown node: %q", msg)
	}
	var workers struct{ Workers []nodes.Worker }
	if st := c.do("GET", "/agents/alpha/workers", nil, &workers); st != http.StatusOK || len(workers.Workers) != done.Workers {
		t.Errorf("workers: %d %+v", st, workers)
	}

	// The workspace.
	var file struct{ Path, Content string }
	if st := c.do("GET", "/agents/alpha/workspace/nodes/n4/published/report.md", nil, &file); st != http.StatusOK ||
		file.Path != "nodes/n4/published/report.md" || !strings.HasPrefix(file.Content, "# Report") {
		t.Fatalf("report: %d %+v", st, file)
	}
	resp, err := c.ts.Client().Get(c.ts.URL + "/agents/alpha/workspace/nodes/n4/published/report.md?raw=1")
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || string(raw) != file.Content {
		t.Errorf("raw report: %d %q", resp.StatusCode, raw)
	}
	var dir struct {
		Path    string
		Entries []struct {
			Name string
			Dir  bool
		}
	}
	if st := c.do("GET", "/agents/alpha/workspace/", nil, &dir); st != http.StatusOK || dir.Path != "." {
		t.Fatalf("workspace root: %d %+v", st, dir)
	}
	if !slices.ContainsFunc(dir.Entries, func(e struct {
		Name string
		Dir  bool
	}) bool {
		return e.Name == "nodes" && e.Dir
	}) {
		t.Errorf("workspace root lists %+v", dir.Entries)
	}
	c.errorOf("GET", "/agents/alpha/workspace/nodes/n4/published/nothing.md", nil, http.StatusNotFound)
	if msg := c.errorOf("GET", "/agents/alpha/workspace/..%2F..%2Fx", nil, http.StatusBadRequest); !strings.Contains(msg, "outside") {
		t.Errorf("traversal: %q", msg)
	}
	if msg := c.errorOf("GET", "/agents/alpha/workspace/nodes%2F..%2F..%2F..%2Fagent.json", nil, http.StatusBadRequest); !strings.Contains(msg, "outside") {
		t.Errorf("traversal: %q", msg)
	}
	if msg := c.errorOf("GET", "/agents/alpha/workspace/%2Fetc%2Fpasswd", nil, http.StatusBadRequest); !strings.Contains(msg, "absolute") {
		t.Errorf("absolute path: %q", msg)
	}
	// An unescaped ".." is cleaned away by the mux: it never reaches a file out of the run.
	if st := c.do("GET", "/agents/alpha/workspace/../../x", nil, nil); st == http.StatusOK {
		t.Errorf("workspace/../../x: %d", st)
	}
	// A link out of the run folder is refused.
	runDir := filepath.Join(c.root, "agents", "alpha", "runs", created.Run)
	if err := os.Symlink(filepath.Join(c.root, "agents", "alpha", "agent.json"), filepath.Join(runDir, "out.json")); err != nil {
		t.Fatal(err)
	}
	c.errorOf("GET", "/agents/alpha/workspace/out.json", nil, http.StatusForbidden)

	// The conversation, by pages.
	var conv struct {
		Entries []nodes.Entry
		Total   int
	}
	if st := c.do("GET", "/agents/alpha/conversation", nil, &conv); st != http.StatusOK || conv.Total < 2 || len(conv.Entries) != conv.Total {
		t.Fatalf("conversation: %d %+v", st, conv)
	}
	total := conv.Total
	last := conv.Entries[len(conv.Entries)-1]
	if last.From != "coordinator" || !strings.Contains(last.Content, "# Report") {
		t.Errorf("last entry %+v", last)
	}
	if c.do("GET", "/agents/alpha/conversation?after=0&limit=1", nil, &conv); len(conv.Entries) != 1 || conv.Entries[0].Seq != 1 || conv.Total != total {
		t.Errorf("first page %+v", conv)
	}
	if c.do("GET", "/agents/alpha/conversation?after=1&limit=100", nil, &conv); len(conv.Entries) != total-1 || conv.Entries[0].Seq != 2 {
		t.Errorf("second page %+v", conv)
	}
	if msg := c.errorOf("GET", "/agents/alpha/conversation?after=x", nil, http.StatusBadRequest); !strings.Contains(msg, "after") {
		t.Errorf("bad after: %q", msg)
	}

	// Events, by pages.
	var evs struct{ Events []eventlog.Event }
	if c.do("GET", "/agents/alpha/events?limit=5", nil, &evs); len(evs.Events) != 5 || evs.Events[0].Seq != 1 || evs.Events[4].Seq != 5 {
		t.Fatalf("events page %+v", evs)
	}
	if c.do("GET", "/agents/alpha/events?after=5&limit=2", nil, &evs); len(evs.Events) != 2 || evs.Events[0].Seq != 6 {
		t.Fatalf("events after 5: %+v", evs)
	}
	c.do("GET", "/agents/alpha/events", nil, &evs)
	if !slices.ContainsFunc(evs.Events, func(e eventlog.Event) bool { return e.Type == eventlog.AgentCompleted }) {
		t.Errorf("no agent.completed among %d events", len(evs.Events))
	}

	// Memory: the run logged its end; a note written to memory reads back.
	var found struct{ Result string }
	if st := c.do("POST", "/agents/alpha/memory/search", map[string]any{"query": "run finished", "limit": 3}, &found); st != http.StatusOK ||
		!strings.Contains(found.Result, "finished") {
		t.Errorf("memory search: %d %q", st, found.Result)
	}
	mem, err := memory.Open(workspace.Home(filepath.Join(c.root, "agents", "alpha")))
	if err != nil {
		t.Fatal(err)
	}
	if err := mem.Write("test", "knowledge/chips.md", "# Chips\n\n## Makers\n\nA note on chip makers.\n", false); err != nil {
		t.Fatal(err)
	}
	var note struct{ Path, Content string }
	if st := c.do("GET", "/agents/alpha/memory/knowledge/chips.md", nil, &note); st != http.StatusOK || !strings.Contains(note.Content, "chip makers") {
		t.Errorf("memory read: %d %+v", st, note)
	}
	var files struct{ Files []string }
	if c.do("GET", "/agents/alpha/memory", nil, &files); !slices.Contains(files.Files, "knowledge/chips.md") {
		t.Errorf("memory files %v", files.Files)
	}
	c.errorOf("GET", "/agents/alpha/memory/knowledge/nothing.md", nil, http.StatusNotFound)
	c.errorOf("GET", "/agents/alpha/memory/..%2F..%2Fagent.json", nil, http.StatusBadRequest)
	c.errorOf("POST", "/agents/alpha/memory/search", map[string]any{"query": ""}, http.StatusBadRequest)

	// What needs a run in progress is refused without one.
	c.errorOf("POST", "/agents/alpha/stop", nil, http.StatusConflict)
	c.errorOf("POST", "/agents/alpha/send", map[string]string{"to": "*", "message": "hello"}, http.StatusConflict)
	c.errorOf("POST", "/agents/alpha/respond", map[string]string{"response": "yes"}, http.StatusConflict)
	c.errorOf("POST", "/agents/alpha/resume", nil, http.StatusConflict)

	// Another run on the same agent.
	var again host.Summary
	if st := c.do("POST", "/agents/alpha/runs", map[string]string{"goal": "quantum sensors"}, &again); st != http.StatusAccepted ||
		again.Run == created.Run || again.Goal != "quantum sensors" {
		t.Fatalf("another run: %d %+v", st, again)
	}
	if done := c.await("alpha", host.StatusComplete); !strings.Contains(done.Output, "# Report") || done.Run != again.Run {
		t.Errorf("second run: %+v", done)
	}
	// A message to the coordinator of a completed agent starts a follow-up run toward it.
	var followUp host.Summary
	if st := c.do("POST", "/agents/alpha/send", map[string]string{"message": "robots"}, &followUp); st != http.StatusAccepted ||
		followUp.Run == again.Run || followUp.Goal != "robots" {
		t.Fatalf("follow-up run: %d %+v", st, followUp)
	}
	if done := c.await("alpha", host.StatusComplete); done.Run != followUp.Run {
		t.Errorf("follow-up run: %+v", done)
	}

	// Deleted: forgotten, with its files kept.
	if st := c.do("DELETE", "/agents/alpha", nil, nil); st != http.StatusOK {
		t.Fatalf("delete: %d", st)
	}
	c.errorOf("GET", "/agents/alpha", nil, http.StatusNotFound)
	if _, err := os.Stat(filepath.Join(runDir, "nodes", "n4", "published", "report.md")); err != nil {
		t.Errorf("files after delete: %v", err)
	}
}

func TestBadRequests(t *testing.T) {
	c := start(t, t.TempDir(), demoTeam)
	if msg := c.errorOf("GET", "/agents/ghost", nil, http.StatusNotFound); !strings.Contains(msg, "ghost") {
		t.Errorf("unknown agent: %q", msg)
	}
	c.errorOf("GET", "/agents/ghost/board", nil, http.StatusNotFound)
	c.errorOf("DELETE", "/agents/ghost", nil, http.StatusNotFound)
	c.errorOf("POST", "/agents/ghost/send", map[string]string{"message": "hi"}, http.StatusNotFound)
	for _, tc := range []struct {
		body, want string
	}{
		{`{"goal": "x"`, "bad body"},
		{`not json`, "invalid character"},
		{``, "empty"},
		{`{"goal": "x", "colour": "red"}`, `"colour"`},
		{`{"goal": 3}`, `"goal"`},
		{`{"model": "x"}`, `"goal"`},
		{`{"goal": "x", "mode": "forever"}`, `"mode"`},
		{`{"goal": "x", "id": "../up"}`, `"id"`},
		{`{"goal": "x"} {"goal": "y"}`, "more than one"},
	} {
		if msg := c.errorOf("POST", "/agents", tc.body, http.StatusBadRequest); !strings.Contains(msg, tc.want) {
			t.Errorf("POST /agents %s: %q, want it to name %s", tc.body, msg, tc.want)
		}
	}
	var none struct{ Agents []host.Summary }
	if c.do("GET", "/agents", nil, &none); none.Agents == nil || len(none.Agents) != 0 {
		t.Errorf("no agents: %+v", none)
	}
}

// A generated id; a duplicate id; an infinite agent keeps working, refuses a second run and
// is paused when the server closes, whose event streams end; a server opened again resumes it.
func TestInfiniteAgentAndClose(t *testing.T) {
	root := t.TempDir()
	srv, err := server.New(server.WithHost(host.WithRoot(root), host.WithSquadOptions(demoTeam)))
	if err != nil {
		t.Fatal(err)
	}
	ts := serve(t, srv)
	t.Cleanup(ts.Close)
	t.Cleanup(func() { srv.Close() })
	c := &api{t: t, srv: srv, ts: ts, root: root}
	var s host.Summary
	if st := c.do("POST", "/agents", map[string]string{"goal": "watch the chip market", "mode": "infinite"}, &s); st != http.StatusCreated ||
		s.ID == "" || s.Mode != "infinite" || s.Status != host.StatusWorking {
		t.Fatalf("create: %d %+v", st, s)
	}
	if workspace.ValidID(s.ID) != nil {
		t.Errorf("generated id %q", s.ID)
	}
	c.errorOf("POST", "/agents", map[string]string{"id": s.ID, "goal": "again"}, http.StatusConflict)
	if msg := c.errorOf("POST", "/agents/"+s.ID+"/runs", map[string]string{"goal": "more"}, http.StatusConflict); !strings.Contains(msg, "in progress") {
		t.Errorf("second run: %q", msg)
	}
	c.errorOf("POST", "/agents/"+s.ID+"/resume", nil, http.StatusConflict)

	// Wait for the first cycle's end: the run stays in progress, asleep.
	stream := openStream(t, ts, "/agents/"+s.ID+"/events/stream", "")
	stream.until(t, "x.cycle_completed")
	if got := c.summary(s.ID); got.Status != host.StatusWorking {
		t.Errorf("asleep between cycles: %+v", got)
	}
	// Deleting an agent at work ends its run.
	if st := c.do("POST", "/agents", map[string]string{"id": "brief", "goal": "robots", "mode": "infinite"}, nil); st != http.StatusCreated {
		t.Fatalf("create: %d", st)
	}
	if st := c.do("DELETE", "/agents/brief", nil, nil); st != http.StatusOK {
		t.Fatalf("delete at work: %d", st)
	}
	c.errorOf("GET", "/agents/brief", nil, http.StatusNotFound)
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	stream.ends(t)
	c.errorOf("GET", "/agents/"+s.ID, nil, http.StatusServiceUnavailable)

	// Opened again without resuming: the run was paused, not ended. Opened again as by
	// default: it goes on.
	c2 := start(t, root, demoTeam, server.WithHost(host.WithoutResume()))
	again := c2.summary(s.ID)
	if again.Status != host.StatusInterrupted || again.Mode != "infinite" || again.Output != "" || again.Run != s.Run {
		t.Errorf("after close: %+v", again)
	}
	if err := c2.srv.Close(); err != nil {
		t.Fatal(err)
	}
	c3 := start(t, root, demoTeam)
	if resumed := c3.await(s.ID, host.StatusWorking); resumed.Run != s.Run {
		t.Errorf("resumed: %+v", resumed)
	}
}

// stream reads server-sent events.
type stream struct {
	cancel context.CancelFunc
	resp   *http.Response
	events chan sse
	live   []sse // the events without an id (text.delta) that until passed over, in order
}

type sse struct {
	id    int64
	hasID bool // the event had an id line
	typ   string
	event eventlog.Event
}

func openStream(t *testing.T, ts *httptest.Server, path, lastID string) *stream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, "GET", ts.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := ts.Client().Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		cancel()
		t.Fatalf("stream: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	s := &stream{cancel: cancel, resp: resp, events: make(chan sse)}
	go func() {
		defer close(s.events)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		var cur sse
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "id: "):
				cur.id, _ = strconv.ParseInt(strings.TrimPrefix(line, "id: "), 10, 64)
				cur.hasID = true
			case strings.HasPrefix(line, "event: "):
				cur.typ = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				_ = json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &cur.event)
			case line == "" && cur.typ != "":
				select {
				case s.events <- cur:
				case <-ctx.Done():
					return
				}
				cur = sse{}
			}
		}
	}()
	t.Cleanup(s.close)
	return s
}

func (s *stream) close() {
	s.cancel()
	s.resp.Body.Close()
	for range s.events {
	}
}

// until reads events up to the first of type typ and returns the logged ones (those with an
// id), keeping the others in s.live.
func (s *stream) until(t *testing.T, typ eventlog.Type) []sse {
	t.Helper()
	var got []sse
	timeout := time.After(deadline)
	for {
		select {
		case e, ok := <-s.events:
			if !ok {
				t.Fatalf("the stream ended before %s, after %d events", typ, len(got))
			}
			if e.id != e.event.Seq || e.typ != string(e.event.Type) {
				t.Errorf("event %d %s carries %+v", e.id, e.typ, e.event)
			}
			if !e.hasID {
				s.live = append(s.live, e)
				continue
			}
			got = append(got, e)
			if e.typ == string(typ) {
				return got
			}
		case <-timeout:
			t.Fatalf("no %s event", typ)
		}
	}
}

// ends waits for the stream to end, from the server's side.
func (s *stream) ends(t *testing.T) {
	t.Helper()
	timeout := time.After(deadline)
	for {
		select {
		case _, ok := <-s.events:
			if !ok {
				return
			}
		case <-timeout:
			t.Fatal("the stream did not end")
		}
	}
}

func TestEventStream(t *testing.T) {
	c := start(t, t.TempDir(), demoTeam)
	if st := c.do("POST", "/agents", map[string]string{"id": "streamer", "goal": "AI chips"}, nil); st != http.StatusCreated {
		t.Fatalf("create: %d", st)
	}
	s := openStream(t, c.ts, "/agents/streamer/events/stream", "")
	got := s.until(t, eventlog.AgentCompleted)
	for i, e := range got {
		if e.id != int64(i+1) {
			t.Fatalf("event %d has id %d", i+1, e.id)
		}
	}
	s.close()
	c.await("streamer", host.StatusComplete)

	// Reconnecting with Last-Event-ID gives only the later events; so does ?after.
	mid := got[len(got)/2].id
	again := openStream(t, c.ts, "/agents/streamer/events/stream?after=1", strconv.FormatInt(mid, 10))
	if rest := again.until(t, eventlog.AgentCompleted); rest[0].id != mid+1 || len(rest) != len(got)-int(mid) {
		t.Errorf("after Last-Event-ID %d: first %d, %d events", mid, rest[0].id, len(rest))
	}
	after := openStream(t, c.ts, "/agents/streamer/events/stream?after=3", "")
	if rest := after.until(t, eventlog.AgentCompleted); rest[0].id != 4 {
		t.Errorf("after=3: first %d", rest[0].id)
	}
	c.errorOf("GET", "/agents/streamer/events/stream?after=-1", nil, http.StatusBadRequest)

	// Deleting the agent ends its streams.
	live := openStream(t, c.ts, "/agents/streamer/events/stream?after="+strconv.FormatInt(got[len(got)-1].id, 10), "")
	if st := c.do("DELETE", "/agents/streamer", nil, nil); st != http.StatusOK {
		t.Fatalf("delete: %d", st)
	}
	live.ends(t)
}

// The human in the loop: a worker asks the human; the agent waits for the human; a message
// and then the answer go through, and the run completes with it.
func TestHumanInTheLoop(t *testing.T) {
	const question = "Should I use PostgreSQL or SQLite?"
	coord := scripted.NewFunc("hitl-coordinator", func(_ context.Context, req providers.Request) (scripted.Turn, error) {
		text, results := scripted.Last(req)
		switch {
		case len(req.Messages) == 1:
			return turn(req,
				scripted.Call("spawn_worker", map[string]any{"name": "Dana", "role": "dba"}),
				scripted.Call("create_work_node", map[string]any{"task": "Set up a database: write db.md in your scratch folder, then publish.", "worker": "Dana"}),
			), nil
		case len(results) == 1 && results[0].Name == "read_file":
			return turn(req, scripted.Call("finish", map[string]string{"output": results[0].Content})), nil
		case strings.Contains(text, "Stage 1 is complete"):
			return turn(req, scripted.Call("read_file", map[string]string{"path": "nodes/n1/published/db.md"})), nil
		}
		return turn(req, scripted.Call("wait", map[string]string{})), nil
	})
	worker := scripted.NewFunc("hitl-worker", func(_ context.Context, req providers.Request) (scripted.Turn, error) {
		seen := scripted.Results(req)
		if said, ok := seen["ask_human"]; !ok {
			return turn(req, scripted.Call("ask_human", map[string]string{"question": question})), nil
		} else if _, ok := seen["write_file"]; !ok {
			return turn(req, scripted.Call("write_file", map[string]string{"path": "nodes/n1/scratch/db.md", "content": "# Database\n\n" + said + "\n"})), nil
		}
		return turn(req, scripted.Call("publish", map[string]string{"summary": "db.md"})), nil
	})
	team := func(string) []nodes.Option {
		return []nodes.Option{
			nodes.WithCoordinatorModel(coord.Name()), nodes.WithModel(worker.Name()),
			nodes.WithModelOptions(models.WithModels(coord, worker), models.WithoutRetry()),
			nodes.WithTick(20 * time.Millisecond),
		}
	}
	c := start(t, t.TempDir(), team)
	if st := c.do("POST", "/agents", map[string]string{"id": "hitl", "goal": "Set up a database for our project."}, nil); st != http.StatusCreated {
		t.Fatalf("create: %d", st)
	}
	waiting := c.await("hitl", host.StatusWaiting)
	if waiting.WaitingFor != "dana" || waiting.Question != question {
		t.Errorf("waiting: %+v", waiting)
	}
	var sent struct{ Status, To string }
	if st := c.do("POST", "/agents/hitl/send", map[string]string{"message": "Take your time."}, &sent); st != http.StatusOK || sent.To != "coordinator" {
		t.Errorf("send: %d %+v", st, sent)
	}
	c.errorOf("POST", "/agents/hitl/send", map[string]string{"to": "dana"}, http.StatusBadRequest)
	c.errorOf("POST", "/agents/hitl/respond", map[string]string{"worker": "nobody", "response": "x"}, http.StatusNotFound)
	var answered struct{ Status, Worker string }
	if st := c.do("POST", "/agents/hitl/respond", map[string]string{"response": "PostgreSQL, for production"}, &answered); st != http.StatusOK ||
		answered.Worker != "dana" {
		t.Fatalf("respond: %d %+v", st, answered)
	}
	done := c.await("hitl", host.StatusComplete)
	if !strings.Contains(done.Output, "PostgreSQL, for production") {
		t.Errorf("output %q", done.Output)
	}
	var conv struct{ Entries []nodes.Entry }
	c.do("GET", "/agents/hitl/conversation", nil, &conv)
	var contents []string
	for _, e := range conv.Entries {
		contents = append(contents, e.From+": "+e.Content)
	}
	all := strings.Join(contents, "\n")
	for _, want := range []string{"human: Take your time.", "human: PostgreSQL, for production"} {
		if !strings.Contains(all, want) {
			t.Errorf("the conversation lacks %q:\n%s", want, all)
		}
	}
}

func turn(req providers.Request, calls ...tools.Call) scripted.Turn {
	n := 0
	for _, m := range req.Messages {
		if m.Role == providers.Assistant {
			n++
		}
	}
	for i := range calls {
		calls[i].ID = fmt.Sprintf("call_%d_%d", n, i+1)
	}
	return scripted.Turn{Calls: calls}
}

// A server opened on the root of another finds its agents, their boards and runs, and can run
// them again; a stopped run resumes.
func TestReopen(t *testing.T) {
	root := t.TempDir()
	first, err := server.New(server.WithHost(host.WithRoot(root), host.WithSquadOptions(demoTeam)))
	if err != nil {
		t.Fatal(err)
	}
	ts := serve(t, first)
	c := &api{t: t, srv: first, ts: ts, root: root}
	var s host.Summary
	c.do("POST", "/agents", map[string]string{"id": "keeper", "goal": "AI chips"}, &s)
	c.await("keeper", host.StatusComplete)
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	ts.Close()

	c2 := start(t, root, demoTeam)
	var list struct{ Agents []host.Summary }
	c2.do("GET", "/agents", nil, &list)
	if len(list.Agents) != 1 || list.Agents[0].ID != "keeper" || list.Agents[0].Status != host.StatusComplete ||
		list.Agents[0].Run != s.Run || list.Agents[0].Nodes != 4 || list.Agents[0].Goal != "AI chips" {
		t.Fatalf("reopened: %+v", list)
	}
	var file struct{ Content string }
	if st := c2.do("GET", "/agents/keeper/workspace/nodes/n4/published/report.md", nil, &file); st != http.StatusOK || !strings.HasPrefix(file.Content, "# Report") {
		t.Errorf("report after reopen: %d", st)
	}
	// A finished run is not resumed: the answer says what to do instead.
	msg := c2.errorOf("POST", "/agents/keeper/resume", map[string]string{}, http.StatusConflict)
	if !strings.Contains(msg, "completed") || !strings.Contains(msg, "/agents/keeper/send") {
		t.Errorf("resume a finished run: %q", msg)
	}
	c2.errorOf("POST", "/agents/keeper/resume", map[string]string{"run": "nope"}, http.StatusNotFound)
	c2.errorOf("POST", "/agents/keeper/resume", map[string]string{"run": "../x"}, http.StatusBadRequest)
	if st := c2.do("POST", "/agents/keeper/runs", map[string]string{"goal": "robots"}, nil); st != http.StatusAccepted {
		t.Fatalf("another run: %d", st)
	}
	if done := c2.await("keeper", host.StatusComplete); done.Goal != "robots" || !strings.Contains(done.Output, "# Report") {
		t.Errorf("after reopen: %+v", done)
	}
}

// The coordinator asks the human: the agent waits for the human; the answer goes to the
// coordinator by default; stop works on the run in progress.
func TestCoordinatorAsks(t *testing.T) {
	const question = "Which market should I look at?"
	coord := scripted.NewFunc("asking-coordinator", func(_ context.Context, req providers.Request) (scripted.Turn, error) {
		for _, m := range req.Messages {
			for _, p := range m.Parts {
				if p.Type == providers.ToolResultPart && p.ToolResult.Name == "ask_human" {
					return turn(req, scripted.Call("finish", map[string]string{"output": "Looked at: " + p.ToolResult.Content})), nil
				}
			}
		}
		return turn(req, scripted.Call("ask_human", map[string]string{"question": question})), nil
	})
	team := func(string) []nodes.Option {
		return []nodes.Option{
			nodes.WithCoordinatorModel(coord.Name()), nodes.WithModel(demo.WorkerModel),
			nodes.WithModelOptions(models.WithModels(append(demo.Models(), coord)...), models.WithoutRetry()),
			nodes.WithTick(20 * time.Millisecond),
		}
	}
	c := start(t, t.TempDir(), team)
	if st := c.do("POST", "/agents", map[string]string{"id": "asker", "goal": "Study a market."}, nil); st != http.StatusCreated {
		t.Fatalf("create: %d", st)
	}
	waiting := c.await("asker", host.StatusWaiting)
	if waiting.WaitingFor != "coordinator" || waiting.Question != question {
		t.Errorf("waiting: %+v", waiting)
	}
	if st := c.do("POST", "/agents/asker/stop", nil, nil); st != http.StatusOK {
		t.Errorf("stop: %d", st)
	}
	var answered struct{ Worker string }
	if st := c.do("POST", "/agents/asker/respond", map[string]string{"response": "the European one"}, &answered); st != http.StatusOK ||
		answered.Worker != "coordinator" {
		t.Fatalf("respond: %d %+v", st, answered)
	}
	if done := c.await("asker", host.StatusComplete); !strings.Contains(done.Output, "the European one") {
		t.Errorf("output %q", done.Output)
	}
}
