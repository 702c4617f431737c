package runner_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/graph"
	"github.com/agiraph/agiraph/internal/pgtest"
	"github.com/agiraph/agiraph/runner"
)

// childEnv makes the test binary a runner process on the database its value names, instead of
// running the tests (see child).
const childEnv = "AGIRAPH_RUNNERTEST_CHILD"

// The takeover test's figures: its lease and watchdog, its runs, its kills.
const (
	childTTL       = 2 * time.Second
	childHeartbeat = 300 * time.Millisecond
	childWatch     = 250 * time.Millisecond
	runs           = 100
	kills          = 10
)

// chainNodes are the nodes of the takeover test's graph, by step: b and c run in one step.
var chainNodes = [][]string{{"a"}, {"b", "c"}, {"d"}, {"e"}}

type chain struct {
	Thread string   `json:"thread"`
	Done   []string `json:"done" graph:"append"` // node:execution, for each task that finished
}

// chainGraph is the takeover test's graph. Each task records its execution in the effects table
// first (a side effect), then works for a while, then returns its node and execution ID.
func chainGraph(t testing.TB, pool *pgxpool.Pool) *graph.Compiled[chain] {
	g := graph.New[chain]()
	prev := []string{graph.START}
	for step, nodes := range chainNodes {
		for _, node := range nodes {
			g.AddNode(node, func(ctx context.Context, s chain) (chain, error) {
				exec := uuid.NewString()
				if _, err := pool.Exec(ctx, `INSERT INTO effects (thread, node, step, exec) VALUES ($1, $2, $3, $4)`, s.Thread, node, step, exec); err != nil {
					return chain{}, err
				}
				select {
				case <-time.After(time.Duration(100+rand.IntN(200)) * time.Millisecond):
				case <-ctx.Done():
					return chain{}, ctx.Err()
				}
				return chain{Done: []string{node + ":" + exec}}, nil
			})
			for _, p := range prev {
				g.AddEdge(p, node)
			}
		}
		prev = nodes
	}
	g.AddEdge("e", graph.END)
	c, err := g.Compile()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// child runs runs of chainGraph on the database at url until its standard input ends, then
// stops: a runner process of the takeover test. It says "ready" on its standard output once
// started.
func child(url string) int {
	ctx := context.Background()
	fail := func(err error) int {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 1
	}
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		return fail(err)
	}
	defer pool.Close()
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	r, err := runner.New(ctx, pool, runner.WithLease(childTTL, childHeartbeat), runner.WithWatchInterval(childWatch),
		runner.WithMaxWorkers(20), runner.WithLogger(logger))
	if err != nil {
		return fail(err)
	}
	if _, err := runner.Register(r, "chain", chainGraph(&testing.T{}, pool)); err != nil {
		return fail(err)
	}
	if err := r.Start(ctx); err != nil {
		return fail(err)
	}
	fmt.Println("ready")
	io.Copy(io.Discard, os.Stdin)
	if err := r.Close(); err != nil {
		return fail(err)
	}
	return 0
}

// describe tells where a thread stands, and its River jobs, for the message of a failure.
func describe(pool *pgxpool.Pool, thread string) string {
	ctx := context.Background()
	var b strings.Builder
	rows, err := pool.Query(ctx, `SELECT format('thread: %s gen %s owner %s expires %s job %s', status, generation, owner, expires_at, job_id) FROM agiraph_runs WHERE thread_id = $1
		UNION ALL SELECT format('job %s: %s, attempt %s, args %s, errors %s', id, state, attempt, args, errors) FROM river_job WHERE args->>'thread' = $1`, thread)
	if err != nil {
		return err.Error()
	}
	defer rows.Close()
	for rows.Next() {
		var line string
		rows.Scan(&line)
		b.WriteString(line + "\n")
	}
	return b.String()
}

// proc is a runner process of the takeover test.
type proc struct {
	cmd   *exec.Cmd
	stdin io.Closer
	log   *os.File
}

// stop ends the process by closing its standard input, and kills it if it has not stopped in
// half a minute (a bound on a hang, reported as a failure).
func (p *proc) stop(t *testing.T) {
	p.stdin.Close()
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case err := <-done:
		assert.NoError(t, err, "runner process %d", p.cmd.Process.Pid)
		p.log.Close()
	case <-time.After(30 * time.Second):
		p.cmd.Process.Kill()
		<-done
		log, _ := os.ReadFile(p.log.Name())
		t.Errorf("runner process %d did not stop when its input ended\n%s", p.cmd.Process.Pid, log)
	}
}

// spawn starts a runner process on url and waits until it has started.
func spawn(t *testing.T, url string, n int) *proc {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(exe)
	// A binary built with -race sleeps a second as it exits, unless told not to.
	cmd.Env = append(os.Environ(), childEnv+"="+url+"&pool_max_conns=25", "GORACE=atexit_sleep_ms=0")
	p := &proc{cmd: cmd}
	p.log, err = os.Create(fmt.Sprintf("%s/child-%d.log", t.TempDir(), n))
	require.NoError(t, err)
	cmd.Stderr = p.log
	p.stdin, err = cmd.StdinPipe()
	require.NoError(t, err)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || line != "ready\n" {
		cmd.Process.Kill()
		cmd.Wait()
		log, _ := os.ReadFile(p.log.Name())
		t.Fatalf("runner process %d did not start: %q, %v\n%s", n, line, err, log)
	}
	return p
}

// TestTakeover: three runner processes run 100 runs of a graph of four steps while one of them,
// chosen at random, is killed (SIGKILL) ten times and replaced. Every run completes with every
// task's output in its final state once; a task whose output was saved never runs again (a task
// killed before its output was saved runs again, which its side effects show); the threads of a
// killed process are taken over within a few lease TTLs.
func TestTakeover(t *testing.T) {
	ctx := context.Background()
	url := pgtest.Start(t)
	pool, err := pgxpool.New(ctx, url)
	require.NoError(t, err)
	defer pool.Close()
	_, err = pool.Exec(ctx, `CREATE TABLE effects (thread text, node text, step int, exec text, at timestamptz DEFAULT clock_timestamp())`)
	require.NoError(t, err)
	client := open(t, url)
	g, err := runner.Register(client, "chain", chainGraph(t, pool))
	require.NoError(t, err)

	begin := time.Now()
	var procs []*proc
	for i := range 3 {
		procs = append(procs, spawn(t, url, i))
	}
	defer func() {
		for _, p := range procs {
			p.stop(t)
		}
	}()

	threads := make([]string, runs)
	enqueued := make(chan error, 1)
	go func() { // 100 runs, 5 every 300 ms
		for i := range threads {
			threads[i] = fmt.Sprintf("run-%03d", i)
			if err := g.Invoke(ctx, threads[i], chain{Thread: threads[i]}); err != nil {
				enqueued <- err
				return
			}
			if i%5 == 4 {
				time.Sleep(300 * time.Millisecond)
			}
		}
		enqueued <- nil
	}()

	var (
		mu        sync.Mutex
		takeovers []time.Duration // kill → the thread leased by another process (or finished)
		watchers  sync.WaitGroup
		held      int // threads leased by the killed processes
	)
	for k := range kills {
		time.Sleep(time.Duration(400+rand.IntN(400)) * time.Millisecond)
		i := rand.IntN(len(procs))
		victim := procs[i]
		pid := strconv.Itoa(victim.cmd.Process.Pid)
		require.NoError(t, victim.cmd.Process.Kill())
		killed := time.Now()
		victim.cmd.Wait()
		rows, err := pool.Query(ctx, `SELECT thread_id FROM agiraph_runs WHERE status = 'running' AND split_part(owner, '/', 2) = $1`, pid)
		require.NoError(t, err)
		var orphans []string
		for rows.Next() {
			var th string
			require.NoError(t, rows.Scan(&th))
			orphans = append(orphans, th)
		}
		require.NoError(t, rows.Err())
		held += len(orphans)
		procs[i] = spawn(t, url, 3+k)
		for _, th := range orphans {
			watchers.Go(func() {
				for wait := time.Now(); time.Since(wait) < time.Minute; { // a bound on a hang
					var st string
					var owner *string
					require.NoError(t, pool.QueryRow(ctx, `SELECT status, owner FROM agiraph_runs WHERE thread_id = $1`, th).Scan(&st, &owner))
					if st != "running" && st != "queued" || owner != nil && !strings.Contains(*owner, "/"+pid+"/") {
						mu.Lock()
						takeovers = append(takeovers, time.Since(killed))
						mu.Unlock()
						return
					}
					time.Sleep(10 * time.Millisecond)
				}
				t.Errorf("%s was not taken over\n%s", th, describe(pool, th))
			})
		}
	}
	require.NoError(t, <-enqueued)
	watchers.Wait()

	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute) // a bound on a hang, not a measure
	defer cancel()
	for _, th := range threads {
		final, err := g.Wait(wctx, th)
		require.NoError(t, err, "%s\n%s", th, describe(pool, th))
		var nodes []string
		for _, d := range final.Done {
			nodes = append(nodes, strings.SplitN(d, ":", 2)[0])
		}
		require.Equal(t, []string{"a", "b", "c", "d", "e"}, nodes, "%s: every task's output once, in frontier order", th)
	}
	total := time.Since(begin)

	// The execution whose output was saved is the last of its task: nothing ran it again.
	saved := map[string]bool{}
	for _, th := range threads {
		res, err := g.Result(ctx, th)
		require.NoError(t, err)
		for _, d := range res.State.Done {
			saved[strings.SplitN(d, ":", 2)[1]] = true
		}
	}
	rows, err := pool.Query(ctx, `SELECT thread, node, exec FROM effects ORDER BY thread, node, at`)
	require.NoError(t, err)
	executions := map[string][]string{}
	for rows.Next() {
		var th, node, exec string
		require.NoError(t, rows.Scan(&th, &node, &exec))
		executions[th+"/"+node] = append(executions[th+"/"+node], exec)
	}
	require.NoError(t, rows.Err())
	require.Len(t, executions, runs*5)
	again := 0
	for task, execs := range executions {
		assert.True(t, saved[execs[len(execs)-1]], "%s: an execution after the one whose output was saved: %v", task, execs)
		again += len(execs) - 1
	}

	slices.Sort(takeovers)
	bound := childTTL + childWatch
	t.Logf("%d runs of %d tasks in %v with %d kills; %d tasks ran again (killed before their output was saved); %d threads held by killed processes",
		runs, 5, total.Round(time.Millisecond), kills, again, held)
	if len(takeovers) > 0 {
		t.Logf("takeover (kill → leased elsewhere or finished): min %v, median %v, max %v (lease TTL %v, watchdog every %v)",
			takeovers[0].Round(time.Millisecond), takeovers[len(takeovers)/2].Round(time.Millisecond),
			takeovers[len(takeovers)-1].Round(time.Millisecond), childTTL, childWatch)
		assert.Less(t, takeovers[len(takeovers)-1], 5*bound, "a takeover took more than 5× the lease TTL plus the watch interval")
	}
}
