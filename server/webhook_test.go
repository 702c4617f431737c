package server_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/nodes"
	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/providers/scripted"
	"github.com/agiraph/agiraph/server"
	"github.com/agiraph/agiraph/server/host"
)

// colourTeam is a team whose worker asks the human which colour, and publishes the answer.
var colourTeam = stageTeam([]map[string]any{{"task": "Pick a colour."}}, func(_ context.Context, req providers.Request) (scripted.Turn, error) {
	if said, ok := scripted.Results(req)["ask_human"]; ok {
		return turn(req, scripted.Call("publish", map[string]string{"summary": said})), nil
	}
	return turn(req, scripted.Call("ask_human", map[string]string{"question": "Which colour?"})), nil
})

// A worker's question reaches the server's webhook, naming the agent, who asked and what; the
// answer comes back through the API, and the work goes on with it.
func TestQuestionsToTheWebhook(t *testing.T) {
	posted := make(chan nodes.Question, 4)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var q nodes.Question
		b, _ := io.ReadAll(r.Body)
		if assert.NoError(t, json.Unmarshal(b, &q)) {
			posted <- q
		}
		assert.Equal(t, "Bearer hook-secret", r.Header.Get("Authorization"))
	}))
	defer hook.Close()
	c := start(t, t.TempDir(), colourTeam, server.WithHost(host.WithWebhook(nodes.Webhook{
		URL: hook.URL, AllowPrivate: true, Header: http.Header{"Authorization": {"Bearer hook-secret"}}})))

	require.Equal(t, http.StatusCreated, c.do("POST", "/agents", map[string]string{"id": "painter", "goal": "A colour."}, nil))
	var q nodes.Question
	select {
	case q = <-posted:
	case <-time.After(deadline):
		c.dump("painter")
		t.Fatal("no question was posted")
	}
	assert.Equal(t, "painter", q.Agent)
	assert.Equal(t, "n1", q.Node)
	assert.Equal(t, "Which colour?", q.Question)
	assert.Nil(t, q.AnswerBy)
	waiting := c.await("painter", host.StatusWaiting)
	assert.Equal(t, q.Worker, waiting.WaitingFor)

	require.Equal(t, http.StatusOK, c.do("POST", "/agents/painter/respond", map[string]string{"worker": q.Worker, "response": "teal"}, nil))
	c.await("painter", host.StatusComplete)
	var node struct{ Node nodes.Node }
	require.Equal(t, http.StatusOK, c.do("GET", "/agents/painter/board/n1", nil, &node))
	assert.Equal(t, "The human answered: teal", node.Node.Summary)
}
