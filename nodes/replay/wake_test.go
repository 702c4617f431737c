package replay_test

import (
	"context"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/hooks"
	"github.com/agiraph/agiraph/nodes"
	"github.com/agiraph/agiraph/nodes/replay"
	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/providers/scripted"
	"github.com/agiraph/agiraph/tools"
)

// The notes team: the coordinator gives n1 to Ann, who checkpoints to wait for Ben's note, and
// n2 to Ben, who sends Ann the note and publishes; Ben's mail wakes Ann back into n1, where she
// writes the note down and publishes. The run finishes once n1 is completed.
const (
	annTask = "Wait for Ben's note, then write it to note.md and publish."
	benTask = "Send Ann the note, then publish."
	note    = "The meeting is at noon."
)

var workerIs = regexp.MustCompile(`^You are ([^.\s]+)\.`)

func notesCoordinator(_ context.Context, req providers.Request) (scripted.Turn, error) {
	text, _ := scripted.Last(req)
	switch {
	case len(req.Messages) == 1:
		return scripted.Turn{Calls: []tools.Call{
			scripted.Call("spawn_worker", map[string]any{"name": "Ann"}),
			scripted.Call("spawn_worker", map[string]any{"name": "Ben"}),
			scripted.Call("create_work_node", map[string]any{"task": annTask, "worker": "Ann"}),
			scripted.Call("create_work_node", map[string]any{"task": benTask, "worker": "Ben"}),
		}}, nil
	case strings.Contains(text, "The run is ending"):
		return scripted.Turn{Text: "Nothing to store."}, nil
	case slices.ContainsFunc(req.Messages, func(m providers.Message) bool { return strings.Contains(m.Text(), "Node n1 (Ann) completed") }):
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
	case !got:
		return call("checkpoint", map[string]string{"summary": "waiting for Ben's note"})
	case !slices.Contains(did, "write_file"):
		return call("write_file", map[string]string{"path": "nodes/n1/scratch/note.md", "content": note})
	}
	return call("publish", map[string]string{"summary": "wrote the note down"})
}

// afterAnnSleeps holds Ben's message until Ann has checkpointed n1 and is idle: in the
// recording, her mail wakes her.
type afterAnnSleeps struct {
	hooks.Base
	squad *nodes.Squad
}

func (h *afterAnnSleeps) BeforeTool(ctx context.Context, c *tools.Call) (hooks.Decision, error) {
	if c.Name != "send_message" {
		return hooks.Run, nil
	}
	for {
		if snap, err := h.squad.Current().Board(); err == nil {
			n1, _ := snap.Node("n1")
			if ann, ok := snap.Worker("Ann"); ok && n1.Status == nodes.NodeCheckpointed && ann.Status == nodes.WorkerIdle {
				return hooks.Run, nil
			}
		}
		select {
		case <-ctx.Done():
			return hooks.Run, ctx.Err()
		case <-time.After(time.Millisecond):
		}
	}
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

func notesTeam() []nodes.Option {
	coord, worker := scripted.NewFunc("notes-coordinator", notesCoordinator), scripted.NewFunc("notes-worker", notesWorker)
	return []nodes.Option{nodes.WithCoordinatorModel(coord.Name()), nodes.WithModel(worker.Name()),
		nodes.WithModelResolver(func(name string) (providers.Model, error) {
			if name == coord.Name() {
				return coord, nil
			}
			return worker, nil
		})}
}

// A worker woken back into its checkpointed node by mail is woken in a replay at the point of
// the run its mail woke it in the recording, however late the mail comes.
func TestWakeByMailReplaysAtRecordedPoint(t *testing.T) {
	path := filepath.Join(t.TempDir(), "notes.cassette")
	rec, err := replay.Record(path)
	require.NoError(t, err)
	sleeps := &afterAnnSleeps{}
	s, err := nodes.New(append(notesTeam(), nodes.WithHome(t.TempDir()), nodes.WithTick(20*time.Millisecond), nodes.WithRecorder(rec),
		nodes.WithHooks(sleeps))...)
	require.NoError(t, err)
	sleeps.squad = s
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	res, err := s.Run(ctx, "Write down Ben's note.")
	require.NoError(t, err)
	require.NoError(t, rec.Finish(s, res))
	require.NoError(t, s.Close())
	c, err := replay.Load(path)
	require.NoError(t, err)
	require.Equal(t, map[string]string{"nodes/n1/published/note.md": note}, c.Facts.Files)
	var woken []string
	for _, l := range c.Lines {
		if l.Kind == replay.KindTake && l.Point.At == nodes.PointRoute {
			woken = append(woken, l.Woken...)
		}
	}
	require.Equal(t, []string{"ann"}, woken, "Ben's mail woke Ann once")

	defer replay.StuckAfter(5 * time.Second)()
	for i := range 30 {
		got, err := replay.Play(ctx, path, t.TempDir(), nodes.WithHooks(lateSend{by: time.Duration(i%3) * 25 * time.Millisecond}))
		require.NoError(t, err, "replay %d", i)
		assert.Equal(t, res.Output, got.Output)
	}
}
