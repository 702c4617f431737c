package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func noEnv(string) string { return "" }

// Without a key the handler serves agents playing the offline team: one is created and
// completes with the demo report.
func TestServeOffline(t *testing.T) {
	o, err := parse([]string{"-root", t.TempDir()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv, team, err := newServer(o, noEnv, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(team, "offline") {
		t.Errorf("team %q", team)
	}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	defer srv.Close()
	resp, err := ts.Client().Post(ts.URL+"/agents", "application/json", strings.NewReader(`{"id": "demo", "goal": "AI chips"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create: %d", resp.StatusCode)
	}
	end := time.Now().Add(60 * time.Second)
	for {
		var s struct{ Status, Output, Error string }
		resp, err := ts.Client().Get(ts.URL + "/agents/demo")
		if err != nil {
			t.Fatal(err)
		}
		err = json.NewDecoder(resp.Body).Decode(&s)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if s.Status == "completed" {
			if !strings.Contains(s.Output, "# Report") {
				t.Errorf("output %q", s.Output)
			}
			return
		}
		if s.Status == "failed" || time.Now().After(end) {
			t.Fatalf("agent %s: %s", s.Status, s.Error)
		}
		time.Sleep(20 * time.Millisecond)
	}
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
	if s := out.String(); !strings.Contains(s, "Serving agents (the offline demo team)") || !strings.Contains(s, "curl -s -X POST http://127.0.0.1:") {
		t.Errorf("printed %q", s)
	}
}
