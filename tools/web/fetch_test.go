package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agiraph/agiraph/tools"
	"github.com/agiraph/agiraph/tools/web"
)

func call(t *testing.T, tool tools.Tool, args any) (string, error) {
	t.Helper()
	return callCtx(t, context.Background(), tool, args)
}

func callCtx(t *testing.T, ctx context.Context, tool tools.Tool, args any) (string, error) {
	t.Helper()
	data, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	return tool.Handler(ctx, data)
}

const page = `<!DOCTYPE html>
<html><head><title> Test  Page </title><style>body{color:red}</style>
<script>var x = "SECRET_SCRIPT";</script></head>
<body>
<nav><a href="/home">Home</a> | <a href="/about">About</a></nav>
<h1>Main heading</h1>
<p>Hello,   <b>world</b>! See <a href="/docs/intro?x=1">the intro</a>
and <a href="https://example.org/abs">an absolute link</a>.</p>
<h2>Items</h2>
<ul>
  <li>first</li>
  <li>second with <code>code</code></li>
</ul>
<pre><code class="language-go">func main() {
	fmt.Println("hi")
}
</code></pre>
<script>alert("SECRET_SCRIPT")</script>
<svg><text>SECRET_SVG</text></svg>
<footer>SECRET_FOOTER</footer>
</body></html>`

func TestFetchHTML(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet || r.UserAgent() != web.DefaultUserAgent {
			t.Errorf("request %s UA %q", r.Method, r.UserAgent())
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, page)
	}))
	defer srv.Close()
	out, err := call(t, web.Fetch(), map[string]any{"url": srv.URL + "/page"})
	if err != nil {
		t.Fatal(err)
	}
	want := "URL: " + srv.URL + "/page\nTitle: Test Page\n\n" +
		"# Main heading\n\n" +
		"Hello, world! See [the intro](" + srv.URL + "/docs/intro?x=1) and [an absolute link](https://example.org/abs).\n\n" +
		"## Items\n\n" +
		"- first\n" +
		"- second with `code`\n\n" +
		"```go\nfunc main() {\n\tfmt.Println(\"hi\")\n}\n```"
	if out != want {
		t.Errorf("got:\n%s\n---want:\n%s", out, want)
	}
	for _, s := range []string{"SECRET", "Home", "color:red"} {
		if strings.Contains(out, s) {
			t.Errorf("output contains %q", s)
		}
	}
}

func TestFetchNestedListsAndTables(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, `<base href="https://base.example/dir/"><p>intro</p><ol><li>one<ul><li>sub <a href="x.html">x</a></li></ul></li><li>two</li></ol>`+
			`<table><tr><th>a</th><th>b</th></tr><tr><td>1</td><td>2</td></tr></table><div hidden>gone</div><p>line<br>break</p>`)
	}))
	defer srv.Close()
	out, err := call(t, web.Fetch(), map[string]any{"url": srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	want := "URL: " + srv.URL + "\n\nintro\n\n1. one\n  - sub [x](https://base.example/dir/x.html)\n2. two\n\na | b\n1 | 2\n\nline\nbreak"
	if out != want {
		t.Errorf("got:\n%q\nwant:\n%q", out, want)
	}
}

func TestFetchPassThrough(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ ctype, body string }{
		{"text/plain; charset=utf-8", "just <b>text</b>\n  indented\n"},
		{"application/json", `{"a": [1, 2], "b": "<p>x</p>"}`},
		{"application/problem+json", `{"title":"x"}`},
	} {
		t.Run(tc.ctype, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", tc.ctype)
				fmt.Fprint(w, tc.body)
			}))
			defer srv.Close()
			out, err := call(t, web.Fetch(), map[string]any{"url": srv.URL})
			if err != nil {
				t.Fatal(err)
			}
			if want := "URL: " + srv.URL + "\n\n" + strings.TrimRight(tc.body, "\n"); out != want {
				t.Errorf("got %q, want %q", out, want)
			}
		})
	}
}

func TestFetchBinary(t *testing.T) {
	t.Parallel()
	png := append([]byte("\x89PNG\r\n\x1a\n"), make([]byte, 992)...)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		w.Write(png)
	}))
	defer srv.Close()
	out, err := call(t, web.Fetch(), map[string]any{"url": srv.URL + "/img.png"})
	if err != nil {
		t.Fatal(err)
	}
	want := "URL: " + srv.URL + "/img.png\n\n[binary content not shown: Content-Type image/png, 1000 bytes]"
	if out != want {
		t.Errorf("got %q, want %q", out, want)
	}
}

func TestFetchHTTPError(t *testing.T) {
	t.Parallel()
	for _, code := range []int{404, 500} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "nothing here", code)
		}))
		_, err := call(t, web.Fetch(), map[string]any{"url": srv.URL + "/missing"})
		srv.Close()
		want := fmt.Sprintf("HTTP %d %s: nothing here", code, http.StatusText(code))
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "/missing") {
			t.Errorf("status %d: error %v, want it to contain %q", code, err, want)
		}
	}
}

func TestFetchRedirects(t *testing.T) {
	t.Parallel()
	mux := http.NewServeMux()
	mux.HandleFunc("/r/{n}", func(w http.ResponseWriter, r *http.Request) {
		var n int
		fmt.Sscan(r.PathValue("n"), &n)
		if n == 0 {
			fmt.Fprint(w, "arrived")
			return
		}
		http.Redirect(w, r, fmt.Sprintf("/r/%d", n-1), http.StatusFound)
	})
	mux.HandleFunc("/loop", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/loop", http.StatusMovedPermanently)
	})
	mux.HandleFunc("/ftp", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "ftp://example.com/file", http.StatusFound)
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	fetch := web.Fetch()

	out, err := call(t, fetch, map[string]any{"url": srv.URL + "/r/5"})
	if err != nil || out != "URL: "+srv.URL+"/r/0\n\narrived" {
		t.Errorf("5 redirects: %q, %v", out, err)
	}
	if _, err := call(t, fetch, map[string]any{"url": srv.URL + "/r/6"}); err == nil || !strings.Contains(err.Error(), "stopped after 5 redirects") {
		t.Errorf("6 redirects: %v", err)
	}
	if _, err := call(t, fetch, map[string]any{"url": srv.URL + "/loop"}); err == nil || !strings.Contains(err.Error(), "stopped after 5 redirects") {
		t.Errorf("loop: %v", err)
	}
	if _, err := call(t, fetch, map[string]any{"url": srv.URL + "/ftp"}); err == nil || !strings.Contains(err.Error(), "only http and https") {
		t.Errorf("redirect to ftp: %v", err)
	}
}

func TestFetchLimits(t *testing.T) {
	t.Parallel()
	body := strings.Repeat("abcdefghij", 1000) // 10000 bytes
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, body)
	}))
	defer srv.Close()

	out, err := call(t, web.Fetch(web.MaxBytes(4000)), map[string]any{"url": srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	want := "URL: " + srv.URL + "\n\n" + body[:4000] + "\n\n[body truncated: only the first 4000 bytes were downloaded]"
	if out != want {
		t.Errorf("body limit: got %q...%q", out[:40], out[len(out)-80:])
	}

	out, err = call(t, web.Fetch(web.MaxOutput(1000)), map[string]any{"url": srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(out, body[990:1000]+"\n\n[text truncated: showed 1000 of 10000 bytes; call again with a larger max_bytes (at most 2097152) to see more]") {
		t.Errorf("output cap: %q", out[len(out)-150:])
	}
	out, err = call(t, web.Fetch(web.MaxOutput(1000)), map[string]any{"url": srv.URL, "max_bytes": 20000})
	if err != nil || out != "URL: "+srv.URL+"\n\n"+body {
		t.Errorf("max_bytes arg: %d bytes, %v", len(out), err)
	}
}

func TestFetchTimeout(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
	}))
	defer srv.Close()
	done := make(chan error, 1)
	go func() {
		_, err := call(t, web.Fetch(web.Timeout(100*time.Millisecond)), map[string]any{"url": srv.URL})
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "timed out after 100ms") {
			t.Errorf("error %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("fetch did not time out")
	}
}

func TestFetchContextCancelled(t *testing.T) {
	t.Parallel()
	started := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(started)
		<-r.Context().Done()
	}))
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := callCtx(t, ctx, web.Fetch(), map[string]any{"url": srv.URL})
		done <- err
	}()
	<-started
	cancel()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "stopped: context canceled") {
			t.Errorf("error %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("fetch ignored cancellation")
	}
	if _, err := callCtx(t, ctx, web.Fetch(), map[string]any{"url": srv.URL}); err == nil || !strings.Contains(err.Error(), "not started") {
		t.Errorf("already cancelled: %v", err)
	}
}

func TestFetchRefusesSchemes(t *testing.T) {
	t.Parallel()
	for _, u := range []string{"ftp://example.com/x", "file:///etc/passwd", "javascript:alert(1)", "example.com/page", "http://"} {
		_, err := call(t, web.Fetch(), map[string]any{"url": u})
		if err == nil {
			t.Errorf("%s: no error", u)
			continue
		}
		if strings.HasPrefix(u, "ftp") || strings.HasPrefix(u, "file") {
			if !strings.Contains(err.Error(), "only http:// and https:// URLs can be fetched") {
				t.Errorf("%s: %v", u, err)
			}
		}
	}
}

func TestFetchCustomClient(t *testing.T) {
	t.Parallel()
	var hits int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits++
		fmt.Fprint(w, "ok")
	}))
	defer srv.Close()
	client := srv.Client()
	out, err := call(t, web.Fetch(web.Client(client), web.UserAgent("x/1")), map[string]any{"url": srv.URL})
	if err != nil || !strings.HasSuffix(out, "\n\nok") || hits != 1 {
		t.Errorf("%q, %v, hits %d", out, err, hits)
	}
	if client.CheckRedirect != nil {
		t.Error("Fetch modified the caller's client")
	}
}
