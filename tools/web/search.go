package web

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/agiraph/agiraph/tools"
)

// Search result counts.
const (
	// DefaultResults is how many results a search returns when the call does not say.
	DefaultResults = 5
	// MaxResults is the most results a call may ask for.
	MaxResults = 10
)

// Backend is a search engine. The backends returned by [Brave], [Serper], [Tavily] and
// [SearXNG] also implement [fmt.Stringer], naming the service and its endpoint (never the key).
type Backend interface {
	// Search returns at most n results for query, best first. The error names the backend.
	Search(ctx context.Context, query string, n int) ([]Result, error)
}

// Result is one search hit.
type Result struct {
	// Title is the page's title.
	Title string
	// URL is the page's address.
	URL string
	// Snippet is a short excerpt or summary of the page; it may be empty.
	Snippet string
}

// SearchArgs are the arguments of a web_search call.
type SearchArgs struct {
	// Query is what to search for.
	Query string `json:"query" jsonschema:"minLength=1" jsonschema_description:"The search query, as you would type it into a search engine."`
	// MaxResults is how many results to return; 0 (absent) means [DefaultResults].
	MaxResults int `json:"max_results,omitempty" jsonschema:"minimum=1,maximum=10" jsonschema_description:"How many results to return (1 to 10, default 5)."`
}

// Search returns a tool named "web_search" that queries b and returns the results as a
// numbered list of title, URL and snippet. The tool is [tools.Safe]. Of the options only
// [Timeout] applies: it bounds each search.
//
// A search without results returns a message saying so; a backend failure, a timeout or a
// cancelled context is a tool error.
func Search(b Backend, opts ...Option) tools.Tool {
	if b == nil {
		panic("web.Search: nil Backend")
	}
	c := newConfig(opts)
	return tools.Func("web_search", "Search the web and return a numbered list of results (title, URL, snippet).",
		func(ctx context.Context, a SearchArgs) (string, error) { return c.search(ctx, b, a) },
		tools.Safe(), tools.WithGuidance(`Search the web with web_search when you need current information or sources you do not know.
- Write short, specific queries; add a site name, version or year to narrow them.
- Results are only titles, URLs and snippets: use web_fetch on the most promising URLs to read them before relying on them, and cite the URLs you used.`))
}

func (c *config) search(ctx context.Context, b Backend, a SearchArgs) (string, error) {
	q := strings.TrimSpace(a.Query)
	if q == "" {
		return "", errors.New("query is empty; say what to search for")
	}
	n := a.MaxResults
	if n <= 0 {
		n = DefaultResults
	}
	n = min(n, MaxResults)
	if err := ctx.Err(); err != nil {
		return "", fmt.Errorf("search not started: %w", context.Cause(ctx))
	}
	tctx, cancel := context.WithTimeoutCause(ctx, c.timeout, errTimeout)
	defer cancel()
	results, err := b.Search(tctx, q, n)
	if err != nil {
		switch {
		case ctx.Err() != nil:
			return "", fmt.Errorf("search stopped: %w", context.Cause(ctx))
		case errors.Is(context.Cause(tctx), errTimeout):
			return "", fmt.Errorf("search timed out after %s: %v", c.timeout, err)
		}
		return "", err
	}
	if len(results) > n {
		results = results[:n]
	}
	if len(results) == 0 {
		return fmt.Sprintf("No results for %q.", q), nil
	}
	var sb strings.Builder
	for i, r := range results {
		if i > 0 {
			sb.WriteString("\n")
		}
		title := collapse(r.Title)
		if title == "" {
			title = "(untitled)"
		}
		fmt.Fprintf(&sb, "%d. %s\n   %s\n", i+1, title, strings.TrimSpace(r.URL))
		if s := collapse(r.Snippet); s != "" {
			fmt.Fprintf(&sb, "   %s\n", s)
		}
	}
	return strings.TrimRight(sb.String(), "\n"), nil
}
