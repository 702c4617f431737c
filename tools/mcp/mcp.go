package mcp

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agiraph/agiraph/sandbox"
	"github.com/agiraph/agiraph/tools"
)

// Defaults of a [Server]'s time limits.
const (
	DefaultTimeout     = 60 * time.Second
	DefaultInitTimeout = 20 * time.Second
)

// Separator joins a server's name and its tool's name into the name the model sees.
const Separator = "__"

var (
	// ErrTimeout is wrapped by the error of a call that did not finish within the server's
	// Timeout, and by Connect's error for a server that did not start within its InitTimeout.
	ErrTimeout = errors.New("mcp: timed out")
	// ErrToolError is wrapped by the error of a call whose result the server marked as an
	// error (isError): the message holds the result's content.
	ErrToolError = errors.New("mcp: the tool reported an error")
)

// Server is an MCP server to connect to: a command that speaks MCP over its stdin and stdout
// (Command), or a streamable HTTP endpoint (URL) — one of the two.
type Server struct {
	// Name names the server in errors and prefixes its tools' names ("<Name>__<tool>"): 1 to
	// 32 characters of A-Z a-z 0-9 _ -, starting with a letter, and unique among the servers
	// connected together.
	Name string

	// Command is the program and its arguments of a server over stdio.
	Command []string
	// Env adds "KEY=value" variables to the environment the command runs with (this process's
	// own, without what looks like a secret unless the sandbox is off). The sandbox keeps
	// them, secrets or not: they are given on purpose.
	Env []string
	// Dir is the working directory of the command ("" for this process's), and the folder the
	// default sandbox lets it write.
	Dir string
	// Sandbox is what the command may reach (see package sandbox). The default (nil) lets it
	// write only Dir, when set, and a /tmp of its own, with the network, without the
	// environment's secrets but Env's; &sandbox.Policy{Off: true} gives it this process's
	// rights. A command that needs more — npx, say, writes its cache in ~/.npm — needs a
	// policy that allows it. It is enforced where bubblewrap runs (Linux); elsewhere only the
	// environment is cleaned.
	Sandbox *sandbox.Policy

	// URL is the endpoint of a server over streamable HTTP (http or https).
	URL string
	// Headers are sent with every request to URL: Authorization, say.
	Headers map[string]string
	// HTTPClient makes the requests to URL (default http.DefaultClient).
	HTTPClient *http.Client

	// Timeout bounds each tool call (default DefaultTimeout).
	Timeout time.Duration
	// InitTimeout bounds starting the server: initializing the session and listing its tools
	// (default DefaultInitTimeout).
	InitTimeout time.Duration
}

var serverNameRe = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]{0,31}$`)

// check reports what is wrong with the configuration of s.
func (s Server) check() error {
	if !serverNameRe.MatchString(s.Name) {
		return fmt.Errorf("mcp: server name %q must be 1 to 32 characters of A-Z a-z 0-9 _ -, starting with a letter", s.Name)
	}
	switch {
	case len(s.Command) > 0 && s.URL != "":
		return fmt.Errorf("mcp: server %q: set Command or URL, not both", s.Name)
	case len(s.Command) > 0 && s.Command[0] == "":
		return fmt.Errorf("mcp: server %q: the command's program is empty", s.Name)
	case len(s.Command) > 0:
		return nil
	case s.URL == "":
		return fmt.Errorf("mcp: server %q: set Command (a server over stdio) or URL (over streamable HTTP)", s.Name)
	}
	u, err := url.Parse(s.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("mcp: server %q: URL %q is not an http or https URL", s.Name, s.URL)
	}
	return nil
}

func (s Server) withDefaults() Server {
	if s.Timeout <= 0 {
		s.Timeout = DefaultTimeout
	}
	if s.InitTimeout <= 0 {
		s.InitTimeout = DefaultInitTimeout
	}
	return s
}

// Set is the connected servers and their tools. Its methods are safe for concurrent use.
type Set struct {
	conns     []*conn
	tools     []tools.Tool
	closeOnce sync.Once
}

// Connect connects to every server at once: it starts each command or reaches each URL,
// initializes a session, and lists the server's tools (following pagination). It fails if
// any server fails, with an error naming each server that did (see the package
// documentation), after closing those that had connected.
func Connect(ctx context.Context, servers ...Server) (*Set, error) {
	seen := map[string]bool{}
	for _, s := range servers {
		if err := s.check(); err != nil {
			return nil, err
		}
		if seen[s.Name] {
			return nil, fmt.Errorf("mcp: two servers are named %q", s.Name)
		}
		seen[s.Name] = true
	}
	conns := make([]*conn, len(servers))
	errs := make([]error, len(servers))
	var wg sync.WaitGroup
	for i, s := range servers {
		wg.Go(func() { conns[i], errs[i] = connect(ctx, s.withDefaults()) })
	}
	wg.Wait()
	set := &Set{}
	for _, c := range conns {
		if c != nil {
			set.conns = append(set.conns, c)
			set.tools = append(set.tools, c.tools...)
		}
	}
	err := errors.Join(errs...)
	if err == nil {
		// Names made unique by construction; a registry checks it all the same.
		_, err = tools.NewRegistry(set.tools)
	}
	if err != nil {
		set.Close()
		return nil, err
	}
	return set, nil
}

// Tools returns the tools of every server, in the order of the servers given to Connect and,
// for each, the order the server listed them.
func (s *Set) Tools() []tools.Tool {
	out := slices.Clone(s.tools)
	for i := range out {
		out[i].Schema = slices.Clone(out[i].Schema)
	}
	return out
}

// Close ends every session and every server's command, with whatever it started: a command
// has two seconds to exit once its stdin is closed, then it is killed. Calls still running
// fail, and later calls too. Close returns once the commands are gone; it may be called more
// than once.
func (s *Set) Close() {
	s.closeOnce.Do(func() {
		var wg sync.WaitGroup
		for _, c := range s.conns {
			wg.Go(func() { c.close(stopGrace) })
		}
		wg.Wait()
	})
}

// conn is one connected server.
type conn struct {
	srv     Server
	session *sdk.ClientSession
	cmd     *command // nil for a server over HTTP
	tools   []tools.Tool
	// closing is cancelled when the connection closes, to stop the calls still running: a
	// session closes only once they have returned.
	closing   context.Context
	stopCalls context.CancelFunc
}

// implementation is how this client introduces itself to servers.
var implementation = &sdk.Implementation{Name: "agiraph", Version: "1"}

// errStartTimeout is the cause of a start that ran out of time.
var errStartTimeout = errors.New("start timed out")

// connect starts or reaches s, initializes a session and lists its tools, all within
// s.InitTimeout.
func connect(ctx context.Context, s Server) (*conn, error) {
	c := &conn{srv: s}
	c.closing, c.stopCalls = context.WithCancel(context.Background())
	var transport sdk.Transport
	if len(s.Command) > 0 {
		cmd, t, err := start(s)
		if err != nil {
			return nil, fmt.Errorf("mcp: server %q: starting %s: %w", s.Name, s.Command[0], err)
		}
		c.cmd, transport = cmd, t
	} else {
		transport = &sdk.StreamableClientTransport{Endpoint: s.URL, HTTPClient: httpClient(s)}
	}
	ctx, cancel := context.WithTimeoutCause(ctx, s.InitTimeout, errStartTimeout)
	defer cancel()
	session, err := sdk.NewClient(implementation, nil).Connect(ctx, transport, nil)
	var listed []*sdk.Tool
	if err == nil {
		c.session = session
		listed, err = c.list(ctx)
	}
	if err != nil {
		return nil, c.failed(ctx, err)
	}
	for _, t := range listed {
		tool, err := c.tool(t)
		if err != nil {
			c.close(0)
			return nil, fmt.Errorf("mcp: server %q: %w", s.Name, err)
		}
		c.tools = append(c.tools, tool)
	}
	return c, nil
}

// failed closes c, which did not start because of err, and returns the error saying so.
func (c *conn) failed(ctx context.Context, err error) error {
	var msg, how string
	switch {
	case errors.Is(context.Cause(ctx), errStartTimeout):
		msg = fmt.Sprintf("did not start within %s (initializing and listing its tools)", c.srv.InitTimeout)
		err = ErrTimeout
	case ctx.Err() != nil:
		msg, err = "was not started", context.Cause(ctx)
	default:
		msg = "could not start"
		how = c.exited(time.Second) // a command that broke the connection is exiting
	}
	c.close(0)
	if how == "" && c.cmd != nil {
		how = c.cmd.stderrEnd()
	}
	if errors.Is(err, ErrTimeout) {
		return &wrapped{fmt.Sprintf("mcp: server %q %s%s", c.srv.Name, msg, how), err}
	}
	return fmt.Errorf("mcp: server %q %s: %w%s", c.srv.Name, msg, err, how)
}

// list lists the server's tools, following pagination.
func (c *conn) list(ctx context.Context) ([]*sdk.Tool, error) {
	var (
		cursor string
		all    []*sdk.Tool
	)
	seen := map[string]bool{}
	for {
		res, err := c.session.ListTools(ctx, &sdk.ListToolsParams{Cursor: cursor})
		if err != nil {
			return nil, fmt.Errorf("listing its tools: %w", err)
		}
		all = append(all, res.Tools...)
		if res.NextCursor == "" {
			return all, nil
		}
		if seen[res.NextCursor] {
			return nil, fmt.Errorf("listing its tools: the server sent the page cursor %q twice", res.NextCursor)
		}
		seen[res.NextCursor] = true
		cursor = res.NextCursor
	}
}

// tool makes t, a tool of the server, a tool of this package.
func (c *conn) tool(t *sdk.Tool) (tools.Tool, error) {
	schema, err := json.Marshal(t.InputSchema)
	if err != nil {
		return tools.Tool{}, fmt.Errorf("tool %q: its input schema: %w", t.Name, err)
	}
	desc := t.Description
	if desc == "" {
		desc = t.Title
	}
	if desc == "" && t.Annotations != nil {
		desc = t.Annotations.Title
	}
	if desc == "" {
		desc = fmt.Sprintf("The tool %s of the MCP server %s.", t.Name, c.srv.Name)
	}
	name := t.Name
	tool := tools.Tool{
		Name:        ToolName(c.srv.Name, name),
		Description: desc,
		Schema:      schema,
		Safe:        t.Annotations != nil && t.Annotations.ReadOnlyHint,
		Handler: func(ctx context.Context, args json.RawMessage) (string, error) {
			return c.call(ctx, name, args)
		},
	}
	if _, err := tools.NewRegistry([]tools.Tool{tool}); err != nil { // the checks a registry makes
		return tools.Tool{}, fmt.Errorf("tool %q cannot be used: %w", t.Name, err)
	}
	return tool, nil
}

// close stops the calls still running, ends the session, then the command, which has grace to
// exit before it is killed.
func (c *conn) close(grace time.Duration) {
	c.stopCalls()
	if c.session != nil {
		_ = c.session.Close()
	}
	if c.cmd != nil {
		c.cmd.stop(grace)
	}
}

// exited says how the server's command ended, when it ended within wait (see command.ended);
// "" when it still runs or the server is over HTTP.
func (c *conn) exited(wait time.Duration) string {
	if c.cmd == nil {
		return ""
	}
	return c.cmd.ended(wait)
}

// ToolName returns the name the tool named tool of the server named server gets: server,
// Separator and tool, made to fit the names every provider accepts (see the package
// documentation).
func ToolName(server, tool string) string {
	name := server + Separator + tool
	clean := strings.Map(func(r rune) rune {
		if r == '_' || r == '-' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '_'
	}, name)
	if clean == name && len(name) <= maxName {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	suffix := "_" + hex.EncodeToString(sum[:4])
	return clean[:min(len(clean), maxName-len(suffix))] + suffix
}

// maxName is the longest tool name the providers accept.
const maxName = 64

// httpClient returns the client of s's requests: s.HTTPClient (or the default), adding
// s.Headers to every request.
func httpClient(s Server) *http.Client {
	base := s.HTTPClient
	if base == nil {
		base = http.DefaultClient
	}
	if len(s.Headers) == 0 {
		return base
	}
	c := *base
	next := c.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	c.Transport = headers{next: next, h: s.Headers}
	return &c
}

// headers adds its headers to every request.
type headers struct {
	next http.RoundTripper
	h    map[string]string
}

func (h headers) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	for k, v := range h.h {
		req.Header.Set(k, v)
	}
	return h.next.RoundTrip(req)
}
