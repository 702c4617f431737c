package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"mime"
	"net/http"
	"net/url"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agiraph/agiraph/hooks"
	"github.com/agiraph/agiraph/internal/osfile"
	"github.com/agiraph/agiraph/nodes"
	"github.com/agiraph/agiraph/nodes/bus"
	"github.com/agiraph/agiraph/nodes/eventlog"
	"github.com/agiraph/agiraph/nodes/memory"
	"github.com/agiraph/agiraph/nodes/workspace"
	"github.com/agiraph/agiraph/server/host"
	"github.com/agiraph/agiraph/server/ui"
)

func (s *Server) routes() {
	m := s.mux
	m.Handle("GET /{$}", ui.Handler())
	m.Handle("GET /ui/", ui.Handler())
	m.HandleFunc("GET /models", s.handleModels)
	m.HandleFunc("GET /info", s.handleInfo)
	m.Handle(mcpPath, s.mcpHandler())
	m.HandleFunc("POST /agents", s.handleCreate)
	m.HandleFunc("GET /agents", s.handleList)
	m.HandleFunc("GET /agents/{id}", s.handleGet)
	m.HandleFunc("DELETE /agents/{id}", s.forward(s.handleDelete))
	m.HandleFunc("POST /agents/{id}/runs", s.forward(s.withAgent(s.handleRun)))
	m.HandleFunc("POST /agents/{id}/stop", s.forward(s.withAgent(s.handleStop)))
	m.HandleFunc("POST /agents/{id}/pause", s.forward(s.withAgent(s.handlePause)))
	m.HandleFunc("POST /agents/{id}/resume", s.forward(s.withAgent(s.handleResume)))
	m.HandleFunc("POST /agents/{id}/budget", s.forward(s.withAgent(s.handleBudget)))
	m.HandleFunc("POST /agents/{id}/send", s.forward(s.withAgent(s.handleSend)))
	m.HandleFunc("POST /agents/{id}/nudge", s.forward(s.withAgent(s.handleSend)))
	m.HandleFunc("POST /agents/{id}/respond", s.forward(s.withAgent(s.handleRespond)))
	m.HandleFunc("GET /agents/{id}/conversation", s.withAgent(s.handleConversation))
	m.HandleFunc("GET /agents/{id}/board", s.withAgent(s.handleBoard))
	// What is read from the agent's folder is read where its squad is open, in a fleet whose
	// replicas may not share their folders.
	m.HandleFunc("GET /agents/{id}/board/{node}", s.forward(s.withAgent(s.handleNode)))
	m.HandleFunc("POST /agents/{id}/board/{node}/retry", s.forward(s.withAgent(s.handleRetry)))
	m.HandleFunc("POST /agents/{id}/board/{node}/skip", s.forward(s.withAgent(s.handleSkip)))
	m.HandleFunc("GET /agents/{id}/workers", s.withAgent(s.handleWorkers))
	m.HandleFunc("GET /agents/{id}/workspace", s.forward(s.withAgent(s.handleWorkspace)))
	m.HandleFunc("GET /agents/{id}/workspace/{path...}", s.forward(s.withAgent(s.handleWorkspace)))
	m.HandleFunc("GET /agents/{id}/memory", s.forward(s.withAgent(s.handleMemoryList)))
	m.HandleFunc("GET /agents/{id}/memory/{path...}", s.forward(s.withAgent(s.handleMemoryRead)))
	m.HandleFunc("POST /agents/{id}/memory/search", s.forward(s.withAgent(s.handleMemorySearch)))
	m.HandleFunc("GET /agents/{id}/runs/{run}/steps", s.forward(s.withAgent(s.handleSteps)))
	m.HandleFunc("GET /agents/{id}/runs/{run}/steps/{n}", s.forward(s.withAgent(s.handleStep)))
	m.HandleFunc("POST /agents/{id}/runs/{run}/fork", s.forward(s.withAgent(s.handleFork)))
	m.HandleFunc("GET /agents/{id}/runs/{run}/cassette", s.forward(s.withAgent(s.handleCassette)))
	m.HandleFunc("GET /agents/{id}/events", s.withAgent(s.handleEvents))
	m.HandleFunc("GET /agents/{id}/events/stream", s.forward(s.withAgent(s.handleStream)))
	m.HandleFunc("GET "+A2APath+"/{id}/.well-known/agent-card.json", func(w http.ResponseWriter, r *http.Request) {
		s.a2aOf(r.PathValue("id")).ServeCard(w, r, r.PathValue("id"))
	})
	rpc := s.forward(func(w http.ResponseWriter, r *http.Request) { s.a2a.ServeRPC(w, r, r.PathValue("id")) })
	m.HandleFunc("POST "+A2APath+"/{id}/{$}", func(w http.ResponseWriter, r *http.Request) {
		if g, ok := s.graphs[r.PathValue("id")]; ok { // a graph runs in every replica
			g.ServeRPC(w, r, r.PathValue("id"))
			return
		}
		rpc(w, r)
	})
	if id := s.cfg.a2aAgent; id != "" {
		m.HandleFunc("GET /.well-known/agent-card.json", func(w http.ResponseWriter, r *http.Request) { s.a2aOf(id).ServeCard(w, r, id) })
	}
	if s.cfg.lg != nil {
		m.Handle(LangGraphPath+"/", http.StripPrefix(LangGraphPath, s.cfg.lg))
	}
}

// writeJSON answers v with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

// writeError answers {"error": msg} with status. A message over maxMessage bytes is cut there:
// what a request sent is never echoed whole.
func writeError(w http.ResponseWriter, status int, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if len(msg) > maxMessage {
		msg = fmt.Sprintf("%s… (%d bytes more)", strings.ToValidUTF8(msg[:maxMessage], ""), len(msg)-maxMessage)
	}
	writeJSON(w, status, map[string]string{"error": msg})
}

// maxMessage bounds an error message, in bytes.
const maxMessage = 4 << 10

// maxShown bounds what shown shows of a value, in bytes.
const maxShown = 100

// shown quotes s, a value a request sent, for an error message: up to maxShown bytes of it.
func shown(s string) string {
	if len(s) <= maxShown {
		return strconv.Quote(s)
	}
	return fmt.Sprintf("%q… (%d bytes)", strings.ToValidUTF8(s[:maxShown], ""), len(s))
}

// serveMux serves r by the routes. A request for none (404), or with a method its route does
// not take (405), is answered in JSON as every error is; so is one whose {id} no agent can have
// (404), without its id echoed whole.
func (s *Server) serveMux(w http.ResponseWriter, r *http.Request) {
	if rest, ok := strings.CutPrefix(r.URL.EscapedPath(), "/agents/"); ok {
		seg, _, _ := strings.Cut(rest, "/")
		id, err := url.PathUnescape(seg)
		if err == nil {
			err = workspace.ValidID(id)
		}
		if err != nil {
			writeError(w, http.StatusNotFound, "no agent: %s", strings.TrimPrefix(err.Error(), "workspace: "))
			return
		}
	}
	h, pattern := s.mux.Handler(r)
	if pattern != "" {
		s.mux.ServeHTTP(w, r)
		return
	}
	rec := &recorder{header: http.Header{}, status: http.StatusOK}
	h.ServeHTTP(rec, r) // the mux's own answer: its status, and the methods allowed
	if allow := rec.header.Get("Allow"); rec.status == http.StatusMethodNotAllowed && allow != "" {
		w.Header().Set("Allow", allow)
		writeError(w, http.StatusMethodNotAllowed, "%s %s: the method is not allowed here (allowed: %s)", r.Method, shown(r.URL.Path), allow)
		return
	}
	writeError(w, http.StatusNotFound, "%s %s: no such route (the routes are listed in the documentation of package server)", r.Method, shown(r.URL.Path))
}

// decode reads the request's JSON body into v. An empty body is allowed when optional; the
// error names what is wrong (a syntax error, an unknown field, a field of the wrong type, a body
// over the size limit).
func (s *Server) decode(w http.ResponseWriter, r *http.Request, v any, optional bool) bool {
	limit := int64(s.cfg.maxText)*6 + 4096 // a text at the limit, even escaped, fits
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, limit))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil && dec.More() {
		err = errors.New("more than one JSON value")
	}
	var tooLarge *http.MaxBytesError
	switch {
	case err == nil:
		return true
	case errors.As(err, &tooLarge):
		writeError(w, http.StatusRequestEntityTooLarge, "bad body: it is over %d bytes (the text limit is %d bytes; server.WithMaxText)", limit, s.cfg.maxText)
	case errors.Is(err, io.EOF) && optional:
		return true
	case errors.Is(err, io.EOF):
		writeError(w, http.StatusBadRequest, "bad body: it is empty; want a JSON object")
	default:
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			writeError(w, http.StatusBadRequest, "bad body: field %q must be a %s, not a %s", te.Field, te.Type, te.Value)
		} else {
			writeError(w, http.StatusBadRequest, "bad body: %v", err)
		}
	}
	return false
}

// withAgent looks up the agent of the request's {id}, once it is set up; a damaged agent answers
// 409 naming its damage (only its summary is served, by GET /agents/{id}).
func (s *Server) withAgent(h func(http.ResponseWriter, *http.Request, *host.Agent)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		a, err := s.host.Agent(r.Context(), r.PathValue("id"))
		if r.Context().Err() != nil {
			return
		}
		if err != nil {
			hostError(w, err)
			return
		}
		h(w, r, a)
	}
}

// hostError answers an error of the host with its status: 404 for what is not there, 409 for
// what conflicts with the agent's state, 503 for what may work once tried again.
func hostError(w http.ResponseWriter, err error) {
	status := http.StatusInternalServerError
	switch {
	case errors.Is(err, host.ErrInvalid):
		status = http.StatusBadRequest
	case errors.Is(err, host.ErrNotFound):
		status = http.StatusNotFound
	case errors.Is(err, host.ErrExists), errors.Is(err, host.ErrBusy), errors.Is(err, host.ErrElsewhere), errors.Is(err, host.ErrDamaged):
		status = http.StatusConflict
	case errors.Is(err, host.ErrClosed), errors.Is(err, host.ErrUnavailable):
		status = http.StatusServiceUnavailable
	}
	writeError(w, status, "%v", err)
}

// queryInt reads the query parameter name as an integer >= 0 (def when absent).
func queryInt(w http.ResponseWriter, r *http.Request, name string, def int64) (int64, bool) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, true
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		writeError(w, http.StatusBadRequest, "bad query parameter %s=%s: want a whole number >= 0", name, shown(v))
		return 0, false
	}
	return n, true
}

func (s *Server) handleCreate(w http.ResponseWriter, r *http.Request) {
	var req struct {
		ID        string        `json:"id"`
		Goal      string        `json:"goal"`
		Model     string        `json:"model"`
		Mode      string        `json:"mode"`
		Budget    nodes.Budget  `json:"budget"`
		Tools     []string      `json:"tools"`
		Approvals *hooks.Policy `json:"approvals"`
	}
	if !s.decode(w, r, &req, false) {
		return
	}
	if err := req.Budget.Check(); err != nil {
		writeError(w, http.StatusBadRequest, "bad field \"budget\": %s", strings.TrimPrefix(err.Error(), "nodes: "))
		return
	}
	if req.ID != "" {
		if err := workspace.ValidID(req.ID); err != nil {
			writeError(w, http.StatusBadRequest, "bad field \"id\": %s", strings.TrimPrefix(err.Error(), "workspace: "))
			return
		}
	}
	if !s.text(w, "goal", req.Goal) {
		return
	}
	if !s.modelAllowed(w, "model", req.Model) {
		return
	}
	switch nodes.Mode(req.Mode) {
	case "", nodes.Finite, nodes.Infinite:
	default:
		writeError(w, http.StatusBadRequest, "bad field \"mode\": %s; want \"finite\" or \"infinite\"", shown(req.Mode))
		return
	}
	if err := nodes.CheckTools(req.Tools); err != nil {
		writeError(w, http.StatusUnprocessableEntity, "bad field \"tools\": %s", strings.TrimPrefix(err.Error(), "nodes: "))
		return
	}
	opts := []host.CreateOption{host.WithAgentBudget(req.Budget), host.WithAgentTools(req.Tools...)}
	if req.Approvals != nil {
		opts = append(opts, host.WithAgentApprovals(*req.Approvals))
	}
	started, err := s.host.Create(req.ID, req.Goal, req.Model, nodes.Mode(req.Mode), opts...)
	if err != nil {
		hostError(w, err)
		return
	}
	writeJSON(w, http.StatusCreated, started)
}

func (s *Server) handleList(w http.ResponseWriter, r *http.Request) {
	sums, err := s.host.List()
	if err != nil {
		hostError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"agents": sums})
}

func (s *Server) handleGet(w http.ResponseWriter, r *http.Request) {
	sum, err := s.host.Summary(r.PathValue("id"))
	if err != nil {
		hostError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, sum)
}

func (s *Server) handleDelete(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if err := s.host.Delete(id); err != nil {
		hostError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"id": id, "deleted": true})
}

func (s *Server) handleRun(w http.ResponseWriter, r *http.Request, a *host.Agent) {
	var req struct {
		Goal   string `json:"goal"`
		Record bool   `json:"record"` // record the run into a cassette (GET …/runs/{run}/cassette)
	}
	if !s.decode(w, r, &req, false) {
		return
	}
	if !s.text(w, "goal", req.Goal) {
		return
	}
	run := a.Run
	if req.Record {
		run = a.RunRecorded
	}
	started, err := run(req.Goal)
	if err != nil {
		hostError(w, err)
		return
	}
	writeJSON(w, http.StatusAccepted, started)
}

// handleCassette answers the cassette of a recorded run, once it has ended (see package
// nodes/replay).
func (s *Server) handleCassette(w http.ResponseWriter, r *http.Request, a *host.Agent) {
	f, err := a.Cassette(r.PathValue("run"))
	if err != nil {
		hostError(w, err)
		return
	}
	defer func() { _ = f.Close() }() // read only
	data, err := io.ReadAll(f)
	if err != nil {
		writeError(w, http.StatusInternalServerError, "agent %q: the cassette of run %q: %v", a.ID(), r.PathValue("run"), err)
		return
	}
	if s.token != "" { // the recording removed the API keys; a model or a tool may have met the token
		data = bytes.ReplaceAll(data, []byte(s.token), []byte("[REDACTED]"))
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.Header().Set("Content-Disposition", fmt.Sprintf("attachment; filename=%q", r.PathValue("run")+".cassette"))
	_, _ = w.Write(data)
}

func (s *Server) handleResume(w http.ResponseWriter, r *http.Request, a *host.Agent) {
	var req struct {
		Run string `json:"run"`
	}
	if !s.decode(w, r, &req, true) {
		return
	}
	if req.Run == "" {
		var status string
		status, req.Run = a.State()
		switch {
		case req.Run == "":
			writeError(w, http.StatusConflict, "agent %q has no run to resume: %s", a.ID(), nextStep(a.ID(), host.StatusIdle))
			return
		case status == host.StatusComplete:
			writeError(w, http.StatusConflict, "agent %q: nothing to resume: %s", a.ID(), nextStep(a.ID(), status))
			return
		}
	} else if err := workspace.ValidID(req.Run); err != nil {
		writeError(w, http.StatusBadRequest, "bad field \"run\": %s", strings.TrimPrefix(err.Error(), "workspace: "))
		return
	}
	started, err := a.Resume(req.Run)
	if err != nil {
		hostError(w, err)
		return
	}
	writeJSON(w, http.StatusAccepted, started)
}

// handleBudget sets the budget of a run of the agent, its last by default.
func (s *Server) handleBudget(w http.ResponseWriter, r *http.Request, a *host.Agent) {
	var req struct {
		Run string `json:"run"`
		nodes.Budget
	}
	if !s.decode(w, r, &req, false) {
		return
	}
	run, err := a.SetBudget(r.Context(), req.Run, req.Budget)
	if err != nil {
		hostError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"run": run, "budget": req.Budget})
}

// nextStep says what can be done with agent id, whose run is not in progress (or queued, or
// starting or ending), by its status.
func nextStep(id, status string) string {
	verb := func(v string) string { return "POST /agents/" + id + "/" + v }
	switch status {
	case host.StatusPaused, host.StatusInterrupted:
		return fmt.Sprintf("its last run is %s; %s continues it", status, verb("resume"))
	case host.StatusOverBudget:
		return fmt.Sprintf("its last run reached a limit of its budget; %s raises it, then %s continues the run", verb("budget"), verb("resume"))
	case host.StatusFailed:
		return fmt.Sprintf("its last run failed; %s continues it, %s starts another", verb("resume"), verb("runs"))
	case host.StatusComplete:
		return fmt.Sprintf("its last run is completed; a message to the coordinator (%s) starts a follow-up run, which keeps the agent's memory, or %s starts another", verb("send"), verb("runs"))
	case host.StatusQueued:
		return fmt.Sprintf("its run is queued, waiting for a place among the runs in progress (host.WithMaxRuns): it takes this once it is working; %s pauses it", verb("pause"))
	case host.StatusWorking, host.StatusWaiting:
		return "its run is starting or ending; try again in a moment"
	default:
		return fmt.Sprintf("it has no run yet; a message to the coordinator (%s) or %s starts one", verb("send"), verb("runs"))
	}
}

// runError answers an error of a squad method that acts on the run in progress.
func runError(w http.ResponseWriter, a *host.Agent, err error) {
	switch {
	case errors.Is(err, nodes.ErrNoRun):
		status, _ := a.State()
		writeError(w, http.StatusConflict, "agent %q has no run in progress: %s", a.ID(), nextStep(a.ID(), status))
	case errors.Is(err, nodes.ErrNoNode):
		writeError(w, http.StatusNotFound, "agent %q: %s", a.ID(), strings.TrimPrefix(err.Error(), "nodes: "))
	case errors.Is(err, hooks.ErrBadVerdict):
		writeError(w, http.StatusBadRequest, "agent %q: %s", a.ID(), strings.TrimPrefix(err.Error(), "hooks: "))
	case errors.Is(err, nodes.ErrNoQuestion), errors.Is(err, nodes.ErrNodeState):
		writeError(w, http.StatusConflict, "agent %q: %s", a.ID(), strings.TrimPrefix(err.Error(), "nodes: "))
	case errors.Is(err, host.ErrUnavailable):
		writeError(w, http.StatusServiceUnavailable, "agent %q: %s (an I/O failure: nothing was done; try again once the disk is fixed)", a.ID(), strings.TrimPrefix(err.Error(), "nodes: "))
	case strings.Contains(err.Error(), "no worker"):
		writeError(w, http.StatusNotFound, "agent %q: %s", a.ID(), strings.TrimPrefix(err.Error(), "nodes: "))
	default:
		writeError(w, http.StatusBadRequest, "agent %q: %s", a.ID(), strings.TrimPrefix(err.Error(), "nodes: "))
	}
}

func (s *Server) handleStop(w http.ResponseWriter, r *http.Request, a *host.Agent) {
	if err := a.Stop(r.Context()); err != nil {
		runError(w, a, err)
		return
	}
	writeJSON(w, http.StatusOK, a.Summary())
}

func (s *Server) handlePause(w http.ResponseWriter, r *http.Request, a *host.Agent) {
	if err := a.Pause(r.Context()); err != nil {
		runError(w, a, err)
		return
	}
	writeJSON(w, http.StatusOK, a.Summary())
}

func (s *Server) handleSend(w http.ResponseWriter, r *http.Request, a *host.Agent) {
	var req struct {
		To      string `json:"to"`
		Message string `json:"message"`
	}
	if !s.decode(w, r, &req, false) {
		return
	}
	if !s.text(w, "message", req.Message) {
		return
	}
	to := req.To
	if to == "" {
		to = bus.Coordinator
	}
	err := a.Send(r.Context(), to, req.Message)
	if errors.Is(err, nodes.ErrNoRun) && strings.EqualFold(to, bus.Coordinator) && s.followUp(w, a, req.Message) {
		return
	}
	if err != nil {
		runError(w, a, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "sent", "to": to})
}

// followUp starts a run toward a message to the coordinator of an agent with no run in progress
// that has never run, or whose last run completed: a follow-up, which keeps the agent's memory.
// It reports whether it answered: false for an agent in another state.
func (s *Server) followUp(w http.ResponseWriter, a *host.Agent, message string) bool {
	if status, _ := a.State(); status != host.StatusComplete && status != host.StatusIdle && status != "" {
		return false
	}
	started, err := a.Run(message)
	if err != nil {
		hostError(w, err)
		return true
	}
	writeJSON(w, http.StatusAccepted, started)
	return true
}

func (s *Server) handleRespond(w http.ResponseWriter, r *http.Request, a *host.Agent) {
	var req struct {
		Worker   string         `json:"worker"`
		Response string         `json:"response"`
		Verdict  *hooks.Verdict `json:"verdict"`
	}
	if !s.decode(w, r, &req, false) {
		return
	}
	answer := func() (string, error) { return a.Answer(r.Context(), req.Worker, req.Response) }
	if v := req.Verdict; v != nil {
		switch {
		case req.Response != "":
			writeError(w, http.StatusBadRequest, "give either a response or a verdict, not both")
			return
		case !v.Approve && v.Args != nil:
			writeError(w, http.StatusBadRequest, "bad field \"verdict\": args are for a call approved with them; a rejection (approve false) takes a reason")
			return
		}
		req.Response = v.Answer()
		answer = func() (string, error) { return a.AnswerVerdict(r.Context(), req.Worker, *v) }
	}
	if !s.text(w, "response", req.Response) {
		return
	}
	to, err := answer()
	if err != nil {
		runError(w, a, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "delivered", "worker": to})
}

func (s *Server) handleConversation(w http.ResponseWriter, r *http.Request, a *host.Agent) {
	after, ok := queryInt(w, r, "after", 0)
	if !ok {
		return
	}
	limit, ok := queryInt(w, r, "limit", 0)
	if !ok {
		return
	}
	entries, total, err := a.Conversation(int(after), int(limit))
	if err != nil {
		writeError(w, http.StatusInternalServerError, "agent %q: %v", a.ID(), err)
		return
	}
	if entries == nil {
		entries = []nodes.Entry{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"entries": entries, "total": total})
}

// boardOf answers the agent's board, or false after answering an error.
func boardOf(w http.ResponseWriter, a *host.Agent) (nodes.Snapshot, string, bool) {
	b, run, err := a.Board()
	if errors.Is(err, host.ErrLinked) {
		writeError(w, http.StatusForbidden, "agent %q: board of run %q: %v", a.ID(), run, err)
		return b, run, false
	}
	if err != nil {
		writeError(w, http.StatusInternalServerError, "agent %q: board of run %q: %v", a.ID(), run, err)
		return b, run, false
	}
	if b.Nodes == nil {
		b.Nodes = []nodes.Node{}
	}
	if b.Workers == nil {
		b.Workers = []nodes.Worker{}
	}
	if b.Stages == nil {
		b.Stages = []nodes.Stage{}
	}
	return b, run, true
}

// folderError answers an error of OpenRun, or of another folder of the agent: 404 for one not
// made yet, 403 for one the server will not serve.
func folderError(w http.ResponseWriter, a *host.Agent, err error) {
	if errors.Is(err, fs.ErrNotExist) {
		writeError(w, http.StatusNotFound, "agent %q: the folder does not exist yet", a.ID())
		return
	}
	writeError(w, http.StatusForbidden, "agent %q: %v", a.ID(), err)
}

func (s *Server) handleBoard(w http.ResponseWriter, r *http.Request, a *host.Agent) {
	b, run, ok := boardOf(w, a)
	if !ok {
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"run": run, "stage": b.Stage, "stages": b.Stages, "nodes": b.Nodes, "workers": b.Workers})
}

func (s *Server) handleWorkers(w http.ResponseWriter, r *http.Request, a *host.Agent) {
	b, run, ok := boardOf(w, a)
	if !ok {
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"run": run, "workers": b.Workers})
}

func (s *Server) handleNode(w http.ResponseWriter, r *http.Request, a *host.Agent) {
	b, run, ok := boardOf(w, a)
	if !ok {
		return
	}
	id := r.PathValue("node")
	n, found := b.Node(id)
	if !found {
		writeError(w, http.StatusNotFound, "agent %q: no node %s on the board of run %q", a.ID(), shown(id), run)
		return
	}
	root, err := a.OpenRun(run)
	if err != nil {
		folderError(w, a, err)
		return
	}
	defer root.Close()
	dir := workspace.Run(".").Node(n.ID) // relative to the run's root
	spec, err := osfile.ReadIn(root, workspace.Spec(dir))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		writeError(w, http.StatusForbidden, "agent %q: node %q: %v", a.ID(), id, err)
		return
	}
	published := []string{}
	_ = fs.WalkDir(root.FS(), dir.Published(), func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			published = append(published, strings.TrimPrefix(p, dir.Published()+"/"))
		}
		return nil
	})
	if len(published) == 0 && len(n.Published) > 0 {
		published = slices.Clone(n.Published)
	}
	writeJSON(w, http.StatusOK, map[string]any{"run": run, "node": n, "spec": string(spec), "published": published})
}

func (s *Server) handleRetry(w http.ResponseWriter, r *http.Request, a *host.Agent) {
	var req struct{}
	if !s.decode(w, r, &req, true) {
		return
	}
	n, err := a.Retry(r.Context(), r.PathValue("node"))
	if err != nil {
		runError(w, a, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"node": n})
}

func (s *Server) handleSkip(w http.ResponseWriter, r *http.Request, a *host.Agent) {
	var req struct {
		Note string `json:"note"`
	}
	if !s.decode(w, r, &req, true) {
		return
	}
	if req.Note != "" && !s.text(w, "note", req.Note) {
		return
	}
	n, err := a.Skip(r.Context(), r.PathValue("node"), req.Note)
	if err != nil {
		runError(w, a, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"node": n})
}

// maxPath bounds a path of a request, in bytes.
const maxPath = 4096

// cleanPath checks a path of a request: relative, at most maxPath bytes, and not leading out
// with "..". It returns the path cleaned ("." for the root).
func cleanPath(p string) (string, error) {
	if p == "" {
		return ".", nil
	}
	if len(p) > maxPath {
		return "", fmt.Errorf("path %s is too long: at most %d bytes", shown(p), maxPath)
	}
	if strings.HasPrefix(p, "/") || strings.HasPrefix(p, `\`) || filepath.IsAbs(p) || filepath.VolumeName(p) != "" {
		return "", fmt.Errorf("path %s is absolute; give a path relative to the folder", shown(p))
	}
	for _, e := range strings.FieldsFunc(p, func(c rune) bool { return c == '/' || c == '\\' }) {
		if e == ".." {
			return "", fmt.Errorf("path %s leads outside the folder", shown(p))
		}
	}
	return path.Clean(p), nil
}

// entry is one entry of a directory listing.
type entry struct {
	Name string `json:"name"`
	Dir  bool   `json:"dir"`
	Size int64  `json:"size"`
}

func (s *Server) handleWorkspace(w http.ResponseWriter, r *http.Request, a *host.Agent) {
	_, run := a.State()
	if run == "" {
		writeError(w, http.StatusNotFound, "agent %q has no run yet", a.ID())
		return
	}
	p, err := cleanPath(r.PathValue("path"))
	if err != nil {
		writeError(w, http.StatusBadRequest, "%v", err)
		return
	}
	root, err := a.OpenRun(run)
	if err != nil {
		folderError(w, a, err)
		return
	}
	defer root.Close()
	fileError := func(err error) {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		if errors.Is(err, fs.ErrNotExist) {
			writeError(w, http.StatusNotFound, "agent %q: no file %q in run %q", a.ID(), p, run)
		} else {
			writeError(w, http.StatusForbidden, "agent %q: %q in run %q: %v", a.ID(), p, run, err)
		}
	}
	st, err := root.Stat(p)
	if err != nil {
		fileError(err)
		return
	}
	if st.IsDir() {
		f, err := root.Open(p)
		if err != nil {
			fileError(err)
			return
		}
		des, err := f.ReadDir(-1)
		_ = f.Close() // read only
		if err != nil {
			fileError(err)
			return
		}
		entries := []entry{}
		for _, d := range des {
			if workspace.Internal(d.Name()) {
				continue
			}
			e := entry{Name: d.Name(), Dir: d.IsDir()}
			if info, err := d.Info(); err == nil && !d.IsDir() {
				e.Size = info.Size()
			}
			entries = append(entries, e)
		}
		slices.SortFunc(entries, func(x, y entry) int { return strings.Compare(x.Name, y.Name) })
		writeJSON(w, http.StatusOK, map[string]any{"run": run, "path": p, "entries": entries})
		return
	}
	data, err := osfile.ReadIn(root, p)
	if err != nil {
		fileError(err)
		return
	}
	if raw, _ := strconv.ParseBool(r.URL.Query().Get("raw")); raw {
		writeFile(w, p, data)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"run": run, "path": p, "content": string(data)})
}

// passiveImages are the image types a browser shows without running anything (SVG, which can
// hold script, is not among them).
var passiveImages = []string{"image/png", "image/jpeg", "image/gif", "image/webp", "image/bmp", "image/x-icon"}

// writeFile answers the bytes of the file name, which a model may have written, as a type that
// is never active content: text as text/plain (HTML, XML and SVG too), an image of a passive
// type as itself, anything else as a download. The guard made the answer inert besides.
func writeFile(w http.ResponseWriter, name string, data []byte) {
	ct := http.DetectContentType(data)
	switch {
	case strings.HasPrefix(ct, "text/plain"):
	case strings.HasPrefix(ct, "text/"):
		ct = "text/plain; charset=utf-8"
	case slices.Contains(passiveImages, ct):
	default:
		ct = "application/octet-stream"
		w.Header().Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": path.Base(name)}))
	}
	w.Header().Set("Content-Type", ct)
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(data)
}

func (s *Server) handleMemoryList(w http.ResponseWriter, r *http.Request, a *host.Agent) {
	var files []string
	err := a.Memory(func(m *memory.Store) (err error) {
		files, err = m.List()
		return err
	})
	if err != nil {
		writeError(w, http.StatusForbidden, "agent %q: %s", a.ID(), strings.TrimPrefix(err.Error(), "memory: "))
		return
	}
	if files == nil {
		files = []string{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"files": files})
}

func (s *Server) handleMemoryRead(w http.ResponseWriter, r *http.Request, a *host.Agent) {
	p := r.PathValue("path")
	if p == "" {
		s.handleMemoryList(w, r, a)
		return
	}
	if _, err := cleanPath(p); err != nil {
		writeError(w, http.StatusBadRequest, "%v", err)
		return
	}
	var content string
	err := a.Memory(func(m *memory.Store) (err error) {
		content, err = m.Read(p)
		return err
	})
	if err != nil {
		msg := strings.TrimPrefix(err.Error(), "memory: ")
		if strings.Contains(msg, "does not exist") {
			writeError(w, http.StatusNotFound, "agent %q: memory %s", a.ID(), msg)
		} else {
			writeError(w, http.StatusBadRequest, "agent %q: memory %s", a.ID(), msg)
		}
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"path": p, "content": content})
}

func (s *Server) handleMemorySearch(w http.ResponseWriter, r *http.Request, a *host.Agent) {
	var req struct {
		Query string `json:"query"`
		Limit int    `json:"limit"`
	}
	if !s.decode(w, r, &req, false) {
		return
	}
	if !s.text(w, "query", req.Query) {
		return
	}
	var res string
	err := a.Memory(func(m *memory.Store) (err error) {
		res, err = m.Search(req.Query, req.Limit)
		return err
	})
	if err != nil {
		writeError(w, http.StatusBadRequest, "bad field \"query\": %s", strings.TrimPrefix(err.Error(), "memory: "))
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"result": res})
}

func (s *Server) handleEvents(w http.ResponseWriter, r *http.Request, a *host.Agent) {
	after, ok := queryInt(w, r, "after", 0)
	if !ok {
		return
	}
	limit, ok := queryInt(w, r, "limit", 0)
	if !ok {
		return
	}
	evs, err := a.Events(after, int(limit))
	if err != nil {
		writeError(w, http.StatusInternalServerError, "agent %q: %v", a.ID(), err)
		return
	}
	if evs == nil {
		writeJSON(w, http.StatusOK, map[string]any{"events": []any{}})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"events": evs})
}

// keepAlive is how often an idle event stream sends a comment, so a gone client is noticed.
const keepAlive = 15 * time.Second

func (s *Server) handleStream(w http.ResponseWriter, r *http.Request, a *host.Agent) {
	after, ok := queryInt(w, r, "after", 0)
	if !ok {
		return
	}
	if id := r.Header.Get("Last-Event-ID"); id != "" {
		n, err := strconv.ParseInt(id, 10, 64)
		if err != nil || n < 0 {
			writeError(w, http.StatusBadRequest, "bad header Last-Event-ID %s: want a whole number >= 0", shown(id))
			return
		}
		after = n
	}
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	if err := rc.Flush(); err != nil {
		return
	}
	// A logged event carries its Seq as its id; a live one (a text.delta, Seq 0) none, so the
	// Last-Event-ID of a client that reconnects always names a logged event.
	send := func(e eventlog.Event) bool {
		data, err := json.Marshal(e)
		if err != nil {
			return true
		}
		if e.Seq == 0 {
			_, err = fmt.Fprintf(w, "event: %s\ndata: %s\n\n", e.Type, data)
			return err == nil
		}
		_, err = fmt.Fprintf(w, "id: %d\nevent: %s\ndata: %s\n\n", e.Seq, e.Type, data)
		return err == nil
	}
	tick := time.NewTicker(keepAlive)
	defer tick.Stop()
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel() // however the stream ends, following ends
	events := a.Follow(ctx, after)
	for {
		select {
		case e, ok := <-events:
			if !ok || !send(e) {
				return
			}
		case <-tick.C:
			if _, err := io.WriteString(w, ": keep-alive\n\n"); err != nil {
				return
			}
		}
		if err := rc.Flush(); err != nil {
			return
		}
	}
}

// text checks a request's text field: given (400 when blank) and within the size limit (413).
// It reports whether the field is fine, after answering when it is not.
func (s *Server) text(w http.ResponseWriter, field, value string) bool {
	switch {
	case strings.TrimSpace(value) == "":
		writeError(w, http.StatusBadRequest, "bad field %q: it is required", field)
	case len(value) > s.cfg.maxText:
		writeError(w, http.StatusRequestEntityTooLarge, "bad field %q: it is %d bytes, over the limit of %d bytes (server.WithMaxText)", field, len(value), s.cfg.maxText)
	default:
		return true
	}
	return false
}

// handleInfo says what the server serves beside its agents: the path of the LangGraph API
// ({"langgraph": "/langgraph"}; absent when it is not served), for a client such as the web UI
// to show what is there without asking a route that is not.
func (s *Server) handleInfo(w http.ResponseWriter, _ *http.Request) {
	info := map[string]string{}
	if s.cfg.lg != nil {
		info["langgraph"] = LangGraphPath
	}
	writeJSON(w, http.StatusOK, info)
}

// modelAllowed checks a request's model field: empty (the server's own) or one of WithModels
// (403 otherwise). It reports whether the model is allowed, after answering when it is not.
func (s *Server) modelAllowed(w http.ResponseWriter, field, model string) bool {
	if model == "" || slices.Contains(s.cfg.models, model) {
		return true
	}
	allowed := "none: agents use the server's own models"
	if len(s.cfg.models) > 0 {
		allowed = strings.Join(s.cfg.models, ", ")
	}
	writeError(w, http.StatusForbidden, "bad field %q: %s is not allowed on this server (allowed: %s; server.WithModels)", field, shown(model), allowed)
	return false
}

// handleModels lists the models a request may name for a new agent; the first entry, "", is
// the server's own choice.
func (s *Server) handleModels(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"models": append([]string{""}, s.cfg.models...)})
}
