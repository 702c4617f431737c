package nodes_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/nodes"
	"github.com/agiraph/agiraph/nodes/eventlog"
	"github.com/agiraph/agiraph/nodes/store/sqlitestore"
	"github.com/agiraph/agiraph/nodes/triggers"
	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/providers/scripted"
	"github.com/agiraph/agiraph/tools"
)

var postID = regexp.MustCompile(`post-\d+`)

// monitor plays an infinite agent's coordinator: every time it is woken it fetches the front
// page, compares it with the posts its memory says it reported, reports only the new ones,
// remembers them, updates coordinator/hn_summary.md, and finishes the cycle. At its first wake
// it schedules a heartbeat to wake it every 30 minutes.
func monitor() *scripted.Model {
	return scripted.NewFunc("monitor", func(_ context.Context, req providers.Request) (scripted.Turn, error) {
		text, results := scripted.Last(req)
		byName := map[string]tools.Result{}
		for _, r := range results {
			byName[r.Name] = r
		}
		switch {
		case strings.Contains(text, "The run is ending"):
			return scripted.Turn{Text: "noted"}, nil
		case len(req.Messages) == 1 || strings.Contains(text, "[trigger"):
			calls := []tools.Call{scripted.Call("fetch_front_page", map[string]string{}), scripted.Call("memory_read", map[string]string{"path": "knowledge/hn-reported.md"})}
			if scCalled(req)["schedule"] == 0 {
				calls = append(calls, scripted.Call("schedule", map[string]any{"type": "heartbeat", "interval_seconds": 1800, "action": "Check the front page for new AI posts."}))
			}
			return scTurn(req, calls...), nil
		case byName["fetch_front_page"].Content != "":
			reported := map[string]bool{}
			for _, id := range postID.FindAllString(byName["memory_read"].Content, -1) {
				reported[id] = true
			}
			var fresh, all []string
			for _, id := range postID.FindAllString(byName["fetch_front_page"].Content, -1) {
				all = append(all, id)
				if !reported[id] {
					fresh = append(fresh, id)
				}
			}
			var summary strings.Builder
			summary.WriteString("# AI posts seen\n")
			for _, id := range all {
				fmt.Fprintf(&summary, "- %s\n", id)
			}
			calls := []tools.Call{scripted.Call("write_file", map[string]string{"path": "coordinator/hn_summary.md", "content": summary.String()})}
			if len(fresh) > 0 {
				calls = append(calls, scripted.Call("memory_write", map[string]string{"path": "knowledge/hn-reported.md", "content": "## Reported\n" + strings.Join(fresh, "\n")}))
			}
			report := "No new AI posts."
			if len(fresh) > 0 {
				report = "New AI posts: " + strings.Join(fresh, ", ")
			}
			calls = append(calls, scripted.Call("finish", map[string]string{"output": report}))
			return scTurn(req, calls...), nil
		}
		return scTurn(req, scripted.Call("wait", map[string]string{})), nil
	})
}

// Scenario 9: an infinite agent monitors a front page in cycles — wake, work, report, sleep —
// woken by the heartbeat it scheduled; it reports each post once across cycles, keeps notes in
// memory, and stops cleanly when asked.
func TestInfiniteAgentCycles(t *testing.T) {
	clock := triggers.NewFakeClock(time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC))
	var cycle atomic.Int32
	front := tools.Func("fetch_front_page", "Fetch the front page's AI posts.", func(context.Context, struct{}) (string, error) {
		n := int(cycle.Load())*2 + 2 // each cycle, two more posts
		var ids []string
		for i := 1; i <= n; i++ {
			ids = append(ids, fmt.Sprintf("post-%d", i))
		}
		return strings.Join(ids, "\n"), nil
	})
	coord := monitor().KeepRequests()
	s := scSquad(t, coord, []providers.Model{scripted.New("unused")},
		nodes.WithMode(nodes.Infinite), nodes.WithTriggerClock(clock), nodes.WithCoordinatorTools(front))
	events, stop := s.Subscribe(0)
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), scTimeout)
	defer cancel()
	r, err := s.Start(ctx, "Monitor the front page: every cycle, report the new AI posts.")
	if err != nil {
		t.Fatal(err)
	}

	var outputs []string
	for i := 1; i <= 3; i++ {
		e := waitFor(t, events, fmt.Sprintf("cycle %d", i), func(e eventlog.Event) bool { return e.Type == "x.cycle_completed" })
		outputs = append(outputs, e.Text)
		cycle.Add(1)
		if i < 3 {
			clock.Advance(30 * time.Minute) // the heartbeat wakes the agent
		}
	}
	if err := r.Pause(); err != nil {
		t.Fatal(err)
	}
	res, err := r.Wait()
	if err != nil {
		t.Fatalf("the infinite run did not stop cleanly: %v", err)
	}

	// Each post reported exactly once, across the three cycles.
	seen := map[string]int{}
	for _, o := range outputs {
		for _, id := range postID.FindAllString(o, -1) {
			seen[id]++
		}
	}
	for i := 1; i <= 6; i++ {
		if id := fmt.Sprintf("post-%d", i); seen[id] != 1 {
			t.Errorf("%s reported %d times in %q", id, seen[id], outputs)
		}
	}
	run := filepath.Join(string(s.Home()), "runs", res.RunID)
	summary, _ := os.ReadFile(filepath.Join(run, "coordinator", "hn_summary.md"))
	if !strings.Contains(string(summary), "post-6") {
		t.Errorf("hn_summary.md not updated by the last cycle:\n%s", summary)
	}
	for i := 1; i <= 3; i++ {
		if _, err := os.Stat(filepath.Join(run, fmt.Sprintf("_output.cycle%03d.md", i))); err != nil {
			t.Errorf("no output of cycle %d", i)
		}
	}
	reported, _ := s.Memory().Read("knowledge/hn-reported.md")
	if strings.Count(reported, "## Reported") != 3 {
		t.Errorf("memory has notes from %d cycles, want 3:\n%s", strings.Count(reported, "## Reported"), reported)
	}
	// One conversation across the cycles: the third wake-up saw the first cycle's messages.
	reqs := coord.Requests()
	if last := reqs[len(reqs)-1]; !strings.Contains(scAll(last), "post-1") || last.Messages[0].Text() != reqs[0].Messages[0].Text() {
		t.Error("the coordinator did not keep its conversation across cycles")
	}
	ts, err := s.Triggers()
	if err != nil || len(ts) != 1 || ts[0].Type != triggers.Heartbeat || ts[0].Fired != 2 {
		t.Errorf("triggers after the run: %+v, %v", ts, err)
	}
}

// A delayed trigger outlives the process that scheduled it: due while the agent is down, it
// fires once when the run is resumed, late, and wakes the coordinator.
func TestDelayedTriggerSurvivesARestart(t *testing.T) {
	home := t.TempDir()
	clock := triggers.NewFakeClock(time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC))
	woken := make(chan string, 4)
	coord := scripted.NewFunc("reminder", func(_ context.Context, req providers.Request) (scripted.Turn, error) {
		text, results := scripted.Last(req)
		switch {
		case len(req.Messages) == 1:
			return scTurn(req, scripted.Call("schedule", map[string]any{"type": "delayed", "delay_seconds": 3600, "action": "Check the build."})), nil
		case strings.Contains(text, "[trigger"):
			woken <- text
			return scTurn(req, scripted.Call("finish", map[string]string{"output": "checked the build"})), nil
		case len(results) > 0:
			return scTurn(req, scripted.Call("wait", map[string]string{})), nil
		}
		return scripted.Turn{Text: "ok"}, nil
	})
	open := func() *nodes.Squad {
		s := scSquad(t, coord, []providers.Model{scripted.New("unused")}, nodes.WithHome(home), nodes.WithTriggerClock(clock))
		return s
	}
	s := open()
	ctx, cancel := context.WithCancel(context.Background())
	events, stop := s.Subscribe(0)
	r, err := s.Start(ctx, "Remind me to check the build in an hour.", nodes.WithRunID("remind"))
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, events, "the trigger scheduled", func(e eventlog.Event) bool {
		return e.Type == eventlog.ToolResult && strings.Contains(e.Text, "schedule")
	})
	stop()
	cancel() // the process goes down
	r.Wait()
	s.Close()

	clock.Advance(2 * time.Hour) // the trigger comes due while nothing runs
	s = open()
	defer s.Close()
	ctx2, cancel2 := context.WithTimeout(context.Background(), scTimeout)
	defer cancel2()
	res, err := resume(ctx2, s, "remind")
	if err != nil {
		t.Fatal(err)
	}
	if res.Output != "checked the build" {
		t.Fatalf("output %q", res.Output)
	}
	if got := <-woken; !strings.Contains(got, "came due while the agent was down") || !strings.Contains(got, "Check the build.") {
		t.Fatalf("wake message %q", got)
	}
	select {
	case again := <-woken:
		t.Fatalf("the trigger fired twice: %q", again)
	default:
	}
	ts, _ := s.Triggers()
	if len(ts) != 1 || ts[0].Status != triggers.Fired || ts[0].Fired != 1 {
		t.Fatalf("trigger after the restart: %+v", ts)
	}
}

// Every kind of action reaches the run: an on_event trigger messages the human when n1
// completes, a delayed trigger puts n1 back on the board (it runs again), and a wake trigger
// wakes the coordinator, who then finishes.
func TestTriggerActions(t *testing.T) {
	clock := triggers.NewFakeClock(time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC))
	coord := scripted.NewFunc("actions", func(_ context.Context, req providers.Request) (scripted.Turn, error) {
		text, results := scripted.Last(req)
		switch {
		case len(req.Messages) == 1:
			return scTurn(req,
				scripted.Call("create_work_node", map[string]any{"task": "write a.md"}),
				scripted.Call("schedule", map[string]any{"type": "on_event", "pattern": "node.completed", "filter": map[string]string{"node": "n1"}, "to": "human", "message": "n1 is done"}),
				scripted.Call("schedule", map[string]any{"type": "delayed", "delay_seconds": 600, "node": "n1"}),
				scripted.Call("schedule", map[string]any{"type": "delayed", "delay_seconds": 1200, "action": "Wrap up."}),
			), nil
		case strings.Contains(text, "Wrap up."):
			return scTurn(req, scripted.Call("finish", map[string]string{"output": "wrapped up"})), nil
		case len(results) > 0:
			for _, r := range results {
				if r.IsError {
					return scTurn(req, scripted.Call("finish", map[string]string{"output": "FAILED: " + r.Content})), nil
				}
			}
		}
		return scTurn(req, scripted.Call("wait", map[string]string{})), nil
	})
	var runs atomic.Int32
	worker := scripted.NewFunc("writer", func(_ context.Context, req providers.Request) (scripted.Turn, error) {
		if len(req.Messages) == 1 {
			runs.Add(1)
			return scTurn(req, scripted.Call("write_file", map[string]string{"path": "nodes/n1/scratch/a" + fmt.Sprint(runs.Load()) + ".md", "content": "a"})), nil
		}
		return scTurn(req, scripted.Call("publish", map[string]string{"summary": "a written"})), nil
	})
	s := scSquad(t, coord, []providers.Model{worker}, nodes.WithTriggerClock(clock))
	events, stop := s.Subscribe(0)
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), scTimeout)
	defer cancel()
	done := make(chan error, 1)
	var res nodes.Result
	go func() {
		var err error
		res, err = s.Run(ctx, "Show the trigger actions.")
		done <- err
	}()
	waitFor(t, events, "the message to the human", func(e eventlog.Event) bool {
		return e.Type == eventlog.MessageSent && e.Text == "n1 is done"
	})
	clock.Advance(10 * time.Minute) // n1 goes back on the board and runs again
	waitFor(t, events, "n1 completed again", func(e eventlog.Event) bool {
		return e.Type == eventlog.NodeCompleted && e.Node == "n1" && runs.Load() == 2
	})
	clock.Advance(10 * time.Minute) // the coordinator is woken
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if res.Output != "wrapped up" {
		t.Fatalf("output %q", res.Output)
	}
	n1, _ := res.Board.Node("n1")
	if n1.Attempts != 2 || !slices.Equal(n1.Published, []string{"a1.md", "a2.md"}) {
		t.Fatalf("n1 after running twice: %+v", n1)
	}
}

// An infinite agent runs cycle after cycle without its files growing with the cycles behind it
// (its state in the store stays one small record) and without its coordinator running out of turns:
// each wake-up has its own. go test -short runs 20 cycles rather than 140.
func TestInfiniteAgentKeepsGoing(t *testing.T) {
	n := 140
	if testing.Short() {
		n = 20
	}
	home := t.TempDir()
	agent := startCycles(t, home)
	for i := range n {
		agent.cycle(t, i)
	}
	agent.end(t)

	runs, err := filepath.Glob(filepath.Join(home, "runs", "*"))
	require.NoError(t, err)
	require.Len(t, runs, 1)
	st, err := sqlitestore.Open(filepath.Join(home, "state.db"))
	require.NoError(t, err)
	defer st.Close()
	doc, err := st.Doc(context.Background(), "run/"+filepath.Base(runs[0]))
	require.NoError(t, err)
	var state struct{ Cycle int }
	require.NoError(t, json.Unmarshal(doc.Value, &state))
	assert.Equal(t, n, state.Cycle)
	assert.Less(t, len(doc.Value), 16<<10, "the run's state does not grow with its cycles")

	histories, err := filepath.Glob(filepath.Join(runs[0], "workers", "*", "history.jsonl"))
	require.NoError(t, err)
	lines := 0
	for _, h := range histories {
		lines += len(jsonLines(t, h))
	}
	assert.Equal(t, n, lines, "a history line per node")
}
