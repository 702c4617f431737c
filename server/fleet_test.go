package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/internal/pgtest"
	"github.com/agiraph/agiraph/models"
	"github.com/agiraph/agiraph/nodes"
	"github.com/agiraph/agiraph/nodes/demo"
	"github.com/agiraph/agiraph/nodes/eventlog"
	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/server"
	"github.com/agiraph/agiraph/server/host"
)

// replicaEnv makes the test binary a replica of a fleet (replicaMain), configured by its value.
const replicaEnv = "AGIRAPH_SERVERTEST_REPLICA"

// The fleet tests' lease: a dead replica's runs are taken over within about fleetTTL+fleetWatch.
const (
	fleetTTL       = 2 * time.Second
	fleetHeartbeat = 300 * time.Millisecond
	fleetWatch     = 250 * time.Millisecond
	fleetToken     = "fleet-test-token-0123456789"
)

// replicaConfig is what a replica is given.
type replicaConfig struct {
	Name  string        `json:"name"`
	URL   string        `json:"url"` // the database
	Root  string        `json:"root"`
	Delay time.Duration `json:"delay"` // of every model's answer
	Ask   bool          `json:"ask"`   // a researcher asks the human (demo.WithHumanQuestion)
}

// recorded is a model of the offline team that answers after a delay and records, in the table
// generations, which replica answered for which agent.
type recorded struct {
	providers.Model
	pool    *pgxpool.Pool
	replica string
	agent   string
	delay   time.Duration
}

func (m recorded) Generate(ctx context.Context, req providers.Request) (providers.Response, error) {
	select {
	case <-time.After(m.delay):
	case <-ctx.Done():
		return providers.Response{}, ctx.Err()
	}
	if _, err := m.pool.Exec(ctx, `INSERT INTO generations (replica, agent) VALUES ($1, $2)`, m.replica, m.agent); err != nil {
		return providers.Response{}, err
	}
	return m.Model.Generate(ctx, req)
}

// replicaMain serves a replica on a port of its own until its standard input ends, then closes
// it. It says "ready <base URL>" on its standard output once it serves.
func replicaMain(raw string) int {
	fail := func(err error) int {
		fmt.Fprintln(os.Stderr, "replica:", err)
		return 1
	}
	var cfg replicaConfig
	if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
		return fail(err)
	}
	pool, err := pgxpool.New(context.Background(), cfg.URL)
	if err != nil {
		return fail(err)
	}
	defer pool.Close()
	team := func(id string) []nodes.Option {
		var ms []providers.Model
		var opts []demo.Option
		if cfg.Ask {
			opts = append(opts, demo.WithHumanQuestion())
		}
		for _, m := range demo.Models(opts...) {
			ms = append(ms, recorded{Model: m, pool: pool, replica: cfg.Name, agent: id, delay: cfg.Delay})
		}
		return []nodes.Option{nodes.WithModel(demo.WorkerModel), nodes.WithCoordinatorModel(demo.CoordinatorModel),
			nodes.WithModelOptions(models.WithModels(ms...), models.WithoutRetry()), nodes.WithTick(20 * time.Millisecond)}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fail(err)
	}
	base := "http://" + ln.Addr().String()
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo})).With("replica", cfg.Name)
	srv, err := server.New(server.WithHost(host.WithRoot(cfg.Root), host.WithPostgresPool(pool)), server.WithToken(fleetToken),
		server.WithHost(host.WithSquadOptions(team), host.WithLease(fleetTTL, fleetHeartbeat, fleetWatch), host.WithBaseURL(base),
			host.WithLogger(logger)))
	if err != nil {
		return fail(err)
	}
	hs := &http.Server{Handler: srv}
	go hs.Serve(ln)
	fmt.Println("ready", base)
	io.Copy(io.Discard, os.Stdin)
	hs.Close()
	if err := srv.Close(); err != nil {
		return fail(err)
	}
	return 0
}

// replica is a replica process of a test.
type replica struct {
	name  string
	url   string
	cmd   *exec.Cmd
	stdin io.WriteCloser
	*api
}

// startReplica starts a replica process on the database at dbURL and the shared root; cleanup
// stops it.
func startReplica(t *testing.T, name, dbURL, root string, delay time.Duration) *replica {
	t.Helper()
	return startReplicaOf(t, replicaConfig{Name: name, URL: dbURL, Root: root, Delay: delay})
}

// startReplicaOf is startReplica with the whole configuration.
func startReplicaOf(t *testing.T, c replicaConfig) *replica {
	t.Helper()
	name := c.Name
	cfg, err := json.Marshal(c)
	require.NoError(t, err)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), replicaEnv+"="+string(cfg))
	cmd.Stderr = &logWriter{t: t, prefix: name}
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	r := &replica{name: name, cmd: cmd, stdin: stdin}
	t.Cleanup(r.stop)
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err, "replica %s did not start", name)
	r.url = strings.TrimSpace(strings.TrimPrefix(line, "ready "))
	r.api = &api{t: t, ts: remote(t, r.url), root: c.Root}
	return r
}

// remote serves, on a test server, the replica at base (through a proxy): an api's client sends
// the fleet's token.
func remote(t *testing.T, base string) *httptest.Server {
	u, err := url.Parse(base)
	require.NoError(t, err)
	p := httputil.NewSingleHostReverseProxy(u)
	p.FlushInterval = -1
	ts := httptest.NewServer(p)
	ts.Client().Transport = bearer{token: fleetToken, next: ts.Client().Transport}
	t.Cleanup(ts.Close)
	return ts
}

// stop closes the replica (its standard input) and waits for it.
func (r *replica) stop() {
	r.stdin.Close()
	r.cmd.Wait()
}

// kill kills the replica with SIGKILL.
func (r *replica) kill() {
	r.cmd.Process.Signal(syscall.SIGKILL)
	r.cmd.Wait()
}

// logWriter passes a replica's log to the test's.
type logWriter struct {
	t      *testing.T
	prefix string
	mu     sync.Mutex
}

func (w *logWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, line := range strings.Split(strings.TrimRight(string(p), "\n"), "\n") {
		if strings.Contains(line, "level=WARN") || strings.Contains(line, "level=ERROR") || strings.Contains(line, "took over") {
			w.t.Log(w.prefix + ": " + line)
		}
	}
	return len(p), nil
}

// fleetDB returns the URL of a new database for a fleet, and a pool on it with the generations table.
func fleetDB(t *testing.T) (string, *pgxpool.Pool) {
	url := pgtest.Start(t)
	pool, err := pgxpool.New(context.Background(), url)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	_, err = pool.Exec(context.Background(), `CREATE TABLE generations (n bigserial PRIMARY KEY, replica text NOT NULL, agent text NOT NULL,
		at timestamptz NOT NULL DEFAULT clock_timestamp())`)
	require.NoError(t, err)
	return url, pool
}

// answeredBy returns the replicas that answered for agent after generation n, in order, each once.
func answeredBy(t *testing.T, pool *pgxpool.Pool, agent string, after int64) []string {
	rows, err := pool.Query(context.Background(), `SELECT replica FROM generations WHERE agent = $1 AND n > $2 ORDER BY n`, agent, after)
	require.NoError(t, err)
	var seq []string
	for rows.Next() {
		var r string
		require.NoError(t, rows.Scan(&r))
		if len(seq) == 0 || seq[len(seq)-1] != r {
			seq = append(seq, r)
		}
	}
	require.NoError(t, rows.Err())
	return seq
}

// awaitNoOwner waits until no replica holds the lease of agent.
func awaitNoOwner(t *testing.T, pool *pgxpool.Pool, agent string) {
	t.Helper()
	for end := time.Now().Add(deadline); ; time.Sleep(20 * time.Millisecond) {
		var free bool
		require.NoError(t, pool.QueryRow(context.Background(), `SELECT owner IS NULL FROM agiraph_server_agents WHERE id = $1`, agent).Scan(&free))
		if free {
			return
		}
		require.False(t, time.Now().After(end), "no replica let %s go", agent)
	}
}

// lastGeneration returns the number of the last generation recorded.
func lastGeneration(t *testing.T, pool *pgxpool.Pool) int64 {
	var n int64
	require.NoError(t, pool.QueryRow(context.Background(), `SELECT coalesce(max(n), 0) FROM generations`).Scan(&n))
	return n
}

// Two replicas on one database and one root: an agent made through one is listed and read
// through the other; a message sent through the replica that does not run it reaches its run;
// a run started through either runs in one replica; and a run whose replica is killed mid-run
// is taken over by the other, and finishes with the output it would have had.
func TestReplicasServeOneFleet(t *testing.T) {
	dbURL, pool := fleetDB(t)
	root := t.TempDir()
	const delay = 40 * time.Millisecond
	a := startReplica(t, "A", dbURL, root, delay)
	b := startReplica(t, "B", dbURL, root, delay)

	// Made through A, listed and read through B, reached through B.
	mark := lastGeneration(t, pool)
	require.Equal(t, http.StatusCreated, a.do("POST", "/agents", map[string]string{"id": "alpha", "goal": "AI chips"}, nil))
	var list struct{ Agents []host.Summary }
	require.Equal(t, http.StatusOK, b.do("GET", "/agents", nil, &list))
	require.Len(t, list.Agents, 1)
	assert.Equal(t, "alpha", list.Agents[0].ID)
	var sent map[string]any
	require.Equal(t, http.StatusOK, b.do("POST", "/agents/alpha/send", map[string]string{"message": "Mind the export rules."}, &sent), "%v", sent)
	b.awaitEvent("alpha", func(e eventlog.Event) bool {
		return e.Worker == "coordinator" && e.Type == eventlog.MessageReceived && e.Text == "Mind the export rules."
	})
	done := b.await("alpha", host.StatusComplete)
	assert.Equal(t, []string{"A"}, answeredBy(t, pool, "alpha", mark), "the run made through A runs in A alone")
	var board map[string]any
	require.Equal(t, http.StatusOK, b.do("GET", "/agents/alpha/board", nil, &board))
	assert.NotEmpty(t, board["nodes"])
	assert.NotEmpty(t, done.Output)
	// A fork into a new agent is refused, saying why: the fleet's store is not in a folder.
	msg := b.errorOf("POST", "/agents/alpha/runs/"+done.Run+"/fork", map[string]any{"tick": 1, "agent": "alpha-2"}, http.StatusBadRequest)
	assert.Contains(t, msg, "PostgreSQL")

	// A run started through B, once A has let the agent go (a run is "completed" a moment before
	// its replica closes its squad and ends the lease), runs in B alone, and its output is the
	// team's.
	awaitNoOwner(t, pool, "alpha")
	mark = lastGeneration(t, pool)
	require.Equal(t, http.StatusAccepted, b.do("POST", "/agents/alpha/runs", map[string]string{"goal": "robots"}, nil))
	out := a.await("alpha", host.StatusComplete).Output
	assert.Equal(t, []string{"B"}, answeredBy(t, pool, "alpha", mark))
	assert.Equal(t, reference(t, "robots"), out)

	// Killed mid-run, the replica running it hands it to the other through the lease.
	mark = lastGeneration(t, pool)
	require.Equal(t, http.StatusCreated, a.do("POST", "/agents", map[string]string{"id": "gamma", "goal": "solar panels"}, nil))
	for end := time.Now().Add(deadline); len(answeredBy(t, pool, "gamma", mark)) == 0 || lastGeneration(t, pool) < mark+4; {
		require.False(t, time.Now().After(end), "gamma's run did not start")
		time.Sleep(20 * time.Millisecond)
	}
	killed := time.Now()
	a.kill()
	sum := b.await("gamma", host.StatusComplete)
	total := time.Since(killed)
	var resumed time.Time
	require.NoError(t, pool.QueryRow(context.Background(), `SELECT min(at) FROM generations WHERE agent = 'gamma' AND replica = 'B'`).Scan(&resumed))
	takeover := resumed.Sub(killed)
	t.Logf("takeover %v after the kill (lease %v, watch %v); the run completed %v after the kill", takeover.Round(time.Millisecond),
		fleetTTL, fleetWatch, total.Round(time.Millisecond))
	assert.Equal(t, []string{"A", "B"}, answeredBy(t, pool, "gamma", mark), "A until it was killed, B after")
	assert.Equal(t, reference(t, "solar panels"), sum.Output)
	assert.Less(t, takeover, 5*(fleetTTL+fleetWatch), "loose bound: 5× the configured takeover")
}

// With three replicas, each due time of an agent's triggers fires once.
func TestTriggersFireOnceAcrossReplicas(t *testing.T) {
	dbURL, _ := fleetDB(t)
	root := t.TempDir()
	first := startReplica(t, "A", dbURL, root, 0)
	require.Equal(t, http.StatusCreated, first.do("POST", "/agents", map[string]string{"id": "watch", "goal": "AI chips"}, nil))
	first.await("watch", host.StatusComplete)
	first.stop()

	const n = 4
	start := time.Now().Add(3 * time.Second).UTC()
	var trig []string
	for i := range n {
		at := start.Add(time.Duration(i) * 700 * time.Millisecond).Format(time.RFC3339Nano)
		trig = append(trig, fmt.Sprintf(`{"id": "t%d", "type": "at_time", "action": {"kind": "wake", "task": "Look again."},
			"status": "active", "at": %q, "created": %q, "next": %q}`, i+1, at, time.Now().UTC().Format(time.RFC3339Nano), at))
	}
	data := fmt.Sprintf(`{"next_id": %d, "triggers": [%s]}`, n+1, strings.Join(trig, ","))
	require.NoError(t, os.WriteFile(filepath.Join(root, "agents", "watch", "triggers.json"), []byte(data), 0o644))
	rs := []*replica{startReplica(t, "A", dbURL, root, 0), startReplica(t, "B", dbURL, root, 0), startReplica(t, "C", dbURL, root, 0)}

	fired := func() map[string]int {
		counts := map[string]int{}
		for _, e := range rs[0].events("watch") {
			if e.Type == "x.trigger_fired" {
				counts[strings.Fields(e.Text)[0]]++
			}
		}
		return counts
	}
	for end := time.Now().Add(deadline); len(fired()) < n; {
		require.False(t, time.Now().After(end), "triggers fired: %v", fired())
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(3 * fleetTTL) // room for a second firing, should a replica fire again
	counts := fired()
	t.Logf("firings by trigger: %v", counts)
	for i := range n {
		assert.Equal(t, 1, counts[fmt.Sprintf("t%d", i+1)], "trigger t%d", i+1)
	}
}

// A replica that does not run an agent acts on its run through the one that does: its event
// stream carries the run's events live, a stop stops the run's workers there, and a message
// sets the run going again, which finishes where it ran.
func TestNonOwnerActsOnTheRun(t *testing.T) {
	dbURL, pool := fleetDB(t)
	root := t.TempDir()
	a := startReplica(t, "A", dbURL, root, 60*time.Millisecond)
	b := startReplica(t, "B", dbURL, root, 60*time.Millisecond)

	mark := lastGeneration(t, pool)
	require.Equal(t, http.StatusCreated, a.do("POST", "/agents", map[string]string{"id": "delta", "goal": "AI chips"}, nil))
	s := openStream(t, b.ts, "/agents/delta/events/stream", "")
	defer s.close()
	s.until(t, eventlog.NodeStarted)

	var stopped map[string]any
	require.Equal(t, http.StatusOK, b.do("POST", "/agents/delta/stop", nil, &stopped), "%v", stopped)
	b.awaitEvent("delta", func(e eventlog.Event) bool { return e.Type == eventlog.WorkerStopped })
	var sent map[string]any
	require.Equal(t, http.StatusOK, b.do("POST", "/agents/delta/send", map[string]string{"message": "Go on."}, &sent), "%v", sent)
	done := b.await("delta", host.StatusComplete)
	assert.Equal(t, reference(t, "AI chips"), done.Output)
	assert.Equal(t, []string{"A"}, answeredBy(t, pool, "delta", mark), "the run stayed in A")
}

// Through a replica that does not run the agent, the human answers a question of its run,
// which then finishes where it ran; and a DELETE forgets the agent for every replica.
func TestNonOwnerAnswersAndDeletes(t *testing.T) {
	dbURL, pool := fleetDB(t)
	root := t.TempDir()
	a := startReplicaOf(t, replicaConfig{Name: "A", URL: dbURL, Root: root, Ask: true})
	b := startReplicaOf(t, replicaConfig{Name: "B", URL: dbURL, Root: root, Ask: true})

	mark := lastGeneration(t, pool)
	require.Equal(t, http.StatusCreated, a.do("POST", "/agents", map[string]string{"id": "echo", "goal": "AI chips"}, nil))
	waiting := b.await("echo", host.StatusWaiting)
	assert.Equal(t, demo.HumanQuestion, waiting.Question)
	var answered map[string]any
	require.Equal(t, http.StatusOK, b.do("POST", "/agents/echo/respond", map[string]string{"response": "yes"}, &answered), "%v", answered)
	done := b.await("echo", host.StatusComplete)
	assert.Contains(t, done.Output, "The human answered: yes")
	assert.Equal(t, []string{"A"}, answeredBy(t, pool, "echo", mark), "the run stayed in A")

	require.Equal(t, http.StatusOK, b.do("DELETE", "/agents/echo", nil, nil))
	for _, r := range []*replica{a, b} {
		var list struct{ Agents []host.Summary }
		require.Equal(t, http.StatusOK, r.do("GET", "/agents", nil, &list))
		assert.Empty(t, list.Agents, "replica %s still lists it", r.name)
		assert.Equal(t, http.StatusNotFound, r.do("GET", "/agents/echo", nil, nil))
	}
}

// Replicas on one database, each with a folder of its own: the replica running an agent is
// killed mid-run, and another, which never had the agent's files, takes the run over from the
// database, finishes it with the output it would have had, and shows the agent, its board and
// its events. Killed as a worker has written its findings in its scratch folder but not yet
// published them, the attempt starts again in the replica that takes over; killed once the
// research nodes have published, their files are written back where the synthesis reads them.
func TestReplicasOnSeparateRoots(t *testing.T) {
	dbURL, pool := fleetDB(t)
	const delay = 150 * time.Millisecond // a window between a worker's writing and its publishing
	a := startReplica(t, "A", dbURL, t.TempDir(), delay)
	b := startReplica(t, "B", dbURL, t.TempDir(), delay)

	// killWhen kills r once an event of agent id's that r runs satisfies cond.
	killWhen := func(r *replica, id string, cond func(eventlog.Event) bool) {
		t.Helper()
		for end := time.Now().Add(deadline); ; time.Sleep(10 * time.Millisecond) {
			require.False(t, time.Now().After(end), "%s: the moment to kill %s did not come", id, r.name)
			if slices.ContainsFunc(r.events(id), cond) {
				r.kill()
				return
			}
		}
	}
	// shows asserts that r shows agent id, whose run toward goal completed, as it ended.
	shows := func(r *replica, id, goal string) {
		t.Helper()
		var sum host.Summary
		require.Equal(t, http.StatusOK, r.do("GET", "/agents/"+id, nil, &sum))
		assert.Equal(t, host.StatusComplete, sum.Status)
		assert.Equal(t, reference(t, goal), sum.Output)
		assert.Equal(t, goal, sum.Goal)
		assert.False(t, sum.Created.IsZero())
		var board struct{ Nodes []nodes.Node }
		require.Equal(t, http.StatusOK, r.do("GET", "/agents/"+id+"/board", nil, &board))
		require.Len(t, board.Nodes, 4)
		for _, n := range board.Nodes {
			assert.Equal(t, nodes.NodeCompleted, n.Status, "node %s", n.ID)
			assert.NotEmpty(t, n.Published, "node %s", n.ID)
		}
		evs := r.events(id)
		require.NotEmpty(t, evs)
		assert.Equal(t, eventlog.AgentCreated, evs[0].Type, "the events from the first, logged by the killed replica")
		var conv struct{ Entries []nodes.Entry }
		require.Equal(t, http.StatusOK, r.do("GET", "/agents/"+id+"/conversation", nil, &conv))
		require.NotEmpty(t, conv.Entries)
		assert.Equal(t, goal, conv.Entries[0].Content)
	}
	// check asserts that r, which took agent id over, completes its run toward goal as the
	// team does without a kill, and shows it.
	check := func(r *replica, id, goal string, mark int64, by []string) {
		t.Helper()
		r.await(id, host.StatusComplete)
		assert.Equal(t, by, answeredBy(t, pool, id, mark))
		shows(r, id, goal)
		assert.Equal(t, http.StatusOK, r.do("GET", "/agents/"+id+"/workspace/nodes/n1/published/findings.md", nil, nil),
			"a research node's findings, written back where the run was taken over")
	}

	mark := lastGeneration(t, pool)
	require.Equal(t, http.StatusCreated, a.do("POST", "/agents", map[string]string{"id": "gamma", "goal": "solar panels"}, nil))
	var got host.Summary
	require.Equal(t, http.StatusOK, b.do("GET", "/agents/gamma", nil, &got))
	assert.Equal(t, "solar panels", got.Goal, "B reads the agent A made")
	killWhen(a, "gamma", func(e eventlog.Event) bool {
		return e.Type == eventlog.ToolResult && strings.Contains(e.Text, "/scratch/findings.md")
	})
	check(b, "gamma", "solar panels", mark, []string{"A", "B"})
	var list struct{ Agents []host.Summary }
	require.Equal(t, http.StatusOK, b.do("GET", "/agents", nil, &list))
	require.Len(t, list.Agents, 1)
	assert.Equal(t, host.StatusComplete, list.Agents[0].Status)

	c := startReplica(t, "C", dbURL, t.TempDir(), delay)
	mark = lastGeneration(t, pool)
	require.Equal(t, http.StatusCreated, b.do("POST", "/agents", map[string]string{"id": "delta", "goal": "wind turbines"}, nil))
	killWhen(b, "delta", func(e eventlog.Event) bool { return e.Type == eventlog.NodeCreated && e.Node == "n4" })
	check(c, "delta", "wind turbines", mark, []string{"B", "C"})
	shows(c, "gamma", "solar panels") // from the database: C never held it
}

// In a fleet, a run's start asks the database which runs the agent has; reading the agent does
// not wait for that query (a lock held on the store's table stands for a slow database).
func TestReadsDoNotWaitForAStartsQuery(t *testing.T) {
	ctx := context.Background()
	_, pool := fleetDB(t)
	c := start(t, t.TempDir(), demoTeam, server.WithHost(host.WithPostgresPool(pool)))
	require.Equal(t, http.StatusCreated, c.do("POST", "/agents", map[string]string{"id": "ada", "goal": "AI chips"}, nil))
	c.await("ada", host.StatusComplete)
	awaitNoOwner(t, pool, "ada")

	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	defer tx.Rollback(ctx)
	_, err = tx.Exec(ctx, `LOCK TABLE squad_docs IN ACCESS EXCLUSIVE MODE`)
	require.NoError(t, err)
	started := make(chan int, 1)
	go func() {
		resp, err := c.ts.Client().Post(c.ts.URL+"/agents/ada/runs", "application/json", strings.NewReader(`{"goal": "robots"}`))
		if err != nil {
			started <- 0
			return
		}
		resp.Body.Close()
		started <- resp.StatusCode
	}()
	for end := time.Now().Add(deadline); ; time.Sleep(5 * time.Millisecond) {
		var waiting int
		require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM pg_locks WHERE NOT granted`).Scan(&waiting))
		if waiting > 0 {
			break // the start waits for the lock
		}
		require.False(t, time.Now().After(end), "the start never asked the database")
	}
	read, cancel := context.WithTimeout(ctx, 10*time.Second) // a liveness bound, far beyond a read
	defer cancel()
	req, err := http.NewRequestWithContext(read, http.MethodGet, c.ts.URL+"/agents/ada", nil)
	require.NoError(t, err)
	resp, err := c.ts.Client().Do(req)
	require.NoError(t, err, "reading the agent waited for the start's query")
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)

	require.NoError(t, tx.Rollback(ctx))
	assert.Equal(t, http.StatusAccepted, <-started)
	c.await("ada", host.StatusComplete)
}
