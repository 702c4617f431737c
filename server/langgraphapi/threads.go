package langgraphapi

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/google/uuid"

	"github.com/agiraph/agiraph/checkpoint"
)

// graph returns the registered graph of a thread, nil when it has none (yet).
func (h *Handler) graphOf(t *thread) entry {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.graphs[t.graphID()]
}

// thread reads a thread's record.
func (h *Handler) thread(ctx context.Context, id string) (*thread, error) {
	t := &thread{}
	found, err := h.rec.get(ctx, threadKey(id), t)
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, notFound("no thread %q", id)
	}
	return t, nil
}

// view fills in a thread's values and pending interrupts from its graph.
func (h *Handler) view(ctx context.Context, t *thread) (*thread, error) {
	e := h.graphOf(t)
	t.Values, t.Interrupts = map[string]any{}, map[string][]interruptJSON{}
	if e == nil {
		return t, nil
	}
	st, err := e.state(ctx, t.ThreadID, "")
	if err != nil {
		return nil, err
	}
	t.Values = st.Values
	for _, task := range st.Tasks {
		if len(task.Interrupts) > 0 {
			t.Interrupts[task.ID] = task.Interrupts
		}
	}
	return t, nil
}

// writeThread answers a thread with its values and pending interrupts.
func (h *Handler) writeThread(ctx context.Context, w http.ResponseWriter, t *thread) error {
	t, err := h.view(ctx, t)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, t)
	return nil
}

func (h *Handler) createThread(w http.ResponseWriter, r *http.Request) error {
	var q struct {
		ThreadID   string          `json:"thread_id"`
		Metadata   map[string]any  `json:"metadata"`
		IfExists   string          `json:"if_exists"`
		Supersteps json.RawMessage `json:"supersteps"`
	}
	if err := readJSON(r, &q); err != nil {
		return err
	}
	if !isNull(q.Supersteps) {
		return invalid("supersteps: creating a thread from supersteps is not supported; update its state after creating it")
	}
	if q.IfExists != "" && q.IfExists != "raise" && q.IfExists != "do_nothing" {
		return invalid("if_exists: %q is neither raise nor do_nothing", q.IfExists)
	}
	if q.ThreadID == "" {
		q.ThreadID = newID()
	} else if _, err := uuid.Parse(q.ThreadID); err != nil {
		return invalid("thread_id: %q is not a UUID", q.ThreadID)
	}
	if q.Metadata == nil {
		q.Metadata = map[string]any{}
	}
	t, err := h.putThread(r.Context(), q.ThreadID, q.Metadata, q.IfExists == "do_nothing")
	if err != nil {
		return err
	}
	return h.writeThread(r.Context(), w, t)
}

// putThread creates a thread, or returns the one with that ID when keep is set (a conflict when
// not).
func (h *Handler) putThread(ctx context.Context, id string, metadata map[string]any, keep bool) (*thread, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	t := &thread{}
	found, err := h.rec.get(ctx, threadKey(id), t)
	switch {
	case err != nil:
		return nil, err
	case found && keep:
		return t, nil
	case found:
		return nil, conflict("thread %s exists already", id)
	}
	now := time.Now().UTC()
	t = &thread{ThreadID: id, CreatedAt: now, UpdatedAt: now, Metadata: metadata, Status: threadIdle, Config: map[string]any{}}
	return t, h.rec.put(ctx, threadKey(id), t)
}

func (h *Handler) getThread(w http.ResponseWriter, r *http.Request) error {
	t, err := h.thread(r.Context(), r.PathValue("thread"))
	if err != nil {
		return err
	}
	return h.writeThread(r.Context(), w, t)
}

func (h *Handler) patchThread(w http.ResponseWriter, r *http.Request) error {
	var q struct {
		Metadata map[string]any `json:"metadata"`
	}
	if err := readJSON(r, &q); err != nil {
		return err
	}
	h.mu.Lock()
	t, err := h.thread(r.Context(), r.PathValue("thread"))
	if err == nil {
		if t.Metadata == nil {
			t.Metadata = map[string]any{}
		}
		for k, v := range q.Metadata {
			t.Metadata[k] = v
		}
		t.UpdatedAt = time.Now().UTC()
		err = h.rec.put(r.Context(), threadKey(t.ThreadID), t)
	}
	h.mu.Unlock()
	if err != nil {
		return err
	}
	return h.writeThread(r.Context(), w, t)
}

func (h *Handler) deleteThread(w http.ResponseWriter, r *http.Request) error {
	t, err := h.thread(r.Context(), r.PathValue("thread"))
	if err != nil {
		return err
	}
	if err := h.removeThread(r.Context(), t); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// removeThread stops a thread's runs, then deletes its checkpoints, its runs and its record.
func (h *Handler) removeThread(ctx context.Context, t *thread) error {
	if err := h.stopRuns(ctx, t.ThreadID, errInterrupt); err != nil {
		return err
	}
	return h.dropThread(ctx, t.ThreadID, h.graphOf(t))
}

func (h *Handler) searchThreads(w http.ResponseWriter, r *http.Request) error {
	var q struct {
		Metadata  map[string]any `json:"metadata"`
		Values    map[string]any `json:"values"`
		IDs       []string       `json:"ids"`
		Status    string         `json:"status"`
		Limit     int            `json:"limit"`
		Offset    int            `json:"offset"`
		SortBy    string         `json:"sort_by"`
		SortOrder string         `json:"sort_order"`
	}
	if err := readJSON(r, &q); err != nil {
		return err
	}
	all, err := list[*thread](r.Context(), h.rec, threadPrefix)
	if err != nil {
		return err
	}
	var out []*thread
	for _, t := range all {
		if q.Status != "" && t.Status != q.Status || len(q.IDs) > 0 && !slices.Contains(q.IDs, t.ThreadID) ||
			q.Metadata != nil && !contains(t.Metadata, q.Metadata) {
			continue
		}
		if t, err = h.view(r.Context(), t); err != nil {
			return err
		}
		if q.Values != nil && !contains(t.Values, q.Values) {
			continue
		}
		out = append(out, t)
	}
	var key func(t *thread) string
	switch q.SortBy {
	case "", "created_at":
		key = func(t *thread) string { return t.CreatedAt.Format(time.RFC3339Nano) }
	case "updated_at":
		key = func(t *thread) string { return t.UpdatedAt.Format(time.RFC3339Nano) }
	case "thread_id":
		key = func(t *thread) string { return t.ThreadID }
	case "status":
		key = func(t *thread) string { return t.Status }
	default:
		return invalid("sort_by: cannot sort threads by %q", q.SortBy)
	}
	slices.SortStableFunc(out, func(a, b *thread) int {
		c := cmp.Compare(key(a), key(b))
		if q.SortOrder != "asc" {
			c = -c
		}
		return c
	})
	if out == nil {
		out = []*thread{}
	}
	writeJSON(w, http.StatusOK, page(out, q.Limit, q.Offset))
	return nil
}

func (h *Handler) copyThread(w http.ResponseWriter, r *http.Request) error {
	t, err := h.thread(r.Context(), r.PathValue("thread"))
	if err != nil {
		return err
	}
	now := time.Now().UTC()
	cp := &thread{ThreadID: newID(), CreatedAt: now, UpdatedAt: now, Metadata: t.Metadata, Status: threadIdle, Config: t.Config}
	if e := h.graphOf(t); e != nil {
		if err := e.copyThread(r.Context(), t.ThreadID, cp.ThreadID); err != nil {
			return err
		}
	}
	if err := h.rec.put(r.Context(), threadKey(cp.ThreadID), cp); err != nil {
		return err
	}
	return h.writeThread(r.Context(), w, cp)
}

// stateAt answers a thread's state at a checkpoint ("" for the latest).
func (h *Handler) stateAt(w http.ResponseWriter, r *http.Request, checkpointID string) error {
	t, err := h.thread(r.Context(), r.PathValue("thread"))
	if err != nil {
		return err
	}
	st := emptyState()
	if e := h.graphOf(t); e != nil {
		if st, err = e.state(r.Context(), t.ThreadID, checkpointID); err != nil {
			return err
		}
	} else if checkpointID != "" {
		return notFound("thread %s has no checkpoint %s", t.ThreadID, checkpointID)
	}
	writeJSON(w, http.StatusOK, st)
	return nil
}

func (h *Handler) getState(w http.ResponseWriter, r *http.Request) error {
	return h.stateAt(w, r, r.PathValue("cp"))
}

func (h *Handler) getStateAt(w http.ResponseWriter, r *http.Request) error {
	var q struct {
		Checkpoint checkpointRef `json:"checkpoint"`
	}
	if err := readJSON(r, &q); err != nil {
		return err
	}
	return h.stateAt(w, r, q.Checkpoint.CheckpointID)
}

// stateChange is what a change of a thread's state names: the checkpoint to change, by
// checkpoint_id or checkpoint's.
type stateChange struct {
	CheckpointID string         `json:"checkpoint_id"`
	Checkpoint   *checkpointRef `json:"checkpoint"`
}

// target returns the thread of r's path, its graph and the checkpoint c names ("" for the
// latest).
func (h *Handler) target(r *http.Request, c stateChange) (*thread, entry, string, error) {
	if c.Checkpoint != nil && c.CheckpointID == "" {
		c.CheckpointID = c.Checkpoint.CheckpointID
	}
	t, err := h.thread(r.Context(), r.PathValue("thread"))
	if err != nil {
		return nil, nil, "", err
	}
	e := h.graphOf(t)
	if e == nil {
		return nil, nil, "", invalid("thread %s has no graph yet: create it with a graph_id in its metadata, or run it first", t.ThreadID)
	}
	return t, e, c.CheckpointID, nil
}

func (h *Handler) updateState(w http.ResponseWriter, r *http.Request) error {
	var q struct {
		Values json.RawMessage `json:"values"`
		AsNode string          `json:"as_node"`
		stateChange
	}
	if err := readJSON(r, &q); err != nil {
		return err
	}
	t, e, cp, err := h.target(r, q.stateChange)
	if err != nil {
		return err
	}
	h.mu.Lock()
	busy := h.lanes[t.ThreadID] != nil
	h.mu.Unlock()
	if busy {
		return conflict("thread %s is busy: a run is in flight", t.ThreadID)
	}
	cfg, err := e.update(r.Context(), t.ThreadID, q.Values, q.AsNode, cp)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"checkpoint": refOf(cfg)})
	return nil
}

// maxPatch bounds the metadata a state patch sets, keys and values, in bytes: a checkpoint's
// metadata is read with every state of the thread's history.
const maxPatch = 64 << 10

// patchState merges metadata into that of the thread's latest state (or of the state at
// checkpoint_id), as the SDK's threads.patchState asks. Checkpoints keep text metadata: a value
// that is not a string is refused.
func (h *Handler) patchState(w http.ResponseWriter, r *http.Request) error {
	var q struct {
		Metadata map[string]any `json:"metadata"`
		stateChange
	}
	if err := readJSON(r, &q); err != nil {
		return err
	}
	if len(q.Metadata) == 0 {
		return invalid("metadata: give the keys to set")
	}
	meta := make(map[string]string, len(q.Metadata))
	size := 0
	for k, v := range q.Metadata {
		s, ok := v.(string)
		if !ok {
			b, _ := json.Marshal(v)
			return invalid("metadata %q: a state's metadata holds strings, not %s", k, b)
		}
		meta[k] = s
		size += len(k) + len(s)
	}
	if size > maxPatch {
		return &apiError{http.StatusRequestEntityTooLarge, fmt.Sprintf("metadata: %d bytes of keys and values, over the limit of %d a patch may set", size, maxPatch)}
	}
	t, e, cp, err := h.target(r, q.stateChange)
	if err != nil {
		return err
	}
	if err := e.patchMetadata(r.Context(), t.ThreadID, cp, meta); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (h *Handler) history(w http.ResponseWriter, r *http.Request) error {
	var q struct {
		Limit      int             `json:"limit"`
		Before     json.RawMessage `json:"before"`
		Metadata   map[string]any  `json:"metadata"`
		Checkpoint *checkpointRef  `json:"checkpoint"`
	}
	if r.Method == http.MethodGet {
		q.Limit, _ = strconv.Atoi(r.URL.Query().Get("limit"))
		if b := r.URL.Query().Get("before"); b != "" {
			q.Before, _ = json.Marshal(b)
		}
	} else if err := readJSON(r, &q); err != nil {
		return err
	}
	if q.Limit <= 0 {
		q.Limit = 10
	}
	t, err := h.thread(r.Context(), r.PathValue("thread"))
	if err != nil {
		return err
	}
	e := h.graphOf(t)
	if e == nil {
		writeJSON(w, http.StatusOK, []threadState{})
		return nil
	}
	filter := checkpoint.ListOptions{Before: checkpointIDOf(q.Before)}
	if q.Metadata == nil {
		filter.Limit = q.Limit
	}
	states, err := e.history(r.Context(), t.ThreadID, filter)
	if err != nil {
		return err
	}
	out := []threadState{}
	for _, st := range states {
		if q.Checkpoint != nil && q.Checkpoint.CheckpointID != "" && st.Checkpoint != nil && st.Checkpoint.CheckpointID > q.Checkpoint.CheckpointID {
			continue
		}
		if q.Metadata == nil || contains(st.Metadata, q.Metadata) {
			out = append(out, st)
		}
	}
	writeJSON(w, http.StatusOK, page(out, q.Limit, 0))
	return nil
}

// checkpointIDOf reads a checkpoint ID given as a string, a checkpoint ({checkpoint_id}) or a
// config ({configurable: {checkpoint_id}}).
func checkpointIDOf(raw json.RawMessage) string {
	if isNull(raw) {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var v struct {
		CheckpointID string `json:"checkpoint_id"`
		Configurable struct {
			CheckpointID string `json:"checkpoint_id"`
		} `json:"configurable"`
	}
	_ = json.Unmarshal(raw, &v) // neither form: no filter
	if v.CheckpointID != "" {
		return v.CheckpointID
	}
	return v.Configurable.CheckpointID
}

func newID() string { return uuid.Must(uuid.NewV7()).String() }
