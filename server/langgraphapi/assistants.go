package langgraphapi

import (
	"cmp"
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/agiraph/agiraph/graph"
	"github.com/agiraph/agiraph/tools"
)

// assistant finds an assistant by its ID or its graph's ID.
func (h *Handler) assistant(ctx context.Context, id string) (assistant, entry, error) {
	h.mu.Lock()
	if e, ok := h.graphs[id]; ok {
		id = assistantID(e.id())
	}
	h.mu.Unlock()
	var a assistant
	found, err := h.rec.get(ctx, assistantKey(id), &a)
	if err != nil {
		return a, nil, err
	}
	h.mu.Lock()
	e := h.graphs[a.GraphID]
	h.mu.Unlock()
	if !found || e == nil {
		return a, nil, notFound("no assistant %q: give the ID of an assistant or of a registered graph", id)
	}
	return a, e, nil
}

// assistantQuery selects assistants, as search and count take it.
type assistantQuery struct {
	GraphID  string         `json:"graph_id"`
	Name     string         `json:"name"`
	Metadata map[string]any `json:"metadata"`
	Limit    int            `json:"limit"`
	Offset   int            `json:"offset"`
}

// assistants reads the assistants of registered graphs that q selects, the newest first.
func (h *Handler) assistants(r *http.Request) ([]assistant, assistantQuery, error) {
	var q assistantQuery
	if err := readJSON(r, &q); err != nil {
		return nil, q, err
	}
	all, err := list[assistant](r.Context(), h.rec, assistantPrefix)
	if err != nil {
		return nil, q, err
	}
	h.mu.Lock()
	all = slices.DeleteFunc(all, func(a assistant) bool {
		return h.graphs[a.GraphID] == nil ||
			q.GraphID != "" && a.GraphID != q.GraphID ||
			q.Name != "" && !strings.Contains(a.Name, q.Name) ||
			q.Metadata != nil && !contains(a.Metadata, q.Metadata)
	})
	h.mu.Unlock()
	slices.SortStableFunc(all, func(a, b assistant) int { return b.CreatedAt.Compare(a.CreatedAt) })
	return all, q, nil
}

func (h *Handler) searchAssistants(w http.ResponseWriter, r *http.Request) error {
	all, q, err := h.assistants(r)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, page(all, q.Limit, q.Offset))
	return nil
}

func (h *Handler) countAssistants(w http.ResponseWriter, r *http.Request) error {
	all, _, err := h.assistants(r)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, len(all))
	return nil
}

// putAssistant stores an assistant, and with version its version too.
func (h *Handler) putAssistant(ctx context.Context, a assistant, version bool) error {
	var c change
	c.put(assistantKey(a.AssistantID), a)
	if version {
		c.put(versionKey(a.AssistantID, a.Version), a)
	}
	return h.rec.apply(ctx, &c)
}

// assistantFields are what creating and patching an assistant may set.
type assistantFields struct {
	GraphID     string         `json:"graph_id"`
	Config      map[string]any `json:"config"`
	Context     map[string]any `json:"context"`
	Metadata    map[string]any `json:"metadata"`
	Name        string         `json:"name"`
	Description *string        `json:"description"`
	AssistantID string         `json:"assistant_id"`
	IfExists    string         `json:"if_exists"`
}

// checkGraph refuses a graph that is not registered.
func (h *Handler) checkGraph(id string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.graphs[id] == nil {
		return notFound("graph_id: no graph %q is registered", id)
	}
	return nil
}

func (h *Handler) createAssistant(w http.ResponseWriter, r *http.Request) error {
	var q assistantFields
	if err := readJSON(r, &q); err != nil {
		return err
	}
	if q.GraphID == "" {
		return invalid("graph_id: missing")
	}
	if err := h.checkGraph(q.GraphID); err != nil {
		return err
	}
	if q.AssistantID == "" {
		q.AssistantID = newID()
	} else if _, err := uuid.Parse(q.AssistantID); err != nil {
		return invalid("assistant_id: %q is not a UUID", q.AssistantID)
	}
	var old assistant
	h.writeMu.Lock()
	defer h.writeMu.Unlock()
	found, err := h.rec.get(r.Context(), assistantKey(q.AssistantID), &old)
	switch {
	case err != nil:
		return err
	case found && q.IfExists == "do_nothing":
		writeJSON(w, http.StatusOK, old)
		return nil
	case found:
		return conflict("assistant %s exists (create with if_exists \"do_nothing\" to get it)", q.AssistantID)
	}
	now := time.Now().UTC()
	a := assistant{AssistantID: q.AssistantID, GraphID: q.GraphID, Name: cmp.Or(q.Name, q.GraphID), Description: q.Description,
		Config: orEmpty(q.Config), Context: orEmpty(q.Context), Metadata: orEmpty(q.Metadata), Version: 1, CreatedAt: now, UpdatedAt: now}
	if err := h.putAssistant(r.Context(), a, true); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, a)
	return nil
}

func orEmpty(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

// patchAssistant makes a new version of an assistant, the latest: what the request gives
// replaces the assistant's, and its metadata is merged into the assistant's.
func (h *Handler) patchAssistant(w http.ResponseWriter, r *http.Request) error {
	var q assistantFields
	if err := readJSON(r, &q); err != nil {
		return err
	}
	if q.GraphID != "" {
		if err := h.checkGraph(q.GraphID); err != nil {
			return err
		}
	}
	h.writeMu.Lock()
	defer h.writeMu.Unlock()
	a, _, err := h.assistant(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	versions, err := h.versions(r.Context(), a)
	if err != nil {
		return err
	}
	a.GraphID = cmp.Or(q.GraphID, a.GraphID)
	a.Name = cmp.Or(q.Name, a.Name)
	if q.Description != nil {
		a.Description = q.Description
	}
	if q.Config != nil {
		a.Config = q.Config
	}
	if q.Context != nil {
		a.Context = q.Context
	}
	for k, v := range q.Metadata {
		a.Metadata[k] = v
	}
	a.Version = versions[0].Version + 1
	a.UpdatedAt = time.Now().UTC()
	if err := h.putAssistant(r.Context(), a, true); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, a)
	return nil
}

// versions reads an assistant's versions, the newest first (an assistant stored before versions
// were kept is its own only version).
func (h *Handler) versions(ctx context.Context, a assistant) ([]assistant, error) {
	all, err := list[assistant](ctx, h.rec, versionPrefix+a.AssistantID+"/")
	if err != nil {
		return nil, err
	}
	if len(all) == 0 {
		all = []assistant{a}
	}
	slices.Reverse(all)
	return all, nil
}

func (h *Handler) assistantVersions(w http.ResponseWriter, r *http.Request) error {
	var q struct {
		Metadata map[string]any `json:"metadata"`
		Limit    int            `json:"limit"`
		Offset   int            `json:"offset"`
	}
	if err := readJSON(r, &q); err != nil {
		return err
	}
	a, _, err := h.assistant(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	all, err := h.versions(r.Context(), a)
	if err != nil {
		return err
	}
	all = slices.DeleteFunc(all, func(v assistant) bool { return q.Metadata != nil && !contains(v.Metadata, q.Metadata) })
	writeJSON(w, http.StatusOK, page(all, q.Limit, q.Offset))
	return nil
}

// setLatestAssistant makes one of an assistant's versions the assistant.
func (h *Handler) setLatestAssistant(w http.ResponseWriter, r *http.Request) error {
	var q struct {
		Version int `json:"version"`
	}
	if err := readJSON(r, &q); err != nil {
		return err
	}
	h.writeMu.Lock()
	defer h.writeMu.Unlock()
	a, _, err := h.assistant(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	var v assistant
	found, err := h.rec.get(r.Context(), versionKey(a.AssistantID, q.Version), &v)
	switch {
	case err != nil:
		return err
	case !found && q.Version != a.Version:
		return notFound("assistant %s has no version %d", a.AssistantID, q.Version)
	case found:
		v.CreatedAt, v.UpdatedAt = a.CreatedAt, time.Now().UTC()
		a = v
	}
	if err := h.putAssistant(r.Context(), a, false); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, a)
	return nil
}

// deleteAssistant deletes an assistant and its versions, and with delete_threads=true the
// threads it last ran. The assistant of a registered graph is made again when the graph is
// registered again.
func (h *Handler) deleteAssistant(w http.ResponseWriter, r *http.Request) error {
	h.writeMu.Lock()
	a, _, err := h.assistant(r.Context(), r.PathValue("id"))
	if err != nil {
		h.writeMu.Unlock()
		return err
	}
	docs, err := h.rec.st.Docs(r.Context(), versionPrefix+a.AssistantID+"/")
	if err != nil {
		h.writeMu.Unlock()
		return err
	}
	var c change
	for _, d := range docs {
		c.Delete(d.Key)
	}
	c.Delete(assistantKey(a.AssistantID))
	err = h.rec.apply(r.Context(), &c)
	h.writeMu.Unlock()
	if err != nil {
		return err
	}
	if r.URL.Query().Get("delete_threads") == "true" {
		threads, err := list[thread](r.Context(), h.rec, threadPrefix)
		if err != nil {
			return err
		}
		for _, t := range threads {
			if t.Metadata["assistant_id"] == a.AssistantID {
				if err := h.removeThread(r.Context(), &t); err != nil {
					return err
				}
			}
		}
	}
	writeJSON(w, http.StatusOK, []string{a.AssistantID})
	return nil
}

func (h *Handler) getAssistant(w http.ResponseWriter, r *http.Request) error {
	a, _, err := h.assistant(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, a)
	return nil
}

// drawnNode and drawnEdge are the graph's drawing as LangChain's Graph.toJSON gives it.
type drawnNode struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Data     any    `json:"data"`
	Metadata any    `json:"metadata,omitempty"` // a runnable's: empty
}

type drawnEdge struct {
	Source      string `json:"source"`
	Target      string `json:"target"`
	Conditional bool   `json:"conditional"`
}

func (h *Handler) getGraph(w http.ResponseWriter, r *http.Request) error {
	_, e, err := h.assistant(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	nodes := []drawnNode{{ID: graph.START, Type: "schema", Data: graph.START}}
	for _, n := range e.nodes() {
		nodes = append(nodes, drawnNode{ID: n, Type: "runnable", Data: map[string]any{"id": []string{"agiraph", "graph", "node"}, "name": n}, Metadata: map[string]any{}})
	}
	nodes = append(nodes, drawnNode{ID: graph.END, Type: "schema", Data: graph.END})
	var edges []drawnEdge
	for _, ed := range e.edges() {
		edges = append(edges, drawnEdge{Source: ed.From, Target: ed.To, Conditional: ed.Kind == graph.EdgeConditional})
	}
	writeJSON(w, http.StatusOK, map[string]any{"nodes": nodes, "edges": edges})
	return nil
}

func (h *Handler) getSchemas(w http.ResponseWriter, r *http.Request) error {
	a, e, err := h.assistant(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	var schema any = json.RawMessage("{}")
	if t := e.stateType(); t.Kind() == reflect.Struct || t.Kind() == reflect.Pointer && t.Elem().Kind() == reflect.Struct {
		schema = tools.SchemaFor(t)
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"graph_id":       a.GraphID,
		"input_schema":   schema,
		"output_schema":  schema,
		"state_schema":   schema,
		"config_schema":  nil,
		"context_schema": nil,
	})
	return nil
}
