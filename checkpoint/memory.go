package checkpoint

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
)

// Memory is a Saver that keeps everything in process memory: for tests, and for runs that need
// interrupts and history but not survival across restarts. The zero value is ready to use; it
// has no effect handler.
type Memory struct {
	mu      sync.RWMutex
	threads map[string]map[string]*memNS // thread → namespace → checkpoints
	effects func(threadID string, w Write) error
}

// A MemoryOption configures NewMemory.
type MemoryOption func(*Memory)

// WithEffects makes the Memory give each WriteEffect write to fn, under the lock that saves the
// writes of its call, once per (checkpoint, TaskID, Idx) (see WriteEffect); when fn returns an
// error, none of the call's writes is saved. Memory has no transaction to take back what fn did:
// when it fails on an effect, those of the call before it stay applied, so a handler checks
// what it is given before it changes anything (a graph task's effects come in one call). fn
// must not call the Memory.
func WithEffects(fn func(threadID string, w Write) error) MemoryOption {
	return func(m *Memory) { m.effects = fn }
}

type memNS struct {
	order []string // checkpoint IDs, sorted: oldest first
	byID  map[string]*memEntry
}

type memEntry struct {
	cp     Checkpoint
	writes []Write
	keys   map[writeKey]bool
}

type writeKey struct {
	task string
	kind WriteKind
	idx  int
}

// NewMemory returns an empty in-memory Saver.
func NewMemory(opts ...MemoryOption) *Memory {
	m := &Memory{}
	for _, opt := range opts {
		opt(m)
	}
	return m
}

// Put stores a copy of cp.
func (m *Memory) Put(ctx context.Context, cfg Config, cp Checkpoint) (Config, error) {
	if err := ctx.Err(); err != nil {
		return Config{}, err
	}
	if cfg.ThreadID == "" || cp.ID == "" {
		return Config{}, fmt.Errorf("checkpoint: put needs a thread ID and a checkpoint ID (thread %q, checkpoint %q)", cfg.ThreadID, cp.ID)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.threads == nil {
		m.threads = map[string]map[string]*memNS{}
	}
	spaces := m.threads[cfg.ThreadID]
	if spaces == nil {
		spaces = map[string]*memNS{}
		m.threads[cfg.ThreadID] = spaces
	}
	ns := spaces[cfg.NS]
	if ns == nil {
		ns = &memNS{byID: map[string]*memEntry{}}
		spaces[cfg.NS] = ns
	}
	if e, ok := ns.byID[cp.ID]; ok {
		e.cp = cloneCheckpoint(cp)
	} else {
		ns.byID[cp.ID] = &memEntry{cp: cloneCheckpoint(cp), keys: map[writeKey]bool{}}
		i, _ := slices.BinarySearch(ns.order, cp.ID)
		ns.order = slices.Insert(ns.order, i, cp.ID)
	}
	return Config{ThreadID: cfg.ThreadID, NS: cfg.NS, CheckpointID: cp.ID}, nil
}

// PutWrites records writes for the checkpoint cfg addresses, keeping the first of any duplicates,
// and applies its effect writes (see WriteEffect): all of the call or nothing.
func (m *Memory) PutWrites(ctx context.Context, cfg Config, writes []Write) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if cfg.CheckpointID == "" {
		return fmt.Errorf("checkpoint: put writes of thread %q namespace %q: the config names no checkpoint", cfg.ThreadID, cfg.NS)
	}
	err := checkEffects(writes, m.effects != nil)
	if err == nil {
		m.mu.Lock()
		err = m.putWrites(cfg, writes)
		m.mu.Unlock()
	}
	if err != nil {
		return fmt.Errorf("checkpoint: put writes: thread %q namespace %q checkpoint %q: %w", cfg.ThreadID, cfg.NS, cfg.CheckpointID, err)
	}
	return nil
}

// putWrites records writes for the checkpoint cfg addresses, under m.mu: after the effect
// handler accepted each of its effects, or not at all.
func (m *Memory) putWrites(cfg Config, writes []Write) error {
	e := m.entry(cfg)
	if e == nil {
		return ErrNotFound
	}
	var added []Write
	for _, w := range writes {
		k := writeKey{w.TaskID, w.Kind, w.Idx}
		if e.keys[k] {
			continue
		}
		if w.Kind == WriteEffect {
			if err := m.effects(cfg.ThreadID, w); err != nil {
				e.forget(added)
				return fmt.Errorf("effect %d of task %q: %w", w.Idx, w.TaskID, err)
			}
			w.Value = nil
		}
		e.keys[k] = true
		w.Value = slices.Clone(w.Value)
		added = append(added, w)
	}
	e.writes = append(e.writes, added...)
	return nil
}

// checkEffects returns ErrNoEffectHandler when writes hold an effect write and the saver has no
// handler for it.
func checkEffects(writes []Write, handler bool) error {
	if !handler && slices.ContainsFunc(writes, func(w Write) bool { return w.Kind == WriteEffect }) {
		return ErrNoEffectHandler
	}
	return nil
}

// forget removes the keys of writes, which were not saved.
func (e *memEntry) forget(writes []Write) {
	for _, w := range writes {
		delete(e.keys, writeKey{w.TaskID, w.Kind, w.Idx})
	}
}

// Get returns the addressed checkpoint, or the latest of the namespace.
func (m *Memory) Get(ctx context.Context, cfg Config) (*Tuple, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	e := m.entry(cfg)
	if e == nil {
		return nil, ErrNotFound
	}
	t := m.tuple(cfg, e)
	return &t, nil
}

// List returns the namespace's checkpoints, newest first.
func (m *Memory) List(ctx context.Context, cfg Config, opts ListOptions) ([]Tuple, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	ns := m.threads[cfg.ThreadID][cfg.NS]
	if ns == nil {
		return nil, nil
	}
	end := len(ns.order)
	if opts.Before != "" {
		end, _ = slices.BinarySearch(ns.order, opts.Before)
	}
	var out []Tuple
	for i := end - 1; i >= 0; i-- {
		e := ns.byID[ns.order[i]]
		if !opts.Match(&e.cp) {
			continue
		}
		out = append(out, m.tuple(cfg, e))
		if opts.Limit > 0 && len(out) == opts.Limit {
			break
		}
	}
	return out, nil
}

// PatchMetadata merges meta into the addressed checkpoint's Meta.
func (m *Memory) PatchMetadata(ctx context.Context, cfg Config, meta map[string]string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.entry(cfg)
	if e == nil {
		return fmt.Errorf("checkpoint: patch the metadata of thread %q namespace %q checkpoint %q: %w", cfg.ThreadID, cfg.NS, cfg.CheckpointID, ErrNotFound)
	}
	merged := make(map[string]string, len(e.cp.Meta)+len(meta))
	maps.Copy(merged, e.cp.Meta)
	maps.Copy(merged, meta)
	e.cp.Meta = merged
	return nil
}

// DeleteThread forgets a thread.
func (m *Memory) DeleteThread(ctx context.Context, threadID string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.threads, threadID)
	return nil
}

func (m *Memory) entry(cfg Config) *memEntry {
	ns := m.threads[cfg.ThreadID][cfg.NS]
	if ns == nil || len(ns.order) == 0 {
		return nil
	}
	id := cfg.CheckpointID
	if id == "" {
		id = ns.order[len(ns.order)-1]
	}
	return ns.byID[id]
}

func (m *Memory) tuple(cfg Config, e *memEntry) Tuple {
	writes := make([]Write, len(e.writes))
	for i, w := range e.writes {
		w.Value = slices.Clone(w.Value)
		writes[i] = w
	}
	return Tuple{
		Config:     Config{ThreadID: cfg.ThreadID, NS: cfg.NS, CheckpointID: e.cp.ID},
		Checkpoint: cloneCheckpoint(e.cp),
		Writes:     writes,
	}
}

func cloneCheckpoint(cp Checkpoint) Checkpoint {
	cp.State = slices.Clone(cp.State)
	next := make([]Task, len(cp.Next))
	for i, t := range cp.Next {
		t.Arg = slices.Clone(t.Arg)
		next[i] = t
	}
	cp.Next = next
	if cp.Joins != nil {
		joins := make(map[string][]string, len(cp.Joins))
		for k, v := range cp.Joins {
			joins[k] = slices.Clone(v)
		}
		cp.Joins = joins
	}
	if cp.Meta != nil {
		meta := make(map[string]string, len(cp.Meta))
		for k, v := range cp.Meta {
			meta[k] = v
		}
		cp.Meta = meta
	}
	return cp
}
