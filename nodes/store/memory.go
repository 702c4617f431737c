package store

import (
	"context"
	"encoding/json"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/agiraph/agiraph/checkpoint"
	"github.com/agiraph/agiraph/nodes/eventlog"
)

// Memory is a Store in process memory, over a checkpoint.Memory saver: for tests, and for squads
// that need no survival across restarts.
type Memory struct {
	saver *checkpoint.Memory

	mu     sync.RWMutex
	docs   map[string]Doc
	events []eventlog.Event
	lines  []Line
	keys   map[string]bool // the keys of events ("e" + key) and lines ("l" + key)
}

// NewMemory returns an empty in-memory store.
func NewMemory() *Memory {
	m := &Memory{docs: map[string]Doc{}, keys: map[string]bool{}}
	m.saver = checkpoint.NewMemory(checkpoint.WithEffects(func(_ string, w checkpoint.Write) error {
		ch, err := Decode(w.Value)
		if err != nil {
			return err
		}
		return m.apply(ch) // under the saver's lock: with the writes, or not at all
	}))
	return m
}

// Saver returns the store's checkpoint saver.
func (m *Memory) Saver() checkpoint.Saver { return m.saver }

// Apply commits ch.
func (m *Memory) Apply(ctx context.Context, ch Change) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := ch.Check(); err != nil {
		return err
	}
	// A copy, as a saver keeps: the caller may reuse what ch holds.
	b, err := json.Marshal(ch)
	if err != nil {
		return err
	}
	c, err := Decode(b)
	if err != nil {
		return err
	}
	return m.apply(c)
}

// apply applies ch, checked.
func (m *Memory) apply(ch Change) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, d := range ch.Docs {
		switch old, ok := m.docs[d.Key]; {
		case d.Value == nil:
			delete(m.docs, d.Key)
		case !ok || d.Version == 0 || d.Version > old.Version:
			d.Value = slices.Clone(d.Value)
			m.docs[d.Key] = d
		}
	}
	for _, e := range ch.Events {
		if e.Key != "" && m.keys["e"+e.Key] {
			continue
		}
		e, _ = eventlog.Check(e) // checked above: this compacts its data
		e.Seq = int64(len(m.events)) + 1
		if e.Key != "" {
			m.keys["e"+e.Key] = true
		}
		m.events = append(m.events, e)
	}
	for _, l := range ch.Lines {
		if l.Key != "" && m.keys["l"+l.Key] {
			continue
		}
		l.Seq = int64(len(m.lines)) + 1
		if l.Key != "" {
			m.keys["l"+l.Key] = true
		}
		m.lines = append(m.lines, l)
	}
	return nil
}

// Doc returns the document under key.
func (m *Memory) Doc(ctx context.Context, key string) (Doc, error) {
	if err := ctx.Err(); err != nil {
		return Doc{}, err
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	d, ok := m.docs[key]
	if !ok {
		return Doc{Key: key}, nil
	}
	d.Value = slices.Clone(d.Value)
	return d, nil
}

// Docs returns the documents under prefixes, in key order.
func (m *Memory) Docs(ctx context.Context, prefixes ...string) ([]Doc, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	var docs []Doc
	for k, d := range m.docs {
		if slices.ContainsFunc(prefixes, func(p string) bool { return strings.HasPrefix(k, p) }) {
			d.Value = slices.Clone(d.Value)
			docs = append(docs, d)
		}
	}
	sort.Slice(docs, func(i, j int) bool { return docs[i].Key < docs[j].Key })
	return docs, nil
}

// Events returns the events after seq after.
func (m *Memory) Events(ctx context.Context, after int64, limit int) ([]eventlog.Event, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	return page(m.events, after, limit, func(e eventlog.Event) eventlog.Event {
		e.Data = slices.Clone(e.Data)
		return e
	}), nil
}

// LastEvent returns the last event; its Seq is 0 when there is none.
func (m *Memory) LastEvent(ctx context.Context) (eventlog.Event, error) {
	if err := ctx.Err(); err != nil {
		return eventlog.Event{}, err
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	if len(m.events) == 0 {
		return eventlog.Event{}, nil
	}
	e := m.events[len(m.events)-1]
	e.Data = slices.Clone(e.Data)
	return e, nil
}

// Lines returns the conversation lines after seq after.
func (m *Memory) Lines(ctx context.Context, after int64, limit int) ([]Line, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	return page(m.lines, after, limit, func(l Line) Line { return l }), nil
}

// page copies up to limit (0: all) of xs after seq after; xs[i] has seq i+1.
func page[T any](xs []T, after int64, limit int, clone func(T) T) []T {
	from := int(min(max(after, 0), int64(len(xs))))
	to := len(xs)
	if limit > 0 {
		to = min(to, from+limit)
	}
	out := make([]T, 0, to-from)
	for _, x := range xs[from:to] {
		out = append(out, clone(x))
	}
	return out
}

// Close does nothing: a Memory holds no resources.
func (m *Memory) Close() error { return nil }
