package web

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/agiraph/agiraph/tools"
)

// FetchArgs are the arguments of a web_fetch call.
type FetchArgs struct {
	// URL is the http or https URL to fetch.
	URL string `json:"url" jsonschema:"minLength=1" jsonschema_description:"The http:// or https:// URL to fetch."`
	// MaxBytes caps the returned text; 0 (absent) means the tool's default.
	MaxBytes int `json:"max_bytes,omitempty" jsonschema:"minimum=1" jsonschema_description:"Maximum bytes of text to return (the default is usually enough)."`
}

// Fetch returns a tool named "web_fetch" that GETs a URL and returns its content as text (see
// the package documentation). The tool is [tools.Safe].
//
// The result starts with "URL: <final URL after redirects>", a "Title: ..." line for HTML
// with a title, and a blank line, followed by the text. Text longer than the cap ends with a
// note saying how much was cut; a body longer than the [MaxBytes] limit ends with a note that
// it was truncated. The handler returns an error for a URL that is not http or https, an HTTP
// status of 400 or more (naming it), too many redirects, a timeout, a cancelled context and
// network failures.
func Fetch(opts ...Option) tools.Tool {
	c := newConfig(opts)
	base := c.client
	if base == nil {
		base = &http.Client{}
	}
	client := *base
	client.CheckRedirect = checkRedirect
	c.client = &client
	return tools.Func("web_fetch", "Fetch a web page or file by URL (HTTP GET) and return it as readable text.",
		func(ctx context.Context, a FetchArgs) (string, error) { return c.fetch(ctx, a) },
		tools.Safe(), tools.WithGuidance(c.fetchGuidance()))
}

func (c *config) fetchGuidance() string {
	return fmt.Sprintf(`Fetch a URL with web_fetch to read a page you found with a search or were given.
- Only http:// and https:// URLs work; the request is a plain GET without cookies or JavaScript, so pages that need a login or render in the browser may come back empty.
- HTML comes back as markdown-like text with links made absolute; JSON and plain text come back as they are; images, PDFs and other binary files are only described.
- Text beyond about %d KiB is cut; pass max_bytes for more when you need the rest.`, c.maxOutput>>10)
}

func checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) > MaxRedirects {
		return fmt.Errorf("stopped after %d redirects (last to %s)", MaxRedirects, req.URL)
	}
	if req.URL.Scheme != "http" && req.URL.Scheme != "https" {
		return fmt.Errorf("refusing redirect to %s: only http and https URLs can be fetched", req.URL)
	}
	return nil
}

func (c *config) fetch(ctx context.Context, a FetchArgs) (string, error) {
	u, err := url.Parse(strings.TrimSpace(a.URL))
	if err != nil {
		return "", fmt.Errorf("invalid URL %q: %v", a.URL, err)
	}
	switch strings.ToLower(u.Scheme) {
	case "http", "https":
	case "":
		return "", fmt.Errorf("invalid URL %q: it has no scheme; use an absolute http:// or https:// URL", a.URL)
	default:
		return "", fmt.Errorf("cannot fetch %q: the %s scheme is not supported; only http:// and https:// URLs can be fetched", a.URL, u.Scheme)
	}
	if u.Host == "" {
		return "", fmt.Errorf("invalid URL %q: it has no host", a.URL)
	}
	if err := ctx.Err(); err != nil {
		return "", fmt.Errorf("fetch not started: %w", context.Cause(ctx))
	}

	tctx, cancel := context.WithTimeoutCause(ctx, c.timeout, errTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(tctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return "", fmt.Errorf("invalid URL %q: %v", a.URL, err)
	}
	req.Header.Set("User-Agent", c.userAgent)
	req.Header.Set("Accept", "text/html,application/xhtml+xml,text/plain,application/json;q=0.9,*/*;q=0.8")
	resp, err := c.client.Do(req)
	if err != nil {
		return "", c.netError(ctx, tctx, u.String(), err)
	}
	defer resp.Body.Close()
	final := resp.Request.URL

	if resp.StatusCode >= 400 {
		snippet, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		msg := fmt.Sprintf("fetching %s failed: HTTP %s", final, resp.Status)
		// A short plain-text or JSON error body often says what is wrong; an HTML error page
		// is mostly markup, so it is left out.
		if s := collapse(strings.ToValidUTF8(string(snippet), "")); s != "" && isTextual(resp.Header.Get("Content-Type")) && !looksHTML(s) {
			msg += ": " + s
		}
		return "", errors.New(msg)
	}

	body, err := io.ReadAll(io.LimitReader(resp.Body, c.maxBytes+1))
	if err != nil {
		return "", c.netError(ctx, tctx, final.String(), err)
	}
	truncated := int64(len(body)) > c.maxBytes
	if truncated {
		body = body[:c.maxBytes]
	}

	ctype := resp.Header.Get("Content-Type")
	if ctype == "" {
		ctype = http.DetectContentType(body)
	}
	mt, _, err := mime.ParseMediaType(ctype)
	if err != nil {
		mt = strings.ToLower(strings.TrimSpace(strings.SplitN(ctype, ";", 2)[0]))
	}

	var head strings.Builder
	fmt.Fprintf(&head, "URL: %s\n", final)
	var text string
	switch {
	case mt == "text/html" || mt == "application/xhtml+xml":
		title, md := htmlToMarkdown(body, final)
		if title != "" {
			fmt.Fprintf(&head, "Title: %s\n", title)
		}
		text = md
	case isTextual(mt):
		text = strings.ToValidUTF8(string(body), "\uFFFD")
	default:
		size := fmt.Sprintf("%d bytes", len(body))
		if truncated {
			size = fmt.Sprintf("more than %d bytes", c.maxBytes)
			if resp.ContentLength > 0 {
				size = fmt.Sprintf("%d bytes", resp.ContentLength)
			}
		}
		fmt.Fprintf(&head, "\n[binary content not shown: Content-Type %s, %s]", mt, size)
		return head.String(), nil
	}
	head.WriteString("\n")

	limit := c.maxOutput
	if a.MaxBytes > 0 {
		limit = int(min(int64(a.MaxBytes), c.maxBytes))
	}
	text = strings.TrimRight(text, "\n")
	if text == "" {
		text = "(no text content)"
	}
	if len(text) > limit {
		cut := limit
		for cut > 0 && !utf8.RuneStart(text[cut]) {
			cut--
		}
		text = text[:cut] + fmt.Sprintf("\n\n[text truncated: showed %d of %d bytes; call again with a larger max_bytes (at most %d) to see more]", cut, len(text), c.maxBytes)
	}
	if truncated {
		text += fmt.Sprintf("\n\n[body truncated: only the first %d bytes were downloaded]", c.maxBytes)
	}
	return head.String() + text, nil
}

var errTimeout = errors.New("timed out")

// netError phrases a transport or body-read error, telling a timeout and a cancelled call
// apart from network failures.
func (c *config) netError(parent, tctx context.Context, u string, err error) error {
	if parent.Err() != nil {
		return fmt.Errorf("fetching %s stopped: %w", u, context.Cause(parent))
	}
	if errors.Is(context.Cause(tctx), errTimeout) {
		return fmt.Errorf("fetching %s timed out after %s", u, c.timeout)
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return fmt.Errorf("fetching %s failed: %v", u, err)
}

// isTextual reports whether a media type is text that can be shown as it is.
func isTextual(ct string) bool {
	mt := strings.ToLower(strings.TrimSpace(strings.SplitN(ct, ";", 2)[0]))
	switch {
	case strings.HasPrefix(mt, "text/"),
		mt == "application/json", strings.HasSuffix(mt, "+json"),
		mt == "application/xml", strings.HasSuffix(mt, "+xml"),
		mt == "application/javascript", mt == "application/x-javascript",
		mt == "application/ecmascript", mt == "application/x-ndjson",
		mt == "application/yaml", mt == "application/x-yaml", mt == "application/toml":
		return true
	}
	return false
}

func looksHTML(s string) bool {
	s = strings.ToLower(strings.TrimSpace(s))
	return strings.HasPrefix(s, "<!doctype") || strings.HasPrefix(s, "<html")
}
