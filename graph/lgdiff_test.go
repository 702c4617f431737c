package graph_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/checkpoint"
	"github.com/agiraph/agiraph/graph"
	"github.com/agiraph/agiraph/internal/clitest"
)

// lgGraphs is how many random graphs TestLangGraphJS runs; graph i is made from seed i.
const lgGraphs = 600

// lgSpec is a random graph, built the same way by lgBuild here and by testdata/lgdiff.mjs with
// LangGraph.js. Its state is a log of strings (an appending reducer) and a topic that only a
// Send's argument sets. Every node appends one entry: its name, "<topic>" when it runs from a
// Send, and "=ok" when it has interrupt set (it calls interrupt with the entry so far first,
// and every interrupt is answered "ok"); a node with fail set throws instead of returning. The
// input is the log ["in"].
type lgSpec struct {
	Seed            uint64      `json:"seed"`
	Nodes           []lgNode    `json:"nodes"`
	Edges           [][2]string `json:"edges,omitempty"` // START and END stand for themselves
	Joins           []lgJoin    `json:"joins,omitempty"`
	Routers         []lgRouter  `json:"routers,omitempty"`
	InterruptBefore []string    `json:"interruptBefore,omitempty"`
	InterruptAfter  []string    `json:"interruptAfter,omitempty"`
	// Reinvoke makes the run's first pause be followed by a new input, the log ["again"],
	// rather than by a resume: the paused tasks are dropped and the graph runs from START.
	Reinvoke bool `json:"reinvoke,omitempty"`
	// Edit makes the resume from the run's first pause at a breakpoint (without Reinvoke) carry
	// an update, the log ["edit"]: a ResumeCommand, LangGraph's Command(update). Not at a pause of
	// interrupts raised by nodes, where the engine and LangGraph differ (see TestLangGraphJS).
	Edit bool `json:"edit,omitempty"`
}

type lgNode struct {
	Name      string `json:"name"`
	Defer     bool   `json:"defer,omitempty"`
	Interrupt bool   `json:"interrupt,omitempty"`
	Fail      bool   `json:"fail,omitempty"`
	// Goto makes the node return a command that also goes to Goto[len(log) % len(Goto)], the
	// log being its input's (empty for a Send's task): later nodes or END.
	Goto []string `json:"goto,omitempty"`
}

type lgJoin struct {
	From []string `json:"from"`
	To   string   `json:"to"`
}

// lgRouter routes from a node (or START) by lgRoute.
type lgRouter struct {
	From    string   `json:"from"`
	Targets []string `json:"targets"`        // nodes or END
	Send    string   `json:"send,omitempty"` // the node the router sends to, if any
	Bound   int      `json:"bound"`          // from a log this long on, the router goes to END
}

// lgRoute is a router's choice from the log it sees, a function of its length, its number of
// distinct entries and its last entry (the router's own node's, as both engines give a router
// the state before the step with its node's update): one or two targets and up to two Sends.
func lgRoute(r lgRouter, log []string) graph.Next[lgState] {
	if len(log) >= r.Bound {
		return graph.Goto[lgState](graph.END)
	}
	distinct := map[string]bool{}
	for _, e := range log {
		distinct[e] = true
	}
	h := len(log)*7 + len(distinct)*3
	if len(log) > 0 {
		for _, c := range []byte(log[len(log)-1]) {
			h += int(c)
		}
	}
	next := graph.Goto[lgState](lgName(r.Targets[h%len(r.Targets)]))
	if h%5 == 0 {
		next.Goto = append(next.Goto, lgName(r.Targets[h/5%len(r.Targets)]))
	}
	if r.Send != "" {
		for i := range h % 3 {
			next.Sends = append(next.Sends, graph.Send[lgState]{Node: r.Send, Arg: lgState{Topic: fmt.Sprintf("s%d%d", h%10, i)}})
		}
	}
	return next
}

// lgGenerate makes the random graph of seed: two to seven nodes, the first reached from START by
// an edge or a router; forward edges (so that only routers, which end at their bound, make
// cycles) and joins; routers to any node, some with Sends; some nodes deferred, some asking for
// input, some returning commands that go to later nodes, rarely one failing; sometimes a
// breakpoint before or after a node; sometimes a new input given at the first pause.
func lgGenerate(seed uint64) lgSpec {
	rng := rand.New(rand.NewPCG(seed, 0x1a2b))
	n := 2 + rng.IntN(6)
	s := lgSpec{Seed: seed}
	name := func(i int) string { return "n" + strconv.Itoa(i) }
	pick := func() string { return name(rng.IntN(n)) }
	targets := func() []string {
		out := []string{"END"}
		for range 1 + rng.IntN(3) {
			if t := pick(); !slices.Contains(out, t) {
				out = append(out, t)
			}
		}
		rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
		return out
	}
	router := func(from string) {
		r := lgRouter{From: from, Targets: targets(), Bound: 6 + rng.IntN(9)}
		if rng.IntN(3) == 0 {
			r.Send = pick()
		}
		s.Routers = append(s.Routers, r)
	}
	for i := range n {
		s.Nodes = append(s.Nodes, lgNode{Name: name(i), Defer: i > 0 && rng.IntN(6) == 0, Interrupt: rng.IntN(6) == 0})
	}
	if rng.IntN(25) == 0 {
		s.Nodes[rng.IntN(n)].Fail = true
	}
	for i := range n - 1 {
		if rng.IntN(6) == 0 {
			s.Nodes[i].Goto = []string{name(i + 1 + rng.IntN(n-i-1))}
			if rng.IntN(2) == 0 {
				s.Nodes[i].Goto = append(s.Nodes[i].Goto, "END")
			}
		}
	}
	if rng.IntN(4) == 0 {
		router("START")
	} else {
		s.Edges = append(s.Edges, [2]string{"START", name(0)})
	}
	for i := range n {
		switch k := rng.IntN(10); {
		case k < 3:
			router(name(i))
		case k < 8 && i+1 < n:
			for range 1 + rng.IntN(2) {
				s.Edges = append(s.Edges, [2]string{name(i), name(i + 1 + rng.IntN(n-i-1))})
			}
		case k == 8:
			s.Edges = append(s.Edges, [2]string{name(i), "END"})
		}
	}
	// LangGraph.js runs a node once when a join and an edge or a router lead to it in the same
	// step, but leaves the join pending: a run ends, yet the thread's next lists the node, which a
	// later invoke runs again; and a join left pending fires early later on. The generator makes
	// joins only into nodes to which no edge, router or command leads (Sends may).
	led := func(to string) bool {
		return slices.ContainsFunc(s.Edges, func(e [2]string) bool { return e[1] == to }) ||
			slices.ContainsFunc(s.Routers, func(r lgRouter) bool { return slices.Contains(r.Targets, to) }) ||
			slices.ContainsFunc(s.Nodes, func(n lgNode) bool { return slices.Contains(n.Goto, to) })
	}
	for try := 0; n >= 3 && try < 4 && (try > 0 || rng.IntN(2) == 0); try++ {
		to := 2 + rng.IntN(n-2)
		a, b := name(rng.IntN(to)), name(rng.IntN(to))
		if a != b && !led(name(to)) {
			s.Joins = append(s.Joins, lgJoin{From: []string{a, b}, To: name(to)})
			break
		}
	}
	// Every node must be reachable (the engine refuses a graph with a node that is not): one that
	// is not gets an edge from an earlier one, or from START.
	for i := range n {
		if !s.reached()[name(i)] {
			from := "START"
			if i > 0 {
				from = name(rng.IntN(i))
			}
			s.Edges = append(s.Edges, [2]string{from, name(i)})
		}
	}
	if rng.IntN(5) == 0 {
		s.InterruptBefore = []string{pick()}
	}
	if rng.IntN(5) == 0 {
		s.InterruptAfter = []string{pick()}
	}
	s.Reinvoke = rng.IntN(4) == 0
	s.Edit = !s.Reinvoke && rng.IntN(3) == 0
	return s
}

// reached returns the nodes that the spec's edges, joins and routers lead to from START.
func (s lgSpec) reached() map[string]bool {
	reached := map[string]bool{"START": true}
	for grew := true; grew; {
		grew = false
		reach := func(from, to string) {
			if reached[from] && !reached[to] {
				reached[to], grew = true, true
			}
		}
		for _, e := range s.Edges {
			reach(e[0], e[1])
		}
		for _, j := range s.Joins {
			for _, from := range j.From {
				reach(from, j.To)
			}
		}
		for _, r := range s.Routers {
			for _, to := range append(slices.Clone(r.Targets), r.Send) {
				reach(r.From, to)
			}
		}
		for _, n := range s.Nodes {
			for _, to := range n.Goto {
				reach(n.Name, to)
			}
		}
	}
	return reached
}

// lgName is the engine's name of a spec's node: START and END stand for the graph's.
func lgName(name string) string {
	switch name {
	case "START":
		return graph.START
	case "END":
		return graph.END
	}
	return name
}

func lgBuild(t *testing.T, s lgSpec) *graph.Compiled[lgState] {
	g := graph.New[lgState]()
	for _, n := range s.Nodes {
		var opts []graph.NodeOption
		if n.Defer {
			opts = append(opts, graph.Defer())
		}
		run := func(ctx context.Context, st lgState) (graph.Command[lgState], error) {
			entry := n.Name
			if st.Topic != "" {
				entry += "<" + st.Topic + ">"
			}
			if n.Interrupt {
				v, err := graph.Interrupt[string](ctx, entry)
				if err != nil {
					return graph.Command[lgState]{}, err
				}
				entry += "=" + v
			}
			if n.Fail {
				return graph.Command[lgState]{}, errors.New("fail " + entry)
			}
			cmd := graph.Command[lgState]{Update: lgState{Log: []string{entry}}}
			if len(n.Goto) > 0 {
				cmd.Goto = []string{lgName(n.Goto[len(st.Log)%len(n.Goto)])}
			}
			return cmd, nil
		}
		if len(n.Goto) > 0 {
			var to []string
			for _, name := range n.Goto {
				to = append(to, lgName(name))
			}
			g.AddCommandNode(n.Name, run, append(opts, graph.Destinations(to...))...)
		} else {
			g.AddNode(n.Name, func(ctx context.Context, st lgState) (lgState, error) {
				cmd, err := run(ctx, st)
				return cmd.Update, err
			}, opts...)
		}
	}
	for _, e := range s.Edges {
		g.AddEdge(lgName(e[0]), lgName(e[1]))
	}
	for _, j := range s.Joins {
		g.AddJoin(j.From, j.To)
	}
	for _, r := range s.Routers {
		targets := []string{}
		for _, to := range r.Targets {
			targets = append(targets, lgName(to))
		}
		if r.Send != "" {
			targets = append(targets, r.Send)
		}
		g.AddRouter(lgName(r.From), func(_ context.Context, st lgState) graph.Next[lgState] { return lgRoute(r, st.Log) }, targets...)
	}
	c, err := g.Compile(graph.WithCheckpointer(checkpoint.NewMemory()), graph.WithInterruptBefore(s.InterruptBefore...), graph.WithInterruptAfter(s.InterruptAfter...))
	require.NoError(t, err, "seed %d", s.Seed)
	return c
}

// lgResult is what a run of a spec gives, in the form both sides print: the final log (sorted:
// LangGraph applies a step's writes in the order of its tasks' names, the engine in the order of
// its frontier, a difference docs/from-langgraph.md lists), and each Invoke or Resume.
type lgResult struct {
	Log   []string `json:"log,omitempty"`
	Runs  []lgRun  `json:"runs,omitempty"`
	Fatal string   `json:"fatal,omitempty"`
}

// lgRun is one Invoke or Resume: the entries its tasks wrote, step by step (sorted in a step),
// the error that ended it ("node: <message>", "recursion", "other: <error>"), or the pause.
type lgRun struct {
	Steps  [][]string `json:"steps,omitempty"`
	Error  string     `json:"error,omitempty"`
	Paused *lgStop    `json:"paused,omitempty"`
}

// lgStop is where a run paused: the nodes of the next tasks (sorted) and the values of the
// interrupts the nodes raised, in the order in which they are reported.
type lgStop struct {
	Next       []string `json:"next,omitempty"`
	Interrupts []any    `json:"interrupts,omitempty"`
}

// canonical orders the interrupts of each pause by the node that raised them, those of its Send
// tasks first, keeping the order of the Sends: each engine reports a step's interrupts in the
// order of its tasks, which differs as the order of their writes does (see lgResult). It leaves deferred nodes out of the
// next nodes of a pause: LangGraph lists a deferred node there only once it is about to run, the
// engine also while it waits.
func (r lgResult) canonical(s lgSpec) lgResult {
	// An interrupt's value is the entry of its task: the node's name, then "<topic>" for a Send's.
	key := func(v any) string {
		s := fmt.Sprint(v)
		if i := strings.IndexByte(s, '<'); i >= 0 {
			return s[:i] + " 0" // a Send's task
		}
		return s + " 1"
	}
	for _, run := range r.Runs {
		if run.Paused != nil {
			run.Paused.Next = slices.DeleteFunc(run.Paused.Next, func(name string) bool {
				return slices.ContainsFunc(s.Nodes, func(n lgNode) bool { return n.Name == name && n.Defer })
			})
			slices.SortStableFunc(run.Paused.Interrupts, func(a, b any) int { return strings.Compare(key(a), key(b)) })
		}
	}
	return r
}

// lgRunGo runs a spec as lgdiff.mjs does: Invoke, then Resume while paused (every interrupt
// answered "ok", a breakpoint passed with nil); once the thread has ended (or at its first pause,
// with Reinvoke), Invoke again with the log ["again"], and Resume while paused; at most 60 runs.
func lgRunGo(t *testing.T, s lgSpec) lgResult {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := lgBuild(t, s)
	opts := []graph.Option{graph.WithThread("t"), graph.WithRecursionLimit(1000), graph.WithStreamMode(graph.ModeUpdates)}
	var res lgResult
	events := c.Stream(ctx, lgState{Log: []string{"in"}}, opts...)
	again := false  // the thread was invoked a second time
	edited := false // a resume carried the update of Edit
	for range 60 {
		var run lgRun
		var order []int
		steps := map[int][]string{}
		var err error
		for ev, e := range events {
			if e != nil {
				err = e
				break
			}
			if _, ok := steps[ev.Step]; !ok {
				order = append(order, ev.Step)
			}
			steps[ev.Step] = append(steps[ev.Step], ev.Data.(lgState).Log...)
		}
		var ir *graph.Interrupted
		var ne *graph.NodeError
		var rl *graph.RecursionLimitError
		switch {
		case errors.As(err, &ir):
			snap, err := c.State(ctx, opts...)
			require.NoError(t, err)
			run.Paused = &lgStop{Next: slices.Sorted(slices.Values(snap.Next))}
			answers := graph.ResumeByID{}
			for _, it := range snap.Interrupts {
				if it.When == "during" {
					run.Paused.Interrupts = append(run.Paused.Interrupts, it.Value)
					answers[it.ID] = "ok"
				}
			}
			var value any
			if len(answers) > 0 {
				value = answers
			}
			switch {
			case s.Reinvoke && !again:
				again = true
				events = c.Stream(ctx, lgState{Log: []string{"again"}}, opts...)
			case s.Edit && !edited && value == nil:
				edited = true
				events = c.StreamResume(ctx, graph.ResumeCommand[lgState]{Value: value, Update: lgState{Log: []string{"edit"}}}, opts...)
			default:
				events = c.StreamResume(ctx, value, opts...)
			}
		case errors.Is(err, graph.ErrNothingToResume):
			// A pause after the last node ended the thread: Resume says so, invoke(null) returns.
		case errors.As(err, &ne):
			run.Error = "node: " + ne.Err.Error()
			// The engine streams the updates of the tasks that finished beside the failing one;
			// LangGraph.js does not. Both keep what they wrote, which the final log shows.
			delete(steps, ne.Step)
		case errors.As(err, &rl):
			run.Error = "recursion"
		case err != nil:
			run.Error = "other: " + err.Error()
		}
		for _, step := range order {
			if entries, ok := steps[step]; ok {
				run.Steps = append(run.Steps, slices.Sorted(slices.Values(entries)))
			}
		}
		res.Runs = append(res.Runs, run)
		if run.Paused == nil {
			if again || run.Error != "" {
				break
			}
			again = true
			events = c.Stream(ctx, lgState{Log: []string{"again"}}, opts...)
		}
	}
	snap, err := c.State(ctx, opts...)
	require.NoError(t, err)
	if res.Runs[len(res.Runs)-1].Error != "" {
		// A failed step's tasks that finished before the failure keep their updates, which
		// State shows; the others are cancelled. Which ones finish first is a race here, while
		// LangGraph.js's synchronous nodes all finish: the log compared is the checkpoint's.
		snap, err = c.State(ctx, append(opts, graph.WithCheckpointID(snap.Config.CheckpointID))...)
		require.NoError(t, err)
	}
	res.Log = slices.Sorted(slices.Values(snap.Values.Log))
	return res
}

// lgRunJS runs the specs with LangGraph.js in one node process and yields each one's result.
func lgRunJS(t *testing.T, specs []lgSpec) iter.Seq2[int, lgResult] {
	clitest.LangGraphCore.Dir(t)
	modules := filepath.Dir(filepath.Dir(clitest.LangGraph.Dir(t)))
	cmd := exec.Command("node", filepath.Join("testdata", "lgdiff.mjs"))
	cmd.Env = append(os.Environ(), "LG_MODULES="+modules)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	go func() {
		enc := json.NewEncoder(stdin)
		for _, s := range specs {
			if enc.Encode(s) != nil {
				break
			}
		}
		stdin.Close()
	}()
	return func(yield func(int, lgResult) bool) {
		lines := bufio.NewScanner(stdout)
		lines.Buffer(nil, 16<<20)
		for i := range specs {
			require.True(t, lines.Scan(), "lgdiff.mjs ended before the result of seed %d: %v", specs[i].Seed, lines.Err())
			var r lgResult
			require.NoError(t, json.Unmarshal(lines.Bytes(), &r), "result of seed %d", specs[i].Seed)
			if !yield(i, r) {
				return
			}
		}
	}
}

// TestLangGraphJS runs lgGraphs random graphs (see lgGenerate) with the engine and with
// LangGraph.js 1.7.3 (testdata/lgdiff.mjs, one node process for all of them), and requires the
// same results of both (see lgResult): the final log, the entries written step by step, the
// pauses with their next nodes and interrupts in order, and the errors.
//
// Where the engine differs from LangGraph on purpose (docs/from-langgraph.md), the comparison or
// the generator accounts for it:
//   - a step's writes are applied in another order: a step's entries and the final log are
//     compared as sets, and the interrupts of a pause in an order both give (see canonical);
//   - the input is not a step: steps are compared by their order, not their numbers;
//   - the recursion limits are counted differently: the generator makes no cycle without a
//     router that ends it, so that neither is reached;
//   - the engine refuses to compile a graph with an unreachable node: the generator makes none;
//   - Resume after a pause after the last node returns ErrNothingToResume where invoke(null)
//     returns the state: the run is taken as ended;
//   - a snapshot's next lists a deferred node that waits: pauses are compared without deferred
//     nodes in their next.
//
// One difference is left out: an update given while a step is paused by an interrupt raised in
// a node (Command(resume, update)) reaches, here, the routers of the step's tasks that finished
// before the pause, which choose when the step completes from the state before it, now updated;
// LangGraph's routers chose when their tasks finished. The generator gives updates only at
// breakpoints, where no task of the step has finished.
//
// It also accounts for what is not a difference of semantics: the engine streams the updates of
// the tasks that finished beside a failing one, and which of them finished before it is a race
// (the log of a failed run is compared as its last checkpoint holds it); and for a behaviour of
// LangGraph.js that a graph ported from it cannot rely on, as it depends on how the run is
// continued: a node led to by a join and, in the same step, by an edge, a router or a command
// runs once but leaves the join pending, so the run ends while the thread's next lists the node
// (the generator makes joins only into nodes no edge, router or command leads to).
//
// A failing graph's subtest prints its spec; run it alone with -run 'TestLangGraphJS/seed=N'.
func TestLangGraphJS(t *testing.T) {
	specs := make([]lgSpec, lgGraphs)
	for i := range specs {
		specs[i] = lgGenerate(uint64(i))
	}
	for i, js := range lgRunJS(t, specs) {
		s := specs[i]
		t.Run(fmt.Sprintf("seed=%d", s.Seed), func(t *testing.T) {
			require.Empty(t, js.Fatal, "LangGraph.js could not run the spec")
			want, err := json.MarshalIndent(js.canonical(s), "", " ")
			require.NoError(t, err)
			got, err := json.MarshalIndent(lgRunGo(t, s).canonical(s), "", " ")
			require.NoError(t, err)
			spec, err := json.Marshal(s)
			require.NoError(t, err)
			require.Equal(t, string(want), string(got), "the engine (actual) and LangGraph.js (expected) differ on %s", spec)
		})
	}
}
