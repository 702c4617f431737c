package replay_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/hooks"
	"github.com/agiraph/agiraph/nodes"
	"github.com/agiraph/agiraph/nodes/demo"
	"github.com/agiraph/agiraph/nodes/replay"
	"github.com/agiraph/agiraph/tools"
)

// published returns the aspect whose findings a publish call publishes, if it is one of a
// research node's.
func published(c tools.Call) (string, bool) {
	if c.Name != "publish" {
		return "", false
	}
	var args struct{ Summary string }
	_ = json.Unmarshal(c.Args, &args)
	aspect, ok := strings.CutPrefix(args.Summary, "findings.md on the ")
	return aspect, ok
}

// together holds the research workers' publish calls until all of them have come, so that
// their assignments end together.
type together struct {
	hooks.Base
	mu   sync.Mutex
	n    int
	here chan struct{}
}

func (h *together) BeforeTool(ctx context.Context, c *tools.Call) (hooks.Decision, error) {
	if _, ok := published(*c); !ok {
		return hooks.Run, nil
	}
	h.mu.Lock()
	if h.n++; h.n == len(demo.Aspects) {
		close(h.here)
	}
	h.mu.Unlock()
	select {
	case <-h.here:
		return hooks.Run, nil
	case <-ctx.Done():
		return hooks.Run, ctx.Err()
	}
}

// lastOf holds the publish call of the research worker on aspect until the others' have run,
// so that its assignment ends after theirs.
type lastOf struct {
	hooks.Base
	aspect string
	mu     sync.Mutex
	n      int
	others chan struct{}
}

func (h *lastOf) BeforeTool(ctx context.Context, c *tools.Call) (hooks.Decision, error) {
	if aspect, ok := published(*c); !ok || aspect != h.aspect {
		return hooks.Run, nil
	}
	select {
	case <-h.others:
		return hooks.Run, nil
	case <-ctx.Done():
		return hooks.Run, ctx.Err()
	}
}

func (h *lastOf) AfterTool(_ context.Context, c tools.Call, _ *tools.Result) error {
	if aspect, ok := published(c); ok && aspect != h.aspect {
		h.mu.Lock()
		if h.n++; h.n == len(demo.Aspects)-1 {
			close(h.others)
		}
		h.mu.Unlock()
	}
	return nil
}

// A run of the demo team whose three researchers end together replays the same every time,
// whichever of them the replay has end last: each end reaches the coordinator at the point of
// the tick that took it in the recording, in the recorded order.
func TestConcurrentEndsReplayInRecordedOrder(t *testing.T) {
	r := recordRun(t, "the state of AI chips", nil, append(demo.Team(), nodes.WithHooks(&together{here: make(chan struct{})}))...)
	var ended []string
	for _, l := range r.c.Lines {
		if l.Kind == replay.KindTake {
			ended = append(ended, l.Ended...)
		}
	}
	assert.Len(t, ended, len(demo.Aspects)+1, "the researchers' ends and the synthesis's: %v", ended)

	for i := range 50 {
		last := &lastOf{aspect: demo.Aspects[i%len(demo.Aspects)], others: make(chan struct{})}
		got, err := replay.Play(t.Context(), r.path, t.TempDir(), nodes.WithHooks(last))
		require.NoError(t, err, "replay %d, %s last", i, last.aspect)
		assert.Equal(t, r.res.Output, got.Output)
	}
}

// slowFirst has the worker on n1 write its file after a while: a replay under load.
type slowFirst struct{ hooks.Base }

func (slowFirst) BeforeTool(_ context.Context, c *tools.Call) (hooks.Decision, error) {
	if c.Name == "write_file" && strings.Contains(string(c.Args), "nodes/n1/") {
		time.Sleep(200 * time.Millisecond)
	}
	return hooks.Run, nil
}

// The human's answer is given in a replay at the point of the run it was given in the
// recording: here after n1, which runs while the question waits, is done — however long n1
// takes in the replay.
func TestAnswerGivenAtRecordedPoint(t *testing.T) {
	path := record(t, squadModel{ask: "In which language?", during: true})
	c, err := replay.Load(path)
	require.NoError(t, err)
	var answer replay.Line
	took := map[string]int{} // the point that took each end
	for _, l := range c.Lines {
		switch l.Kind {
		case replay.KindAnswer:
			answer = l
		case replay.KindTake:
			for _, id := range l.Ended {
				took[id] = l.Seq
			}
		}
	}
	require.Len(t, took, 1)
	for _, seq := range took {
		assert.GreaterOrEqual(t, answer.After, seq, "the answer came after n1's end was taken")
	}
	for _, opts := range [][]nodes.Option{nil, {nodes.WithHooks(slowFirst{})}} {
		res, err := replay.Play(t.Context(), path, t.TempDir(), opts...)
		require.NoError(t, err)
		assert.Equal(t, "hello.md is published", res.Output)
	}
}

// A cassette of version 1, without the points of the run's ticks and mail, replays: its
// answers are given when the run has gone quiet.
func TestVersion1Replays(t *testing.T) {
	path := record(t, squadModel{ask: "In which language?"})
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var v1 []string
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if strings.HasPrefix(l, `{"kind":"take"`) || strings.HasPrefix(l, `{"kind":"mail"`) {
			continue
		}
		l = strings.Replace(l, fmt.Sprintf(`"version":%d,`, replay.Version), `"version":1,`, 1)
		v1 = append(v1, regexp.MustCompile(`,"after":\d+`).ReplaceAllString(l, ""))
	}
	require.NoError(t, os.WriteFile(path, []byte(strings.Join(v1, "\n")+"\n"), 0o644))
	c, err := replay.Load(path)
	require.NoError(t, err)
	require.Equal(t, 1, c.Header.Version)
	n1, _ := replay.Run(t, path).Board.Node("n1")
	assert.Contains(t, n1.Task, "In French.")
}

// A replay waiting for what its cassette says comes next, and never does, fails naming it:
// here the end of an assignment the run never makes.
func TestReplayStuckNamesWhatItWaitsFor(t *testing.T) {
	path := record(t, squadModel{})
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	edited := regexp.MustCompile(`"ended":\["([^"]+)"\]`).ReplaceAllString(string(b), `"ended":["$1","x.n9.1"]`)
	require.NotEqual(t, string(b), edited)
	require.NoError(t, os.WriteFile(path, []byte(edited), 0o644))
	defer replay.StuckAfter(200 * time.Millisecond)()
	_, err = replay.Play(t.Context(), path, t.TempDir())
	var d *replay.Divergence
	require.ErrorAs(t, err, &d)
	assert.Equal(t, replay.KindTake, d.Kind)
	assert.Contains(t, d.Diff, "- the end of x.n9.1")
}

// slowPublish has the research worker on aspect publish after a while: a replay whose workers
// end in another order than recorded.
type slowPublish struct {
	hooks.Base
	aspect string
}

func (h slowPublish) BeforeTool(_ context.Context, c *tools.Call) (hooks.Decision, error) {
	if aspect, ok := published(*c); ok && aspect == h.aspect {
		time.Sleep(30 * time.Millisecond)
	}
	return hooks.Run, nil
}

// A run of the demo team whose researcher on the current state asks for a sub-node, and waits
// for it, replays the same every time, however its workers' ends are ordered, with as many
// assignments at once as it likes or fewer than its nodes: a worker's sub-nodes go on the board
// when its end is taken, at the recorded point.
func TestSubNodesReplay(t *testing.T) {
	for _, most := range []int{1, 2, 4} {
		r := recordRun(t, "the state of AI chips", nil, append(demo.Team(demo.WithSubNodes()), nodes.WithMaxConcurrent(most))...)
		require.Contains(t, r.c.Facts.Files, "nodes/n4/published/details.md", "the sub-node n4 published its details")
		for i := range 10 {
			got, err := replay.Play(t.Context(), r.path, t.TempDir(), nodes.WithHooks(slowPublish{aspect: demo.Aspects[i%len(demo.Aspects)]}))
			require.NoError(t, err, "at most %d at once, replay %d", most, i)
			assert.Equal(t, r.res.Output, got.Output)
		}
	}
}

// recording is a run that was recorded.
type recording struct {
	path string // the cassette's
	c    *replay.Cassette
	res  nodes.Result
	home string // the agent's
}

// recordRun records a run toward goal of a squad of opts, with a short tick, in a new home;
// opened, if set, is given the squad before the run starts.
func recordRun(t *testing.T, goal string, opened func(*nodes.Squad), opts ...nodes.Option) recording {
	t.Helper()
	r := recording{path: filepath.Join(t.TempDir(), "run.cassette"), home: t.TempDir()}
	rec, err := replay.Record(r.path)
	require.NoError(t, err)
	s, err := nodes.New(append(opts, nodes.WithHome(r.home), nodes.WithTick(20*time.Millisecond), nodes.WithRecorder(rec))...)
	require.NoError(t, err)
	if opened != nil {
		opened(s)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	r.res, err = s.Run(ctx, goal)
	require.NoError(t, err)
	require.NoError(t, rec.Finish(s, r.res))
	require.NoError(t, s.Close())
	r.c, err = replay.Load(r.path)
	require.NoError(t, err)
	return r
}
