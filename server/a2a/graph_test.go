package a2a_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/checkpoint"
	"github.com/agiraph/agiraph/graph"
	"github.com/agiraph/agiraph/server/a2a"
)

// story is the state of the test's graphs.
type story struct {
	Topic  string
	Year   string
	Report string
}

// storyGraph asks which year (an interrupt), then writes the report; the topic "fail" fails
// it, the topic "wait" waits until it is cancelled.
func storyGraph(t *testing.T) *graph.Compiled[story] {
	g := graph.New[story]()
	g.AddNode("ask", func(ctx context.Context, s story) (story, error) {
		switch s.Topic {
		case "fail":
			return story{}, errors.New("no archive for that")
		case "wait":
			<-ctx.Done()
			return story{}, ctx.Err()
		}
		year, err := graph.Interrupt[string](ctx, "Which year?")
		return story{Year: year}, err
	})
	g.AddNode("write", func(_ context.Context, s story) (story, error) {
		return story{Report: fmt.Sprintf("The history of %s, from %s.", s.Topic, s.Year)}, nil
	})
	g.AddEdge(graph.START, "ask")
	g.AddEdge("ask", "write")
	g.AddEdge("write", graph.END)
	c, err := g.Compile()
	require.NoError(t, err)
	return c
}

// startGraph serves the story graph as the agent "story", its threads in saver.
func startGraph(t *testing.T, saver checkpoint.Saver) *fixture {
	h, err := a2a.NewGraph("/a2a", a2a.Graph[story]{Name: "story", Graph: storyGraph(t), Saver: saver,
		In:  func(text string) story { return story{Topic: text} },
		Out: func(s story) string { return s.Report },
	})
	require.NoError(t, err)
	ts := httptest.NewServer(h)
	t.Cleanup(func() { ts.Close(); h.Close() })
	return &fixture{t: t, ts: ts}
}

func TestGraph(t *testing.T) {
	saver := checkpoint.NewMemory()
	f := startGraph(t, saver)
	var task a2a.Task
	require.Nil(t, f.call("story", "message/send", message("kites", ""), &task))
	assert.Equal(t, a2a.StateInputRequired, task.Status.State, "the interrupt")
	assert.Equal(t, "Which year?", text(task.Status.Message))
	var got a2a.Task
	require.Nil(t, f.call("story", "tasks/get", map[string]any{"id": task.ID}, &got))
	assert.Equal(t, a2a.StateInputRequired, got.Status.State)

	e := f.call("story", "message/send", message("1901", "20200101-000000-000000000000"), nil)
	require.NotNil(t, e)
	assert.Equal(t, -32001, e.Code)
	require.Nil(t, f.call("story", "message/send", message("1901", task.ID), &got))
	assert.Equal(t, a2a.StateCompleted, got.Status.State, "the answer resumes the graph")
	assert.Equal(t, "The history of kites, from 1901.", text(got.Status.Message))
	require.Len(t, got.Artifacts, 1)
	assert.Equal(t, "The history of kites, from 1901.", got.Artifacts[0].Parts[0].Text)
	var history []string
	for _, m := range got.History {
		history = append(history, m.Role+": "+text(&m))
	}
	assert.Equal(t, []string{"user: kites", "agent: Which year?", "user: 1901", "agent: The history of kites, from 1901."}, history)
	e = f.call("story", "message/send", message("1902", task.ID), nil)
	require.NotNil(t, e, "a task that ended takes no more messages")
	assert.Equal(t, -32004, e.Code)

	// A stream: a status update per superstep, the output, the end.
	events := f.stream("story", "message/stream", message("yo-yos", ""))
	seen := kinds(t, events)
	assert.Regexp(t, "^task:", seen[0])
	assert.Regexp(t, ":input-required$", seen[len(seen)-1], "%v: the stream ends at the question (the task may reach it before the stream starts)", seen)
	var first a2a.Task
	require.NoError(t, unmarshal(events[0], &first))
	events = f.stream("story", "message/stream", message("1920", first.ID))
	assert.Equal(t, []string{"task:working", "status-update:working", "status-update:working", "artifact-update", "status-update:completed"}, kinds(t, events))
	var steps []string
	for _, raw := range events[1:3] {
		var step a2a.StatusUpdate
		require.NoError(t, unmarshal(raw, &step))
		steps = append(steps, text(step.Status.Message))
	}
	assert.Equal(t, []string{"step 1: ask", "step 2: write"}, steps, "a status update per superstep, naming its nodes")

	// The thread is the task: a handler started again over the saver reads it.
	g := startGraph(t, saver)
	require.Nil(t, g.call("story", "tasks/get", map[string]any{"id": task.ID}, &got))
	assert.Equal(t, a2a.StateCompleted, got.Status.State)
	assert.Equal(t, "The history of kites, from 1901.", text(got.Status.Message))
	require.Nil(t, g.call("story", "message/send", message("bicycles", ""), &task))
	require.Nil(t, startGraph(t, saver).call("story", "message/send", message("1817", task.ID), &got))
	assert.Equal(t, "The history of bicycles, from 1817.", text(got.Status.Message), "a question answered after a restart")

	e = f.call("story", "tasks/get", map[string]any{"id": "nothing"}, nil)
	require.NotNil(t, e)
	assert.Equal(t, -32001, e.Code)
	resp := f.post("other", "tasks/get", map[string]any{"id": task.ID})
	resp.Body.Close()
	assert.Equal(t, 404, resp.StatusCode)
}

func TestGraphFailsAndCancels(t *testing.T) {
	f := startGraph(t, checkpoint.NewMemory())
	var task a2a.Task
	require.Nil(t, f.call("story", "message/send", message("fail", ""), &task))
	assert.Equal(t, a2a.StateFailed, task.Status.State)
	assert.Contains(t, text(task.Status.Message), "no archive for that")

	params := message("wait", "")
	params["configuration"] = map[string]any{"blocking": false}
	require.Nil(t, f.call("story", "message/send", params, &task))
	assert.Equal(t, a2a.StateWorking, task.Status.State)
	e := f.call("story", "message/send", message("more", task.ID), nil)
	require.NotNil(t, e, "a graph at work takes no message")
	assert.Equal(t, -32004, e.Code)
	var got a2a.Task
	require.Nil(t, f.call("story", "tasks/cancel", map[string]any{"id": task.ID}, &got))
	assert.Equal(t, a2a.StateCanceled, got.Status.State)
	require.Nil(t, f.call("story", "tasks/get", map[string]any{"id": task.ID}, &got))
	assert.Equal(t, a2a.StateCanceled, got.Status.State)
	e = f.call("story", "tasks/cancel", map[string]any{"id": task.ID}, nil)
	require.NotNil(t, e)
	assert.Equal(t, -32002, e.Code)

	// A task that waits for its answer is cancelled too.
	require.Nil(t, f.call("story", "message/send", message("kites", ""), &task))
	require.Nil(t, f.call("story", "tasks/cancel", map[string]any{"id": task.ID}, &got))
	assert.Equal(t, a2a.StateCanceled, got.Status.State)
}

func TestNewGraphNamesWhatIsMissing(t *testing.T) {
	_, err := a2a.NewGraph("/a2a", a2a.Graph[story]{Name: "story"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "Graph, Saver")
	assert.Contains(t, err.Error(), "In, Out")
}

func unmarshal(raw []byte, v any) error { return json.Unmarshal(raw, v) }
