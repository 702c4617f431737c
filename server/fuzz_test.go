package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agiraph/agiraph/server"
	"github.com/agiraph/agiraph/server/host"
)

// FuzzRequests sends arbitrary methods, paths and bodies to a server with one agent. Whatever
// comes, the server does not panic, answers no 500, answers errors as JSON naming them, and
// never shows a file from outside the agent's home (a canary beside the root).
func FuzzRequests(f *testing.F) {
	for _, seed := range []struct{ method, path, body string }{
		{"GET", "/agents", ""},
		{"GET", "/agents/a/workspace/../../../canary.txt", ""},
		{"GET", "/agents/a/workspace/..%2f..%2fcanary.txt", ""},
		{"GET", "/agents/a/workspace//etc/passwd", ""},
		{"GET", "/agents/a/memory/../../canary.txt", ""},
		{"GET", "/agents/a/board/%00", ""},
		{"GET", "/agents/a/events?after=-1&limit=x", ""},
		{"GET", "/agents/a/conversation?after=99999999999999999999", ""},
		{"POST", "/agents", `{"goal": "x", "id": "../../x"}`},
		{"POST", "/agents", `{"goal": 7}`},
		{"POST", "/agents", `{"goal": "x"}{"goal": "y"}`},
		{"POST", "/agents/a/send", `{"to": "*", "message": "\u0000"}`},
		{"POST", "/agents/a/respond", `{"worker": "../x", "response": "yes"}`},
		{"POST", "/agents/a/resume", `{"run": "../../x"}`},
		{"POST", "/agents/a/memory/search", `{"query": "((("}`},
		{"DELETE", "/agents/nope", ""},
		{"PATCH", "/agents/a", `[]`},
	} {
		f.Add(seed.method, seed.path, seed.body)
	}
	base := f.TempDir()
	root := filepath.Join(base, "root")
	if err := os.WriteFile(filepath.Join(base, "canary.txt"), []byte("canary-outside-the-root"), 0o644); err != nil {
		f.Fatal(err)
	}
	srv, err := server.New(server.WithHost(host.WithRoot(root), host.WithSquadOptions(demoTeam), host.WithMaxRuns(2)))
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { srv.Close() })
	send := func(method, path, body string) *httptest.ResponseRecorder {
		req, err := http.NewRequestWithContext(context.Background(), method, "http://127.0.0.1"+path, strings.NewReader(body))
		if err != nil {
			return nil
		}
		req.Header.Set("Authorization", "Bearer "+srv.Token())
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, req)
		return rec
	}
	send("POST", "/agents", `{"id": "a", "goal": "chips"}`)
	for end := time.Now().Add(30 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		var s host.Summary
		if rec := send("GET", "/agents/a", ""); rec != nil && json.Unmarshal(rec.Body.Bytes(), &s) == nil && s.Status == host.StatusComplete {
			break
		}
	}

	f.Fuzz(func(t *testing.T, method, path, body string) {
		if !strings.HasPrefix(path, "/") || strings.HasSuffix(path, "/events/stream") {
			return // not a request path; or an endless stream
		}
		rec := send(method, path, body)
		if rec == nil {
			return
		}
		if rec.Code >= 500 && rec.Code != http.StatusServiceUnavailable {
			t.Errorf("%s %q %q: %d %s", method, path, body, rec.Code, rec.Body)
		}
		if strings.Contains(rec.Body.String(), "canary-outside-the-root") {
			t.Errorf("%s %q: a file outside the root was served", method, path)
		}
		if rec.Code >= 400 && strings.HasPrefix(rec.Header().Get("Content-Type"), "application/json") {
			var e struct{ Error string }
			if json.Unmarshal(rec.Body.Bytes(), &e) != nil || e.Error == "" {
				t.Errorf("%s %q: error %d without a message: %s", method, path, rec.Code, rec.Body)
			}
		}
	})
}
