package nodes_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/models"
	"github.com/agiraph/agiraph/nodes"
	"github.com/agiraph/agiraph/nodes/eventlog"
	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/providers/scripted"
)

// clock is a clock the test moves.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// A worker's question is posted to the squad's webhook, with its deadline and default; when the
// deadline passes with no answer, the question ends with the default the worker gave — in a squad
// opened again on the home after the first was closed, too — and the work goes on with it.
func TestQuestionTimeoutAndWebhook(t *testing.T) {
	scNoSearchEnv(t)
	posted := make(chan nodes.Question, 4)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var q nodes.Question
		b, _ := io.ReadAll(r.Body)
		if assert.NoError(t, json.Unmarshal(b, &q)) {
			posted <- q
		}
	}))
	defer hook.Close()

	worker := scripted.NewFunc("asking-worker", func(_ context.Context, req providers.Request) (scripted.Turn, error) {
		if said, ok := scripted.Results(req)["ask_human"]; ok {
			return scTurn(req, scripted.Call("publish", map[string]string{"summary": said})), nil
		}
		return scTurn(req, scripted.Call("ask_human", map[string]string{"question": "Which colour?", "default": "teal"})), nil
	})
	coord := stageCoordinator("asking-coordinator", map[string]any{"task": "Pick a colour."})
	clk := &clock{now: time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)}
	home := t.TempDir()
	open := func() *nodes.Squad {
		s, err := nodes.New(nodes.WithHome(home), nodes.WithCoordinatorModel(coord.Name()), nodes.WithModel(worker.Name()),
			nodes.WithModelOptions(models.WithModels(coord, worker), models.WithoutRetry()), nodes.WithTick(20*time.Millisecond),
			nodes.WithClock(clk.Now), nodes.WithAnswerTimeout(time.Hour),
			nodes.WithWebhook(nodes.Webhook{URL: hook.URL, Agent: "painter", AllowPrivate: true}))
		require.NoError(t, err)
		return s
	}
	s := open()
	ctx, cancel := context.WithTimeout(context.Background(), scTimeout)
	defer cancel()
	h, err := s.Start(ctx, "A colour.")
	require.NoError(t, err)

	var q nodes.Question
	select {
	case q = <-posted:
	case <-ctx.Done():
		t.Fatal("no question was posted")
	}
	assert.Equal(t, "human.question", q.Type)
	assert.Equal(t, "painter", q.Agent)
	assert.Equal(t, h.ID(), q.Run)
	assert.Equal(t, "n1", q.Node)
	assert.Equal(t, "Which colour?", q.Question)
	assert.NotEmpty(t, q.Key)
	require.NotNil(t, q.AnswerBy)
	assert.Equal(t, clk.Now().Add(time.Hour), *q.AnswerBy)
	assert.Equal(t, "teal", q.Default)

	// Closed and opened again: the deadline is kept with the question.
	require.NoError(t, s.Close())
	s = open()
	defer s.Close()
	h, err = s.Resume(ctx, h.ID())
	require.NoError(t, err)
	clk.add(time.Hour)
	res, err := h.Wait()
	require.NoError(t, err)
	require.True(t, res.Finished)
	n, _ := res.Board.Node("n1")
	assert.Equal(t, "The human answered: teal", n.Summary)
	var answered int
	for _, e := range scEvents(t, s) {
		if e.Type == eventlog.HumanResponse && e.Text == "teal" {
			answered++
		}
	}
	assert.Equal(t, 1, answered)
}

// New refuses a webhook URL that is not an absolute http or https one, or whose host is a
// loopback or private address when they are not allowed.
func TestWebhookURLIsChecked(t *testing.T) {
	resolve := nodes.WithModelResolver(func(string) (providers.Model, error) { return scripted.New("m"), nil })
	_, err := nodes.New(nodes.WithHome(t.TempDir()), resolve, nodes.WithWebhook(nodes.Webhook{URL: "hooks.example/x"}))
	require.Error(t, err)
	assert.Contains(t, err.Error(), `"hooks.example/x"`)
	_, err = nodes.New(nodes.WithHome(t.TempDir()), resolve, nodes.WithWebhook(nodes.Webhook{URL: "http://10.0.0.7/q"}))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "10.0.0.7 is a private address")
}

// The coordinator's question ends the same way when its time is up: with "no answer within" the
// timeout, having no default.
func TestCoordinatorQuestionTimeout(t *testing.T) {
	coord := scripted.NewFunc("asking-coordinator", func(_ context.Context, req providers.Request) (scripted.Turn, error) {
		if said, ok := scripted.Results(req)["ask_human"]; ok {
			return scTurn(req, scripted.Call("finish", map[string]string{"output": said})), nil
		}
		return scTurn(req, scripted.Call("ask_human", map[string]string{"question": "Which market?"})), nil
	})
	clk := &clock{now: time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)}
	s := scSquad(t, coord, []providers.Model{coord}, nodes.WithClock(clk.Now), nodes.WithAnswerTimeout(time.Minute))
	ctx, cancel := context.WithTimeout(context.Background(), scTimeout)
	defer cancel()
	h, err := s.Start(ctx, "A market.")
	require.NoError(t, err)
	require.NoError(t, scAwaitEvent(ctx, s, func(e eventlog.Event) bool { return e.Type == eventlog.HumanQuestion }))
	clk.add(time.Minute)
	res, err := h.Wait()
	require.NoError(t, err)
	assert.Equal(t, "The human answered: no answer within 1m0s", res.Output)
}

// While the coordinator waits for the human's answer, the run is not idle for it: no note that
// nothing is running reaches it, however long the human takes.
func TestNoIdleNoteWhileTheCoordinatorAsks(t *testing.T) {
	var afterAnswer atomic.Value
	coord := scripted.NewFunc("asking-coordinator", func(_ context.Context, req providers.Request) (scripted.Turn, error) {
		if said, ok := scripted.Results(req)["ask_human"]; ok {
			afterAnswer.Store(teamAllText(req))
			return scTurn(req, scripted.Call("finish", map[string]string{"output": said})), nil
		}
		return scTurn(req, scripted.Call("ask_human", map[string]string{"question": "Which market?"})), nil
	})
	s := scSquad(t, coord, []providers.Model{coord}, nodes.WithTick(5*time.Millisecond), nodes.WithStall(20*time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), scTimeout)
	defer cancel()
	h, err := s.Start(ctx, "A market.")
	require.NoError(t, err)
	// The run waits on the human long enough to say so: many idle ticks went by.
	require.NoError(t, scAwaitEvent(ctx, s, func(e eventlog.Event) bool { return e.Type == eventlog.AgentWaiting }))
	require.NoError(t, h.Answer("coordinator", "Europe"))
	_, err = h.Wait()
	require.NoError(t, err)
	text, _ := afterAnswer.Load().(string)
	assert.Contains(t, text, "Europe")
	assert.NotContains(t, text, "Nothing is running")
}
