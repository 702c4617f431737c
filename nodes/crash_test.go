package nodes_test

// The crash campaign: a squad run killed with SIGKILL at any point and resumed in a new process
// must end exactly as an uninterrupted run.
//
// Every run happens in a child process: the test binary run again (TestMain dispatches to
// crashChild when NODES_CRASH_HOME is set). The child plays the demo team with a sub-node and a
// question to the human (the human answers "yes"), on a fast tick, with a fixed run id. It
// kills itself without any hook in the library:
//
//   - NODES_CRASH_CLOCK_KILL=K: the squad's clock (nodes.WithClock) counts its calls and sends
//     SIGKILL to the process at call K. The clock is read right before every event append, bus
//     send, board write and conversation line, so K picks a point between two writes: inside a
//     coordinator turn, inside a tool call (tool.result is appended after the tool ran and before
//     its result is checkpointed), inside reconvene, between the steps of a tick.
//   - NODES_CRASH_MODEL_KILL=M: the models count their calls and kill the process in call M,
//     after the model answered and before the answer is returned.
//
// The first two runs are uninterrupted references; the first one also calibrates how many clock
// and model calls a whole run makes, and the kill points are spread evenly over both ranges.
// For each point: a fresh home, a child killed at the point (a point the run finishes before is
// not counted), then a child that resumes the run (for every fifth point that one is killed
// once more, then a third resumes), which must complete. The result is compared with the
// references (see check).
//
// AGIRAPH_CRASH_POINTS sets the number of points (default 30), AGIRAPH_CRASH_PARALLEL how many
// points run at once (default 3); AGIRAPH_CRASH_AT runs the points it lists instead, as the
// test names them ("clock=132,model=14,clock=108+clock=119"), and AGIRAPH_CRASH_KEEP=dir keeps
// each point's home in dir, to look at. go test -short runs 5 points (one of them killed twice).

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/models"
	"github.com/agiraph/agiraph/nodes"
	"github.com/agiraph/agiraph/nodes/demo"
	"github.com/agiraph/agiraph/nodes/eventlog"
	"github.com/agiraph/agiraph/nodes/workspace"
	"github.com/agiraph/agiraph/providers"
)

// The child's environment.
const (
	crashHomeEnv      = "NODES_CRASH_HOME"       // the agent's home; set, it makes the test binary a crash child
	crashModeEnv      = "NODES_CRASH_MODE"       // "run" starts the run, "resume" resumes it
	crashClockKillEnv = "NODES_CRASH_CLOCK_KILL" // kill at this call of the clock (0: never)
	crashModelKillEnv = "NODES_CRASH_MODEL_KILL" // kill in this model call (0: never)
	crashStatsEnv     = "NODES_CRASH_STATS"      // where the child writes its crashStats when the run returns
)

const (
	crashRunID   = "crash"
	crashGoal    = "the history of tea"
	crashAnswer  = "yes"
	crashTimeout = 20 * time.Second // a child's run ends with an error after this: a stuck run
)

// crashTeam is the team of the campaign: the demo team with a sub-node and a question to the
// human.
var crashTeam = []demo.Option{demo.WithSubNodes(), demo.WithHumanQuestion()}

// crashStats is what a child that was not killed reports.
type crashStats struct {
	Clock int64  `json:"clock"` // calls of the clock, in all
	Start int64  `json:"start"` // calls of the clock before the run started
	Model int64  `json:"model"` // model calls
	Error string `json:"error,omitempty"`
}

// crashChild is the child process: it runs or resumes the campaign's run, killing itself at the
// point its environment names, and answering the human's questions.
func crashChild() int {
	home := os.Getenv(crashHomeEnv)
	clockKill, _ := strconv.ParseInt(os.Getenv(crashClockKillEnv), 10, 64)
	modelKill, _ := strconv.ParseInt(os.Getenv(crashModelKillEnv), 10, 64)
	var clockCalls, modelCalls atomic.Int64
	clock := func() time.Time {
		if clockCalls.Add(1) == clockKill {
			killSelf()
		}
		return time.Now()
	}
	team := demo.Models(crashTeam...)
	resolve := func(name string) (providers.Model, error) {
		m, err := models.New(name, models.WithModels(team...), models.WithoutRetry())
		if err != nil {
			return nil, err
		}
		return killingModel{Model: m, calls: &modelCalls, at: modelKill}, nil
	}
	s, err := nodes.New(append(demo.Team(crashTeam...),
		nodes.WithHome(home), nodes.WithModelResolver(resolve), nodes.WithClock(clock),
		nodes.WithTick(5*time.Millisecond))...)
	if err != nil {
		fmt.Fprintln(os.Stderr, "crash child:", err)
		return 1
	}
	answerQuestions(s)
	start := clockCalls.Load()
	ctx, cancel := context.WithTimeout(context.Background(), crashTimeout)
	defer cancel()
	var res nodes.Result
	if os.Getenv(crashModeEnv) == "resume" {
		res, err = resume(ctx, s, crashRunID)
		if errors.Is(err, nodes.ErrNotStarted) { // killed before the run began
			res, err = s.Run(ctx, crashGoal, nodes.WithRunID(crashRunID))
		}
	} else {
		res, err = s.Run(ctx, crashGoal, nodes.WithRunID(crashRunID))
	}
	if err == nil && !res.Finished {
		err = errors.New("the run returned without finishing")
	}
	st := crashStats{Clock: clockCalls.Load(), Start: start, Model: modelCalls.Load()}
	if err != nil {
		st.Error = err.Error()
		fmt.Fprintln(os.Stderr, "crash child:", err)
	}
	if path := os.Getenv(crashStatsEnv); path != "" {
		b, _ := json.Marshal(st)
		os.WriteFile(path, b, 0o644)
	}
	if err != nil {
		return 1
	}
	return 0
}

// killSelf ends the process as a crash would: SIGKILL, nothing flushed, nothing deferred.
func killSelf() {
	if p, err := os.FindProcess(os.Getpid()); err == nil {
		_ = p.Kill() // SIGKILL on Unix
	}
	time.Sleep(time.Hour)
}

// killingModel kills the process in its at-th call (counted over every model of the process).
type killingModel struct {
	providers.Model
	calls *atomic.Int64
	at    int64
}

func (m killingModel) Generate(ctx context.Context, req providers.Request) (providers.Response, error) {
	n := m.calls.Add(1)
	resp, err := m.Model.Generate(ctx, req)
	if n == m.at {
		killSelf()
	}
	return resp, err
}

// answerQuestions plays the human: every question asked (a human.question event) that has no
// human.response after it is answered "yes" — the questions already in the log when the
// process starts (asked before a crash) once the run is in progress, new ones as they come.
func answerQuestions(s *nodes.Squad) {
	old, _ := s.Events(0, 0)
	var last int64
	pending := map[string]bool{}
	for _, e := range old {
		last = e.Seq
		switch e.Type {
		case eventlog.HumanQuestion:
			pending[e.Worker] = true
		case eventlog.HumanResponse:
			delete(pending, e.Worker)
		}
	}
	answer := func(worker string) {
		for deadline := time.Now().Add(crashTimeout); time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
			err := nodes.ErrNoRun
			if run := s.Current(); run != nil {
				err = run.Answer(worker, crashAnswer)
			}
			if !errors.Is(err, nodes.ErrNoRun) {
				return // answered, or no longer waiting: either way done
			}
		}
	}
	for w := range pending {
		go answer(w)
	}
	events, _ := s.Subscribe(last) // the process ends without unsubscribing
	go func() {
		for e := range events {
			if e.Type == eventlog.HumanQuestion {
				go answer(e.Worker)
			}
		}
	}()
}

// crashPoint is where a child is killed.
type crashPoint struct {
	clock, model int64 // the kill point of the first child: a clock call or a model call
	again        int64 // when set, the clock call the first resuming child is killed at
}

func (p crashPoint) String() string {
	s := fmt.Sprintf("clock=%d", p.clock)
	if p.model > 0 {
		s = fmt.Sprintf("model=%d", p.model)
	}
	if p.again > 0 {
		s += fmt.Sprintf("+clock=%d", p.again)
	}
	return s
}

// child runs a crash child on home and reports how it ended.
type childEnd struct {
	killed bool // by SIGKILL
	stats  crashStats
	err    error // a failure that is not a kill
	stderr string
}

func runCrashChild(t *testing.T, exe, home, mode string, clockKill, modelKill int64) childEnd {
	t.Helper()
	stats := filepath.Join(t.TempDir(), "stats.json")
	ctx, cancel := context.WithTimeout(context.Background(), crashTimeout+30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), crashHomeEnv+"="+home, crashModeEnv+"="+mode, crashStatsEnv+"="+stats,
		fmt.Sprintf("%s=%d", crashClockKillEnv, clockKill), fmt.Sprintf("%s=%d", crashModelKillEnv, modelKill))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	end := childEnd{stderr: tail(stderr.String(), 3000)}
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL && ctx.Err() == nil {
			end.killed = true
			return end
		}
	}
	if b, rerr := os.ReadFile(stats); rerr == nil {
		json.Unmarshal(b, &end.stats)
	}
	if err != nil {
		end.err = fmt.Errorf("%s child: %w (%s)\n%s", mode, err, end.stats.Error, end.stderr)
	}
	return end
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

// crashFacts are what a finished run left in its home, as the campaign compares them: its
// output, lists of facts (each sorted, so that runs whose workers interleaved differently
// compare equal: they are multisets), and the bus's messages with the times each was sent.
type crashFacts struct {
	output      string
	lists       map[string][]string
	messages    map[string]int // "from → to: body" → times sent
	seqProblems []string       // the events: those not numbered 1..N in order
	lastEvents  string
}

// The lists of facts.
const (
	factConversation = "conversation.jsonl (from → to: content)"
	factCompleted    = "node.completed events (node: text)"
	factMilestones   = "the run's milestone events (type node: text)"
	factPublished    = "published files (node/file: content)"
	factBoard        = "the final board (node stage status deps parent worker)"
	factHistory      = "the workers' history.jsonl (worker: node status)"
)

var factNames = []string{factConversation, factCompleted, factMilestones, factPublished, factBoard, factHistory}

// milestones are the events that say what happened to the run, its stages, nodes and workers
// and its human: each happens a fixed number of times in a run, crash or not. (Events of
// starts, model turns, tool calls and deliveries are not among them: a crash makes a step run
// again, and they say so.)
var milestones = []eventlog.Type{
	eventlog.AgentStarted, eventlog.AgentCompleted, eventlog.StageStarted, eventlog.StageCompleted, eventlog.StageReconvened,
	eventlog.NodeCreated, eventlog.NodeCompleted, eventlog.NodeFailed, eventlog.WorkerSpawned, eventlog.HumanQuestion, eventlog.HumanResponse,
}

func collectFacts(t *testing.T, home string) crashFacts {
	t.Helper()
	h := workspace.Home(home)
	run := h.Run(crashRunID)
	f := crashFacts{lists: map[string][]string{}, messages: map[string]int{}}
	add := func(list, fact string) { f.lists[list] = append(f.lists[list], fact) }
	out, err := os.ReadFile(filepath.Join(string(run), "_output.md"))
	require.NoError(t, err, "the run's _output.md")
	f.output = string(out)

	for _, line := range jsonLines(t, h.Conversation()) {
		var e nodes.Entry
		require.NoError(t, json.Unmarshal([]byte(line), &e), "conversation.jsonl line %q", line)
		add(factConversation, fmt.Sprintf("%s → %s: %s", e.From, e.To, e.Content))
	}

	evs, problems := readEvents(t, home)
	f.seqProblems = problems
	for _, e := range evs {
		if e.Type == eventlog.NodeCompleted {
			add(factCompleted, e.Node+": "+e.Text)
		}
		if slices.Contains(milestones, e.Type) {
			add(factMilestones, fmt.Sprintf("%s %s: %s", e.Type, e.Node, e.Text))
		}
	}
	f.lastEvents = describeEvents(evs, 12)

	nodesDir := filepath.Join(string(run), "nodes")
	board, err := nodes.ReadFiles(nodes.WithHome(home)).Board(crashRunID)
	require.NoError(t, err)
	for _, n := range board.Nodes {
		add(factBoard, fmt.Sprintf("%s %d %s %v %q %s", n.ID, n.Stage, n.Status, n.Deps, n.Parent, n.Worker))
		pub := filepath.Join(nodesDir, n.ID, "published")
		filepath.WalkDir(pub, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return nil
			}
			b, rerr := os.ReadFile(path)
			require.NoError(t, rerr)
			rel, _ := filepath.Rel(pub, path)
			add(factPublished, fmt.Sprintf("%s/%s: %s", n.ID, filepath.ToSlash(rel), b))
			return nil
		})
	}
	workers, err := os.ReadDir(filepath.Join(string(run), "workers"))
	require.NoError(t, err)
	for _, w := range workers {
		for _, line := range jsonLines(t, run.Worker(w.Name()).History()) {
			var h struct{ Node, Status string }
			require.NoError(t, json.Unmarshal([]byte(line), &h), "history.jsonl line %q", line)
			add(factHistory, fmt.Sprintf("%s: %s %s", w.Name(), h.Node, h.Status))
		}
	}
	for _, l := range f.lists {
		sort.Strings(l)
	}

	msgs, err := nodes.ReadFiles(nodes.WithHome(home)).Messages(crashRunID)
	require.NoError(t, err, "the run's messages")
	for _, m := range msgs {
		f.messages[fmt.Sprintf("%s → %s: %s", m.From, m.To, m.Body)]++
	}
	return f
}

// jsonLines returns the non-empty lines of a JSONL file.
func jsonLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	require.NoError(t, err)
	var out []string
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		if strings.TrimSpace(sc.Text()) != "" {
			out = append(out, sc.Text())
		}
	}
	return out
}

// readEvents reads the events of the agent at home, as its store holds them, and lists what
// breaks the numbering 1..N: a gap, a number twice.
func readEvents(t *testing.T, home string) ([]eventlog.Event, []string) {
	t.Helper()
	all, err := nodes.ReadFiles(nodes.WithHome(home)).Events(0, 0)
	require.NoError(t, err, "the events of %s", home)
	var evs []eventlog.Event
	var problems []string
	for i, e := range all {
		if want := int64(len(evs) + 1); e.Seq != want {
			problems = append(problems, fmt.Sprintf("event %d: seq %d, want %d (%s %s)", i+1, e.Seq, want, e.Type, clip(e.Text)))
		}
		evs = append(evs, e)
	}
	return evs, problems
}

// describeEvents renders the last n events, one a line.
func describeEvents(evs []eventlog.Event, n int) string {
	var b strings.Builder
	for _, e := range evs[max(0, len(evs)-n):] {
		fmt.Fprintf(&b, "\n    %d %s node=%s worker=%s %s", e.Seq, e.Type, e.Node, e.Worker, clip(e.Text))
	}
	return b.String()
}

func lastEventsOf(t *testing.T, home string) string {
	evs, _ := readEvents(t, home)
	return describeEvents(evs, 8)
}

// crashReference is what the campaign compares with: the first reference's facts, and which of
// them the two references agree on.
//
// The team's models are functions of their conversations and the report is assembled in a
// fixed order, so the output, the published files, the conversation with the human, the final
// board and the milestone events are the same in every uninterrupted run; the order of events
// is not (workers run concurrently), nor, in principle, every message: which turn of a worker
// sees a message depends on timing, and a message that arrives as a worker ends is handed back
// to it (a second send). A fact on which two uninterrupted runs differ depends on timing, and a
// crashed run cannot be held to it: it is reported, not asserted. The numbering of events
// (1..N, no gap, none twice) is asserted always.
type crashReference struct {
	crashFacts
	sameOutput bool
	same       map[string]bool // the lists the references agree on
	// stableMessages are the bus messages both references sent the same number of times.
	stableMessages map[string]int
	// knownMessages are the messages either reference sent.
	knownMessages map[string]bool
}

func compareReferences(t *testing.T, a, b crashFacts) crashReference {
	ref := crashReference{crashFacts: a, same: map[string]bool{}, stableMessages: map[string]int{}, knownMessages: map[string]bool{}}
	ref.sameOutput = a.output == b.output
	agree := []string{fmt.Sprintf("output %v", ref.sameOutput)}
	for _, name := range factNames {
		ref.same[name] = slices.Equal(a.lists[name], b.lists[name])
		agree = append(agree, fmt.Sprintf("%s %v", name, ref.same[name]))
		if !ref.same[name] {
			t.Logf("the references differ in %s:%s", name, multisetDiff(a.lists[name], b.lists[name]))
		}
	}
	for m, n := range a.messages {
		ref.knownMessages[m] = true
		if b.messages[m] == n {
			ref.stableMessages[m] = n
		}
	}
	for m := range b.messages {
		ref.knownMessages[m] = true
	}
	agree = append(agree, fmt.Sprintf("%d of %d bus messages", len(ref.stableMessages), len(ref.knownMessages)))
	t.Logf("the references agree on: %s", strings.Join(agree, ", "))
	for m := range ref.knownMessages {
		if _, ok := ref.stableMessages[m]; !ok {
			t.Logf("timing-dependent message (%d and %d times): %s", a.messages[m], b.messages[m], clip(m))
		}
	}
	return ref
}

// check compares a run that was killed and resumed with the reference.
func (ref crashReference) check(t *testing.T, f crashFacts, where string) {
	t.Helper()
	assert.Empty(t, f.seqProblems, "the events are not numbered 1..N%s", where)
	if ref.sameOutput {
		assert.Equal(t, ref.output, f.output, "_output.md differs%s", where)
	}
	for _, name := range factNames {
		if ref.same[name] {
			assert.Empty(t, multisetDiff(ref.lists[name], f.lists[name]), "%s differ (- missing, + extra)%s", name, where)
		}
	}
	var wrong []string
	for m, n := range ref.stableMessages {
		if got := f.messages[m]; got != n {
			wrong = append(wrong, fmt.Sprintf("sent %d times, want %d: %s", got, n, clip(m)))
		}
	}
	for m, n := range f.messages {
		if !ref.knownMessages[m] {
			wrong = append(wrong, fmt.Sprintf("sent %d times, never by a reference: %s", n, clip(m)))
		}
	}
	sort.Strings(wrong)
	assert.Empty(t, wrong, "bus messages%s", where)
}

// multisetDiff lists what is in a more times than in b ("-") and the other way round ("+").
func multisetDiff(a, b []string) string {
	count := map[string]int{}
	for _, x := range a {
		count[x]++
	}
	for _, x := range b {
		count[x]--
	}
	var lines []string
	for x, n := range count {
		switch {
		case n > 0:
			lines = append(lines, fmt.Sprintf("\n  - %d× %s", n, clip(x)))
		case n < 0:
			lines = append(lines, fmt.Sprintf("\n  + %d× %s", -n, clip(x)))
		}
	}
	sort.Strings(lines)
	return strings.Join(lines, "")
}

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

// TestCrashCampaign kills the campaign's run at many points and checks that every resumed run
// ends exactly as an uninterrupted one.
func TestCrashCampaign(t *testing.T) {
	exe, err := os.Executable()
	require.NoError(t, err)
	points := 30
	if testing.Short() {
		points = 5
	}
	points = envInt("AGIRAPH_CRASH_POINTS", points)
	parallel := envInt("AGIRAPH_CRASH_PARALLEL", 3)
	began := time.Now()

	// Two uninterrupted references, at once.
	homes := []string{t.TempDir(), t.TempDir()}
	ends := make([]childEnd, 2)
	var wg sync.WaitGroup
	for i := range homes {
		wg.Go(func() { ends[i] = runCrashChild(t, exe, homes[i], "run", 0, 0) })
	}
	wg.Wait()
	for i, end := range ends {
		require.False(t, end.killed, "reference %d was killed", i+1)
		require.NoError(t, end.err, "reference %d:%s", i+1, lastEventsOf(t, homes[i]))
	}
	facts := []crashFacts{collectFacts(t, homes[0]), collectFacts(t, homes[1])}
	for i, f := range facts {
		require.Empty(t, f.seqProblems, "reference %d's events", i+1)
	}
	ref := compareReferences(t, facts[0], facts[1])
	calib := ends[0].stats
	require.Greater(t, calib.Clock, calib.Start)
	require.Positive(t, calib.Model)
	t.Logf("a run: %d clock calls (%d before the run starts), %d model calls", calib.Clock, calib.Start, calib.Model)

	// The kill points: two thirds on the clock, one third in model calls, each spread evenly;
	// or those AGIRAPH_CRASH_AT names.
	plan, err := parsePoints(os.Getenv("AGIRAPH_CRASH_AT"))
	require.NoError(t, err, "AGIRAPH_CRASH_AT")
	if len(plan) > 0 {
		points = 0
	}
	clockPoints := points * 2 / 3
	for i := range clockPoints {
		k := calib.Start + 1 + int64(float64(i)*float64(calib.Clock-calib.Start)/float64(clockPoints))
		plan = append(plan, crashPoint{clock: k})
	}
	modelPoints := points - clockPoints
	for i := range modelPoints {
		plan = append(plan, crashPoint{model: 1 + int64(float64(i)*float64(calib.Model)/float64(modelPoints))})
	}
	// Every fifth point: the resuming child is killed too, about halfway through what is left
	// (where a model call falls on the clock is estimated in proportion).
	for i := range plan {
		if points == 0 || i%5 != 4 { // points named by AGIRAPH_CRASH_AT say so themselves
			continue
		}
		at := plan[i].clock
		if plan[i].model > 0 {
			at = calib.Start + (calib.Clock-calib.Start)*plan[i].model/calib.Model
		}
		plan[i].again = calib.Start + max(1, (calib.Clock-at)/2)
	}

	var counted, finishedFirst, killedTwice, failed atomic.Int64
	sem := make(chan struct{}, parallel)
	var all sync.WaitGroup
	for _, p := range plan {
		all.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			ok := t.Run(p.String(), func(t *testing.T) {
				home := crashHome(t)
				first := runCrashChild(t, exe, home, "run", p.clock, p.model)
				if !first.killed {
					require.NoError(t, first.err, "the run killed at %s failed before it was killed:%s", p, lastEventsOf(t, home))
					finishedFirst.Add(1)
					t.Logf("the run finished before %s: not counted", p)
					return
				}
				counted.Add(1)
				where := fmt.Sprintf("\n  killed at %s after these events:%s", p, lastEventsOf(t, home))
				if p.again > 0 {
					second := runCrashChild(t, exe, home, "resume", p.again, 0)
					if second.killed {
						killedTwice.Add(1)
						where += fmt.Sprintf("\n  resumed, killed again at clock=%d after these events:%s", p.again, lastEventsOf(t, home))
					} else {
						where += fmt.Sprintf("\n  resumed, and not killed again at clock=%d", p.again)
						require.NoError(t, second.err, "the resumed run:%s\n  its last events:%s", where, lastEventsOf(t, home))
						ref.check(t, collectFacts(t, home), where)
						return
					}
				}
				end := runCrashChild(t, exe, home, "resume", 0, 0)
				require.NoError(t, end.err, "the resumed run:%s\n  its last events:%s", where, lastEventsOf(t, home))
				f := collectFacts(t, home)
				ref.check(t, f, where+"\n  the resumed run's last events:"+f.lastEvents)
			})
			if !ok {
				failed.Add(1)
			}
		})
	}
	all.Wait()
	t.Logf("%d kill points in %v: %d counted (killed, then resumed), %d finished before their point; %d killed twice; %d failed",
		len(plan), time.Since(began).Round(time.Second), counted.Load(), finishedFirst.Load(), killedTwice.Load(), failed.Load())
}

// parsePoints parses a list of points as crashPoint.String writes them.
func parsePoints(list string) ([]crashPoint, error) {
	var out []crashPoint
	for _, item := range strings.FieldsFunc(list, func(r rune) bool { return r == ',' || r == ' ' }) {
		var p crashPoint
		first, again, twice := strings.Cut(item, "+")
		kind, n, _ := strings.Cut(first, "=")
		k, err := strconv.ParseInt(n, 10, 64)
		if err != nil || k <= 0 || (kind != "clock" && kind != "model") {
			return nil, fmt.Errorf("point %q: want clock=K or model=M, optionally followed by +clock=K", item)
		}
		if kind == "clock" {
			p.clock = k
		} else {
			p.model = k
		}
		if twice {
			n, ok := strings.CutPrefix(again, "clock=")
			if p.again, err = strconv.ParseInt(n, 10, 64); !ok || err != nil || p.again <= 0 {
				return nil, fmt.Errorf("point %q: want +clock=K after the first point", item)
			}
		}
		out = append(out, p)
	}
	return out, nil
}

// crashHome returns the home of a point's run: a temporary folder, or one in AGIRAPH_CRASH_KEEP
// that outlives the test.
func crashHome(t *testing.T) string {
	keep := os.Getenv("AGIRAPH_CRASH_KEEP")
	if keep == "" {
		return t.TempDir()
	}
	_, name, _ := strings.Cut(t.Name(), "/") // the point, with #01... when points repeat
	home := filepath.Join(keep, strings.NewReplacer("=", "", "#", "-").Replace(name))
	require.NoError(t, os.RemoveAll(home))
	require.NoError(t, os.MkdirAll(home, 0o755))
	t.Logf("home: %s", home)
	return home
}
