package langgraphapi

import (
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

// The store API keeps items as documents of the handler's store under itemPrefix: the path of
// the namespace's labels (each path-escaped), then "/." and the path-escaped key. A label holds
// no ".", so that "." marks the key, and the documents of a namespace and of those below it share
// the namespace's path as their prefix.
const itemPrefix = "langgraph/store/"

// item is an item of the store API.
type item struct {
	Namespace []string       `json:"namespace"`
	Key       string         `json:"key"`
	Value     map[string]any `json:"value"`
	CreatedAt time.Time      `json:"created_at"`
	UpdatedAt time.Time      `json:"updated_at"`
}

// namespacePath is the key prefix of a namespace's items, after checking its labels.
func namespacePath(what string, ns []string) (string, error) {
	var b strings.Builder
	b.WriteString(itemPrefix)
	for _, label := range ns {
		if label == "" || strings.Contains(label, ".") {
			return "", invalid("%s: namespace labels may not be empty nor hold a period: %q", what, ns)
		}
		b.WriteString(url.PathEscape(label) + "/")
	}
	return b.String(), nil
}

func itemKey(ns []string, key string) (string, error) {
	if key == "" {
		return "", invalid("key: missing")
	}
	if len(ns) == 0 {
		return "", invalid("namespace: missing")
	}
	p, err := namespacePath("namespace", ns)
	return p + "." + url.PathEscape(key), err
}

func (h *Handler) putItem(w http.ResponseWriter, r *http.Request) error {
	var q struct {
		Namespace []string        `json:"namespace"`
		Key       string          `json:"key"`
		Value     json.RawMessage `json:"value"`
		TTL       *float64        `json:"ttl"`
	}
	if err := readJSON(r, &q); err != nil {
		return err
	}
	key, err := itemKey(q.Namespace, q.Key)
	if err != nil {
		return err
	}
	if q.TTL != nil {
		return invalid("ttl: items do not expire here")
	}
	it := item{Namespace: q.Namespace, Key: q.Key}
	if err := json.Unmarshal(q.Value, &it.Value); err != nil || it.Value == nil {
		return invalid("value: give a JSON object")
	}
	var old item
	found, err := h.rec.get(r.Context(), key, &old)
	if err != nil {
		return err
	}
	it.UpdatedAt = time.Now().UTC()
	it.CreatedAt = it.UpdatedAt
	if found {
		it.CreatedAt = old.CreatedAt
	}
	if err := h.rec.put(r.Context(), key, it); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// getItem answers the item, or null when there is none, as LangGraph's server does.
func (h *Handler) getItem(w http.ResponseWriter, r *http.Request) error {
	var ns []string
	if s := r.URL.Query().Get("namespace"); s != "" {
		ns = strings.Split(s, ".")
	}
	key, err := itemKey(ns, r.URL.Query().Get("key"))
	if err != nil {
		return err
	}
	var it *item
	if found, err := h.rec.get(r.Context(), key, &it); err != nil || !found {
		it = nil
		if err != nil {
			return err
		}
	}
	writeJSON(w, http.StatusOK, it)
	return nil
}

func (h *Handler) deleteItem(w http.ResponseWriter, r *http.Request) error {
	var q struct {
		Namespace []string `json:"namespace"`
		Key       string   `json:"key"`
	}
	if err := readJSON(r, &q); err != nil {
		return err
	}
	key, err := itemKey(q.Namespace, q.Key)
	if err != nil {
		return err
	}
	var c change
	c.Delete(key)
	if err := h.rec.apply(r.Context(), &c); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// searchItems answers the items under a namespace prefix whose values hold filter, and the
// query's words (case-insensitive, anywhere in the value's JSON) when there is a query; the most
// recently updated first.
func (h *Handler) searchItems(w http.ResponseWriter, r *http.Request) error {
	var q struct {
		Prefix []string       `json:"namespace_prefix"`
		Filter map[string]any `json:"filter"`
		Query  string         `json:"query"`
		Limit  int            `json:"limit"`
		Offset int            `json:"offset"`
	}
	if err := readJSON(r, &q); err != nil {
		return err
	}
	prefix, err := namespacePath("namespace_prefix", q.Prefix)
	if err != nil {
		return err
	}
	all, err := list[item](r.Context(), h.rec, prefix)
	if err != nil {
		return err
	}
	words := strings.Fields(strings.ToLower(q.Query))
	all = slices.DeleteFunc(all, func(it item) bool {
		if q.Filter != nil && !contains(it.Value, q.Filter) {
			return true
		}
		text, _ := json.Marshal(it.Value)
		lower := strings.ToLower(string(text))
		return slices.ContainsFunc(words, func(w string) bool { return !strings.Contains(lower, w) })
	})
	slices.SortStableFunc(all, func(a, b item) int { return b.UpdatedAt.Compare(a.UpdatedAt) })
	writeJSON(w, http.StatusOK, map[string]any{"items": page(all, q.Limit, q.Offset)})
	return nil
}

// listNamespaces answers the namespaces that have items, matching prefix and suffix, cut to
// max_depth labels, in order.
func (h *Handler) listNamespaces(w http.ResponseWriter, r *http.Request) error {
	var q struct {
		Prefix   []string `json:"prefix"`
		Suffix   []string `json:"suffix"`
		MaxDepth int      `json:"max_depth"`
		Limit    int      `json:"limit"`
		Offset   int      `json:"offset"`
	}
	if err := readJSON(r, &q); err != nil {
		return err
	}
	prefix, err := namespacePath("prefix", q.Prefix)
	if err != nil {
		return err
	}
	if _, err := namespacePath("suffix", q.Suffix); err != nil {
		return err
	}
	all, err := list[item](r.Context(), h.rec, prefix)
	if err != nil {
		return err
	}
	seen := map[string]bool{}
	out := [][]string{}
	for _, it := range all {
		ns := it.Namespace
		if len(ns) < len(q.Suffix) || !slices.Equal(ns[len(ns)-len(q.Suffix):], q.Suffix) {
			continue
		}
		if q.MaxDepth > 0 && len(ns) > q.MaxDepth {
			ns = ns[:q.MaxDepth]
		}
		if id := strings.Join(ns, "."); !seen[id] {
			seen[id] = true
			out = append(out, ns)
		}
	}
	if q.Limit <= 0 {
		q.Limit = 100
	}
	writeJSON(w, http.StatusOK, map[string]any{"namespaces": page(out, q.Limit, q.Offset)})
	return nil
}
