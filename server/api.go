package server

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strings"

	"github.com/agiraph/agiraph/nodes/store/sqlitestore"
	"github.com/agiraph/agiraph/server/a2a"
	"github.com/agiraph/agiraph/server/host"
	"github.com/agiraph/agiraph/server/langgraphapi"
)

// Option configures a Server.
type Option func(*config)

type config struct {
	hostOpts []host.Option
	token    string
	noAuth   bool
	hosts    []string
	origins  []string
	models   []string
	maxText  int
	addr     string
	lg       *langgraphapi.Handler
	a2aAgent string
	a2aOpts  []a2a.Option
	graphs   []graphServer
}

// A graphServer registers a graph with the LangGraph API and returns its A2A handler.
type graphServer func(lg *langgraphapi.Handler, a2aOpts []a2a.Option) (name string, h *a2a.Handler, err error)

// DefaultMaxText is the default limit on a goal, a message or an answer, in bytes.
const DefaultMaxText = 64 << 10

// WithHost gives the server's agent host its options (host.WithRoot, host.WithSquadOptions,
// host.WithMaxRuns, host.WithPostgres...): what the agents are, where they live, how many run at
// once. It may be given more than once.
func WithHost(opts ...host.Option) Option {
	return func(c *config) { c.hostOpts = append(c.hostOpts, opts...) }
}

// WithToken sets the token every request must carry (as "Authorization: Bearer <token>", or in
// the cookie the login URL sets; see [Server.LoginURL]). Without it the server makes a random
// one on first start and keeps it in <root>/token (mode 0600).
func WithToken(token string) Option { return func(c *config) { c.token = token } }

// WithoutAuth serves requests without a token: for a program that embeds the server behind its
// own authentication. The host, origin and content-type checks still apply.
func WithoutAuth() Option { return func(c *config) { c.noAuth = true } }

// WithAllowedHosts adds to the names a request's Host may have (the loopback names localhost,
// 127.0.0.1 and ::1 are always allowed): the names, or name:port, the server is reached under
// when it is not reached as localhost — behind a proxy, or on another interface. Requests for
// other names are refused, so that a web page cannot rebind its own name to the server.
func WithAllowedHosts(hosts ...string) Option {
	return func(c *config) { c.hosts = append(c.hosts, hosts...) }
}

// WithAllowedOrigins allows cross-origin requests from these origins ("https://app.example"),
// with CORS. Requests from other origins are refused, except those of pages the server serves.
func WithAllowedOrigins(origins ...string) Option {
	return func(c *config) { c.origins = append(c.origins, origins...) }
}

// WithModels sets the models a request may name for its agent (POST /agents "model"). By
// default a request may name none: agents use the models of host.WithSquadOptions.
func WithModels(names ...string) Option {
	return func(c *config) { c.models = append(c.models, names...) }
}

// WithMaxText sets the largest goal, message or answer a request may carry, in bytes (default
// [DefaultMaxText]); a larger one is refused with 413.
func WithMaxText(n int) Option { return func(c *config) { c.maxText = n } }

// WithAddr tells the server the address it is served on ("127.0.0.1:8080"): its host is allowed
// (see [WithAllowedHosts]; an unspecified one such as 0.0.0.0 is not), and it is the host's base
// URL (host.WithBaseURL) unless one is given: a second server started on the same root names
// it, and the other replicas of a fleet forward there.
func WithAddr(addr string) Option { return func(c *config) { c.addr = addr } }

// WithLangGraph serves the LangGraph API of h under /langgraph/, behind the same token, host and
// origin checks as the rest of the server: the graphs registered on h, and the server's agents as
// the threads of the assistant "squad" (langgraphapi.RegisterHost, with the models of
// [WithModels]). A LangGraph SDK client takes apiUrl "http://<addr>/langgraph" and the token as its
// apiKey (sent as X-Api-Key) or as "Authorization: Bearer <token>". The caller keeps h and closes
// it after the server.
func WithLangGraph(h *langgraphapi.Handler) Option { return func(c *config) { c.lg = h } }

// WithA2AOptions configures the server's A2A handler (a2a.New), as a2a.WithPrivatePush.
func WithA2AOptions(opts ...a2a.Option) Option {
	return func(c *config) { c.a2aOpts = append(c.a2aOpts, opts...) }
}

// WithGraph serves a compiled graph over the LangGraph API, as the assistant g.Name under
// /langgraph (see [WithLangGraph]; without it the server makes a handler whose records are kept
// in langgraph.db in its root), and over A2A, as the agent g.Name at /a2a/{name}/ (see
// a2a.NewGraph), behind the server's guard. A graph's name hides an agent of the same id over
// A2A. With [WithA2AAgent](g.Name) the graph is the server's own A2A agent.
func WithGraph[S any](g a2a.Graph[S]) Option {
	return func(c *config) {
		c.graphs = append(c.graphs, func(lg *langgraphapi.Handler, opts []a2a.Option) (string, *a2a.Handler, error) {
			if err := langgraphapi.Register(lg, g.Name, g.Graph, g.Saver); err != nil {
				return g.Name, nil, err
			}
			h, err := a2a.NewGraph(A2APath, g, opts...)
			return g.Name, h, err
		})
	}
}

// WithA2AAgent makes agent id the server's own A2A agent: its card is served at
// /.well-known/agent-card.json too, where A2A clients look for a server's agent.
func WithA2AAgent(id string) Option { return func(c *config) { c.a2aAgent = id } }

// A2APath is where every agent is served over A2A: agent id's card at
// /a2a/{id}/.well-known/agent-card.json (served without the token: it holds no data), its
// JSON-RPC endpoint at /a2a/{id}/ (behind the token, declared in the card as a bearer token).
const A2APath = "/a2a"

// LangGraphPath is where [WithLangGraph] serves the LangGraph API, and SquadAssistant the
// assistant whose threads are the server's agents there.
const (
	LangGraphPath  = "/langgraph"
	SquadAssistant = "squad"
)

// Server serves the API (its routes are in docs/server.md) over its agent host. It is an
// http.Handler, safe for concurrent use.
type Server struct {
	cfg     config
	host    *host.Host
	mux     *http.ServeMux
	a2a     *a2a.Handler
	graphs  map[string]*a2a.Handler // the A2A agents of WithGraph, by name
	closers []func() error          // what New made for WithGraph, closed after the host
	handler http.Handler            // the mux behind the guard
	token   string                  // "" without auth
}

// New returns a server over a new agent host (see host.New, and [WithHost] for its options).
func New(opts ...Option) (*Server, error) {
	c := config{maxText: DefaultMaxText}
	for _, o := range opts {
		o(&c)
	}
	s := &Server{cfg: c, mux: http.NewServeMux()}
	if name, _, err := net.SplitHostPort(c.addr); err == nil && name != "" && !net.ParseIP(strings.Trim(name, "[]")).IsUnspecified() {
		s.cfg.hosts = append(s.cfg.hosts, c.addr)
	}
	hostOpts := c.hostOpts
	if c.addr != "" { // first: a base URL given among the host's options wins
		hostOpts = append([]host.Option{host.WithBaseURL("http://" + c.addr)}, hostOpts...)
	}
	h, err := host.New(hostOpts...)
	if err != nil {
		return nil, err
	}
	s.host = h
	if !c.noAuth {
		tok, err := loadToken(h.Root(), c.token)
		if err != nil {
			_ = h.Close() // the error before is the one to report
			return nil, err
		}
		s.token = tok
	}
	a2aOpts := append([]a2a.Option(nil), c.a2aOpts...)
	if s.token != "" {
		a2aOpts = append(a2aOpts, a2a.WithBearer())
	}
	s.a2a = a2a.New(h, A2APath, a2aOpts...)
	if err := s.serveGraphs(a2aOpts); err != nil {
		_ = s.Close() // the error before is the one to report
		return nil, err
	}
	if s.cfg.lg != nil {
		if err := langgraphapi.RegisterHost(s.cfg.lg, SquadAssistant, h, langgraphapi.WithSquadModels(c.models...)); err != nil {
			_ = s.Close() // the error before is the one to report
			return nil, err
		}
	}
	s.handler = s.guard(http.HandlerFunc(s.serveMux))
	s.routes()
	return s, nil
}

// Host returns the server's agent host: what the API serves, for a program to use in Go too.
func (s *Server) Host() *host.Host { return s.host }

// ServeHTTP serves a request of the API.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }

// Close closes the server's host (host.Host.Close): the runs in progress are paused, to be
// resumed by a server started again on the root, and the event streams end. The server answers
// 503 afterwards.
func (s *Server) Close() error {
	err := s.host.Close()
	s.a2a.Close()
	for _, g := range s.graphs {
		g.Close()
	}
	for _, c := range slices.Backward(s.closers) {
		err = errors.Join(err, c())
	}
	return err
}

// serveGraphs registers the graphs of WithGraph, with a LangGraph handler of the server's own
// when none was given.
func (s *Server) serveGraphs(a2aOpts []a2a.Option) error {
	if len(s.cfg.graphs) == 0 {
		return nil
	}
	if s.cfg.lg == nil {
		st, err := sqlitestore.Open(filepath.Join(s.host.Root(), "langgraph.db"))
		if err != nil {
			return fmt.Errorf("server: the LangGraph API's records: %w", err)
		}
		s.cfg.lg = langgraphapi.New(st)
		s.closers = append(s.closers, st.Close, s.cfg.lg.Close)
	}
	s.graphs = map[string]*a2a.Handler{}
	for _, serve := range s.cfg.graphs {
		name, h, err := serve(s.cfg.lg, a2aOpts)
		if err != nil {
			return fmt.Errorf("server: graph %q: %w", name, err)
		}
		s.graphs[name] = h
	}
	return nil
}

// a2aOf returns the A2A handler that serves agent id: its graph's, or the host's.
func (s *Server) a2aOf(id string) *a2a.Handler {
	if h, ok := s.graphs[id]; ok {
		return h
	}
	return s.a2a
}
