package replay_test

import (
	"context"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/hooks"
	"github.com/agiraph/agiraph/nodes"
	"github.com/agiraph/agiraph/nodes/eventlog"
	"github.com/agiraph/agiraph/nodes/replay"
	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/providers/scripted"
	"github.com/agiraph/agiraph/tools"
)

// The notes team: the coordinator gives n1 to Ann, who checkpoints to wait for Ben's note, and
// n2 to Ben, who sends Ann the note and publishes; Ben's mail wakes Ann back into n1, where she
// writes the note down and publishes. Crowded, the team has two more nodes, n3 for Cy and n4 for
// Dan, who publish at once. The run finishes once every node is completed.
const (
	annTask = "Wait for Ben's note, then write it to note.md and publish."
	benTask = "Send Ann the note, then publish."
	note    = "The meeting is at noon."
)

var workerIs = regexp.MustCompile(`^You are ([^.\s]+)\.`)

var completed = regexp.MustCompile(`Node (n\d+) \(\w+\) completed`)

func (crowded notesTeam) coordinator(_ context.Context, req providers.Request) (scripted.Turn, error) {
	text, _ := scripted.Last(req)
	nodes := map[string]string{"Ann": annTask, "Ben": benTask}
	if crowded {
		nodes["Cy"], nodes["Dan"] = "Publish at once.", "Publish at once, too."
	}
	done := map[string]bool{}
	for _, m := range req.Messages {
		for _, c := range completed.FindAllStringSubmatch(m.Text(), -1) {
			done[c[1]] = true
		}
	}
	switch {
	case len(req.Messages) == 1:
		var calls []tools.Call
		for _, name := range []string{"Ann", "Ben", "Cy", "Dan"}[:len(nodes)] {
			calls = append(calls, scripted.Call("spawn_worker", map[string]any{"name": name}),
				scripted.Call("create_work_node", map[string]any{"task": nodes[name], "worker": name}))
		}
		return scripted.Turn{Calls: calls}, nil
	case strings.Contains(text, "The run is ending"):
		return scripted.Turn{Text: "Nothing to store."}, nil
	case len(done) == len(nodes):
		return scripted.Turn{Calls: []tools.Call{scripted.Call("finish", map[string]string{"output": "the note is written"})}}, nil
	}
	return scripted.Turn{Calls: []tools.Call{scripted.Call("wait", map[string]string{})}}, nil
}

func notesWorker(_ context.Context, req providers.Request) (scripted.Turn, error) {
	name := workerIs.FindStringSubmatch(req.System)[1]
	got := slices.ContainsFunc(req.Messages, func(m providers.Message) bool { return strings.Contains(m.Text(), "[Message from Ben]: "+note) })
	var did []string
	for _, m := range req.Messages {
		for _, c := range m.ToolCalls() {
			did = append(did, c.Name)
		}
	}
	call := func(name string, args any) (scripted.Turn, error) {
		c := scripted.Call(name, args)
		c.ID = name + "-" + string(rune('a'+len(did)))
		return scripted.Turn{Calls: []tools.Call{c}}, nil
	}
	switch {
	case name == "Ben" && !slices.Contains(did, "send_message"):
		return call("send_message", map[string]string{"to": "Ann", "content": note})
	case name == "Ben":
		return call("publish", map[string]string{"summary": "sent Ann the note"})
	case name != "Ann":
		return call("publish", map[string]string{"summary": name + " published"})
	case !got:
		return call("checkpoint", map[string]string{"summary": "waiting for Ben's note"})
	case !slices.Contains(did, "write_file"):
		return call("write_file", map[string]string{"path": "nodes/n1/scratch/note.md", "content": note})
	}
	return call("publish", map[string]string{"summary": "wrote the note down"})
}

// holdUntil holds the calls of tool whose arguments hold arg until the board of the squad's
// run is ready: in a recording, so that its run goes as the test wants.
type holdUntil struct {
	hooks.Base
	squad     *nodes.Squad
	tool, arg string
	ready     func(nodes.Snapshot) bool
}

func (h *holdUntil) BeforeTool(ctx context.Context, c *tools.Call) (hooks.Decision, error) {
	if c.Name != h.tool || !strings.Contains(string(c.Args), h.arg) {
		return hooks.Run, nil
	}
	for {
		if snap, err := h.squad.Current().Board(); err == nil && h.ready(snap) {
			return hooks.Run, nil
		}
		select {
		case <-ctx.Done():
			return hooks.Run, ctx.Err()
		case <-time.After(time.Millisecond):
		}
	}
}

// is says whether node id and worker name of snap have the given statuses.
func is(snap nodes.Snapshot, id string, node nodes.NodeStatus, name string, worker nodes.WorkerStatus) bool {
	n, _ := snap.Node(id)
	w, _ := snap.Worker(name)
	return n.Status == node && w.Status == worker
}

// lateSend delays Ben's message: in a replay, it comes after the tick that woke Ann in the
// recording has begun.
type lateSend struct {
	hooks.Base
	by time.Duration
}

func (h lateSend) BeforeTool(_ context.Context, c *tools.Call) (hooks.Decision, error) {
	if c.Name == "send_message" {
		time.Sleep(h.by)
	}
	return hooks.Run, nil
}

// notesTeam plays the notes team, crowded or not.
type notesTeam bool

func (crowded notesTeam) options() []nodes.Option {
	coord, worker := scripted.NewFunc("notes-coordinator", crowded.coordinator), scripted.NewFunc("notes-worker", notesWorker)
	return []nodes.Option{nodes.WithCoordinatorModel(coord.Name()), nodes.WithModel(worker.Name()), nodes.WithMaxConcurrent(2),
		nodes.WithModelResolver(func(name string) (providers.Model, error) {
			if name == coord.Name() {
				return coord, nil
			}
			return worker, nil
		})}
}

// recordNotes records a run of the notes team, its calls held by holds; it returns the
// recording and the workers their mail woke.
func recordNotes(t *testing.T, team notesTeam, holds ...*holdUntil) (recording, []string) {
	t.Helper()
	opts := team.options()
	for _, h := range holds {
		opts = append(opts, nodes.WithHooks(h))
	}
	r := recordRun(t, "Write down Ben's note.", func(s *nodes.Squad) {
		for _, h := range holds {
			h.squad = s
		}
	}, opts...)
	require.Equal(t, note, r.c.Facts.Files["nodes/n1/published/note.md"])
	var woken []string
	for _, l := range r.c.Lines {
		if l.Kind == replay.KindTake && l.Point.At == nodes.PointRoute {
			woken = append(woken, l.Woken...)
		}
	}
	return r, woken
}

// startedIn returns the nodes of the run of the agent at home in the order their assignments
// started; the first two, which start at once, sorted.
func startedIn(t *testing.T, home string) []string {
	evs, err := nodes.ReadFiles(nodes.WithHome(home)).Events(0, 0)
	require.NoError(t, err)
	var started []string
	for _, e := range evs {
		if e.Type == eventlog.NodeStarted {
			started = append(started, e.Node)
		}
	}
	slices.Sort(started[:min(2, len(started))])
	return started
}

// replayNotes replays a recording of the notes team 30 times, Ben's message later or sooner
// each time: the same run, its assignments started in the same order.
func replayNotes(t *testing.T, r recording) {
	defer replay.StuckAfter(30 * time.Second)() // a loaded machine under -race can be quiet for seconds
	for i := range 30 {
		home := t.TempDir()
		got, err := replay.Play(t.Context(), r.path, home, nodes.WithHooks(lateSend{by: time.Duration(i%3) * 25 * time.Millisecond}))
		require.NoError(t, err, "replay %d", i)
		assert.Equal(t, r.res.Output, got.Output)
		require.Equal(t, startedIn(t, r.home), startedIn(t, home), "replay %d", i)
	}
}

// A worker woken back into its checkpointed node by mail is woken in a replay at the point of
// the run its mail woke it in the recording, however late the mail comes. Ben's message comes,
// in the recording, once Ann has checkpointed n1.
func TestWakeByMailReplaysAtRecordedPoint(t *testing.T) {
	r, woken := recordNotes(t, false, &holdUntil{tool: "send_message", arg: note, ready: func(snap nodes.Snapshot) bool {
		return is(snap, "n1", nodes.NodeCheckpointed, "Ann", nodes.WorkerIdle)
	}})
	require.Equal(t, []string{"ann"}, woken, "Ben's mail woke Ann once")
	require.Equal(t, []string{"n1", "n2", "n1"}, startedIn(t, r.home))
	replayNotes(t, r)
}

// At the limit of assignments running at once (two), a worker woken by mail takes the free
// place before a ready node, in a replay as in the recording. In the recording Ben's message
// comes once Ann has checkpointed n1 and Cy took her place on n3, and Cy publishes once Ann is
// back on n1: Ann takes the place Ben leaves, and n4 waits for Cy's.
func TestWakeByMailAtTheLimitReplays(t *testing.T) {
	r, woken := recordNotes(t, true,
		&holdUntil{tool: "send_message", arg: note, ready: func(snap nodes.Snapshot) bool {
			return is(snap, "n1", nodes.NodeCheckpointed, "Ann", nodes.WorkerIdle) && is(snap, "n3", nodes.NodeRunning, "Cy", nodes.WorkerBusy)
		}},
		&holdUntil{tool: "publish", arg: "Cy published", ready: func(snap nodes.Snapshot) bool {
			return is(snap, "n1", nodes.NodeRunning, "Ann", nodes.WorkerBusy)
		}})
	require.Equal(t, []string{"ann"}, woken)
	require.Equal(t, []string{"n1", "n2", "n3", "n1", "n4"}, startedIn(t, r.home))
	replayNotes(t, r)
}
