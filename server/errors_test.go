package server_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/server/host"
)

// errorBody decodes an answer that must be a JSON error, and returns its message.
func errorBody(t *testing.T, body string) string {
	t.Helper()
	var e struct {
		Error string `json:"error"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &e), "the answer is JSON: %.200q", body)
	require.NotEmpty(t, e.Error, body)
	return e.Error
}

// Every error is JSON, those of the routes themselves too: 404 for none, 405 for a method one
// does not take, with Allow.
func TestRouteErrorsAreJSON(t *testing.T) {
	c := start(t, t.TempDir(), demoTeam)
	auth := map[string]string{"Authorization": "Bearer " + c.srv.Token()}
	status, body := c.raw("GET", "/no/such/route", "", auth)
	assert.Equal(t, http.StatusNotFound, status)
	assert.Contains(t, errorBody(t, body), "/no/such/route")
	req, err := http.NewRequest("DELETE", c.ts.URL+"/models", nil)
	require.NoError(t, err)
	resp, err := c.ts.Client().Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
	assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
	assert.Contains(t, resp.Header.Get("Allow"), "GET")
}

// What a request sent is never echoed whole in an error: an id no agent can have, a field, a
// path, a header.
func TestRequestsAreNotEchoedWhole(t *testing.T) {
	c := start(t, t.TempDir(), demoTeam)
	auth := map[string]string{"Authorization": "Bearer " + c.srv.Token()}
	long := strings.Repeat("x", 512<<10)
	for _, path := range []string{"/agents/" + long, "/agents/" + long + "/board", "/agents/" + long + "/workspace/a"} {
		status, body := c.raw("GET", path, "", auth)
		assert.Equal(t, http.StatusNotFound, status)
		assert.Less(t, len(body), 1000, "the id is echoed")
		assert.Contains(t, errorBody(t, body), "bytes long")
	}
	status, body := c.raw("DELETE", "/agents/"+long, "", auth)
	assert.Equal(t, http.StatusNotFound, status)
	assert.Less(t, len(body), 1000, "the id is echoed")
	huge := strings.Repeat("y", 300<<10) // within the body limit
	json := map[string]string{"Authorization": "Bearer " + c.srv.Token(), "Content-Type": "application/json"}
	for _, req := range []string{`{"id": "` + huge + `", "goal": "g"}`, `{"goal": "g", "model": "` + huge + `"}`, `{"goal": "g", "` + huge + `": 1}`} {
		status, body = c.raw("POST", "/agents", req, json)
		assert.GreaterOrEqual(t, status, 400)
		assert.Less(t, len(body), 5000, "the request is echoed")
		errorBody(t, body)
	}
	status, body = c.raw("GET", "/agents/nobody/workspace/"+strings.Repeat("p/", 100<<10), "", auth)
	assert.Equal(t, http.StatusNotFound, status)
	assert.Less(t, len(body), 1000)
	status, body = c.raw("POST", "/agents", "{}", map[string]string{"Authorization": "Bearer " + c.srv.Token(), "Content-Type": huge[:100<<10]})
	assert.Equal(t, http.StatusUnsupportedMediaType, status)
	assert.Less(t, len(body), 1000)
	errorBody(t, body)
}

// The 401 says how to find the token, without the server's paths.
func TestUnauthorizedShowsNoPath(t *testing.T) {
	root := t.TempDir()
	c := start(t, root, demoTeam)
	status, body := c.raw("GET", "/agents", "", nil)
	assert.Equal(t, http.StatusUnauthorized, status)
	msg := errorBody(t, body)
	assert.NotContains(t, msg, root)
	assert.NotContains(t, msg, "/")
	assert.Contains(t, msg, "token")
}

// A POST with no body need not declare a type; one with a body must declare JSON, and a form's
// types, even with no body, are refused.
func TestPostWithoutBodyNeedsNoType(t *testing.T) {
	c := start(t, t.TempDir(), demoTeam)
	require.Equal(t, http.StatusCreated, c.do("POST", "/agents", map[string]string{"id": "a", "goal": "chips"}, nil))
	c.await("a", host.StatusComplete)
	tok := "Bearer " + c.srv.Token()
	status, body := c.raw("POST", "/agents/a/resume", "", map[string]string{"Authorization": tok})
	assert.NotEqual(t, http.StatusUnsupportedMediaType, status, body)
	assert.Less(t, status, 500, body)
	for _, ct := range []string{"", "text/plain", "application/x-www-form-urlencoded"} {
		status, body = c.raw("POST", "/agents/a/resume", `{"run": "x"}`, map[string]string{"Authorization": tok, "Content-Type": ct})
		assert.Equal(t, http.StatusUnsupportedMediaType, status, "%q: %s", ct, body)
	}
	for _, ct := range []string{"text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"} {
		status, body = c.raw("POST", "/agents/a/resume", "", map[string]string{"Authorization": tok, "Content-Type": ct})
		assert.Equal(t, http.StatusUnsupportedMediaType, status, "%q: %s", ct, body)
	}
}
