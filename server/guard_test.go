package server_test

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/nodes"
	"github.com/agiraph/agiraph/nodes/demo"
	"github.com/agiraph/agiraph/server"
	"github.com/agiraph/agiraph/server/host"
)

// raw sends a request as a browser or another program would, with exactly the headers given
// ("Host" sets the Host), and returns the status and the body.
func (c *api) raw(method, path, body string, headers map[string]string) (int, string) {
	c.t.Helper()
	req, err := http.NewRequest(method, c.ts.URL+path, strings.NewReader(body))
	require.NoError(c.t, err)
	for k, v := range headers {
		if k == "Host" {
			req.Host = v
		} else {
			req.Header.Set(k, v)
		}
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	require.NoError(c.t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(c.t, err)
	return resp.StatusCode, string(data)
}

// agentCount returns how many agents the server has.
func (c *api) agentCount() int {
	var list struct{ Agents []host.Summary }
	require.Equal(c.t, http.StatusOK, c.do("GET", "/agents", nil, &list))
	return len(list.Agents)
}

// Every request needs the token: none or a wrong one is 401; the bearer token or the cookie the
// login URL sets is accepted. The token is made once, kept in the root with mode 0600, and the
// same after a restart.
func TestTokenIsRequired(t *testing.T) {
	root := t.TempDir()
	c := start(t, root, demoTeam)
	tok := c.srv.Token()
	require.Len(t, tok, 48)

	status, body := c.raw("GET", "/agents", "", nil)
	assert.Equal(t, http.StatusUnauthorized, status)
	assert.Contains(t, body, "token")
	status, _ = c.raw("GET", "/agents", "", map[string]string{"Authorization": "Bearer " + strings.Repeat("0", 48)})
	assert.Equal(t, http.StatusUnauthorized, status)
	status, _ = c.raw("GET", "/agents", "", map[string]string{"Authorization": "Bearer " + tok})
	assert.Equal(t, http.StatusOK, status)

	req, err := http.NewRequest("GET", c.srv.LoginURL(c.ts.URL), nil)
	require.NoError(t, err)
	resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	assert.Equal(t, "/", resp.Header.Get("Location"), "the token leaves the address bar")
	cookies := resp.Cookies()
	require.Len(t, cookies, 1)
	assert.Equal(t, server.TokenCookie, cookies[0].Name)
	assert.True(t, cookies[0].HttpOnly)
	assert.Equal(t, http.SameSiteStrictMode, cookies[0].SameSite)
	status, _ = c.raw("GET", "/agents", "", map[string]string{"Cookie": server.TokenCookie + "=" + cookies[0].Value})
	assert.Equal(t, http.StatusOK, status)
	status, _ = c.raw("GET", "/?token=wrong", "", nil)
	assert.Equal(t, http.StatusUnauthorized, status)

	st, err := os.Stat(filepath.Join(root, "token"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm())
	require.NoError(t, c.srv.Close())
	again, err := server.New(server.WithHost(host.WithRoot(root), host.WithSquadOptions(demoTeam)))
	require.NoError(t, err)
	defer again.Close()
	assert.Equal(t, tok, again.Token())

	given, err := server.New(server.WithHost(host.WithRoot(t.TempDir())), server.WithToken("a-token-given-by-option"))
	require.NoError(t, err)
	defer given.Close()
	assert.Equal(t, "a-token-given-by-option", given.Token())
	open, err := server.New(server.WithHost(host.WithRoot(t.TempDir())), server.WithoutAuth())
	require.NoError(t, err)
	defer open.Close()
	assert.Empty(t, open.Token())
}

// The web UI's page and files are served without the token (they hold no data), under the
// same Host checks as the API, with a policy that lets no inline script run; everything else
// still needs the token.
func TestUIIsServedWithoutTheToken(t *testing.T) {
	c := start(t, t.TempDir(), demoTeam, server.WithModels("scripted/worker"))
	status, body := c.raw("GET", "/", "", nil)
	require.Equal(t, http.StatusOK, status)
	assert.Contains(t, body, `<script type="module" src="/ui/app.js">`)
	req, err := http.NewRequest("GET", c.ts.URL+"/ui/app.js", nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Contains(t, resp.Header.Get("Content-Type"), "javascript")
	assert.Contains(t, resp.Header.Get("Content-Security-Policy"), "script-src 'self'")
	assert.Equal(t, "nosniff", resp.Header.Get("X-Content-Type-Options"))

	for _, path := range []string{"/ui/nothing.js", "/agents", "/models", "/ui/../agents"} {
		status, body := c.raw("GET", path, "", nil)
		assert.NotEqual(t, http.StatusOK, status, path)
		assert.NotContains(t, body, `"agents"`, path)
	}
	status, _ = c.raw("POST", "/", "{}", map[string]string{"Content-Type": "application/json"})
	assert.Equal(t, http.StatusUnauthorized, status, "only reading the page goes without the token")
	status, _ = c.raw("GET", "/", "", map[string]string{"Host": "evil.example.com"})
	assert.Equal(t, http.StatusForbidden, status, "a rebound name gets no page either")

	var models struct{ Models []string }
	require.Equal(t, http.StatusOK, c.do("GET", "/models", nil, &models))
	assert.Equal(t, []string{"", "scripted/worker"}, models.Models)
}

// A web page that rebinds its own name to 127.0.0.1 reaches the server under that name: refused,
// without data. The names the operator allows are served.
func TestRebindingHostIsRefused(t *testing.T) {
	c := start(t, t.TempDir(), demoTeam, server.WithAllowedHosts("agents.internal", "proxy.example:8443"))
	auth := "Bearer " + c.srv.Token()
	for _, host := range []string{"evil.example.com", "evil.example.com:8080", "127.0.0.1.evil.example", "agents.internal.evil", "proxy.example:9999"} {
		status, body := c.raw("GET", "/agents", "", map[string]string{"Host": host, "Authorization": auth})
		assert.Equal(t, http.StatusForbidden, status, host)
		assert.Contains(t, body, "host")
		assert.NotContains(t, body, "agents\":", host)
	}
	for _, host := range []string{"localhost:1234", "127.0.0.1", "[::1]:80", "agents.internal", "AGENTS.internal:80", "proxy.example:8443"} {
		status, body := c.raw("GET", "/agents", "", map[string]string{"Host": host, "Authorization": auth})
		assert.Equal(t, http.StatusOK, status, "%s: %s", host, body)
	}
}

// What a cross-site page can send — a form posting text/plain, urlencoded or multipart, with
// the browser's cookie — changes nothing: refused by its origin, or by its content type when
// the browser sends no origin. No agent is made, no message sent, no run stopped.
func TestCrossSiteRequestsChangeNothing(t *testing.T) {
	c := start(t, t.TempDir(), demoTeam)
	cookie := server.TokenCookie + "=" + c.srv.Token()
	goal := `{"id": "x", "goal": "pwned"}`
	forms := map[string]string{
		"text/plain":                        goal,
		"application/x-www-form-urlencoded": `{"id": "x", "goal": "pwned"}=`,
		"multipart/form-data; boundary=b":   "--b\r\nContent-Disposition: form-data; name=\"x\"\r\n\r\n" + goal + "\r\n--b--\r\n",
	}
	for ct, body := range forms {
		for _, path := range []string{"/agents", "/agents/x/send", "/agents/x/stop"} {
			status, _ := c.raw("POST", path, body, map[string]string{"Content-Type": ct, "Cookie": cookie, "Origin": "https://evil.example"})
			assert.Equal(t, http.StatusForbidden, status, "%s %s with an origin", ct, path)
			status, resp := c.raw("POST", path, body, map[string]string{"Content-Type": ct, "Cookie": cookie})
			assert.Equal(t, http.StatusUnsupportedMediaType, status, "%s %s without an origin", ct, path)
			assert.Contains(t, resp, "application/json")
			status, _ = c.raw("POST", path, body, map[string]string{"Content-Type": "application/json", "Cookie": cookie, "Sec-Fetch-Site": "cross-site"})
			assert.Equal(t, http.StatusForbidden, status, "%s %s cross-site by fetch metadata", ct, path)
		}
	}
	assert.Zero(t, c.agentCount())
	// The server's own pages (same origin) and programs (no origin) are served.
	status, body := c.raw("POST", "/agents", goal, map[string]string{"Content-Type": "application/json; charset=utf-8", "Cookie": cookie, "Origin": c.ts.URL})
	assert.Equal(t, http.StatusCreated, status, body)
	c.await("x", host.StatusComplete)
}

// An allowed origin gets CORS; another gets neither CORS nor an answer.
func TestCORSOnlyForAllowedOrigins(t *testing.T) {
	c := start(t, t.TempDir(), demoTeam, server.WithAllowedOrigins("https://app.example"))
	req, err := http.NewRequest("OPTIONS", c.ts.URL+"/agents", nil)
	require.NoError(t, err)
	req.Header.Set("Origin", "https://app.example")
	req.Header.Set("Access-Control-Request-Method", "POST")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusNoContent, resp.StatusCode)
	assert.Equal(t, "https://app.example", resp.Header.Get("Access-Control-Allow-Origin"))
	assert.Contains(t, resp.Header.Get("Access-Control-Allow-Headers"), "Authorization")

	status, _ := c.raw("GET", "/agents", "", map[string]string{"Origin": "https://app.example", "Authorization": "Bearer " + c.srv.Token()})
	assert.Equal(t, http.StatusOK, status)
	req.Header.Set("Origin", "https://evil.example")
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusForbidden, resp.StatusCode)
	assert.Empty(t, resp.Header.Get("Access-Control-Allow-Origin"))
}

// A request names only the models the operator allowed; by default none.
func TestModelsByPolicy(t *testing.T) {
	c := start(t, t.TempDir(), demoTeam)
	msg := c.errorOf("POST", "/agents", map[string]string{"goal": "chips", "model": "openai/gpt-5"}, http.StatusForbidden)
	assert.Contains(t, msg, `"openai/gpt-5" is not allowed`)
	assert.Zero(t, c.agentCount())

	allowed := start(t, t.TempDir(), demoTeam, server.WithModels("nosuch/model"))
	require.Equal(t, http.StatusCreated, allowed.do("POST", "/agents", map[string]string{"id": "a", "goal": "chips", "model": "nosuch/model"}, nil))
	sum := allowed.await("a", host.StatusFailed)
	assert.Contains(t, sum.Error, "nosuch", "an allowed model goes on to be resolved")
	require.Equal(t, http.StatusAccepted, allowed.do("POST", "/agents/a/runs", map[string]string{"goal": "chips"}, nil), "failed, not damaged: it may be tried again")
	assert.Contains(t, allowed.await("a", host.StatusFailed).Error, "nosuch")
}

// A goal, message or answer over the limit is refused with 413 naming the limit; nothing is
// made of it.
func TestOversizedTextIsRefused(t *testing.T) {
	c := start(t, t.TempDir(), demoTeam, server.WithMaxText(1000))
	msg := c.errorOf("POST", "/agents", map[string]string{"goal": strings.Repeat("g", 1001)}, http.StatusRequestEntityTooLarge)
	assert.Contains(t, msg, "1000 bytes")
	msg = c.errorOf("POST", "/agents", map[string]string{"goal": strings.Repeat("\u2028", 5000)}, http.StatusRequestEntityTooLarge)
	assert.Contains(t, msg, "over")
	assert.Zero(t, c.agentCount())

	require.Equal(t, http.StatusCreated, c.do("POST", "/agents", map[string]string{"id": "a", "goal": strings.Repeat("g", 1000)}, nil))
	c.await("a", host.StatusComplete)
	msg = c.errorOf("POST", "/agents/a/send", map[string]string{"message": strings.Repeat("m", 1001)}, http.StatusRequestEntityTooLarge)
	assert.Contains(t, msg, `"message"`)
	c.errorOf("POST", "/agents/a/respond", map[string]string{"response": strings.Repeat("r", 1001)}, http.StatusRequestEntityTooLarge)
	c.errorOf("POST", "/agents/a/runs", map[string]string{"goal": strings.Repeat("g", 1001)}, http.StatusRequestEntityTooLarge)
}

// Runs beyond the cap are queued, not refused, and run when a place frees: here when the first
// agent's worker has the human's answer.
func TestRunsBeyondTheCapAreQueued(t *testing.T) {
	team := func(id string) []nodes.Option {
		if id == "first" {
			return append(demo.Team(demo.WithHumanQuestion()), nodes.WithTick(20*time.Millisecond))
		}
		return demoTeam(id)
	}
	c := start(t, t.TempDir(), team, server.WithHost(host.WithMaxRuns(1)))
	require.Equal(t, http.StatusCreated, c.do("POST", "/agents", map[string]string{"id": "first", "goal": "chips"}, nil))
	c.await("first", host.StatusWaiting)
	require.Equal(t, http.StatusCreated, c.do("POST", "/agents", map[string]string{"id": "second", "goal": "chips"}, nil))
	c.await("second", host.StatusQueued)
	require.Equal(t, http.StatusOK, c.do("POST", "/agents/first/respond", map[string]string{"response": "yes"}, nil))
	c.await("first", host.StatusComplete)
	c.await("second", host.StatusComplete)
}

// What models wrote is served inert: every answer of the API carries the sandboxing policy
// and nosniff; a raw file is text, a passive image, or a download, never HTML, SVG or script.
// The web UI's page keeps its own policy.
func TestModelBytesAreServedInert(t *testing.T) {
	root := t.TempDir()
	c := start(t, root, demoTeam)
	require.Equal(t, http.StatusCreated, c.do("POST", "/agents", map[string]string{"id": "a", "goal": "chips"}, nil))
	run := filepath.Join(root, "agents", "a", "runs", c.await("a", host.StatusComplete).Run)
	png := "\x89PNG\r\n\x1a\n" + strings.Repeat("\x00", 16)
	files := map[string]string{
		"page.html": "<!doctype html><script>fetch('/agents')</script>",
		"image.svg": `<?xml version="1.0"?><svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>`,
		"code.js":   "fetch('/agents')",
		"doc.pdf":   "%PDF-1.4 /JavaScript",
		"pic.png":   png,
	}
	for name, content := range files {
		require.NoError(t, os.WriteFile(filepath.Join(run, name), []byte(content), 0o644))
	}
	want := map[string][2]string{ // type, disposition
		"page.html": {"text/plain; charset=utf-8", ""},
		"image.svg": {"text/plain; charset=utf-8", ""},
		"code.js":   {"text/plain; charset=utf-8", ""},
		"doc.pdf":   {"application/octet-stream", `attachment; filename=doc.pdf`},
		"pic.png":   {"image/png", ""},
	}
	get := func(path string) *http.Response {
		resp, err := c.ts.Client().Get(c.ts.URL + path)
		require.NoError(t, err)
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		resp.Body.Close()
		resp.Header.Set("X-Body", string(body))
		return resp
	}
	for name, w := range want {
		resp := get("/agents/a/workspace/" + name + "?raw=1")
		require.Equal(t, http.StatusOK, resp.StatusCode, name)
		assert.Equal(t, files[name], resp.Header.Get("X-Body"), name)
		assert.Equal(t, w[0], resp.Header.Get("Content-Type"), name)
		assert.Equal(t, w[1], resp.Header.Get("Content-Disposition"), name)
	}
	for _, path := range []string{"/agents/a/workspace/page.html?raw=1", "/agents/a/workspace/page.html", "/agents/a/memory",
		"/agents/a/board/n1", "/agents/a/conversation", "/agents/a/events", "/agents", "/agents/nobody"} {
		resp := get(path)
		assert.Contains(t, resp.Header.Get("Content-Security-Policy"), "sandbox", path)
		assert.Equal(t, "nosniff", resp.Header.Get("X-Content-Type-Options"), path)
	}
	resp := get("/")
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.NotContains(t, resp.Header.Get("Content-Security-Policy"), "sandbox", "the web UI runs its own script")
}
