// Package web provides tools that let an agent read the web: "web_fetch" downloads a page and
// returns it as readable text, and "web_search" queries a search engine.
//
// [Fetch] builds the fetch tool. It makes HTTP(S) GET requests only, with a timeout, a limit on
// the bytes read, at most [MaxRedirects] redirects and a User-Agent. HTML is converted to
// markdown-like text (title, # headings, paragraphs, "- " list items, [text](absolute-url)
// links, fenced code blocks; scripts, styles, navigation, footers and SVG are dropped); plain
// text, JSON and XML pass through; any other content type (images, PDFs, archives) is
// described by its type and size instead of returned. An HTTP error status is a tool error
// naming the status.
//
// [Search] builds the search tool around a [Backend]. The package has clients for Brave
// ([Brave]), Serper ([Serper]), Tavily ([Tavily]) and SearXNG ([SearXNG]), and
// [BackendFromEnv] picks one from environment variables.
//
// Fetching is NOT sandboxed: the tool can reach any address the process can, including
// localhost and private networks. Give it to agents whose URLs you do not trust only behind a
// proxy or network policy that blocks internal addresses.
package web

import (
	"net/http"
	"time"
)

// Defaults of the tool options.
const (
	// DefaultTimeout is how long a fetch or a search may take.
	DefaultTimeout = 30 * time.Second
	// DefaultMaxBytes is how many bytes of a response body a fetch reads.
	DefaultMaxBytes = 2 << 20
	// DefaultMaxOutput is the default cap, in bytes, on the text a fetch returns. It matches
	// [tools.DefaultMaxOutput] so the truncation note is not cut off by the registry.
	DefaultMaxOutput = 32 << 10
	// MaxRedirects is how many redirects a fetch follows.
	MaxRedirects = 5
	// DefaultUserAgent is the User-Agent header of fetches.
	DefaultUserAgent = "agiraph-web-fetch/1.0 (+https://github.com/agiraph/agiraph)"
)

// Option configures the tools built by [Fetch] and [Search].
type Option func(*config)

type config struct {
	client    *http.Client
	timeout   time.Duration
	maxBytes  int64
	maxOutput int
	userAgent string
}

func newConfig(opts []Option) config {
	c := config{timeout: DefaultTimeout, maxBytes: DefaultMaxBytes, maxOutput: DefaultMaxOutput, userAgent: DefaultUserAgent}
	for _, o := range opts {
		o(&c)
	}
	if c.timeout <= 0 {
		c.timeout = DefaultTimeout
	}
	if c.maxBytes <= 0 {
		c.maxBytes = DefaultMaxBytes
	}
	if c.maxOutput <= 0 {
		c.maxOutput = DefaultMaxOutput
	}
	if c.userAgent == "" {
		c.userAgent = DefaultUserAgent
	}
	return c
}

// Client sets the HTTP client fetches use (default: a client with the default transport).
// The tool uses a shallow copy whose redirect policy is replaced by its own (at most
// [MaxRedirects] redirects, to http and https URLs only); the client's Transport, Jar and
// Timeout are kept. It has no effect on [Search]: backends take their own client (see
// [HTTPClient]).
func Client(c *http.Client) Option {
	return func(cfg *config) { cfg.client = c }
}

// Timeout sets how long one fetch or search may take, redirects and reading the body included
// (default [DefaultTimeout]). d <= 0 means the default.
func Timeout(d time.Duration) Option {
	return func(cfg *config) { cfg.timeout = d }
}

// MaxBytes sets how many bytes of a response body a fetch reads (default [DefaultMaxBytes]);
// the rest is not downloaded and the result says the body was truncated. n <= 0 means the
// default.
func MaxBytes(n int64) Option {
	return func(cfg *config) { cfg.maxBytes = n }
}

// MaxOutput sets the default cap, in bytes, on the text a fetch returns (default
// [DefaultMaxOutput]); a call may ask for more with max_bytes, up to the [MaxBytes] limit.
// Longer text is cut with a note saying how much was left out. n <= 0 means the default. Keep
// it at or below the registry's cap ([tools.WithMaxOutput]).
func MaxOutput(n int) Option {
	return func(cfg *config) { cfg.maxOutput = n }
}

// UserAgent sets the User-Agent header of fetches (default [DefaultUserAgent]).
func UserAgent(ua string) Option {
	return func(cfg *config) { cfg.userAgent = ua }
}
