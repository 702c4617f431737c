package web

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// Default endpoints of the search backends.
const (
	BraveURL  = "https://api.search.brave.com/res/v1/web/search"
	SerperURL = "https://google.serper.dev/search"
	TavilyURL = "https://api.tavily.com/search"
)

// BackendOption configures a search backend.
type BackendOption func(*backend)

// BaseURL replaces the backend's endpoint URL (for Brave, Serper and Tavily the full search
// endpoint, such as [BraveURL]; for SearXNG the instance's base URL), for proxies and tests.
func BaseURL(u string) BackendOption {
	return func(b *backend) { b.url = u }
}

// HTTPClient sets the HTTP client the backend uses (default [http.DefaultClient]).
func HTTPClient(c *http.Client) BackendOption {
	return func(b *backend) { b.client = c }
}

type backend struct {
	name   string
	key    string
	url    string
	client *http.Client
	search func(ctx context.Context, b *backend, query string, n int) ([]Result, error)
}

func (b *backend) Search(ctx context.Context, query string, n int) ([]Result, error) {
	return b.search(ctx, b, query, n)
}

// String names the backend and its endpoint, like "Brave (https://api.search.brave.com/...)".
func (b *backend) String() string { return b.name + " (" + b.url + ")" }

func newBackend(name, key, defURL string, opts []BackendOption, fn func(context.Context, *backend, string, int) ([]Result, error)) Backend {
	b := &backend{name: name, key: key, url: defURL, search: fn}
	for _, o := range opts {
		o(b)
	}
	if b.client == nil {
		b.client = http.DefaultClient
	}
	return b
}

// Brave returns a backend for the Brave Search API
// (GET https://api.search.brave.com/res/v1/web/search, key in X-Subscription-Token).
func Brave(apiKey string, opts ...BackendOption) Backend {
	return newBackend("Brave", apiKey, BraveURL, opts, func(ctx context.Context, b *backend, q string, n int) ([]Result, error) {
		u, err := url.Parse(b.url)
		if err != nil {
			return nil, fmt.Errorf("brave search: bad URL %q: %v", b.url, err)
		}
		v := u.Query()
		v.Set("q", q)
		v.Set("count", strconv.Itoa(n))
		u.RawQuery = v.Encode()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
		if err != nil {
			return nil, fmt.Errorf("brave search: %v", err)
		}
		req.Header.Set("X-Subscription-Token", b.key)
		var resp struct {
			Web struct {
				Results []struct {
					Title       string `json:"title"`
					URL         string `json:"url"`
					Description string `json:"description"`
				} `json:"results"`
			} `json:"web"`
		}
		if err := b.do(req, &resp); err != nil {
			return nil, err
		}
		out := make([]Result, 0, len(resp.Web.Results))
		for _, r := range resp.Web.Results {
			out = append(out, Result{Title: stripTags(r.Title), URL: r.URL, Snippet: stripTags(r.Description)})
		}
		return out, nil
	})
}

// Serper returns a backend for the Serper Google search API
// (POST https://google.serper.dev/search, key in X-API-KEY).
func Serper(apiKey string, opts ...BackendOption) Backend {
	return newBackend("Serper", apiKey, SerperURL, opts, func(ctx context.Context, b *backend, q string, n int) ([]Result, error) {
		req, err := b.jsonPost(ctx, map[string]any{"q": q, "num": n})
		if err != nil {
			return nil, err
		}
		req.Header.Set("X-API-KEY", b.key)
		var resp struct {
			Organic []struct {
				Title   string `json:"title"`
				Link    string `json:"link"`
				Snippet string `json:"snippet"`
			} `json:"organic"`
		}
		if err := b.do(req, &resp); err != nil {
			return nil, err
		}
		out := make([]Result, 0, len(resp.Organic))
		for _, r := range resp.Organic {
			out = append(out, Result{Title: r.Title, URL: r.Link, Snippet: r.Snippet})
		}
		return out, nil
	})
}

// Tavily returns a backend for the Tavily search API (POST https://api.tavily.com/search, key
// sent as "Authorization: Bearer <key>").
func Tavily(apiKey string, opts ...BackendOption) Backend {
	return newBackend("Tavily", apiKey, TavilyURL, opts, func(ctx context.Context, b *backend, q string, n int) ([]Result, error) {
		req, err := b.jsonPost(ctx, map[string]any{"query": q, "max_results": n})
		if err != nil {
			return nil, err
		}
		req.Header.Set("Authorization", "Bearer "+b.key)
		var resp contentResults
		if err := b.do(req, &resp); err != nil {
			return nil, err
		}
		return resp.first(n), nil
	})
}

// contentResults is the response shape Tavily and SearXNG share.
type contentResults struct {
	Results []struct {
		Title   string `json:"title"`
		URL     string `json:"url"`
		Content string `json:"content"`
	} `json:"results"`
}

// first returns up to n of the results.
func (c contentResults) first(n int) []Result {
	out := make([]Result, 0, min(n, len(c.Results)))
	for _, r := range c.Results[:min(n, len(c.Results))] {
		out = append(out, Result{Title: r.Title, URL: r.URL, Snippet: r.Content})
	}
	return out
}

// SearXNG returns a backend for a SearXNG instance at baseURL (GET <baseURL>/search?q=...&
// format=json). The instance must allow the json format (search.formats in its settings.yml).
// SearXNG has no result count parameter; results beyond n are dropped.
func SearXNG(baseURL string, opts ...BackendOption) Backend {
	return newBackend("SearXNG", "", baseURL, opts, func(ctx context.Context, b *backend, q string, n int) ([]Result, error) {
		u, err := url.Parse(strings.TrimRight(b.url, "/") + "/search")
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
			return nil, fmt.Errorf("SearXNG search: bad base URL %q; want http(s)://host[/path]", b.url)
		}
		v := u.Query()
		v.Set("q", q)
		v.Set("format", "json")
		u.RawQuery = v.Encode()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
		if err != nil {
			return nil, fmt.Errorf("SearXNG search: %v", err)
		}
		var resp contentResults
		if err := b.do(req, &resp); err != nil {
			if strings.Contains(err.Error(), "HTTP 403") {
				err = fmt.Errorf("%w (is the json format enabled in the instance's settings.yml, search.formats?)", err)
			}
			return nil, err
		}
		return resp.first(n), nil
	})
}

func (b *backend) jsonPost(ctx context.Context, body any) (*http.Request, error) {
	data, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("%s search: %v", b.name, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, b.url, bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("%s search: %v", b.name, err)
	}
	req.Header.Set("Content-Type", "application/json")
	return req, nil
}

// maxResponse caps how much of a search API response is read.
const maxResponse = 4 << 20

// do sends req and decodes a JSON response into out. Errors name the backend and, for HTTP
// errors, the status and the start of the response body.
func (b *backend) do(req *http.Request, out any) error {
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", DefaultUserAgent)
	resp, err := b.client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return fmt.Errorf("%s search failed: %w", b.name, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		snippet, _ := io.ReadAll(io.LimitReader(resp.Body, 300))
		msg := fmt.Sprintf("%s search failed: HTTP %s", b.name, resp.Status)
		if s := collapse(strings.ToValidUTF8(string(snippet), "")); s != "" {
			msg += ": " + s
		}
		return errors.New(msg)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxResponse)).Decode(out); err != nil {
		return fmt.Errorf("%s search failed: reading the response: %v", b.name, err)
	}
	return nil
}

// stripTags removes the <strong> highlighting some APIs put in titles and snippets.
func stripTags(s string) string {
	r := strings.NewReplacer("<strong>", "", "</strong>", "", "<b>", "", "</b>", "")
	return r.Replace(s)
}

// Environment variables [BackendFromEnv] reads, in the order it tries them.
const (
	EnvBrave   = "BRAVE_API_KEY"
	EnvSerper  = "SERPER_API_KEY"
	EnvTavily  = "TAVILY_API_KEY"
	EnvSearXNG = "SEARXNG_URL"
)

// BackendFromEnv picks a search backend from environment variables, trying in order
// BRAVE_API_KEY ([Brave]), SERPER_API_KEY ([Serper]), TAVILY_API_KEY ([Tavily]) and
// SEARXNG_URL ([SearXNG]); the first one set to a non-blank value wins. getenv is usually
// [os.Getenv]. With none set it returns an error naming all four variables.
func BackendFromEnv(getenv func(string) string) (Backend, error) {
	if getenv == nil {
		return nil, errors.New("web.BackendFromEnv: nil getenv")
	}
	if k := strings.TrimSpace(getenv(EnvBrave)); k != "" {
		return Brave(k), nil
	}
	if k := strings.TrimSpace(getenv(EnvSerper)); k != "" {
		return Serper(k), nil
	}
	if k := strings.TrimSpace(getenv(EnvTavily)); k != "" {
		return Tavily(k), nil
	}
	if u := strings.TrimSpace(getenv(EnvSearXNG)); u != "" {
		return SearXNG(u), nil
	}
	return nil, fmt.Errorf("no web search backend configured: set one of %s, %s, %s or %s", EnvBrave, EnvSerper, EnvTavily, EnvSearXNG)
}
