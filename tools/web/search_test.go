package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agiraph/agiraph/tools"
	"github.com/agiraph/agiraph/tools/web"
)

// fakeAPI serves canned JSON after check has inspected the request.
func fakeAPI(t *testing.T, check func(r *http.Request, body []byte), resp string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		check(r, body)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, resp)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func expect(t *testing.T, what, got, want string) {
	t.Helper()
	if got != want {
		t.Errorf("%s: got %q, want %q", what, got, want)
	}
}

func jsonBody(t *testing.T, body []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		t.Errorf("request body %q: %v", body, err)
	}
	return m
}

var wantResults = []web.Result{
	{Title: "Go", URL: "https://go.dev/", Snippet: "The Go language"},
	{Title: "Tour", URL: "https://go.dev/tour", Snippet: "A tour of Go"},
}

func checkResults(t *testing.T, b web.Backend, n int) {
	t.Helper()
	got, err := b.Search(context.Background(), "golang & tour", n)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != fmt.Sprint(wantResults[:min(n, 2)]) {
		t.Errorf("results %+v", got)
	}
}

func TestBrave(t *testing.T) {
	t.Parallel()
	srv := fakeAPI(t, func(r *http.Request, body []byte) {
		expect(t, "method", r.Method, "GET")
		expect(t, "path", r.URL.Path, "/res/v1/web/search")
		expect(t, "q", r.URL.Query().Get("q"), "golang & tour")
		expect(t, "count", r.URL.Query().Get("count"), "2")
		expect(t, "token", r.Header.Get("X-Subscription-Token"), "bkey")
	}, `{"type":"search","web":{"results":[{"title":"<strong>Go</strong>","url":"https://go.dev/","description":"The <strong>Go</strong> language"},{"title":"Tour","url":"https://go.dev/tour","description":"A tour of Go"}]}}`)
	checkResults(t, web.Brave("bkey", web.BaseURL(srv.URL+"/res/v1/web/search")), 2)
}

func TestSerper(t *testing.T) {
	t.Parallel()
	srv := fakeAPI(t, func(r *http.Request, body []byte) {
		expect(t, "method", r.Method, "POST")
		expect(t, "path", r.URL.Path, "/search")
		expect(t, "key", r.Header.Get("X-API-KEY"), "skey")
		expect(t, "content type", r.Header.Get("Content-Type"), "application/json")
		m := jsonBody(t, body)
		if m["q"] != "golang & tour" || m["num"] != float64(2) {
			t.Errorf("body %s", body)
		}
	}, `{"organic":[{"title":"Go","link":"https://go.dev/","snippet":"The Go language","position":1},{"title":"Tour","link":"https://go.dev/tour","snippet":"A tour of Go"}]}`)
	checkResults(t, web.Serper("skey", web.BaseURL(srv.URL+"/search")), 2)
}

func TestTavily(t *testing.T) {
	t.Parallel()
	srv := fakeAPI(t, func(r *http.Request, body []byte) {
		expect(t, "method", r.Method, "POST")
		expect(t, "path", r.URL.Path, "/search")
		expect(t, "auth", r.Header.Get("Authorization"), "Bearer tkey")
		m := jsonBody(t, body)
		if m["query"] != "golang & tour" || m["max_results"] != float64(2) || m["api_key"] != nil {
			t.Errorf("body %s", body)
		}
	}, `{"query":"golang","results":[{"title":"Go","url":"https://go.dev/","content":"The Go language","score":0.9},{"title":"Tour","url":"https://go.dev/tour","content":"A tour of Go"}]}`)
	checkResults(t, web.Tavily("tkey", web.BaseURL(srv.URL+"/search")), 2)
}

func TestSearXNG(t *testing.T) {
	t.Parallel()
	srv := fakeAPI(t, func(r *http.Request, body []byte) {
		expect(t, "method", r.Method, "GET")
		expect(t, "path", r.URL.Path, "/searx/search")
		expect(t, "q", r.URL.Query().Get("q"), "golang & tour")
		expect(t, "format", r.URL.Query().Get("format"), "json")
	}, `{"query":"golang","results":[{"title":"Go","url":"https://go.dev/","content":"The Go language"},{"title":"Tour","url":"https://go.dev/tour","content":"A tour of Go"},{"title":"Extra","url":"https://x/","content":"dropped"}]}`)
	checkResults(t, web.SearXNG(srv.URL+"/searx/"), 2)
	checkResults(t, web.SearXNG("http://unused.invalid", web.BaseURL(srv.URL+"/searx")), 1)
}

func TestBackendHTTPError(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"error":"invalid key"}`, http.StatusUnauthorized)
	}))
	defer srv.Close()
	for _, b := range []struct {
		name string
		b    web.Backend
	}{
		{"Brave", web.Brave("k", web.BaseURL(srv.URL))},
		{"Serper", web.Serper("k", web.BaseURL(srv.URL))},
		{"Tavily", web.Tavily("k", web.BaseURL(srv.URL))},
		{"SearXNG", web.SearXNG(srv.URL)},
	} {
		reg, err := tools.NewRegistry([]tools.Tool{web.Search(b.b)})
		if err != nil {
			t.Fatal(err)
		}
		res := reg.Run(context.Background(), []tools.Call{{ID: "1", Name: "web_search", Args: json.RawMessage(`{"query":"x"}`)}})
		want := b.name + " search failed: HTTP 401 Unauthorized: {\"error\":\"invalid key\"}"
		if !res[0].IsError || res[0].Content != want {
			t.Errorf("%s: %+v, want content %q", b.name, res[0], want)
		}
	}
}

func TestBackendBadJSON(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "<html>") }))
	defer srv.Close()
	_, err := web.Brave("k", web.BaseURL(srv.URL)).Search(context.Background(), "q", 3)
	if err == nil || !strings.Contains(err.Error(), "Brave search failed: reading the response") {
		t.Errorf("error %v", err)
	}
}

func TestBackendFromEnv(t *testing.T) {
	t.Parallel()
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	all := map[string]string{"BRAVE_API_KEY": "b", "SERPER_API_KEY": "s", "TAVILY_API_KEY": "t", "SEARXNG_URL": "http://searx.local"}
	for _, tc := range []struct {
		drop []string
		want string
	}{
		{nil, "Brave"},
		{[]string{"BRAVE_API_KEY"}, "Serper"},
		{[]string{"BRAVE_API_KEY", "SERPER_API_KEY"}, "Tavily"},
		{[]string{"BRAVE_API_KEY", "SERPER_API_KEY", "TAVILY_API_KEY"}, "SearXNG (http://searx.local)"},
	} {
		m := map[string]string{}
		for k, v := range all {
			m[k] = v
		}
		for _, k := range tc.drop {
			m[k] = "  " // blank counts as unset
		}
		b, err := web.BackendFromEnv(env(m))
		if err != nil {
			t.Fatal(err)
		}
		if s := fmt.Sprint(b); !strings.HasPrefix(s, tc.want) {
			t.Errorf("dropping %v: got %s, want %s", tc.drop, s, tc.want)
		}
	}
	_, err := web.BackendFromEnv(env(nil))
	if err == nil {
		t.Fatal("no error without variables")
	}
	for _, v := range []string{"BRAVE_API_KEY", "SERPER_API_KEY", "TAVILY_API_KEY", "SEARXNG_URL"} {
		if !strings.Contains(err.Error(), v) {
			t.Errorf("error %q does not name %s", err, v)
		}
	}
}

type fakeBackend struct {
	gotN    int
	results []web.Result
	block   bool
}

func (f *fakeBackend) Search(ctx context.Context, q string, n int) ([]web.Result, error) {
	f.gotN = n
	if f.block {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return f.results, nil
}

func TestSearchTool(t *testing.T) {
	t.Parallel()
	fb := &fakeBackend{results: append(wantResults, web.Result{Title: "", URL: "https://x/", Snippet: ""})}
	srch := web.Search(fb)
	if !srch.Safe || srch.Name != "web_search" {
		t.Errorf("tool %+v", srch)
	}
	reg, err := tools.NewRegistry([]tools.Tool{srch, web.Fetch()})
	if err != nil {
		t.Fatal(err)
	}
	res := reg.Run(context.Background(), []tools.Call{
		{ID: "1", Name: "web_search", Args: json.RawMessage(`{"query":"go"}`)},
		{ID: "2", Name: "web_search", Args: json.RawMessage(`{"query":"go","max_results":11}`)},
		{ID: "3", Name: "web_search", Args: json.RawMessage(`{}`)},
	})
	want := "1. Go\n   https://go.dev/\n   The Go language\n\n2. Tour\n   https://go.dev/tour\n   A tour of Go\n\n3. (untitled)\n   https://x/"
	if res[0].IsError || res[0].Content != want {
		t.Errorf("search: %+v", res[0])
	}
	if !res[1].IsError || !strings.Contains(res[1].Content, "maximum 10") {
		t.Errorf("max_results 11: %+v", res[1])
	}
	if !res[2].IsError || !strings.Contains(res[2].Content, "query") {
		t.Errorf("no query: %+v", res[2])
	}
	out, err := call(t, srch, map[string]any{"query": "go", "max_results": 2})
	if err != nil || strings.Contains(out, "3.") || fb.gotN != 2 {
		t.Errorf("max_results 2: %q, %v, n %d", out, err, fb.gotN)
	}

	fb.results = nil
	out, err = call(t, srch, map[string]any{"query": "nothing"})
	if err != nil || out != `No results for "nothing".` {
		t.Errorf("no results: %q, %v", out, err)
	}
}

func TestSearchTimeout(t *testing.T) {
	t.Parallel()
	_, err := call(t, web.Search(&fakeBackend{block: true}, web.Timeout(50*time.Millisecond)), map[string]any{"query": "slow"})
	if err == nil || !strings.Contains(err.Error(), "search timed out after 50ms") {
		t.Errorf("error %v", err)
	}
}

func TestFetchThroughRegistry(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/gone" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, "<title>T</title><p>body</p>")
	}))
	defer srv.Close()
	f := web.Fetch()
	if !f.Safe || f.Name != "web_fetch" || f.Guidance == "" {
		t.Errorf("tool %+v", f)
	}
	reg, err := tools.NewRegistry([]tools.Tool{f})
	if err != nil {
		t.Fatal(err)
	}
	res := reg.Run(context.Background(), []tools.Call{
		{ID: "a", Name: "web_fetch", Args: json.RawMessage(fmt.Sprintf(`{"url":%q}`, srv.URL))},
		{ID: "b", Name: "web_fetch", Args: json.RawMessage(fmt.Sprintf(`{"url":%q}`, srv.URL+"/gone"))},
		{ID: "c", Name: "web_fetch", Args: json.RawMessage(`{"url":"file:///etc/passwd"}`)},
		{ID: "d", Name: "web_fetch", Args: json.RawMessage(`{"max_bytes":10}`)},
	})
	if res[0].IsError || res[0].Content != "URL: "+srv.URL+"\nTitle: T\n\nbody" {
		t.Errorf("fetch: %+v", res[0])
	}
	if !res[1].IsError || !strings.Contains(res[1].Content, "HTTP 404 Not Found") {
		t.Errorf("404: %+v", res[1])
	}
	if !res[2].IsError || !strings.Contains(res[2].Content, "file scheme is not supported") {
		t.Errorf("file: %+v", res[2])
	}
	if !res[3].IsError || !strings.Contains(res[3].Content, "url") {
		t.Errorf("no url: %+v", res[3])
	}
}
