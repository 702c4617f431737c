package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/nodes"
	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/providers/scripted"
	"github.com/agiraph/agiraph/server"
	"github.com/agiraph/agiraph/server/host"
	"github.com/agiraph/agiraph/tools"
)

// hostileTeam is the team of each agent of TestHostileRequests by its id: "mailer" holds its
// send_mail for approval, "other" finishes its goal, "painter"'s worker asks which colour for
// its node n1, the others ask the human which market.
func hostileTeam(id string) []nodes.Option {
	switch id {
	case "mailer":
		return mailTeam(id)
	case "other":
		return goalTeam(id)
	case "painter":
		return colourTeam(id)
	}
	return askingTeam(id)
}

// What an attacker or a careless client sends to a run's steps and forks, cassettes, verdicts,
// budgets, new agents' tools and approvals, a node's retry and skip, and the LangGraph API's
// state patch is refused with a JSON error naming what is wrong; nothing is started, changed or
// leaked: the runs stay as they were, no secret is in a cassette served.
func TestHostileRequests(t *testing.T) {
	const apiKey = "sk-hostile-test-key-0123456789abcdef"
	t.Setenv("OPENAI_API_KEY", apiKey)
	c := start(t, t.TempDir(), hostileTeam, server.WithMaxText(1000), server.WithModels("scripted/worker"),
		server.WithGraph(echoGraph(t, "echo")), server.WithHost(host.WithRecordRuns()))
	tok := c.srv.Token()

	// asker: a completed run with a question in its steps; waiter: a run waiting on its
	// question; mailer: a run waiting on an approval; other: a run whose goal holds secrets.
	require.Equal(t, http.StatusCreated, c.do("POST", "/agents", map[string]string{"id": "asker", "goal": "Study a market."}, nil))
	c.await("asker", host.StatusWaiting)
	require.Equal(t, http.StatusOK, c.do("POST", "/agents/asker/respond", map[string]string{"response": "the European one"}, nil))
	run := c.await("asker", host.StatusComplete).Run
	require.Equal(t, http.StatusCreated, c.do("POST", "/agents", map[string]string{"id": "waiter", "goal": "Study a market."}, nil))
	waiting := c.await("waiter", host.StatusWaiting).Run
	require.Equal(t, http.StatusCreated, c.do("POST", "/agents", map[string]any{"id": "mailer", "goal": "Mail the report.",
		"approvals": map[string]any{"tools": []string{"send_*"}}}, nil))
	require.NotNil(t, c.await("mailer", host.StatusWaiting).Approval)
	require.Equal(t, http.StatusCreated, c.do("POST", "/agents", map[string]string{"id": "other", "goal": "first"}, nil))
	c.await("other", host.StatusComplete)
	// Run ids are times to the second, so two agents' first runs may share one: other's second
	// run is one asker has not.
	require.Equal(t, http.StatusAccepted, c.do("POST", "/agents/other/runs", map[string]string{"goal": "keys " + apiKey + " and " + tok}, nil))
	other := c.await("other", host.StatusComplete).Run
	require.Equal(t, http.StatusCreated, c.do("POST", "/agents", map[string]string{"id": "painter", "goal": "A colour."}, nil))
	c.await("painter", host.StatusWaiting)
	require.Equal(t, http.StatusOK, c.do("POST", "/agents/painter/respond", map[string]string{"response": "teal"}, nil))
	painted := c.await("painter", host.StatusComplete).Run
	var painterSteps stepList
	require.Equal(t, http.StatusOK, c.do("GET", "/agents/painter/runs/"+painted+"/steps", nil, &painterSteps))
	painter := "/agents/painter/runs/" + painted
	var steps stepList
	require.Equal(t, http.StatusOK, c.do("GET", "/agents/asker/runs/"+run+"/steps", nil, &steps))
	last := steps.Steps[len(steps.Steps)-1].Tick

	var thread struct {
		ThreadID string `json:"thread_id"`
	}
	require.Equal(t, http.StatusOK, c.do("POST", "/langgraph/threads", map[string]any{"metadata": map[string]any{"graph_id": "echo"}}, &thread))
	require.Equal(t, http.StatusOK, c.do("POST", "/langgraph/threads/"+thread.ThreadID+"/runs/wait", map[string]any{"assistant_id": "echo", "input": map[string]any{"Text": "hi"}}, nil))
	state := "/langgraph/threads/" + thread.ThreadID + "/state"
	var second struct {
		ThreadID string `json:"thread_id"`
	}
	require.Equal(t, http.StatusOK, c.do("POST", "/langgraph/threads", map[string]any{"metadata": map[string]any{"graph_id": "echo"}}, &second))
	require.Equal(t, http.StatusOK, c.do("POST", "/langgraph/threads/"+second.ThreadID+"/runs/wait", map[string]any{"assistant_id": "echo", "input": map[string]any{"Text": "yo"}}, nil))
	var secondState struct {
		Checkpoint struct {
			CheckpointID string `json:"checkpoint_id"`
		} `json:"checkpoint"`
	}
	require.Equal(t, http.StatusOK, c.do("GET", "/langgraph/threads/"+second.ThreadID+"/state", nil, &secondState))
	require.NotEmpty(t, secondState.Checkpoint.CheckpointID)

	auth := map[string]string{"Authorization": "Bearer " + tok, "Content-Type": "application/json"}
	with := func(h map[string]string) map[string]string {
		out := map[string]string{}
		for k, v := range auth {
			out[k] = v
		}
		for k, v := range h {
			if v == "" {
				delete(out, k)
			} else {
				out[k] = v
			}
		}
		return out
	}
	asker := "/agents/asker/runs/" + run
	big := strings.Repeat("x", 1001)
	cases := []struct {
		name, method, path string
		body               any // a string is sent as is
		headers            map[string]string
		status             int
		says               string // in the error
	}{
		// Steps: ids and ticks.
		{"run id ..", "GET", "/agents/asker/runs/..%2F..%2Fagents/steps", nil, nil, 404, "no run"},
		{"run id %2e%2e", "GET", "/agents/asker/runs/%2e%2e/steps", nil, nil, 404, ""},
		{"run id NUL", "GET", "/agents/asker/runs/r%00/steps", nil, nil, 404, "no run"},
		{"run id long", "GET", "/agents/asker/runs/" + strings.Repeat("r", 5000) + "/steps", nil, nil, 404, "no run"},
		{"agent id NUL", "GET", "/agents/ask%00er/runs/" + run + "/steps", nil, nil, 404, "no agent"},
		{"agent id ..", "GET", "/agents/..%2Fasker/runs/" + run + "/steps", nil, nil, 404, "no agent"},
		{"run of another agent", "GET", "/agents/asker/runs/" + other + "/steps", nil, nil, 404, `agent "asker" has no run`},
		{"tick 0", "GET", asker + "/steps/0", nil, nil, 400, "bad step"},
		{"tick negative", "GET", asker + "/steps/-1", nil, nil, 400, "bad step"},
		{"tick huge", "GET", asker + "/steps/99999999999999999999", nil, nil, 400, "bad step"},
		{"tick max int", "GET", asker + "/steps/9223372036854775807", nil, nil, 404, "has no step"},
		{"tick float", "GET", asker + "/steps/1e3", nil, nil, 400, "bad step"},
		{"tick of another agent's run", "GET", "/agents/asker/runs/" + other + "/steps/1", nil, nil, 404, "no run"},

		// Cassettes.
		{"cassette of a run not ended", "GET", "/agents/waiter/runs/" + waiting + "/cassette", nil, nil, 404, "no recording"},
		{"cassette of another agent's run", "GET", "/agents/asker/runs/" + other + "/cassette", nil, nil, 404, "no recording"},
		{"cassette of ..", "GET", "/agents/asker/runs/..%2F..%2Ftoken/cassette", nil, nil, 404, "no recording"},

		// Forks.
		{"fork while running", "POST", "/agents/waiter/runs/" + waiting + "/fork", map[string]any{"tick": 1}, nil, 409, ""},
		{"fork of another agent's run", "POST", "/agents/asker/runs/" + other + "/fork", map[string]any{"tick": 1}, nil, 404, "no run"},
		{"fork tick negative", "POST", asker + "/fork", map[string]any{"tick": -1}, nil, 400, `"tick"`},
		{"fork tick huge", "POST", asker + "/fork", `{"tick": 1e308}`, nil, 400, `"tick"`},
		{"fork tick string", "POST", asker + "/fork", `{"tick": "1"}`, nil, 400, `"tick"`},
		{"fork answer oversized", "POST", asker + "/fork", map[string]any{"tick": 1, "answer": big}, nil, 413, `"answer"`},
		{"fork model not allowed", "POST", asker + "/fork", map[string]any{"tick": 1, "coordinator_model": "openai/gpt-5"}, nil, 403, `"openai/gpt-5" is not allowed`},
		{"fork worker model not allowed", "POST", asker + "/fork", map[string]any{"tick": 1, "worker_model": "openai/gpt-5"}, nil, 403, `"openai/gpt-5" is not allowed`},
		{"fork node_spec task oversized", "POST", asker + "/fork", map[string]any{"tick": 1, "node_spec": map[string]any{"node": "n1", "task": big}}, nil, 413, "node_spec.task"},
		{"fork node_spec no node", "POST", asker + "/fork", map[string]any{"tick": 1, "node_spec": map[string]any{"task": "t"}}, nil, 400, "node_spec.node"},
		{"fork node_spec unknown node", "POST", asker + "/fork", map[string]any{"tick": last, "node_spec": map[string]any{"node": "n99", "task": "t"}}, nil, 400, "no node n99"},
		{"fork node_spec for a done node", "POST", painter + "/fork", map[string]any{"tick": painterSteps.Steps[len(painterSteps.Steps)-1].Tick, "node_spec": map[string]any{"node": "n1", "task": "t"}}, nil, 400, "node n1 was"},
		{"fork worker without a model", "POST", asker + "/fork", map[string]any{"tick": 1, "worker": "ann"}, nil, 400, "worker_model"},
		{"fork model of an unknown worker", "POST", painter + "/fork", map[string]any{"tick": 1, "worker": "nobody", "worker_model": "scripted/worker"}, nil, 400, "no worker nobody"},
		{"fork body oversized", "POST", asker + "/fork", `{"tick": 1, "answer": "` + strings.Repeat("y", 10000) + `"}`, nil, 413, "over"},
		{"fork unknown field", "POST", asker + "/fork", map[string]any{"tick": 1, "goal": "x"}, nil, 400, `"goal"`},

		// Verdicts.
		{"verdict with nothing pending", "POST", "/agents/asker/respond", map[string]any{"verdict": map[string]any{"approve": true}}, nil, 409, ""},
		{"verdict for a plain question", "POST", "/agents/waiter/respond", map[string]any{"verdict": map[string]any{"approve": true}}, nil, 409, "no tool call"},
		{"verdict rejecting with args", "POST", "/agents/mailer/respond", map[string]any{"verdict": map[string]any{"approve": false, "args": map[string]any{}}}, nil, 400, "args"},
		{"verdict args off the schema", "POST", "/agents/mailer/respond", map[string]any{"verdict": map[string]any{"approve": true, "args": map[string]any{"to": 7}}}, nil, 400, "the edited arguments of send_mail"},
		{"verdict args not an object", "POST", "/agents/mailer/respond", map[string]any{"verdict": map[string]any{"approve": true, "args": "rm -rf /"}}, nil, 400, "send_mail"},
		{"verdict args null", "POST", "/agents/mailer/respond", `{"verdict": {"approve": true, "args": null}}`, nil, 400, "send_mail"},
		{"verdict args oversized", "POST", "/agents/mailer/respond", map[string]any{"verdict": map[string]any{"approve": true, "args": map[string]any{"to": big}}}, nil, 413, ""},

		// Budgets.
		{"budget negative", "POST", "/agents/asker/budget", map[string]any{"usd": -1}, nil, 400, "budget"},
		{"budget NaN", "POST", "/agents/asker/budget", `{"usd": NaN}`, nil, 400, "bad body"},
		{"budget NaN string", "POST", "/agents/asker/budget", `{"usd": "NaN"}`, nil, 400, "usd"},
		{"budget 1e309", "POST", "/agents/asker/budget", `{"usd": 1e309}`, nil, 400, "usd"},
		{"budget tokens 1e308", "POST", "/agents/asker/budget", `{"tokens": 1e308}`, nil, 400, "tokens"},
		{"budget soft 1", "POST", "/agents/asker/budget", map[string]any{"usd": 1, "soft": 1}, nil, 400, "Soft"},
		{"budget of another agent's run", "POST", "/agents/asker/budget", map[string]any{"run": other, "usd": 1}, nil, 404, "no run"},
		{"budget of run ..", "POST", "/agents/asker/budget", map[string]any{"run": "../other", "usd": 1}, nil, 404, "no run"},

		// New agents: budgets, tools, approvals.
		{"create budget negative", "POST", "/agents", map[string]any{"goal": "g", "budget": map[string]any{"tokens": -5}}, nil, 400, `"budget"`},
		{"create budget 1e308 tokens", "POST", "/agents", `{"goal": "g", "budget": {"tokens": 1e308}}`, nil, 400, "tokens"},
		{"create unknown tool", "POST", "/agents", map[string]any{"goal": "g", "tools": []string{"rm_rf"}}, nil, 422, "rm_rf"},
		{"create tool path", "POST", "/agents", map[string]any{"goal": "g", "tools": []string{"../bash"}}, nil, 422, "../bash"},
		{"create approvals bad pattern", "POST", "/agents", map[string]any{"goal": "g", "approvals": map[string]any{"tools": []string{"send_["}}}, nil, 400, "send_["},
		{"create approvals bad worker pattern", "POST", "/agents", map[string]any{"goal": "g", "approvals": map[string]any{"workers": []string{"[a-"}}}, nil, 400, "workers"},
		{"create approvals not an object", "POST", "/agents", map[string]any{"goal": "g", "approvals": "send_*"}, nil, 400, `"approvals"`},

		// Retry and skip.
		{"retry node ..", "POST", "/agents/waiter/board/..%2Fn1/retry", nil, nil, 404, ""},
		{"retry with no run", "POST", "/agents/asker/board/n1/retry", nil, nil, 409, "no run in progress"},
		{"skip note oversized", "POST", "/agents/waiter/board/n1/skip", map[string]any{"note": big}, nil, 413, `"note"`},

		// The LangGraph API's state patch.
		{"patch metadata not an object", "PATCH", state, map[string]any{"metadata": []any{1}}, nil, 422, "metadata"},
		{"patch metadata a string", "PATCH", state, map[string]any{"metadata": "x"}, nil, 422, "metadata"},
		{"patch metadata huge value", "PATCH", state, map[string]any{"metadata": map[string]any{"k": strings.Repeat("v", 1<<20)}}, nil, 413, "metadata"},
		{"patch metadata huge object echoed", "PATCH", state, map[string]any{"metadata": map[string]any{"k": map[string]any{"v": strings.Repeat("v", 1<<20)}}}, nil, 422, "metadata"},

		{"patch another thread's checkpoint", "PATCH", state, map[string]any{"metadata": map[string]any{"k": "v"}, "checkpoint_id": secondState.Checkpoint.CheckpointID}, nil, 404, "no checkpoint"},
		{"patch thread ..", "PATCH", "/langgraph/threads/..%2F" + second.ThreadID + "/state", map[string]any{"metadata": map[string]any{"k": "v"}}, nil, 404, ""},
		{"patch a thread that is not", "PATCH", "/langgraph/threads/asker/state", map[string]any{"metadata": map[string]any{"k": "v"}}, nil, 404, "no thread"},

		// The token, the origin.
		{"steps without the token", "GET", asker + "/steps", nil, map[string]string{"Authorization": ""}, 401, "token"},
		{"cassette without the token", "GET", asker + "/cassette", nil, map[string]string{"Authorization": ""}, 401, "token"},
		{"info without the token", "GET", "/info", nil, map[string]string{"Authorization": ""}, 401, "token"},
		{"patch without the token", "PATCH", state, map[string]any{"metadata": map[string]any{"k": "v"}}, map[string]string{"Authorization": ""}, 401, "token"},
		{"fork cross-site", "POST", asker + "/fork", map[string]any{"tick": 1}, map[string]string{"Origin": "https://evil.example"}, 403, "origin"},
		{"budget cross-site", "POST", "/agents/asker/budget", map[string]any{"usd": 1}, map[string]string{"Origin": "https://evil.example"}, 403, "origin"},
		{"respond cross-site", "POST", "/agents/waiter/respond", map[string]any{"response": "x"}, map[string]string{"Origin": "https://evil.example"}, 403, "origin"},
		{"skip cross-site", "POST", "/agents/waiter/board/n1/skip", nil, map[string]string{"Origin": "https://evil.example"}, 403, "origin"},
		{"patch cross-site", "PATCH", state, map[string]any{"metadata": map[string]any{"k": "v"}}, map[string]string{"Origin": "https://evil.example"}, 403, "origin"},
		{"fork as a form", "POST", asker + "/fork", `{"tick": 1}`, map[string]string{"Content-Type": "text/plain"}, 415, "application/json"},
		{"patch as a form", "PATCH", state, `{"metadata": {"k": "v"}}`, map[string]string{"Content-Type": "text/plain"}, 415, "application/json"},
	}
	refused := 0
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			body := ""
			switch b := tc.body.(type) {
			case nil:
			case string:
				body = b
			default:
				data, err := json.Marshal(b)
				require.NoError(t, err)
				body = string(data)
			}
			status, got := c.raw(tc.method, tc.path, body, with(tc.headers))
			if !assert.Equal(t, tc.status, status, got) {
				return
			}
			var e map[string]string
			require.NoError(t, json.Unmarshal([]byte(got), &e), got)
			msg := e["error"] + e["detail"]
			require.NotEmpty(t, msg, got)
			assert.Contains(t, msg, tc.says)
			assert.Less(t, len(got), 8<<10, "what the request sent is not echoed whole")
			assert.NotContains(t, got, c.root, "no host path")
			refused++
		})
	}
	t.Logf("%d cases, %d refused as they should be", len(cases), refused)

	// Nothing changed: no run was started or forked, the budgets are as they were, the state's
	// metadata has none of the keys.
	assert.Equal(t, run, c.summary("asker").Run)
	assert.Equal(t, host.StatusComplete, c.summary("asker").Status)
	assert.Equal(t, waiting, c.summary("waiter").Run)
	assert.Equal(t, host.StatusWaiting, c.summary("waiter").Status)
	var again stepList
	require.Equal(t, http.StatusOK, c.do("GET", asker+"/steps", nil, &again))
	assert.Equal(t, steps, again)
	assert.Equal(t, painted, c.summary("painter").Run)
	assert.Equal(t, host.StatusComplete, c.summary("painter").Status)
	assert.Equal(t, 5, c.agentCount())
	assert.NotNil(t, c.summary("mailer").Approval, "the call waits still")
	var st struct {
		Metadata map[string]any `json:"metadata"`
	}
	require.Equal(t, http.StatusOK, c.do("GET", state, nil, &st))
	_, patched := st.Metadata["k"]
	assert.False(t, patched, "a refused patch set nothing")
	require.Equal(t, http.StatusOK, c.do("GET", "/langgraph/threads/"+second.ThreadID+"/state", nil, &st))
	_, patched = st.Metadata["k"]
	assert.False(t, patched, "another thread's state was patched")

	// A cassette served holds neither the provider's key nor the server's token.
	resp, err := c.ts.Client().Get(c.ts.URL + "/agents/other/runs/" + other + "/cassette")
	require.NoError(t, err)
	defer resp.Body.Close()
	cas, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(cas))
	assert.Contains(t, string(cas), "keys [REDACTED] and [REDACTED]")
	assert.False(t, strings.Contains(string(cas), apiKey), "the API key is in the cassette")
	assert.False(t, strings.Contains(string(cas), tok), "the token is in the cassette")
}

// The same refusals over MCP, whose tools run the same routes: a fork onto a model the server
// does not allow, a tick below 1, a verdict where nobody waits for an approval.
func TestHostileRequestsOverMCP(t *testing.T) {
	c := start(t, t.TempDir(), askingTeam, server.WithModels("scripted/worker"))
	require.Equal(t, http.StatusCreated, c.do("POST", "/agents", map[string]string{"id": "asker", "goal": "Study a market."}, nil))
	run := c.await("asker", host.StatusWaiting).Run
	cs, err := mcpSession(t, c, c.ts.Client())
	require.NoError(t, err)
	defer cs.Close()
	for name, tc := range map[string]struct {
		tool string
		args map[string]any
		says string
	}{
		"fork onto a model not allowed": {"fork_run", map[string]any{"agent": "asker", "run": run, "tick": 1, "coordinator_model": "openai/gpt-5"}, "is not allowed"},
		"steps at tick -1":              {"get_steps", map[string]any{"agent": "asker", "run": run, "tick": -1}, "bad step"},
		"steps of run ..":               {"get_steps", map[string]any{"agent": "asker", "run": ".."}, "no such route"},
		"verdict on a question":         {"answer_question", map[string]any{"agent": "asker", "verdict": map[string]any{"approve": true}}, "no tool call"},
		"budget negative":               {"set_budget", map[string]any{"agent": "asker", "usd": -1}, "budget"},
		"agent with an unknown tool":    {"create_agent", map[string]any{"goal": "g", "tools": []string{"rm_rf"}}, "rm_rf"},
	} {
		text, isErr := mcpCall(t, cs, tc.tool, tc.args)
		assert.True(t, isErr, "%s: %s", name, text)
		assert.Contains(t, text, tc.says, name)
	}
	s := c.summary("asker")
	assert.Equal(t, run, s.Run)
	assert.Equal(t, "Which market?", s.Question, "the question waits still")
	assert.Equal(t, 1, c.agentCount())
}

// A webhook for the humans' questions on a loopback, private, link-local or unspecified address
// is refused as the server starts, naming it, unless the operator allows private addresses.
func TestWebhookOnAPrivateAddressIsRefused(t *testing.T) {
	for _, u := range []string{"http://127.0.0.1:9/q", "http://localhost/q", "http://[::1]/q", "http://10.0.0.7/q",
		"http://169.254.169.254/latest/meta-data", "http://0.0.0.0/q", "http://[::ffff:192.168.1.1]/q", "file:///etc/passwd"} {
		_, err := server.New(server.WithHost(host.WithRoot(t.TempDir()), host.WithWebhook(nodes.Webhook{URL: u})))
		require.Error(t, err, u)
		assert.Contains(t, err.Error(), "webhook", u)
	}
	srv, err := server.New(server.WithHost(host.WithRoot(t.TempDir()), host.WithWebhook(nodes.Webhook{URL: "http://127.0.0.1:9/q", AllowPrivate: true})))
	require.NoError(t, err)
	require.NoError(t, srv.Close())
}

// A worker's view_file of a path out of the run's folder — up with "..", absolute, the server's
// token file — attaches nothing: each call is refused, naming why, and the run goes on.
func TestViewFileOutOfTheWorkspace(t *testing.T) {
	paths := []string{"../../../../../../token", "/etc/passwd", "nodes/../../../token"}
	team := stageTeam([]map[string]any{{"task": "Look."}}, func(_ context.Context, req providers.Request) (scripted.Turn, error) {
		_, results := scripted.Last(req)
		if len(results) == 0 {
			var calls []tools.Call
			for _, p := range paths {
				calls = append(calls, scripted.Call("view_file", map[string]string{"path": p}))
			}
			return turn(req, calls...), nil
		}
		var said []string
		for _, r := range results {
			said = append(said, fmt.Sprintf("%v %s", r.IsError, r.Content))
		}
		return turn(req, scripted.Call("publish", map[string]string{"summary": strings.Join(said, "\n")})), nil
	})
	c := start(t, t.TempDir(), team)
	require.Equal(t, http.StatusCreated, c.do("POST", "/agents", map[string]string{"id": "looker", "goal": "Look."}, nil))
	c.await("looker", host.StatusComplete)
	var node struct{ Node nodes.Node }
	require.Equal(t, http.StatusOK, c.do("GET", "/agents/looker/board/n1", nil, &node))
	lines := strings.Split(node.Node.Summary, "\n")
	require.Len(t, lines, len(paths), node.Node.Summary)
	for i, line := range lines {
		assert.True(t, strings.HasPrefix(line, "true "), "%s: %s", paths[i], line)
		assert.Contains(t, line, []string{"leads outside the workspace", "is absolute", "leads outside the workspace"}[i], paths[i])
		assert.NotContains(t, line, "attached", paths[i])
	}
	assert.NotContains(t, node.Node.Summary, c.srv.Token())
}

// A verdict goes to the worker whose tool call waits for approval, named or not; one sent to
// the coordinator, who waits for nothing, is refused and leaves the call waiting.
func TestVerdictForAWorkersCall(t *testing.T) {
	team := stageTeam([]map[string]any{{"task": "Write."}}, func(_ context.Context, req providers.Request) (scripted.Turn, error) {
		if _, results := scripted.Last(req); len(results) == 1 && results[0].Name == "write_file" {
			return turn(req, scripted.Call("publish", map[string]string{"summary": results[0].Content})), nil
		}
		return turn(req, scripted.Call("write_file", map[string]string{"path": "a.txt", "content": "x"})), nil
	})
	c := start(t, t.TempDir(), team)
	require.Equal(t, http.StatusCreated, c.do("POST", "/agents", map[string]any{"id": "w", "goal": "Write.",
		"approvals": map[string]any{"tools": []string{"write_*"}}}, nil))
	s := c.await("w", host.StatusWaiting)
	require.NotNil(t, s.Approval, "%+v", s)
	require.NotEqual(t, "coordinator", s.WaitingFor)
	assert.Contains(t, c.errorOf("POST", "/agents/w/respond", map[string]any{"worker": "coordinator", "verdict": map[string]any{"approve": true}}, http.StatusConflict),
		"coordinator waits for no tool call's approval")
	require.NotNil(t, c.summary("w").Approval, "the call waits still")
	require.Equal(t, http.StatusOK, c.do("POST", "/agents/w/respond", map[string]any{"worker": s.WaitingFor,
		"verdict": map[string]any{"approve": false, "reason": "not now"}}, nil))
	c.await("w", host.StatusComplete)
	var node struct{ Node nodes.Node }
	require.Equal(t, http.StatusOK, c.do("GET", "/agents/w/board/n1", nil, &node))
	assert.Contains(t, node.Node.Summary, "not now")
}
