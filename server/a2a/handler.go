package a2a

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"

	"github.com/agiraph/agiraph/internal/a2awire"
	"github.com/agiraph/agiraph/internal/webhook"
	"github.com/agiraph/agiraph/nodes"
	"github.com/agiraph/agiraph/server/host"
)

// Handler serves A2A over the agents of a host, or over a graph. It is safe for concurrent use.
type Handler struct {
	backend     backend
	path        string
	bearer      bool
	log         *slog.Logger
	client      *http.Client
	privatePush bool // push notifications may go to any address

	ctx    context.Context // ends with Close: push notifications stop
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu       sync.Mutex
	watching map[string]bool // agent/task whose push notifications are being sent
}

// Option configures a Handler.
type Option func(*Handler)

// WithBearer declares in the agent cards that requests carry a bearer token, as the server in
// front of the handler requires.
func WithBearer() Option { return func(h *Handler) { h.bearer = true } }

// WithLogger sets the logger of failed push notifications (default slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(h *Handler) { h.log = l } }

// WithClient sets the HTTP client that posts push notifications (default: one with a
// 10-second timeout that connects to no loopback, link-local, private or unspecified address,
// unless WithPrivatePush). Its transport dials as it will: the URLs are checked as they are set.
func WithClient(c *http.Client) Option { return func(h *Handler) { h.client = c } }

// New returns a handler over the agents of hst, mounted at path ("/a2a"): the agent card of
// agent id is at path/id/.well-known/agent-card.json, and its JSON-RPC endpoint at path/id/.
// Its A2A records (the push notification configs, the outcome of tasks) are kept in each
// agent's store (package nodes/store), which the replicas of a fleet share; the push
// notifications of the tasks in progress when the host last stopped are sent again from now on.
func New(hst *host.Host, path string, opts ...Option) *Handler {
	return newHandler(&hostBackend{host: hst, legacy: &records{dir: hst.Root()}, ended: map[string]bool{}}, path, opts)
}

func newHandler(b backend, path string, opts []Option) *Handler {
	h := &Handler{backend: b, path: strings.TrimSuffix(path, "/"), log: slog.Default(), watching: map[string]bool{}}
	for _, o := range opts {
		o(h)
	}
	if h.client == nil {
		h.client = webhook.Client(h.privatePush)
	}
	h.ctx, h.cancel = context.WithCancel(context.Background())
	h.resume()
	return h
}

// Close stops sending push notifications and waits for those being sent (and, for a graph,
// cancels its runs and waits for them).
func (h *Handler) Close() {
	h.cancel()
	h.backend.close()
	h.wg.Wait()
}

// ServeHTTP serves the agent cards and the JSON-RPC endpoints under the handler's path, for
// an embedder that mounts the handler itself: GET path/{id}/.well-known/agent-card.json and
// POST path/{id}/.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rest, ok := strings.CutPrefix(r.URL.Path, h.path+"/")
	id, tail, _ := strings.Cut(rest, "/")
	switch {
	case !ok || id == "":
		http.NotFound(w, r)
	case r.Method == http.MethodGet && tail == ".well-known/agent-card.json":
		h.ServeCard(w, r, id)
	case r.Method == http.MethodPost && tail == "":
		h.ServeRPC(w, r, id)
	default:
		http.NotFound(w, r)
	}
}

// endpoint returns the URL of agent id's JSON-RPC endpoint, as r reached the server.
func (h *Handler) endpoint(r *http.Request, id string) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host + h.path + "/" + id + "/"
}

// ServeCard answers the agent card of agent id.
func (h *Handler) ServeCard(w http.ResponseWriter, r *http.Request, id string) {
	desc, skill, err := h.backend.describe(id)
	if err != nil {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_ = json.NewEncoder(w).Encode(map[string]string{"error": fmt.Sprintf("no agent %q", id)})
		return
	}
	url := h.endpoint(r, id)
	card := AgentCard{
		ProtocolVersion:    ProtocolVersion,
		Name:               id,
		Description:        desc,
		URL:                url,
		PreferredTransport: "JSONRPC",
		Version:            "1.0.0",
		Capabilities:       Capabilities{Streaming: true, PushNotifications: true},
		DefaultInputModes:  []string{"text/plain"},
		DefaultOutputModes: []string{"text/plain", "application/octet-stream"},
		Skills:             []Skill{skill},
		SupportedInterfaces: []a2awire.Interface{
			{URL: url, ProtocolBinding: "JSONRPC", ProtocolVersion: string(a2awire.V10)},
			{URL: url, ProtocolBinding: "JSONRPC", ProtocolVersion: string(a2awire.V03)},
		},
	}
	if h.bearer {
		const about = "The server's token, as \"Authorization: Bearer <token>\"."
		card.SecuritySchemes = map[string]SecurityScheme{"bearer": {Type: "http", Scheme: "bearer", Description: about,
			HTTPAuth: &a2awire.HTTPAuth{Scheme: "bearer", Description: about}}}
		card.Security = []map[string][]string{{"bearer": {}}}
		card.SecurityRequirements = []a2awire.SecurityRequirement{{Schemes: map[string]a2awire.StringList{"bearer": {List: []string{}}}}}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(card)
}

// maxRequest bounds a JSON-RPC request, in bytes.
const maxRequest = 1 << 20

// ServeRPC serves a JSON-RPC request to agent id.
func (h *Handler) ServeRPC(w http.ResponseWriter, r *http.Request, id string) {
	var req a2awire.Request
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxRequest)).Decode(&req); err != nil {
		reply(w, http.StatusOK, a2awire.Response{Error: &a2awire.Error{Code: a2awire.CodeParse, Message: "the request is not JSON: " + err.Error()}})
		return
	}
	if req.JSONRPC != "2.0" || req.Method == "" {
		reply(w, http.StatusOK, a2awire.Response{ID: req.ID, Error: &a2awire.Error{Code: a2awire.CodeInvalidRequest, Message: `a JSON-RPC 2.0 request has "jsonrpc": "2.0" and a method`}})
		return
	}
	method, v, err := methodOf(req.Method, r.Header.Get(a2awire.VersionHeader))
	if err != nil {
		reply(w, http.StatusOK, a2awire.Response{ID: req.ID, Error: asRPC(err)})
		return
	}
	a, err := h.backend.agent(r.Context(), id)
	if err != nil {
		status, e := http.StatusInternalServerError, &a2awire.Error{Code: a2awire.CodeInternal, Message: err.Error()}
		if errors.Is(err, errNoAgent) {
			status, e.Code, e.Message = http.StatusNotFound, a2awire.CodeInvalidRequest, fmt.Sprintf("no agent %q", id)
		}
		reply(w, status, a2awire.Response{ID: req.ID, Error: e})
		return
	}
	c := &call{h: h, a: a, id: req.ID, method: method, v: v}
	var result any
	switch method {
	case "message/stream":
		c.stream(w, r, req.Params, false)
		return
	case "tasks/resubscribe":
		c.stream(w, r, req.Params, true)
		return
	case "message/send":
		result, err = c.send(r.Context(), req.Params)
	case "tasks/get":
		result, err = c.get(req.Params)
	case "tasks/cancel":
		result, err = c.cancel(r.Context(), req.Params)
	case "tasks/pushNotificationConfig/set":
		result, err = c.setPush(req.Params)
	case "tasks/pushNotificationConfig/get":
		result, err = c.getPush(req.Params)
	case "tasks/pushNotificationConfig/list":
		result, err = c.listPush(req.Params)
	case "tasks/pushNotificationConfig/delete":
		result, err = c.deletePush(req.Params)
	}
	if err != nil {
		reply(w, http.StatusOK, a2awire.Response{ID: req.ID, Error: asRPC(err)})
		return
	}
	result = v.Result(method, result)
	if result == nil { // delete answers null in 0.3
		result = json.RawMessage("null")
	}
	reply(w, http.StatusOK, a2awire.Response{ID: req.ID, Result: result})
}

// methodOf returns the method called name (by its 0.3 name) and the version of A2A the call
// speaks: the one its A2A-Version header names, or else the one whose method it names.
func methodOf(name, header string) (string, a2awire.Version, error) {
	method, v, ok := a2awire.MethodOf(name)
	if header != "" {
		hv, err := a2awire.ParseVersion(header)
		if err != nil {
			return "", "", err
		}
		if ok && v != hv {
			ok = false
		}
		v = hv
	}
	if !ok {
		if v == "" {
			v = a2awire.V10
		}
		names := []string{}
		for _, m := range a2awire.Methods {
			names = append(names, v.Method(m))
		}
		return "", "", &a2awire.Error{Code: a2awire.CodeMethodNotFound, Message: fmt.Sprintf("no method %q in A2A %s: this agent takes %s", name, v, strings.Join(names, ", "))}
	}
	return method, v, nil
}

// reply writes a JSON-RPC response.
func reply(w http.ResponseWriter, status int, resp a2awire.Response) {
	resp.JSONRPC = "2.0"
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(resp)
}

// asRPC returns err as a JSON-RPC error: an a2awire.Error as it is, a host's error with its code.
func asRPC(err error) *a2awire.Error {
	var e *a2awire.Error
	switch {
	case errors.As(err, &e):
		return e
	case errors.Is(err, host.ErrInvalid):
		return &a2awire.Error{Code: a2awire.CodeInvalidParams, Message: err.Error()}
	case errors.Is(err, host.ErrBusy), errors.Is(err, nodes.ErrNoQuestion), errors.Is(err, nodes.ErrNoRun):
		return &a2awire.Error{Code: a2awire.CodeUnsupported, Message: err.Error()}
	}
	return &a2awire.Error{Code: a2awire.CodeInternal, Message: err.Error()}
}

// invalid is an invalid-params error.
func invalid(format string, args ...any) error {
	return &a2awire.Error{Code: a2awire.CodeInvalidParams, Message: fmt.Sprintf(format, args...)}
}

// params decodes the call's params, as its version sends them, into p.
func (c *call) params(raw json.RawMessage, p any) error {
	if len(raw) == 0 {
		return invalid("the method takes params")
	}
	if err := c.v.DecodeParams(c.method, raw, p); err != nil {
		return invalid("bad params: %v", err)
	}
	return nil
}
