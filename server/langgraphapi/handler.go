package langgraphapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/agiraph/agiraph/checkpoint"
	"github.com/agiraph/agiraph/graph"
	"github.com/agiraph/agiraph/nodes/store"
	"github.com/agiraph/agiraph/nodes/triggers"
)

// Handler serves the LangGraph API for the graphs registered with Register. Create it with New;
// Close it to stop its runs.
type Handler struct {
	rec  records
	mux  *http.ServeMux
	ctx  context.Context // the runs' context, cancelled by Close
	stop context.CancelCauseFunc
	wg   sync.WaitGroup

	mu     sync.Mutex
	graphs map[string]entry   // by graph ID
	lanes  map[string]*lane   // by thread ID: the runs in flight, the running one first
	logs   map[string]*runLog // by run ID
	ended  []string           // runs whose logs are kept after they ended, oldest first
	queued chan struct{}      // closed (and made anew) when a run is queued

	writeMu sync.Mutex // serializes the changes of assistants and crons, each read then written
	clock   triggers.Clock
	alarm   *triggers.Alarm // by cron ID: when each cron runs next
}

// Option configures a Handler.
type Option func(*Handler)

// WithClock makes crons run by clock rather than the system's (tests move a
// triggers.FakeClock).
func WithClock(clock triggers.Clock) Option { return func(h *Handler) { h.clock = clock } }

// keptLogs is how many ended runs keep their events for clients that join late.
const keptLogs = 256

// New returns a handler that keeps the API's records in st. st is not closed by Close.
func New(st store.Store, opts ...Option) *Handler {
	ctx, stop := context.WithCancelCause(context.Background())
	h := &Handler{
		rec: records{st}, mux: http.NewServeMux(), ctx: ctx, stop: stop,
		graphs: map[string]entry{}, lanes: map[string]*lane{}, logs: map[string]*runLog{},
		clock: triggers.RealClock(), queued: make(chan struct{}),
	}
	for _, o := range opts {
		o(h)
	}
	h.alarm = triggers.NewAlarm(h.clock, h.fire)
	h.routes()
	return h
}

// Register serves g as the graph graphID, with the assistant of the same ID. Its threads' state
// lives in saver (the checkpointer g's runs use). Runs that a stopped handler left pending or
// running on the same store start or continue once the graphs of all the runs of their thread are
// registered.
//
// States and inputs travel as the JSON of S: a run's input, a command's update and a state update
// are decoded into S (fields S does not have are refused), and states are encoded from S.
func Register[S any](h *Handler, graphID string, g *graph.Compiled[S], saver checkpoint.Saver) error {
	switch {
	case graphID == "":
		return errors.New("langgraphapi: Register: empty graph ID")
	case g == nil || saver == nil:
		return fmt.Errorf("langgraphapi: Register %q: the graph and its checkpointer are needed", graphID)
	}
	if err := h.add(&typed[S]{graphID: graphID, g: g, cp: saver}); err != nil {
		return err
	}
	return h.restart(context.Background())
}

// add makes a graph served, with its assistant.
func (h *Handler) add(e entry) error {
	ctx := context.Background()
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, taken := h.graphs[e.id()]; taken {
		return fmt.Errorf("langgraphapi: Register: graph %q is registered already", e.id())
	}
	id := assistantID(e.id())
	found, err := h.rec.get(ctx, assistantKey(id), &assistant{})
	if err == nil && !found {
		now := time.Now().UTC()
		err = h.putAssistant(ctx, assistant{
			AssistantID: id, GraphID: e.id(), Name: e.id(),
			Config: map[string]any{}, Context: map[string]any{}, Metadata: map[string]any{"created_by": "system"},
			Version: 1, CreatedAt: now, UpdatedAt: now,
		}, true)
	}
	if err != nil {
		return fmt.Errorf("langgraphapi: Register %q: %w", e.id(), err)
	}
	h.graphs[e.id()] = e
	return nil
}

// assistantID is the UUID of a graph's assistant, derived from the graph ID as LangGraph does.
func assistantID(graphID string) string {
	return uuid.NewSHA1(uuid.NameSpaceURL, []byte(graphID)).String()
}

// Close stops the handler's runs and waits for them. A run stopped this way stays running in the
// records: a handler opened later on the same store continues it when its graph is registered.
func (h *Handler) Close() error {
	h.alarm.Close()
	h.stop(errShutdown)
	h.wg.Wait()
	return nil
}

// ServeHTTP serves the API.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.mux.ServeHTTP(w, r) }

func (h *Handler) routes() {
	for pattern, fn := range map[string]func(http.ResponseWriter, *http.Request) error{
		"POST /assistants/search":                  h.searchAssistants,
		"GET /assistants/{id}":                     h.getAssistant,
		"POST /assistants":                         h.createAssistant,
		"PATCH /assistants/{id}":                   h.patchAssistant,
		"DELETE /assistants/{id}":                  h.deleteAssistant,
		"POST /assistants/{id}/versions":           h.assistantVersions,
		"POST /assistants/{id}/latest":             h.setLatestAssistant,
		"POST /assistants/count":                   h.countAssistants,
		"POST /runs/crons":                         h.createCron,
		"POST /threads/{thread}/runs/crons":        h.createCron,
		"PATCH /runs/crons/{cron}":                 h.updateCron,
		"DELETE /runs/crons/{cron}":                h.deleteCron,
		"POST /runs/crons/search":                  h.searchCrons,
		"POST /runs/crons/count":                   h.countCrons,
		"GET /assistants/{id}/graph":               h.getGraph,
		"GET /assistants/{id}/schemas":             h.getSchemas,
		"POST /threads":                            h.createThread,
		"POST /threads/search":                     h.searchThreads,
		"GET /threads/{thread}":                    h.getThread,
		"PATCH /threads/{thread}":                  h.patchThread,
		"DELETE /threads/{thread}":                 h.deleteThread,
		"POST /threads/{thread}/copy":              h.copyThread,
		"GET /threads/{thread}/state":              h.getState,
		"GET /threads/{thread}/state/{cp}":         h.getState,
		"POST /threads/{thread}/state/checkpoint":  h.getStateAt,
		"POST /threads/{thread}/state":             h.updateState,
		"PATCH /threads/{thread}/state":            h.patchState,
		"POST /threads/{thread}/history":           h.history,
		"GET /threads/{thread}/history":            h.history,
		"POST /threads/{thread}/runs":              h.createRun(modeBackground),
		"POST /threads/{thread}/runs/stream":       h.createRun(modeStream),
		"POST /threads/{thread}/runs/wait":         h.createRun(modeWait),
		"POST /runs":                               h.createRun(modeBackground),
		"POST /runs/stream":                        h.createRun(modeStream),
		"POST /runs/wait":                          h.createRun(modeWait),
		"GET /threads/{thread}/runs":               h.listRuns,
		"GET /threads/{thread}/runs/{run}":         h.getRun,
		"DELETE /threads/{thread}/runs/{run}":      h.deleteRun,
		"POST /threads/{thread}/runs/{run}/cancel": h.cancelRun,
		"GET /threads/{thread}/runs/{run}/join":    h.joinRun,
		"GET /threads/{thread}/runs/{run}/stream":  h.joinStream,
		"GET /runs/{run}/stream":                   h.joinStream,
		"GET /threads/{thread}/stream":             h.threadStream,
		"PUT /store/items":                         h.putItem,
		"GET /store/items":                         h.getItem,
		"DELETE /store/items":                      h.deleteItem,
		"POST /store/items/search":                 h.searchItems,
		"POST /store/namespaces":                   h.listNamespaces,
	} {
		h.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
			if err := fn(w, r); err != nil {
				writeError(w, r, err)
			}
		})
	}
}

// apiError is an error the API answers with its status.
type apiError struct {
	status int
	msg    string
}

func (e *apiError) Error() string { return e.msg }

func notFound(format string, args ...any) error {
	return &apiError{http.StatusNotFound, fmt.Sprintf(format, args...)}
}

func invalid(format string, args ...any) error {
	return &apiError{http.StatusUnprocessableEntity, fmt.Sprintf(format, args...)}
}

func conflict(format string, args ...any) error {
	return &apiError{http.StatusConflict, fmt.Sprintf(format, args...)}
}

// writeError answers err as the API does: {"detail": message} with the error's status, 500 for
// errors that are not the request's fault.
func writeError(w http.ResponseWriter, r *http.Request, err error) {
	status := http.StatusInternalServerError
	var ae *apiError
	if errors.As(err, &ae) {
		status = ae.status
	} else {
		slog.Error("langgraphapi", "method", r.Method, "path", r.URL.Path, "err", err)
	}
	msg := err.Error()
	if len(msg) > maxMessage { // what a request sent is never echoed whole
		msg = fmt.Sprintf("%s… (%d bytes more)", strings.ToValidUTF8(msg[:maxMessage], ""), len(msg)-maxMessage)
	}
	writeJSON(w, status, map[string]string{"detail": msg})
}

// maxMessage bounds an error message, in bytes.
const maxMessage = 4 << 10

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v) // the client went away
}

// readJSON decodes the request's body into v; an empty body leaves v as it is.
func readJSON(r *http.Request, v any) error {
	dec := json.NewDecoder(http.MaxBytesReader(nil, r.Body, 32<<20))
	if err := dec.Decode(v); err != nil && !errors.Is(err, io.EOF) {
		return invalid("the request's body is not the JSON expected: %v", err)
	}
	return nil
}

// page cuts a page of at most limit items (default 10) from offset.
func page[T any](items []T, limit, offset int) []T {
	if limit <= 0 {
		limit = 10
	}
	offset = min(max(offset, 0), len(items))
	return slices.Clone(items[offset:min(offset+limit, len(items))])
}

// contains reports whether every entry of want is in have, recursively for objects, as
// LangGraph's metadata filters match.
func contains(have, want any) bool {
	wm, ok := want.(map[string]any)
	if !ok {
		hb, _ := json.Marshal(have)
		wb, _ := json.Marshal(want)
		return string(hb) == string(wb)
	}
	hm, ok := asMap(have).(map[string]any)
	if !ok {
		return false
	}
	for k, v := range wm {
		hv, ok := hm[k]
		if !ok || !contains(hv, v) {
			return false
		}
	}
	return true
}

// asMap turns a value into its JSON form (maps, slices, numbers as float64).
func asMap(v any) any {
	if _, ok := v.(map[string]any); ok {
		return v
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	var out any
	_ = json.Unmarshal(b, &out) // it was just encoded
	return out
}
