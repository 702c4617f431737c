package server_test

import (
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/nodes"
	"github.com/agiraph/agiraph/nodes/eventlog"
	"github.com/agiraph/agiraph/nodes/triggers"
	"github.com/agiraph/agiraph/server"
	"github.com/agiraph/agiraph/server/host"
)

// templateAgent returns the home of an agent whose run completed (the offline team's, toward
// "AI chips"), made in a folder of the test's.
func templateAgent(tb testing.TB) string {
	tb.Helper()
	root := tb.TempDir()
	srv, err := server.New(server.WithHost(host.WithRoot(root), host.WithSquadOptions(demoTeam)), server.WithoutAuth())
	require.NoError(tb, err)
	defer srv.Close()
	req := func(method, path, body string) (int, string) {
		r, err := http.NewRequest(method, "http://localhost"+path, strings.NewReader(body))
		require.NoError(tb, err)
		if method == http.MethodPost {
			r.Header.Set("Content-Type", "application/json")
		}
		w := &recorder{header: http.Header{}}
		srv.ServeHTTP(w, r)
		return w.code, w.body.String()
	}
	code, body := req("POST", "/agents", `{"id": "template", "goal": "AI chips"}`)
	require.Equal(tb, http.StatusCreated, code, body)
	end := time.Now().Add(deadline)
	for {
		_, body := req("GET", "/agents/template", "")
		var s host.Summary
		require.NoError(tb, json.Unmarshal([]byte(body), &s))
		if s.Status == host.StatusComplete {
			break
		}
		require.False(tb, s.Status == host.StatusFailed || time.Now().After(end), "template agent: %s", body)
		time.Sleep(10 * time.Millisecond)
	}
	return filepath.Join(root, "agents", "template")
}

// recorder is a minimal http.ResponseWriter.
type recorder struct {
	header http.Header
	code   int
	body   strings.Builder
}

func (r *recorder) Header() http.Header { return r.header }
func (r *recorder) WriteHeader(code int) {
	if r.code == 0 {
		r.code = code
	}
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.code == 0 {
		r.code = http.StatusOK
	}
	return r.body.Write(b)
}

// agentsOnDisk makes n agents under root, "idle0", "idle1"…: copies of the template agent
// (a completed run of the offline team), each with a heartbeat trigger due in an hour.
func agentsOnDisk(tb testing.TB, root string, n int) []string {
	tb.Helper()
	src := templateAgent(tb)
	now := time.Now().UTC().Round(time.Second)
	trig := fmt.Sprintf(`{"next_id": 2, "triggers": [{"id": "t1", "type": "heartbeat", "action": {"kind": "wake", "task": "Look again."},
		"status": "active", "interval": 3600, "created": %q, "next": %q}]}`, now.Format(time.RFC3339), now.Add(time.Hour).Format(time.RFC3339))
	var ids []string
	for i := range n {
		id := fmt.Sprintf("idle%d", i)
		dst := filepath.Join(root, "agents", id)
		require.NoError(tb, copyTree(src, dst))
		var m map[string]any
		data, err := os.ReadFile(filepath.Join(dst, "agent.json"))
		require.NoError(tb, err)
		require.NoError(tb, json.Unmarshal(data, &m))
		m["id"] = id
		data, err = json.Marshal(m)
		require.NoError(tb, err)
		require.NoError(tb, os.WriteFile(filepath.Join(dst, "agent.json"), data, 0o644))
		require.NoError(tb, os.WriteFile(filepath.Join(dst, "triggers.json"), []byte(trig), 0o644))
		ids = append(ids, id)
	}
	return ids
}

// copyTree copies the folder src to dst.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(to, 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		in, err := os.Open(p)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.Create(to)
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, in); err != nil {
			out.Close()
			return err
		}
		return out.Close()
	})
}

// openUnder counts the files the process holds open under dir; -1 where /proc/self/fd is not
// there to tell.
func openUnder(dir string) int {
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return -1
	}
	dir, _ = filepath.EvalSymlinks(dir)
	n := 0
	for _, fd := range fds {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name()))
		if err == nil && strings.HasPrefix(target, dir+string(filepath.Separator)) {
			n++
		}
	}
	return n
}

// BenchmarkStartup1000 is server start-up with 1,000 agents on disk: New over a root holding
// 1,000 copies of an agent whose run completed (events, conversation, board, state.db), each
// with a heartbeat due in an hour, then Close. It reports the time of New alone (ms), the files
// the server holds open under the agents' folders once New returned (fds) and the goroutines
// it added (goroutines).
//
//	go test -run '^$' -bench Startup1000 -benchtime 5x ./server
func BenchmarkStartup1000(b *testing.B) {
	const n = 1000
	root := b.TempDir()
	agentsOnDisk(b, root, n)
	b.ReportAllocs()
	var total time.Duration
	fds, goroutines := 0, 0
	for b.Loop() {
		before := goruntime.NumGoroutine()
		begin := time.Now()
		srv, err := server.New(server.WithHost(host.WithRoot(root), host.WithSquadOptions(demoTeam), host.WithoutResume()))
		total += time.Since(begin)
		require.NoError(b, err)
		b.StopTimer()
		fds = openUnder(filepath.Join(root, "agents"))
		goroutines = goruntime.NumGoroutine() - before
		b.StartTimer()
		require.NoError(b, srv.Close())
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms")
	if fds >= 0 {
		b.ReportMetric(float64(fds), "fds")
	}
	b.ReportMetric(float64(goroutines), "goroutines")
}

// BenchmarkList1000 is GET /agents over 1,000 agents at rest (see BenchmarkStartup1000): the
// first listing after start-up, which checks each agent's files, and the later ones.
func BenchmarkList1000(b *testing.B) {
	const n = 1000
	root := b.TempDir()
	agentsOnDisk(b, root, n)
	srv, err := server.New(server.WithHost(host.WithRoot(root), host.WithSquadOptions(demoTeam), host.WithoutResume()), server.WithoutAuth())
	require.NoError(b, err)
	defer srv.Close()
	list := func() {
		r, err := http.NewRequest("GET", "http://localhost/agents", nil)
		require.NoError(b, err)
		w := &recorder{header: http.Header{}}
		srv.ServeHTTP(w, r)
		require.Equal(b, http.StatusOK, w.code)
	}
	begin := time.Now()
	list()
	first := time.Since(begin)
	for b.Loop() {
		list()
	}
	b.ReportMetric(float64(first.Milliseconds()), "first-ms")
}

// requireNoneOpen fails unless the process holds no file open under dir, once what is under
// way has had time to let go; it checks nothing where /proc/self/fd cannot tell.
func requireNoneOpen(t *testing.T, dir string) {
	t.Helper()
	if openUnder(dir) < 0 {
		return
	}
	require.Eventually(t, func() bool { return openUnder(dir) == 0 }, deadline, 10*time.Millisecond,
		"files open under %s: %d", dir, openUnder(dir))
}

// Agents at rest cost the server nothing while it runs: once New returns, the process holds no
// file open under their folders and runs no goroutine for each (one alarm keeps all their
// triggers). Everything the API shows of them is read from their files, and leaves none open.
func TestAgentsAtRestHoldNothing(t *testing.T) {
	if openUnder(t.TempDir()) < 0 {
		t.Skip("no /proc/self/fd here to count open files")
	}
	const n = 20
	root := t.TempDir()
	ids := agentsOnDisk(t, root, n)
	agents := filepath.Join(root, "agents")

	before := goruntime.NumGoroutine()
	srv, err := server.New(server.WithHost(host.WithRoot(root), host.WithSquadOptions(demoTeam)))
	require.NoError(t, err)
	assert.Equal(t, 0, openUnder(agents), "files open under the agents' folders after New")
	assert.LessOrEqual(t, goruntime.NumGoroutine()-before, 2, "goroutines New added for %d agents at rest", n)
	c := &api{t: t, srv: srv, ts: newTestServer(t, srv), root: root}
	t.Cleanup(func() { require.NoError(t, srv.Close()) })

	var list struct{ Agents []host.Summary }
	require.Equal(t, http.StatusOK, c.do("GET", "/agents", nil, &list))
	require.Len(t, list.Agents, n)
	for _, s := range list.Agents {
		assert.Equal(t, host.StatusComplete, s.Status, s.ID)
		assert.Equal(t, 4, s.Nodes, s.ID)
		assert.Contains(t, s.Output, "# Report", s.ID)
	}
	id := ids[n/2]
	sum := c.summary(id)
	evs := c.events(id)
	require.NotEmpty(t, evs)
	assert.Equal(t, eventlog.AgentCompleted, evs[len(evs)-1].Type)
	var page struct{ Events []eventlog.Event }
	require.Equal(t, http.StatusOK, c.do("GET", "/agents/"+id+"/events?after=3&limit=2", nil, &page))
	require.Len(t, page.Events, 2)
	assert.Equal(t, int64(4), page.Events[0].Seq)
	var board struct {
		Run     string
		Nodes   []nodes.Node
		Workers []nodes.Worker
	}
	require.Equal(t, http.StatusOK, c.do("GET", "/agents/"+id+"/board", nil, &board))
	assert.Equal(t, sum.Run, board.Run)
	assert.Len(t, board.Nodes, 4)
	assert.Len(t, board.Workers, sum.Workers)
	var node struct{ Spec string }
	require.Equal(t, http.StatusOK, c.do("GET", "/agents/"+id+"/board/n4", nil, &node))
	assert.Contains(t, node.Spec, "Synthesize")
	require.Equal(t, http.StatusOK, c.do("GET", "/agents/"+id+"/workers", nil, nil))
	var conv struct {
		Entries []nodes.Entry
		Total   int
	}
	require.Equal(t, http.StatusOK, c.do("GET", "/agents/"+id+"/conversation", nil, &conv))
	assert.NotEmpty(t, conv.Entries)
	assert.Equal(t, len(conv.Entries), conv.Total)
	var file struct{ Content string }
	require.Equal(t, http.StatusOK, c.do("GET", "/agents/"+id+"/workspace/nodes/n4/published/report.md", nil, &file))
	assert.True(t, strings.HasPrefix(file.Content, "# Report"))
	var mem struct{ Files []string }
	require.Equal(t, http.StatusOK, c.do("GET", "/agents/"+id+"/memory", nil, &mem))
	require.NotEmpty(t, mem.Files)
	require.Equal(t, http.StatusOK, c.do("GET", "/agents/"+id+"/memory/"+mem.Files[0], nil, nil))
	require.Equal(t, http.StatusOK, c.do("POST", "/agents/"+id+"/memory/search", map[string]string{"query": "chips"}, nil))
	stream := openStream(t, c.ts, "/agents/"+id+"/events/stream", "")
	assert.Len(t, stream.until(t, eventlog.AgentCompleted), len(evs))
	stream.close()
	// What acts on a run in progress says there is none.
	c.errorOf("POST", "/agents/"+id+"/send", map[string]string{"to": "*", "message": "hi"}, http.StatusConflict)
	c.errorOf("POST", "/agents/"+id+"/respond", map[string]string{"response": "hi"}, http.StatusConflict)
	c.errorOf("POST", "/agents/"+id+"/stop", nil, http.StatusConflict)
	requireNoneOpen(t, agents)

	// A run opens its agent's squad, and closes it when it ends.
	require.Equal(t, http.StatusAccepted, c.do("POST", "/agents/"+id+"/runs", map[string]string{"goal": "robots"}, nil))
	assert.Contains(t, c.await(id, host.StatusComplete).Output, "# Report")
	requireNoneOpen(t, agents)
}

// On the real clock: an agent at rest whose run completed has a trigger come due; the server
// opens its squad, the trigger fires (into the completed run, which it does not wake), and the
// squad closes again.
func TestTriggerOfAnAgentAtRestFiresAndLetsGo(t *testing.T) {
	root := t.TempDir()
	ids := agentsOnDisk(t, root, 3)
	id := ids[1]
	at := time.Now().Add(300 * time.Millisecond).UTC()
	trig := fmt.Sprintf(`{"next_id": 2, "triggers": [{"id": "t1", "type": "at_time", "action": {"kind": "wake", "task": "Look again."},
		"status": "active", "at": %q, "created": %q, "next": %q}]}`, at.Format(time.RFC3339Nano), time.Now().UTC().Format(time.RFC3339Nano), at.Format(time.RFC3339Nano))
	require.NoError(t, os.WriteFile(filepath.Join(root, "agents", id, "triggers.json"), []byte(trig), 0o644))
	c := start(t, root, demoTeam)
	fired := c.awaitEvent(id, func(e eventlog.Event) bool { return e.Type == "x.trigger_fired" })
	assert.Contains(t, fired.Text, "t1 at_time")
	assert.NotContains(t, fired.Text, "came due while the agent was down")
	requireNoneOpen(t, filepath.Join(root, "agents"))
	assert.Equal(t, host.StatusComplete, c.summary(id).Status)
	ts, err := nodes.ReadFiles(nodes.WithHome(filepath.Join(root, "agents", id))).Triggers()
	require.NoError(t, err)
	require.Len(t, ts, 1)
	assert.Equal(t, triggers.Fired, ts[0].Status)
}

// An event stream of an agent at rest gives the events its file holds, then follows the
// agent's next run as it goes, and ends when the agent is deleted.
func TestEventStreamOfAnAgentAtRest(t *testing.T) {
	root := t.TempDir()
	agentsOnDisk(t, root, 1)
	c := start(t, root, demoTeam)
	stream := openStream(t, c.ts, "/agents/idle0/events/stream", "")
	history := stream.until(t, eventlog.AgentCompleted)
	require.Equal(t, http.StatusAccepted, c.do("POST", "/agents/idle0/runs", map[string]string{"goal": "robots"}, nil))
	next := stream.until(t, eventlog.AgentCompleted)
	assert.Equal(t, history[len(history)-1].id+1, next[0].id, "no event lost or repeated")
	c.await("idle0", host.StatusComplete)
	requireNoneOpen(t, filepath.Join(root, "agents"))
	require.Equal(t, http.StatusOK, c.do("DELETE", "/agents/idle0", nil, nil))
	stream.ends(t)
}

// Damage in the middle of the events.jsonl of a home from before the store, which a listing
// does not read, is found when the agent's squad opens to copy it into the store: the run does
// not start, and the agent is damaged, naming the file.
func TestDamagedEventsFoundWhenTheSquadOpens(t *testing.T) {
	root := t.TempDir()
	agentsOnDisk(t, root, 1)
	home := filepath.Join(root, "agents", "idle0")
	evs, err := nodes.ReadFiles(nodes.WithHome(home)).Events(0, 0)
	require.NoError(t, err)
	var lines []string
	for _, e := range evs {
		line, err := json.Marshal(e)
		require.NoError(t, err)
		lines = append(lines, string(line)+"\n")
	}
	lines[3] = "garbage\n"
	path := filepath.Join(home, "events.jsonl")
	require.NoError(t, os.WriteFile(path, []byte(strings.Join(lines, "")), 0o644))
	require.NoError(t, os.Remove(filepath.Join(home, "state.db"))) // from before the store: the events are in the file
	c := start(t, root, demoTeam)
	assert.Equal(t, host.StatusComplete, c.summary("idle0").Status)
	require.Equal(t, http.StatusAccepted, c.do("POST", "/agents/idle0/runs", map[string]string{"goal": "robots"}, nil))
	s := c.await("idle0", host.StatusDamaged)
	assert.Contains(t, s.Error, path)
	assert.Contains(t, c.errorOf("POST", "/agents/idle0/runs", map[string]string{"goal": "again"}, http.StatusConflict), "damaged")
}
