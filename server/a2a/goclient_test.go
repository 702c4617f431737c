package a2a_test

import (
	"net/http"
	"testing"

	goa2a "github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2aclient"
	"github.com/a2aproject/a2a-go/a2aclient/agentcard"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/nodes/demo"
	"github.com/agiraph/agiraph/runtime"
	"github.com/agiraph/agiraph/runtime/a2aworker"
	"github.com/agiraph/agiraph/runtime/runtimetest"
	"github.com/agiraph/agiraph/server/host"
)

// bearer is a transport that adds a token to requests.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// TestGoClient talks to the agents with the A2A project's Go client, a2a-go.
func TestGoClient(t *testing.T) {
	f := start(t, "")
	f.agent("ada")
	f.agent("asker")
	ctx := t.Context()
	connect := func(id string) *a2aclient.Client {
		card, err := agentcard.NewResolver(nil).Resolve(ctx, f.ts.URL+"/a2a/"+id+"/")
		require.NoError(t, err)
		assert.Equal(t, id, card.Name)
		assert.True(t, card.Capabilities.Streaming)
		c, err := a2aclient.NewFromCard(ctx, card, a2aclient.WithJSONRPCTransport(&http.Client{Transport: bearer{f.srv.Token()}}))
		require.NoError(t, err)
		t.Cleanup(func() { _ = c.Destroy() })
		return c
	}

	ada := connect("ada")
	res, err := ada.SendMessage(ctx, &goa2a.MessageSendParams{Message: goa2a.NewMessage(goa2a.MessageRoleUser, goa2a.TextPart{Text: "Research the history of the kite."})})
	require.NoError(t, err)
	task, ok := res.(*goa2a.Task)
	require.True(t, ok, "a task: %#v", res)
	assert.Equal(t, goa2a.TaskStateCompleted, task.Status.State)
	var names []string
	for _, art := range task.Artifacts {
		names = append(names, art.Name)
	}
	assert.Contains(t, names, "output")
	assert.Contains(t, names, "n1/findings.md")
	got, err := ada.GetTask(ctx, &goa2a.TaskQueryParams{ID: task.ID})
	require.NoError(t, err)
	assert.Equal(t, goa2a.TaskStateCompleted, got.Status.State)
	_, err = ada.GetTask(ctx, &goa2a.TaskQueryParams{ID: "20200101-000000"})
	require.Error(t, err)

	// The squad's question, answered on the task.
	asker := connect("asker")
	var last goa2a.Event
	var id goa2a.TaskID
	for ev, err := range asker.SendStreamingMessage(ctx, &goa2a.MessageSendParams{Message: goa2a.NewMessage(goa2a.MessageRoleUser, goa2a.TextPart{Text: "Research the history of the kite."})}) {
		require.NoError(t, err)
		if tk, ok := ev.(*goa2a.Task); ok {
			id = tk.ID
		}
		last = ev
	}
	asked, ok := last.(*goa2a.TaskStatusUpdateEvent)
	require.True(t, ok, "the stream ends with a status update: %#v", last)
	assert.Equal(t, goa2a.TaskStateInputRequired, asked.Status.State)
	assert.True(t, asked.Final)
	require.NotNil(t, asked.Status.Message)
	assert.Equal(t, goa2a.TextPart{Text: demo.HumanQuestion}, asked.Status.Message.Parts[0])

	answer := goa2a.NewMessage(goa2a.MessageRoleUser, goa2a.TextPart{Text: "Yes."})
	answer.TaskID = id
	for ev, err := range asker.SendStreamingMessage(ctx, &goa2a.MessageSendParams{Message: answer}) {
		require.NoError(t, err)
		last = ev
	}
	done, ok := last.(*goa2a.TaskStatusUpdateEvent)
	require.True(t, ok, "%#v", last)
	assert.Equal(t, goa2a.TaskStateCompleted, done.Status.State)
	assert.Equal(t, host.StatusComplete, f.await("asker", host.StatusComplete).Status)
}

// TestAsAWorker runs an assignment on an agent of the server through runtime/a2aworker: the
// squad's question comes back as the worker's, and its answer finishes the task, whose files are
// published in the assignment's node.
func TestAsAWorker(t *testing.T) {
	f := start(t, "")
	f.agent("asker")
	rt := a2aworker.New(f.ts.URL+"/a2a/asker/", a2aworker.WithToken(f.srv.Token()))
	a := runtimetest.NewAssignment(t, nil)
	o, err := rt.Run(t.Context(), a, nil)
	require.NoError(t, err)
	require.Equal(t, runtime.Waiting, o.Status)
	assert.Equal(t, demo.HumanQuestion, o.Question)

	a.Session, a.Answer = o.Session, "Yes."
	o, err = rt.Run(t.Context(), a, nil)
	require.NoError(t, err)
	assert.Equal(t, runtime.Published, o.Status)
	assert.Contains(t, o.Summary, "# Report")
	assert.Contains(t, o.Published, "n1_findings.md", "each node's files, apart")
	assert.Contains(t, o.Published, "n2_findings.md")
	assert.Contains(t, o.Published, "output.md")
}
