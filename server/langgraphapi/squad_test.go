package langgraphapi_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/nodes/demo"
	"github.com/agiraph/agiraph/nodes/store"
	"github.com/agiraph/agiraph/server/host"
	"github.com/agiraph/agiraph/server/langgraphapi"
)

func TestSquadThread(t *testing.T) {
	a := newAPI(t)
	id := a.must(200, "POST", "/threads", nil)["thread_id"].(string)
	evs := a.stream("POST", "/threads/"+id+"/runs/stream", obj{
		"assistant_id": "squad", "input": obj{"messages": []obj{{"type": "human", "content": "AI chips"}}},
		"stream_mode": []string{"values", "custom", "messages-tuple"},
	}, nil)
	var sawEvent, sawText bool
	var last obj
	for _, e := range evs {
		switch e.Name {
		case "custom":
			sawEvent = sawEvent || e.Data.(obj)["type"] == "agent.started"
		case "messages":
			sawText = true
			assert.Equal(t, "AIMessageChunk", e.Data.([]any)[0].(obj)["type"])
		case "values":
			last = e.Data.(obj)
		}
	}
	assert.True(t, sawEvent && sawText, "%v", names(evs))
	require.Contains(t, last, "__interrupt__", "the squad's question ends the run")
	pending := last["__interrupt__"].([]any)[0].(obj)
	assert.Equal(t, demo.HumanQuestion, pending["value"].(obj)["question"])
	assert.Equal(t, obj{"type": "human", "content": "AI chips"}, without(last["messages"].([]any)[0].(obj), "id"))

	th := a.must(200, "GET", "/threads/"+id, nil)
	assert.Equal(t, "interrupted", th["status"])
	st := a.must(200, "GET", "/threads/"+id+"/state", nil)
	assert.Equal(t, pending["id"], st["interrupts"].([]any)[0].(obj)["id"])

	out := a.must(200, "POST", "/threads/"+id+"/runs/wait", obj{"assistant_id": "squad", "command": obj{"resume": obj{pending["id"].(string): "yes"}}})
	require.Contains(t, out, "board", "%v", out)
	for _, n := range out["board"].(obj)["nodes"].([]any) {
		assert.Equal(t, "completed", n.(obj)["status"], "the run goes on to its end: %v", n)
	}
	conv := out["messages"].([]any)
	assert.Equal(t, obj{"type": "ai", "name": "Carol", "content": demo.HumanQuestion}, without(conv[1].(obj), "id"))
	assert.Equal(t, obj{"type": "human", "content": "yes"}, without(conv[2].(obj), "id"))
	assert.Equal(t, "idle", a.must(200, "GET", "/threads/"+id, nil)["status"])

	a.must(422, "POST", "/threads/"+id+"/runs/wait", obj{"assistant_id": "squad", "command": obj{"update": obj{"x": 1}}})
	a.must(422, "POST", "/threads/"+id+"/runs/wait", obj{"assistant_id": "squad", "input": obj{"goal": " "}})
	a.must(204, "DELETE", "/threads/"+id, nil)
	_, err := a.host.Summary(id)
	assert.ErrorIs(t, err, host.ErrNotFound, "deleting the thread deletes the agent")
}

// without returns o without key.
func without(o obj, key string) obj {
	out := obj{}
	for k, v := range o {
		if k != key {
			out[k] = v
		}
	}
	return out
}

// A run names its agent's model only among those the host's assistant allows, as the server's
// own API does: by default none.
func TestSquadRunNamesOnlyAllowedModels(t *testing.T) {
	a := newAPI(t)
	id := a.must(200, "POST", "/threads", nil)["thread_id"].(string)
	body := obj{"assistant_id": "squad", "input": obj{"goal": "AI chips"},
		"config": obj{"configurable": obj{"model": "anthropic/claude-opus-4"}}}
	var out obj
	require.Equal(t, 422, a.call("POST", "/threads/"+id+"/runs/wait", body, &out))
	assert.Contains(t, out["detail"], `"anthropic/claude-opus-4"`)
	assert.Contains(t, out["detail"], "may name no model")

	h := langgraphapi.New(store.NewMemory())
	t.Cleanup(func() { assert.NoError(t, h.Close()) })
	require.NoError(t, langgraphapi.RegisterHost(h, "squad", a.host, langgraphapi.WithSquadModels("scripted/a")))
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	resp, err := http.Post(srv.URL+"/runs/wait", "application/json", strings.NewReader(
		`{"assistant_id":"squad","input":{"goal":"x"},"config":{"configurable":{"model":"scripted/b"}}}`))
	require.NoError(t, err)
	defer resp.Body.Close()
	detail, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	assert.Equal(t, 422, resp.StatusCode)
	assert.Contains(t, string(detail), "allowed: scripted/a")
}
