package langgraphapi

import (
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"slices"
	"strings"

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

func (h *Handler) searchAssistants(w http.ResponseWriter, r *http.Request) error {
	var q struct {
		GraphID  string         `json:"graph_id"`
		Name     string         `json:"name"`
		Metadata map[string]any `json:"metadata"`
		Limit    int            `json:"limit"`
		Offset   int            `json:"offset"`
	}
	if err := readJSON(r, &q); err != nil {
		return err
	}
	all, err := list[assistant](r.Context(), h.rec, assistantPrefix)
	if err != nil {
		return err
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
	writeJSON(w, http.StatusOK, page(all, q.Limit, q.Offset))
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
	ID   string `json:"id"`
	Type string `json:"type"`
	Data any    `json:"data"`
}

type drawnEdge struct {
	Source      string `json:"source"`
	Target      string `json:"target"`
	Conditional bool   `json:"conditional,omitempty"`
}

func (h *Handler) getGraph(w http.ResponseWriter, r *http.Request) error {
	_, e, err := h.assistant(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	nodes := []drawnNode{{ID: graph.START, Type: "schema", Data: graph.START}}
	for _, n := range e.nodes() {
		nodes = append(nodes, drawnNode{ID: n, Type: "runnable", Data: map[string]any{"id": []string{"agiraph", "graph", "node"}, "name": n}})
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
