package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/nodes/eventlog"
)

// The crash test's knobs, from the environment.
const (
	roundsEnv = "AGIRAPH_CRASH_ROUNDS" // how many times the server is killed (default 4; 1 under -short)
	seedEnv   = "AGIRAPH_CRASH_SEED"   // the seed of the kills' moments (default: the time)
)

// topics make the goals of the crash test's agents, each different.
var topics = []string{"AI chips", "quantum sensors", "solid-state batteries", "fusion startups", "gene therapy", "space debris"}

// perRound is how many agents are created before each kill.
const perRound = 3

// crashGoal is the goal of the crash test's agent i.
func crashGoal(i int) string {
	if i < len(topics) {
		return topics[i]
	}
	return fmt.Sprintf("%s, take %d", topics[i%len(topics)], i/len(topics)+1)
}

// settle bounds the wait for every agent to complete after the last restart.
const settle = 60 * time.Second

// The real command, killed with SIGKILL at random moments while agents of the offline team
// work, and started again on the same root each time: after the last restart, with no POST
// /resume, every agent completes by itself with the output an uninterrupted run gives, each
// node completed once, and the events numbered without gap or repeat. Each round creates a few
// agents (so that every kill falls inside runs: new ones, and those the restart resumed) and
// kills the server at a random moment within the time those runs take uninterrupted.
func TestCrashAndRestart(t *testing.T) {
	rounds := 4
	if testing.Short() {
		rounds = 1
	}
	if v := os.Getenv(roundsEnv); v != "" {
		n, err := strconv.Atoi(v)
		require.NoError(t, err, roundsEnv)
		rounds = n
	}
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv(seedEnv); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		require.NoError(t, err, seedEnv)
		seed = n
	}
	t.Logf("%d rounds, seed %d (%s=%d reproduces the moments)", rounds, seed, seedEnv, seed)
	rng := rand.New(rand.NewPCG(seed, seed))
	bin := buildServe(t)
	logs := t.TempDir()

	n := max(rounds, 1) * perRound

	// The reference: every goal's run to its end, with no kill, a round's agents at a time;
	// span is the shortest time a round's took.
	p := launch(t, bin, t.TempDir(), filepath.Join(logs, "reference.log"))
	want := map[string]string{}
	span := time.Duration(math.MaxInt64)
	var spans []time.Duration
	for first := 0; first < n; first += perRound {
		began := time.Now()
		for i := first; i < first+perRound; i++ {
			p.create(t, agentID(i), crashGoal(i))
		}
		got := p.awaitCompleted(t, first+perRound, settle)
		spans = append(spans, time.Since(began).Round(time.Millisecond))
		span = min(span, time.Since(began))
		for i := first; i < first+perRound; i++ {
			require.NotEmpty(t, got[agentID(i)].Output, agentID(i))
			want[agentID(i)] = got[agentID(i)].Output
		}
	}
	p.terminate(t)
	t.Logf("reference: %d agents, %d at a time, in %v", n, perRound, spans)

	// Killed and started again, round after round.
	root := t.TempDir()
	p = launch(t, bin, root, filepath.Join(logs, "round1.log"))
	for round := 1; round <= rounds; round++ {
		for i := (round - 1) * perRound; i < round*perRound; i++ {
			p.create(t, agentID(i), crashGoal(i))
		}
		delay := time.Duration(rng.Int64N(int64(span))) // inside the time the new runs take
		time.Sleep(delay)
		before := p.statuses()
		p.kill(t)
		t.Logf("round %d: killed %v after creating %d agents; agents were %s", round, delay.Round(time.Millisecond), perRound, before)
		p = launch(t, bin, root, filepath.Join(logs, fmt.Sprintf("round%d.log", round+1)))
	}

	// After the last restart, nothing but waiting. The agents that completed are checked even
	// when others did not.
	got := p.awaitCompleted(t, n, settle)
	for i := range n {
		id := agentID(i)
		s := got[id]
		if s.Status != "completed" {
			continue
		}
		assert.Equal(t, want[id], s.Output, "%s: the output of its run", id)
		evs := p.events(t, id)
		ok := true
		for j, e := range evs {
			if e.Seq != int64(j+1) {
				ok = assert.Equal(t, int64(j+1), e.Seq, "%s: event %d of %d is numbered %d (%s)", id, j+1, len(evs), e.Seq, e.Type) && ok
				break
			}
		}
		completed := map[string]int{}
		agentCompleted := 0
		for _, e := range evs {
			switch {
			case e.Type == eventlog.NodeCompleted && e.Run == s.Run:
				completed[e.Node]++
			case e.Type == eventlog.AgentCompleted && e.Run == s.Run:
				agentCompleted++
			}
		}
		board := p.board(t, id)
		ok = assert.Len(t, board, 4, "%s: the nodes of its board", id) && ok
		for _, n := range board {
			ok = assert.Equal(t, "completed", n.Status, "%s: node %s", id, n.ID) && ok
			ok = assert.Equal(t, 1, completed[n.ID], "%s: node.completed events of node %s", id, n.ID) && ok
		}
		ok = assert.Equal(t, 1, agentCompleted, "%s: agent.completed events", id) && ok
		if !ok {
			p.dump(t, id)
		}
	}
	p.terminate(t)
	if t.Failed() {
		p.report(t, logs)
	}
}

func agentID(i int) string { return fmt.Sprintf("crash%d", i+1) }

// buildServe builds the command into a temporary folder.
func buildServe(t *testing.T) string {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to build the server with")
	}
	bin := filepath.Join(t.TempDir(), "serve")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, gobin, "build", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, "go build: %s", out)
	return bin
}

// proc is the command running as a child process.
type proc struct {
	cmd    *exec.Cmd
	url    string
	log    string
	done   chan struct{}
	client *http.Client
}

var servingOn = regexp.MustCompile(`Serving agents .* on (http://\S+)`)

// launch starts the command on root, on a free port, logging to log, and waits until it serves.
func launch(t *testing.T, bin, root, log string) *proc {
	t.Helper()
	logf, err := os.Create(log)
	require.NoError(t, err)
	cmd := exec.Command(bin, "-offline", "-root", root, "-addr", "127.0.0.1:0")
	cmd.Env = append(os.Environ(), "AGIRAPH_TOKEN="+testToken)
	cmd.Stderr = logf
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	p := &proc{cmd: cmd, log: log, done: make(chan struct{}), client: &http.Client{Timeout: 10 * time.Second, Transport: bearer{}}}
	urls := make(chan string, 1)
	go func() {
		defer close(p.done)
		defer logf.Close()
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if m := servingOn.FindStringSubmatch(sc.Text()); m != nil {
				urls <- m[1]
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
		_ = cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-p.done
	})
	select {
	case p.url = <-urls:
	case <-p.done:
		t.Fatalf("the server exited before serving: %s", readLog(log))
	case <-time.After(30 * time.Second):
		t.Fatalf("the server did not serve within 30s: %s", readLog(log))
	}
	return p
}

func readLog(path string) string {
	data, _ := os.ReadFile(path)
	return string(data)
}

// kill kills the process at once, as a crash would.
func (p *proc) kill(t *testing.T) {
	t.Helper()
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGKILL))
	<-p.done
}

// terminate stops the process as Ctrl-C would, and waits for it.
func (p *proc) terminate(t *testing.T) {
	t.Helper()
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		t.Errorf("the server did not stop within 30s of SIGTERM")
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// get decodes the JSON answer to GET path into out.
func (p *proc) get(path string, out any) error {
	resp, err := p.client.Get(p.url + path)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("GET %s: %d %s", path, resp.StatusCode, body)
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

// create creates agent id toward goal.
func (p *proc) create(t *testing.T, id, goal string) {
	t.Helper()
	body, err := json.Marshal(map[string]string{"id": id, "goal": goal})
	require.NoError(t, err)
	resp, err := p.client.Post(p.url+"/agents", "application/json", strings.NewReader(string(body)))
	require.NoError(t, err)
	data, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusCreated, resp.StatusCode, "POST /agents %s: %s", id, data)
}

// agent is what the test reads of an agent's summary.
type agent struct {
	ID, Status, Run, Goal, Output, Error, Stalled string
}

func (p *proc) agents() ([]agent, error) {
	var list struct{ Agents []agent }
	err := p.get("/agents", &list)
	return list.Agents, err
}

// statuses describes the agents' statuses, for the log.
func (p *proc) statuses() string {
	as, err := p.agents()
	if err != nil {
		return err.Error()
	}
	var b []string
	for _, a := range as {
		b = append(b, a.ID+"="+a.Status)
	}
	return strings.Join(b, " ")
}

// awaitCompleted waits until the first n agents of the test are completed, and returns the
// agents by id. It fails the test, naming the agents that are not, after wait or when one fails.
func (p *proc) awaitCompleted(t *testing.T, n int, wait time.Duration) map[string]agent {
	t.Helper()
	end := time.Now().Add(wait)
	for {
		as, err := p.agents()
		got := map[string]agent{}
		var pending, failed []string
		if err == nil {
			for _, a := range as {
				got[a.ID] = a
			}
			for i := range n {
				a, ok := got[agentID(i)]
				switch {
				case !ok:
					pending = append(pending, agentID(i)+" (missing)")
				case a.Status == "failed":
					failed = append(failed, fmt.Sprintf("%s (failed: %s)", a.ID, a.Error))
				case a.Status != "completed":
					pending = append(pending, fmt.Sprintf("%s (%s%s)", a.ID, a.Status, stalled(a)))
				}
			}
			if len(pending) == 0 && len(failed) == 0 {
				return got
			}
		}
		if len(failed) > 0 || time.Now().After(end) {
			t.Errorf("after %v: failed %v, not completed %v (last error %v)", wait, failed, pending, err)
			for _, a := range as {
				if a.Status != "completed" {
					p.dump(t, a.ID)
				}
			}
			return got
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func stalled(a agent) string {
	if a.Stalled == "" {
		return ""
	}
	return ", stalled: " + a.Stalled
}

func (p *proc) events(t *testing.T, id string) []eventlog.Event {
	t.Helper()
	var evs struct{ Events []eventlog.Event }
	require.NoError(t, p.get("/agents/"+id+"/events", &evs))
	return evs.Events
}

type boardNode struct{ ID, Status string }

func (p *proc) board(t *testing.T, id string) []boardNode {
	t.Helper()
	var b struct{ Nodes []boardNode }
	require.NoError(t, p.get("/agents/"+id+"/board", &b))
	return b.Nodes
}

// dump logs the agent's summary, board and events.
func (p *proc) dump(t *testing.T, id string) {
	t.Helper()
	var a agent
	if err := p.get("/agents/"+id, &a); err != nil {
		t.Logf("%s: %v", id, err)
		return
	}
	t.Logf("%s: %s run %s error %q stalled %q", id, a.Status, a.Run, a.Error, a.Stalled)
	var b struct{ Nodes []boardNode }
	if p.get("/agents/"+id+"/board", &b) == nil {
		t.Logf("%s: board %+v", id, b.Nodes)
	}
	var evs struct{ Events []eventlog.Event }
	if err := p.get("/agents/"+id+"/events", &evs); err != nil {
		t.Logf("%s: events: %v", id, err)
		return
	}
	for _, e := range evs.Events {
		text := e.Text
		if len(text) > 300 {
			text = text[:300] + "…"
		}
		t.Logf("%s: %d %s run=%s node=%s worker=%s key=%s %q", id, e.Seq, e.Type, e.Run, e.Node, e.Worker, e.Key, text)
	}
}

// report logs the servers' logs.
func (p *proc) report(t *testing.T, logs string) {
	t.Helper()
	entries, _ := os.ReadDir(logs)
	for _, e := range entries {
		t.Logf("--- %s\n%s", e.Name(), readLog(filepath.Join(logs, e.Name())))
	}
}
