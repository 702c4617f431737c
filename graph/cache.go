package graph

import (
	"container/list"
	"fmt"
	"reflect"
	"sync"

	"github.com/agiraph/agiraph/checkpoint"
)

// StateCache keeps the latest state of the threads that ran last, as the runs left it, so that the
// next run on one of them — an agent woken again and again — starts from it instead of rebuilding
// it from the saver: such a run then costs what its new steps cost, not what the thread's history
// holds. The saver stays the truth: a run still reads the thread's latest checkpoint, and takes the
// cached state only when it was cached at that very checkpoint (a thread another process, a fork or
// an edit moved on is rebuilt as before). State and History read it the same way, for the latest
// checkpoint; the states of other checkpoints are always rebuilt.  A cached state is the one the
// run held, not a decoded copy: fields the serializer does not keep are kept. It is handed out with
// its exported slices clipped (appending to them copies them), so every run and snapshot may append
// as the Reducer contract allows; like the engine's own states, it must not be modified in place.
// One cache may serve several compiled graphs of the same state type and is safe for concurrent
// use. It holds the states of at most the number of threads it was made for, the least recently
// used dropped first. Subgraphs do not use their parent's cache.
type StateCache[S any] struct {
	mu      sync.Mutex
	max     int
	entries map[cacheKey]*list.Element
	recent  list.List // of *cacheEntry[S], the most recently used first
	slices  [][]int   // the field paths of the slices in S to clip
}

type cacheKey struct{ thread, ns string }

type cacheEntry[S any] struct {
	key   cacheKey
	id    string // the checkpoint the state is at
	state S
	count snapshotCount // what snapshots had counted when it was saved
}

// NewStateCache returns a cache for the states of up to threads threads (at least one).
func NewStateCache[S any](threads int) *StateCache[S] {
	return &StateCache[S]{max: max(threads, 1), entries: map[cacheKey]*list.Element{}, slices: slicePaths(reflect.TypeFor[S](), nil)}
}

// WithStateCache makes runs keep their thread's latest state in c and start from it (see
// StateCache). The cache's state type must be the graph's: a run given another gets an error.
func WithStateCache[S any](c *StateCache[S]) Option { return func(cfg *config) { cfg.cache = c } }

// cacheKey is the run's thread in its cache.
func (r *run[S]) cacheKey() cacheKey { return cacheKey{r.cfg.thread, r.ns} }

// cacheOf returns the run's cache: none for a subgraph or a run that does not save.
func (r *run[S]) cacheOf() (*StateCache[S], error) {
	if r.cfg.cache == nil || r.parent != nil || !r.saving {
		return nil, nil
	}
	c, ok := r.cfg.cache.(*StateCache[S])
	if !ok {
		return nil, fmt.Errorf("graph: WithStateCache: the cache is a %T, the graph's state a %v", r.cfg.cache, reflect.TypeFor[S]())
	}
	return c, nil
}

// get returns the state cached for the run's thread at checkpoint t, and what the snapshots had
// counted when it was saved.
func (c *StateCache[S]) get(k cacheKey, t *checkpoint.Tuple) (S, snapshotCount, bool) {
	var zero S
	if c == nil {
		return zero, snapshotCount{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.entries[k]
	if !ok {
		return zero, snapshotCount{}, false
	}
	e := el.Value.(*cacheEntry[S])
	if e.id != t.Checkpoint.ID {
		return zero, snapshotCount{}, false
	}
	c.recent.MoveToFront(el)
	return c.clip(e.state), e.count, true
}

// put caches s as the state of the thread k at checkpoint id.
func (c *StateCache[S]) put(k cacheKey, id string, s S, count snapshotCount) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.entries[k]; ok {
		e := el.Value.(*cacheEntry[S])
		e.id, e.state, e.count = id, s, count
		c.recent.MoveToFront(el)
		return
	}
	c.entries[k] = c.recent.PushFront(&cacheEntry[S]{key: k, id: id, state: s, count: count})
	for c.recent.Len() > c.max {
		last := c.recent.Back()
		c.recent.Remove(last)
		delete(c.entries, last.Value.(*cacheEntry[S]).key)
	}
}

// clip returns s with every slice it holds (in its fields, and theirs, not through pointers,
// maps or slices) clipped to its length, so that appending to one copies it.
func (c *StateCache[S]) clip(s S) S {
	v := reflect.ValueOf(&s).Elem()
	for _, path := range c.slices {
		f := v
		if len(path) > 0 {
			f = v.FieldByIndex(path)
		}
		if f.Cap() > f.Len() {
			f.Set(f.Slice3(0, f.Len(), f.Len()))
		}
	}
	return s
}

// slicePaths returns the field paths of the slices in a value of type t: t itself when it is a
// slice, and the slices of its fields, recursively through structs.
func slicePaths(t reflect.Type, path []int) [][]int {
	switch t.Kind() {
	case reflect.Slice:
		return [][]int{path}
	case reflect.Struct:
		var out [][]int
		for i := range t.NumField() {
			if t.Field(i).IsExported() {
				out = append(out, slicePaths(t.Field(i).Type, append(append([]int(nil), path...), i))...)
			}
		}
		return out
	}
	return nil
}
