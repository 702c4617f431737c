package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/agiraph/agiraph/nodes"
	"github.com/agiraph/agiraph/nodes/replay"
	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/sandbox"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func noEnv(string) string { return "" }

// testToken is the token the tests give the command through its environment.
const testToken = "the-token-of-the-tests-0123456789"

func testEnv(k string) string {
	if k == "AGIRAPH_TOKEN" {
		return testToken
	}
	return ""
}

// bearer is a transport that sends the test token with every request.
type bearer struct{}

func (bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+testToken)
	return http.DefaultTransport.RoundTrip(r)
}

// call sends a request with the test token and decodes the JSON answer into out.
func call(t *testing.T, ts *httptest.Server, method, path, body string, out any) int {
	t.Helper()
	req, err := http.NewRequest(method, ts.URL+path, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+testToken)
	if method == http.MethodPost {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := ts.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	if out != nil {
		require.NoError(t, json.NewDecoder(resp.Body).Decode(out))
	}
	return resp.StatusCode
}

// Without a key the handler serves agents playing the offline team: one is created and
// completes with the demo report. Offline means offline: a request cannot name a model.
func TestServeOffline(t *testing.T) {
	o, err := parse([]string{"-root", t.TempDir()}, nil)
	require.NoError(t, err)
	srv, team, err := newServer(o, testEnv, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	assert.Contains(t, team, "offline")
	assert.Equal(t, testToken, srv.Token())
	ts := httptest.NewServer(srv)
	defer ts.Close()
	defer srv.Close()

	var refused struct{ Error string }
	require.Equal(t, http.StatusForbidden, call(t, ts, "POST", "/agents", `{"goal": "AI chips", "model": "anthropic/claude-sonnet-4-5"}`, &refused))
	assert.Contains(t, refused.Error, "anthropic/claude-sonnet-4-5")
	require.Equal(t, http.StatusCreated, call(t, ts, "POST", "/agents", `{"id": "demo", "goal": "AI chips"}`, nil))
	assert.Contains(t, completed(t, ts, "demo").Output, "# Report")
}

// agentState is what the tests read of an agent.
type agentState struct{ Status, Run, Output, Error string }

// completed waits for the agent id to complete its run, and returns its state.
func completed(t *testing.T, ts *httptest.Server, id string) agentState {
	t.Helper()
	end := time.Now().Add(60 * time.Second)
	for {
		var s agentState
		require.Equal(t, http.StatusOK, call(t, ts, "GET", "/agents/"+id, "", &s))
		if s.Status == "completed" {
			return s
		}
		if s.Status == "failed" || time.Now().After(end) {
			t.Fatalf("agent %s: %s", s.Status, s.Error)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// With -record every run is recorded into a cassette, served once the run has ended.
func TestServeRecord(t *testing.T) {
	o, err := parse([]string{"-root", t.TempDir(), "-record"}, nil)
	require.NoError(t, err)
	srv, _, err := newServer(o, testEnv, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	ts := httptest.NewServer(srv)
	defer ts.Close()
	defer srv.Close()
	require.Equal(t, http.StatusCreated, call(t, ts, "POST", "/agents", `{"id": "demo", "goal": "AI chips"}`, nil))
	run := completed(t, ts, "demo").Run
	req, err := http.NewRequest("GET", ts.URL+"/agents/demo/runs/"+run+"/cassette", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := ts.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	path := filepath.Join(t.TempDir(), "run.cassette")
	f, err := os.Create(path)
	require.NoError(t, err)
	_, err = io.Copy(f, resp.Body)
	require.NoError(t, errors.Join(err, f.Close()))
	cas, err := replay.Load(path)
	require.NoError(t, err)
	assert.Equal(t, "AI chips", cas.Header.Run.Goal)
	assert.Contains(t, cas.Facts.Output, "# Report")
}

// With -pace the offline team takes its time: a server stopped while an agent's coordinator
// waits its pace of an hour stops at once, the run interrupted before anything is on its board
// (unpaced, the team finishes well within the second the test waits).
func TestServePaced(t *testing.T) {
	root := t.TempDir()
	o, err := parse([]string{"-root", root, "-pace", "1h"}, nil)
	require.NoError(t, err)
	srv, _, err := newServer(o, testEnv, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	ts := httptest.NewServer(srv)
	require.Equal(t, http.StatusCreated, call(t, ts, "POST", "/agents", `{"id": "demo", "goal": "AI chips"}`, nil))
	time.Sleep(time.Second)
	require.NoError(t, srv.Close())
	ts.Close()

	o, err = parse([]string{"-root", root, "-resume=false"}, nil)
	require.NoError(t, err)
	srv, _, err = newServer(o, testEnv, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	ts = httptest.NewServer(srv)
	defer ts.Close()
	defer srv.Close()
	var s struct{ Status string }
	require.Equal(t, http.StatusOK, call(t, ts, "GET", "/agents/demo", "", &s))
	assert.Equal(t, "interrupted", s.Status)
	var board struct{ Nodes []any }
	require.Equal(t, http.StatusOK, call(t, ts, "GET", "/agents/demo/board", "", &board))
	assert.Empty(t, board.Nodes)
}

// run listens, prints the address and a curl example, and returns when its context ends.
func TestRunStops(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var out strings.Builder
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"-addr", "127.0.0.1:0", "-root", t.TempDir(), "-offline"}, &out, nil, noEnv)
	}()
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	s := out.String()
	assert.Contains(t, s, "Serving agents (the offline demo team)")
	assert.Regexp(t, `Open in a browser: http://127\.0\.0\.1:\d+/\?token=[0-9a-f]{48}\n`, s)
	assert.Contains(t, s, "-X POST http://127.0.0.1:")
}

// The sandbox flags shape every worker's policy.
func TestSandboxFlags(t *testing.T) {
	scope := sandbox.Policy{Writable: []string{"/run/nodes/n1/scratch"}}
	harnessed, cli := nodes.Worker{Kind: nodes.Harnessed}, nodes.Worker{Kind: nodes.ClaudeCode}

	o, err := parse(nil, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, scope, o.policy(harnessed, scope), "by default the squad's own")

	o, err = parse([]string{"-no-network", "-keep-env", "GITHUB_TOKEN,NPM_TOKEN"}, io.Discard)
	require.NoError(t, err)
	p := o.policy(harnessed, scope)
	assert.True(t, p.NoNetwork)
	assert.Equal(t, []string{"GITHUB_TOKEN", "NPM_TOKEN"}, p.KeepEnv)
	assert.False(t, o.policy(cli, scope).NoNetwork, "a CLI worker keeps the network it reaches its model through")

	o, err = parse([]string{"-sandbox=false"}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, sandbox.Policy{Off: true}, o.policy(harnessed, scope))
}

// -embedder names the embedder of the agents' memory search; one no provider serves is refused
// at start, naming the flag.
func TestEmbedderFlag(t *testing.T) {
	o, err := parse([]string{"-root", t.TempDir(), "-embedder", "nosuch/embedder"}, io.Discard)
	require.NoError(t, err)
	_, _, err = newServer(o, testEnv, slog.New(slog.DiscardHandler))
	require.ErrorIs(t, err, providers.ErrUnknownModel)
	assert.True(t, strings.HasPrefix(err.Error(), "-embedder: "), err.Error())

	o, err = parse([]string{"-root", t.TempDir(), "-embedder", "ollama/nomic-embed-text"}, io.Discard)
	require.NoError(t, err)
	srv, _, err := newServer(o, testEnv, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	require.NoError(t, srv.Close())
}

// -webhook is checked at start: a URL that is not an absolute http or https one is refused,
// naming it.
func TestWebhookFlags(t *testing.T) {
	o, err := parse([]string{"-root", t.TempDir(), "-webhook", "hooks.example/q", "-answer-timeout", "1h"}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, time.Hour, o.answerTimeout)
	_, _, err = newServer(o, testEnv, slog.New(slog.DiscardHandler))
	require.Error(t, err)
	assert.Contains(t, err.Error(), `"hooks.example/q"`)

	o, err = parse([]string{"-root", t.TempDir(), "-webhook", "http://127.0.0.1:9/q", "-webhook-private"}, io.Discard)
	require.NoError(t, err)
	srv, _, err := newServer(o, testEnv, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	require.NoError(t, srv.Close())
}
