package a2a_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/agiraph/agiraph/internal/a2awire"
	"github.com/agiraph/agiraph/models"
	"github.com/agiraph/agiraph/nodes"
	"github.com/agiraph/agiraph/nodes/demo"
	"github.com/agiraph/agiraph/server"
	"github.com/agiraph/agiraph/server/a2a"
	"github.com/agiraph/agiraph/server/host"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// deadline bounds every wait for an agent's status: generous, never a timed assertion.
const deadline = 60 * time.Second

// team gives each agent the offline demo team: "asker" asks the human a question, "slow"
// takes an hour for each turn, the others answer at once.
func team(id string) []nodes.Option {
	var opts []demo.Option
	switch id {
	case "asker":
		opts = append(opts, demo.WithHumanQuestion())
	case "slow":
		opts = append(opts, demo.WithPace(time.Hour))
	}
	return append(demo.Team(opts...), nodes.WithModelOptions(models.WithoutRetry()), nodes.WithTick(20*time.Millisecond))
}

// fixture is a server over a root, and its agents.
type fixture struct {
	t    *testing.T
	srv  *server.Server
	ts   *httptest.Server
	root string
	// version, when set, is sent as the A2A-Version header of the requests.
	version string
}

// start starts a server on root (a new one when "").
func start(t *testing.T, root string, opts ...server.Option) *fixture {
	t.Helper()
	if root == "" {
		root = t.TempDir()
	}
	srv, err := server.New(append([]server.Option{server.WithHost(host.WithRoot(root), host.WithSquadOptions(team)), server.WithToken("a2a-test-token-0123456789")}, opts...)...)
	require.NoError(t, err)
	f := &fixture{t: t, srv: srv, ts: httptest.NewServer(srv), root: root}
	t.Cleanup(f.close)
	return f
}

func (f *fixture) close() {
	f.ts.Close()
	assert.NoError(f.t, f.srv.Close())
}

// await waits until agent id's status is one of want.
func (f *fixture) await(id string, want ...string) host.Summary {
	f.t.Helper()
	end := time.Now().Add(deadline)
	for {
		sum, err := f.srv.Host().Summary(id)
		require.NoError(f.t, err)
		for _, w := range want {
			if sum.Status == w {
				return sum
			}
		}
		require.False(f.t, time.Now().After(end), "agent %s is %s, want %v", id, sum.Status, want)
		time.Sleep(10 * time.Millisecond)
	}
}

// agent creates agent id and lets its first run finish (answering its question, if it asks).
func (f *fixture) agent(id string) {
	f.t.Helper()
	_, err := f.srv.Host().Create(id, "Research the history of the bicycle.", "", "")
	require.NoError(f.t, err)
	if f.await(id, host.StatusComplete, host.StatusWaiting).Status == host.StatusWaiting {
		a, err := f.srv.Host().Agent(f.t.Context(), id)
		require.NoError(f.t, err)
		_, err = a.Answer(f.t.Context(), "", "Yes.")
		require.NoError(f.t, err)
		f.await(id, host.StatusComplete)
	}
}

// rpcError is a JSON-RPC error.
type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// post sends a JSON-RPC request to agent id, with the token.
func (f *fixture) post(id, method string, params any) *http.Response {
	f.t.Helper()
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 7, "method": method, "params": params})
	require.NoError(f.t, err)
	req, err := http.NewRequest("POST", f.ts.URL+"/a2a/"+id+"/", bytes.NewReader(body))
	require.NoError(f.t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer a2a-test-token-0123456789")
	if f.version != "" {
		req.Header.Set("A2A-Version", f.version)
	}
	resp, err := f.ts.Client().Do(req)
	require.NoError(f.t, err)
	return resp
}

// call calls method on agent id and decodes its result into out; it returns the JSON-RPC
// error, if any.
func (f *fixture) call(id, method string, params, out any) *rpcError {
	f.t.Helper()
	resp := f.post(id, method, params)
	defer resp.Body.Close()
	var r struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      int             `json:"id"`
		Result  json.RawMessage `json:"result"`
		Error   *rpcError       `json:"error"`
	}
	require.NoError(f.t, json.NewDecoder(resp.Body).Decode(&r))
	require.Equal(f.t, "2.0", r.JSONRPC)
	require.Equal(f.t, 7, r.ID)
	if r.Error == nil && out != nil {
		require.NoError(f.t, json.Unmarshal(r.Result, out))
	}
	return r.Error
}

// stream calls a streaming method on agent id and returns the results of its events, until
// the stream ends.
func (f *fixture) stream(id, method string, params any) []json.RawMessage {
	f.t.Helper()
	resp := f.post(id, method, params)
	defer resp.Body.Close()
	require.Equal(f.t, "text/event-stream", resp.Header.Get("Content-Type"))
	var out []json.RawMessage
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var r struct {
			Result json.RawMessage `json:"result"`
			Error  *rpcError       `json:"error"`
		}
		require.NoError(f.t, json.Unmarshal([]byte(data), &r))
		require.Nil(f.t, r.Error)
		out = append(out, r.Result)
	}
	require.NoError(f.t, sc.Err())
	return out
}

// text returns the text parts of a message.
func text(m *a2a.Message) string {
	if m == nil {
		return ""
	}
	var s []string
	for _, p := range m.Parts {
		s = append(s, p.Text)
	}
	return strings.Join(s, "\n")
}

func message(text, task string) map[string]any {
	m := map[string]any{"kind": "message", "role": "user", "messageId": "m-" + text[:3],
		"parts": []map[string]string{{"kind": "text", "text": text}}}
	if task != "" {
		m["taskId"] = task
	}
	return map[string]any{"message": m}
}

func TestCard(t *testing.T) {
	f := start(t, "", server.WithA2AAgent("ada"))
	f.agent("ada")
	for _, path := range []string{"/a2a/ada/.well-known/agent-card.json", "/.well-known/agent-card.json"} {
		resp, err := http.Get(f.ts.URL + path) // no token: the card holds no data
		require.NoError(t, err)
		var card a2a.AgentCard
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&card))
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode, path)
		assert.Equal(t, "ada", card.Name)
		assert.Equal(t, f.ts.URL+"/a2a/ada/", card.URL)
		assert.Equal(t, a2a.ProtocolVersion, card.ProtocolVersion)
		assert.Contains(t, card.Description, "history of the bicycle")
		assert.True(t, card.Capabilities.Streaming)
		assert.True(t, card.Capabilities.PushNotifications)
		assert.Equal(t, "bearer", card.SecuritySchemes["bearer"].Scheme)
		assert.Equal(t, "bearer", card.SecuritySchemes["bearer"].HTTPAuth.Scheme, "as 1.0 says it")
		assert.Equal(t, []a2awire.Interface{
			{URL: f.ts.URL + "/a2a/ada/", ProtocolBinding: "JSONRPC", ProtocolVersion: "1.0"},
			{URL: f.ts.URL + "/a2a/ada/", ProtocolBinding: "JSONRPC", ProtocolVersion: "0.3"},
		}, card.SupportedInterfaces, "both versions, at the same endpoint, 1.0 preferred")
		assert.NotEmpty(t, card.Skills)
	}
	resp, err := http.Get(f.ts.URL + "/a2a/nobody/.well-known/agent-card.json")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
	// Every method needs the token.
	resp, err = http.Post(f.ts.URL+"/a2a/ada/", "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":"x"}}`))
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
}

func TestSendAndGet(t *testing.T) {
	root := t.TempDir()
	f := start(t, root)
	f.agent("ada")
	var task a2a.Task
	require.Nil(t, f.call("ada", "message/send", message("Research the history of the kite.", ""), &task))
	assert.Equal(t, "task", task.Kind)
	assert.Equal(t, a2a.StateCompleted, task.Status.State)
	assert.Contains(t, text(task.Status.Message), "# Report", "the output is the status message")
	names := map[string]bool{}
	for _, art := range task.Artifacts {
		names[art.Name] = true
		if art.Name == "n1/findings.md" {
			require.NotNil(t, art.Parts[0].File)
			assert.Contains(t, string(art.Parts[0].File.Bytes), "#")
		}
	}
	assert.True(t, names["output"], "the output is an artifact: %v", names)
	assert.True(t, names["n1/findings.md"], "the published files are artifacts: %v", names)
	require.NotEmpty(t, task.History)
	assert.Equal(t, "user", task.History[0].Role)
	assert.Equal(t, "Research the history of the kite.", text(&task.History[0]))

	var got a2a.Task
	require.Nil(t, f.call("ada", "tasks/get", map[string]any{"id": task.ID, "historyLength": 1}, &got))
	assert.Equal(t, a2a.StateCompleted, got.Status.State)
	assert.Len(t, got.History, 1)

	// A task that ended takes no more messages; a task that is not there is not found.
	e := f.call("ada", "message/send", message("And the yo-yo?", task.ID), nil)
	require.NotNil(t, e)
	assert.Equal(t, -32004, e.Code)
	assert.Contains(t, e.Message, "completed")
	e = f.call("ada", "tasks/cancel", map[string]any{"id": task.ID}, nil)
	require.NotNil(t, e)
	assert.Equal(t, -32002, e.Code)
	for _, id := range []string{"20200101-000000", "../x"} {
		e = f.call("ada", "tasks/get", map[string]any{"id": id}, nil)
		require.NotNil(t, e)
		assert.Equal(t, -32001, e.Code)
	}
	e = f.call("ada", "tasks/bogus", map[string]any{}, nil)
	require.NotNil(t, e)
	assert.Equal(t, -32601, e.Code)
	e = f.call("ada", "message/send", map[string]any{"message": map[string]any{"kind": "message", "role": "user", "parts": []any{}}}, nil)
	require.NotNil(t, e)
	assert.Equal(t, -32602, e.Code)
	e = f.call("ada", "tasks/pushNotificationConfig/set", map[string]any{"taskId": task.ID, "pushNotificationConfig": map[string]string{"url": "file:///etc/passwd"}}, nil)
	require.NotNil(t, e)
	assert.Equal(t, -32602, e.Code)
	resp := f.post("nobody", "tasks/get", map[string]any{"id": task.ID})
	resp.Body.Close()
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)

	// The task is the run: a server started again on the root has it.
	f.close()
	g := start(t, root)
	require.Nil(t, g.call("ada", "tasks/get", map[string]any{"id": task.ID}, &got))
	assert.Equal(t, a2a.StateCompleted, got.Status.State)
	assert.Equal(t, task.Artifacts, got.Artifacts)
}

// kinds returns the kind and, for a status update, the state of each event of a stream.
func kinds(t *testing.T, events []json.RawMessage) []string {
	var out []string
	for _, raw := range events {
		var e struct {
			Kind   string
			Status a2a.Status
			Final  bool
		}
		require.NoError(t, json.Unmarshal(raw, &e))
		if e.Kind != "artifact-update" {
			e.Kind += ":" + e.Status.State
		}
		out = append(out, e.Kind)
	}
	return out
}

func TestStreamAQuestion(t *testing.T) {
	f := start(t, "")
	f.agent("asker")
	events := f.stream("asker", "message/stream", message("Research the history of the kite.", ""))
	got := kinds(t, events)
	require.Equal(t, "task:working", got[0])
	require.Equal(t, "status-update:input-required", got[len(got)-1], "%v", got)
	var first a2a.Task
	require.NoError(t, json.Unmarshal(events[0], &first))
	var asked a2a.StatusUpdate
	require.NoError(t, json.Unmarshal(events[len(events)-1], &asked))
	assert.True(t, asked.Final)
	assert.Equal(t, demo.HumanQuestion, text(asked.Status.Message))
	assert.Equal(t, first.ID, asked.TaskID)
	assert.Contains(t, got, "status-update:working", "the squad's events come as status updates")

	events = f.stream("asker", "message/stream", message("Yes, with an outlook to 2031.", first.ID))
	got = kinds(t, events)
	require.Equal(t, "status-update:completed", got[len(got)-1], "%v", got)
	assert.Contains(t, got, "artifact-update")
	var done a2a.Task
	require.Nil(t, f.call("asker", "tasks/get", map[string]any{"id": first.ID}, &done))
	assert.Equal(t, a2a.StateCompleted, done.Status.State)
	var history []string
	for _, m := range done.History {
		history = append(history, m.Role+": "+text(&m))
	}
	assert.Contains(t, history, "agent: "+demo.HumanQuestion)
	assert.Contains(t, history, "user: Yes, with an outlook to 2031.")
	// A stream on a task that ended is the task, at once.
	events = f.stream("asker", "tasks/resubscribe", map[string]any{"id": first.ID})
	assert.Equal(t, []string{"task:completed"}, kinds(t, events))
}

func TestCancel(t *testing.T) {
	f := start(t, "")
	_, err := f.srv.Host().Create("slow", "Research the history of the kite.", "", "")
	require.NoError(t, err)
	sum := f.await("slow", host.StatusWorking)
	e := f.call("slow", "message/send", message("Another goal.", ""), nil)
	require.NotNil(t, e, "a busy agent takes no new task")
	assert.Equal(t, -32004, e.Code)
	assert.Contains(t, e.Message, sum.Run)
	var task a2a.Task
	require.Nil(t, f.call("slow", "tasks/cancel", map[string]any{"id": sum.Run}, &task))
	assert.Equal(t, a2a.StateCanceled, task.Status.State)
	assert.Equal(t, host.StatusPaused, f.await("slow", host.StatusPaused).Status)
	e = f.call("slow", "tasks/cancel", map[string]any{"id": sum.Run}, nil)
	require.NotNil(t, e)
	assert.Equal(t, -32002, e.Code)
}

// webhook is a client's push notification URL: it takes the tasks posted with the token
// "secret".
type webhook struct {
	url    string
	posted chan a2a.Task
	fail   atomic.Int32 // how many posts of a completed task to refuse (500) first
}

func newWebhook(t *testing.T) *webhook {
	w := &webhook{posted: make(chan a2a.Task, 64)}
	ts := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		var task a2a.Task
		body, _ := io.ReadAll(r.Body)
		if r.Header.Get("X-A2A-Notification-Token") != "secret" || json.Unmarshal(body, &task) != nil {
			http.Error(rw, "bad notification", http.StatusBadRequest)
			return
		}
		if task.Status.State == a2a.StateCompleted && w.fail.Add(-1) >= 0 {
			http.Error(rw, "down for a moment", http.StatusInternalServerError)
			return
		}
		w.posted <- task
	}))
	t.Cleanup(ts.Close)
	w.url = ts.URL
	return w
}

// await returns the first task posted in state, failing the test when none comes before the
// deadline.
func (w *webhook) await(t *testing.T, state string) a2a.Task {
	t.Helper()
	end := time.After(deadline)
	for {
		select {
		case got := <-w.posted:
			if got.Status.State == state {
				return got
			}
		case <-end:
			t.Fatalf("no task posted in state %s", state)
		}
	}
}

// pushed is the params of message/send with text, not blocking, with w as push URL.
func (w *webhook) pushed(text string) map[string]any {
	params := message(text, "")
	params["configuration"] = map[string]any{"blocking": false,
		"pushNotificationConfig": map[string]string{"url": w.url, "token": "secret"}}
	return params
}

// privatePush lets the server post to the tests' webhooks, on 127.0.0.1.
var privatePush = server.WithA2AOptions(a2a.WithPrivatePush())

func TestPushNotification(t *testing.T) {
	hook := newWebhook(t)
	hook.fail.Store(2) // a URL that fails is tried again
	f := start(t, "", privatePush)
	f.agent("ada")
	var task a2a.Task
	require.Nil(t, f.call("ada", "message/send", hook.pushed("Research the history of the kite."), &task))
	assert.Equal(t, a2a.StateWorking, task.Status.State)
	var cfg a2a.TaskPushConfig
	require.Nil(t, f.call("ada", "tasks/pushNotificationConfig/get", map[string]any{"id": task.ID}, &cfg))
	assert.Equal(t, hook.url, cfg.Config.URL)
	assert.Equal(t, task.ID, hook.await(t, a2a.StateCompleted).ID)
	var list []a2a.TaskPushConfig
	require.Nil(t, f.call("ada", "tasks/pushNotificationConfig/list", map[string]any{"id": task.ID}, &list))
	require.Len(t, list, 1)
	require.Nil(t, f.call("ada", "tasks/pushNotificationConfig/delete", map[string]any{"id": task.ID, "pushNotificationConfigId": list[0].Config.ID}, nil))
	require.Nil(t, f.call("ada", "tasks/pushNotificationConfig/list", map[string]any{"id": task.ID}, &list))
	assert.Empty(t, list)
}

// A server started again goes on sending the push notifications of the tasks in progress.
func TestPushAfterRestart(t *testing.T) {
	hook := newWebhook(t)
	root := t.TempDir()
	f := start(t, root, privatePush)
	f.agent("asker")
	var task a2a.Task
	require.Nil(t, f.call("asker", "message/send", hook.pushed("Research the history of the kite."), &task))
	assert.Equal(t, demo.HumanQuestion, text(hook.await(t, a2a.StateInputRequired).Status.Message))
	f.close()

	g := start(t, root, privatePush)
	var done a2a.Task
	require.Nil(t, g.call("asker", "message/send", message("Yes.", task.ID), &done))
	assert.Equal(t, a2a.StateCompleted, done.Status.State)
	assert.Equal(t, task.ID, hook.await(t, a2a.StateCompleted).ID)
}

// By default a push URL on the server's own network is refused, the error naming it and why.
func TestPushURLRefused(t *testing.T) {
	f := start(t, "")
	f.agent("ada")
	run := f.await("ada", host.StatusComplete).Run
	for url, why := range map[string]string{
		"http://127.0.0.1:8080/hook":       "127.0.0.1 is a loopback address",
		"http://localhost/hook":            "localhost is a loopback address",
		"http://10.0.0.7/hook":             "10.0.0.7 is a private address",
		"http://169.254.169.254/latest":    "169.254.169.254 is a link-local address",
		"http://[::]:80/hook":              ":: is the unspecified address",
		"http://[::ffff:192.168.1.2]/hook": "192.168.1.2 is a private address",
	} {
		e := f.call("ada", "tasks/pushNotificationConfig/set", map[string]any{"taskId": run, "pushNotificationConfig": map[string]string{"url": url}}, nil)
		require.NotNil(t, e, url)
		assert.Equal(t, -32602, e.Code)
		assert.Contains(t, e.Message, url)
		assert.Contains(t, e.Message, why)
	}
	params := message("Research the history of the kite.", "")
	params["configuration"] = map[string]any{"pushNotificationConfig": map[string]string{"url": "http://127.0.0.1:9/hook"}}
	e := f.call("ada", "message/send", params, nil)
	require.NotNil(t, e, "in a message's configuration too")
	assert.Contains(t, e.Message, "loopback")
	require.Nil(t, f.call("ada", "tasks/pushNotificationConfig/set", map[string]any{"taskId": run, "pushNotificationConfig": map[string]string{"url": "https://hooks.example/a2a"}}, nil))
}
