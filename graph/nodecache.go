package graph

import (
	"container/list"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sync"
	"time"

	"github.com/agiraph/agiraph/checkpoint"
)

// NodeCache stores the outputs of nodes that have a CachePolicy, so that a task whose node has
// seen its input before is not run again (LangGraph's node caching). Set it with WithNodeCache.
// Values are outputs encoded by the run's serializer; keys name the node and the input.
//
// An error from Get or Set fails the task, as the node's own error would (its retry policy
// applies). An implementation that would rather run the node again than fail, when its store is
// down, returns a miss from Get and nil from Set instead.
type NodeCache interface {
	// Get returns the value stored under key, and false when there is none or it expired.
	Get(ctx context.Context, key string) ([]byte, bool, error)
	// Set stores value under key for ttl (0: until it is evicted).
	Set(ctx context.Context, key string, value []byte, ttl time.Duration) error
}

// CachePolicy makes a node's output reusable: a task of the node whose input has the key of an
// earlier task's input (within TTL) gets that task's output without running. Only outputs of
// tasks that finished are stored: failures and interrupts are not.
type CachePolicy struct {
	// Key returns the key of a task's input: the state, or the Send's argument for tasks made by
	// a Send. By default the input is encoded by the run's serializer and hashed.
	Key func(input any) (string, error)
	// TTL bounds how long an output is reused; 0 keeps it until the cache evicts it.
	TTL time.Duration
}

// WithCachePolicy caches the node's outputs in the run's NodeCache (see WithNodeCache); without
// one the policy does nothing.
func WithCachePolicy(p CachePolicy) NodeOption { return func(c *nodeConfig) { c.cache = &p } }

// WithNodeCache sets where the outputs of nodes with a CachePolicy are kept. Subgraphs without
// their own use their parent's. Outputs are keyed by node name: graphs that share a cache share
// the outputs of their nodes of the same name.
func WithNodeCache(c NodeCache) Option { return func(cfg *config) { cfg.nodeCache = c } }

// nodeCacheKey returns the key under which the output of task t is cached.
func (r *run[S]) nodeCacheKey(t *task[S]) (string, error) {
	var input any = r.state
	if t.push {
		input = t.arg
	}
	if key := t.node.cfg.cache.Key; key != nil {
		k, err := key(input)
		if err != nil {
			return "", fmt.Errorf("cache key: %w", err)
		}
		return t.node.name + ":" + k, nil
	}
	b, err := r.cfg.serde.Marshal(input)
	if err != nil {
		return "", fmt.Errorf("cache key: encode the input: %w", err)
	}
	sum := sha256.Sum256(b)
	return t.node.name + ":" + hex.EncodeToString(sum[:]), nil
}

// fromCache looks task t's output up in the node cache. On a hit it saves the output as the
// task's and marks the task cached; on a miss it returns the key to cache the output under. An
// entry that no longer decodes (the state type changed) is a miss.
func (r *run[S]) fromCache(ctx context.Context, t *task[S]) (out Command[S], key string, err error) {
	if key, err = r.nodeCacheKey(t); err != nil {
		return out, "", err
	}
	b, ok, err := r.env.nodeCache.Get(ctx, key)
	if err != nil {
		return out, "", fmt.Errorf("node cache: %w", err)
	}
	var rec taskRecord[S]
	if !ok || r.cfg.serde.Unmarshal(b, &rec) != nil {
		return out, key, nil
	}
	t.cached = true
	return rec.command(), key, r.putEncoded(ctx, t, checkpoint.WriteUpdate, 0, b, nil)
}

// MemoryNodeCache is a NodeCache in memory that keeps the most recently used entries. It is safe
// for concurrent use.
type MemoryNodeCache struct {
	mu      sync.Mutex
	max     int
	entries map[string]*list.Element
	recent  list.List // of *memoryEntry, most recently used first
	now     func() time.Time
}

type memoryEntry struct {
	key     string
	value   []byte
	expires time.Time // zero: never
}

// NewMemoryNodeCache returns a cache that holds up to max entries (max < 1: no bound), evicting
// the least recently used.
func NewMemoryNodeCache(max int) *MemoryNodeCache {
	return &MemoryNodeCache{max: max, entries: map[string]*list.Element{}, now: time.Now}
}

// Get implements NodeCache.
func (c *MemoryNodeCache) Get(_ context.Context, key string) ([]byte, bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el := c.entries[key]
	if el == nil {
		return nil, false, nil
	}
	e := el.Value.(*memoryEntry)
	if !e.expires.IsZero() && !c.now().Before(e.expires) {
		c.recent.Remove(el)
		delete(c.entries, key)
		return nil, false, nil
	}
	c.recent.MoveToFront(el)
	return e.value, true, nil
}

// Set implements NodeCache.
func (c *MemoryNodeCache) Set(_ context.Context, key string, value []byte, ttl time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := &memoryEntry{key: key, value: value}
	if ttl > 0 {
		e.expires = c.now().Add(ttl)
	}
	if el := c.entries[key]; el != nil {
		el.Value = e
		c.recent.MoveToFront(el)
		return nil
	}
	c.entries[key] = c.recent.PushFront(e)
	if c.max > 0 && c.recent.Len() > c.max {
		last := c.recent.Back()
		c.recent.Remove(last)
		delete(c.entries, last.Value.(*memoryEntry).key)
	}
	return nil
}

// Len returns the number of entries held, expired ones not yet dropped included.
func (c *MemoryNodeCache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.recent.Len()
}

// Clear drops every entry.
func (c *MemoryNodeCache) Clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.entries = map[string]*list.Element{}
	c.recent.Init()
}
