// Package store keeps a squad agent's bookkeeping — its runs' state, its board, its events and
// its conversation with the human — in the database of its checkpoints, so that what a step of a
// run changes commits in the same transaction as the step: a run resumed after a crash finds the
// whole step or none of it, and nothing needs a key of its own to be done once.
//
// A Store is a checkpoint saver (Saver) with tables beside the checkpoints. A Change says what
// a step changes: documents put or deleted, events and conversation lines appended. Commit
// attaches it to the graph task running in ctx, whose writes carry it into the saver's
// transaction (see graph.Effect and checkpoint.WriteEffect), or, outside a task, commits it
// alone.
//
// Implementations: NewMemory here, package nodes/store/sqlitestore (the default, in the same file
// as the checkpoints) and nodes/store/pgstore (PostgreSQL, for a fleet). Each passes the
// conformance suite in package nodes/store/storetest.
package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/agiraph/agiraph/checkpoint"
	"github.com/agiraph/agiraph/graph"
	"github.com/agiraph/agiraph/nodes/eventlog"
)

// ErrReadOnly is wrapped by the error of Apply on a store opened only to read.
var ErrReadOnly = errors.New("store: opened to read only")

// Store keeps a squad agent's bookkeeping beside its checkpoints. It is safe for concurrent use.
type Store interface {
	// Saver is where the agent's graphs save their checkpoints; a task's Change commits with
	// the task's writes there.
	Saver() checkpoint.Saver
	// Apply commits ch on its own, in one transaction, and returns once it has committed.
	Apply(ctx context.Context, ch Change) error
	// Doc returns the document under key; its Value is nil when there is none.
	Doc(ctx context.Context, key string) (Doc, error)
	// Docs returns the documents whose keys start with one of prefixes, in key order
	// (byte-wise), as they all were at one moment: what one change put under two of the
	// prefixes is read together or not at all. No prefix reads none; "" reads every document.
	Docs(ctx context.Context, prefixes ...string) ([]Doc, error)
	// Events returns up to limit events (0: all) whose Seq is greater than after, in Seq order.
	Events(ctx context.Context, after int64, limit int) ([]eventlog.Event, error)
	// LastEvent returns the event with the greatest Seq; its Seq is 0 when there is none.
	LastEvent(ctx context.Context) (eventlog.Event, error)
	// Lines returns up to limit conversation lines (0: all) whose Seq is greater than after, in
	// Seq order.
	Lines(ctx context.Context, after int64, limit int) ([]Line, error)
	// Close releases the store and its saver.
	Close() error
}

// A Doc is a JSON document kept under a key. Keys name what they hold, path-like:
// "run/<run>", "node/<run>/<node>".
type Doc struct {
	Key string `json:"key"`
	// Value is the document; nil in a Change deletes it.
	Value json.RawMessage `json:"value,omitempty"`
	// Version orders the puts of a document made by writers that commit in another order than
	// they made them: a put with a Version replaces the document only when that is greater than
	// the stored one's, so an older state never overwrites a newer. 0 replaces whatever is there.
	Version int64 `json:"version,omitempty"`
}

// A Line is one message of the agent's conversation with its human: the one thread that goes
// on across runs.
type Line struct {
	Seq     int64     `json:"seq"`
	Time    time.Time `json:"time"`
	Run     string    `json:"run,omitempty"`
	From    string    `json:"from"`
	To      string    `json:"to"`
	Content string    `json:"content"`
	// Key, when set, makes the line idempotent: a second line with the same key is not added.
	Key string `json:"key,omitempty"`
}

// A Change is what one step (or one call from outside a step) changes. Its zero value changes
// nothing. A store applies its parts in order: documents (a later one with the same key wins),
// then events, then lines. Events and lines get their Seq when the change commits, in commit
// order; one whose Key an event (or line) already has is not added.
type Change struct {
	Docs   []Doc            `json:"docs,omitempty"`
	Events []eventlog.Event `json:"events,omitempty"`
	Lines  []Line           `json:"lines,omitempty"`
}

// Put adds the document v, as JSON, under key.
func (c *Change) Put(key string, v any) error { return c.PutVersion(key, 0, v) }

// PutVersion adds the document v, as JSON, under key, with a version (see Doc.Version).
func (c *Change) PutVersion(key string, version int64, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("store: document %s: %w", key, err)
	}
	c.Docs = append(c.Docs, Doc{Key: key, Value: b, Version: version})
	return nil
}

// Delete deletes the document under key.
func (c *Change) Delete(key string) { c.Docs = append(c.Docs, Doc{Key: key}) }

// Empty reports whether c changes nothing.
func (c *Change) Empty() bool { return len(c.Docs) == 0 && len(c.Events) == 0 && len(c.Lines) == 0 }

// Check returns why c cannot be applied, naming the part: a document without a key, an event
// that eventlog would refuse, a line without sender or receiver.
func (c *Change) Check() error {
	for _, d := range c.Docs {
		if d.Key == "" {
			return errors.New("store: a document has no key")
		}
		if d.Value != nil && !json.Valid(d.Value) {
			return fmt.Errorf("store: document %s is not valid JSON", d.Key)
		}
	}
	for _, e := range c.Events {
		if _, err := eventlog.Check(e); err != nil {
			return fmt.Errorf("store: %w", err)
		}
	}
	for _, l := range c.Lines {
		if l.From == "" || l.To == "" {
			return fmt.Errorf("store: a conversation line needs a sender and a receiver (from %q, to %q)", l.From, l.To)
		}
	}
	return nil
}

// Encode returns c as the value of a checkpoint.WriteEffect write.
func (c *Change) Encode() ([]byte, error) {
	if err := c.Check(); err != nil {
		return nil, err
	}
	return json.Marshal(c)
}

// Decode reads a change Encode made, and checks it (see Check): a store's effect handler applies
// what it returns.
func Decode(b []byte) (Change, error) {
	var c Change
	if err := json.Unmarshal(b, &c); err != nil {
		return Change{}, fmt.Errorf("store: decode a change: %w", err)
	}
	return c, c.Check()
}

// Commit commits ch with the graph task ctx runs in, when there is one: ch is saved with the
// task's output, in the same transaction, and done is called once it has been (not at all when
// the task fails). Outside a task it applies ch alone with s, then calls done. done may be nil.
func Commit(ctx context.Context, s Store, ch Change, done func()) error {
	if ch.Empty() {
		if done != nil {
			done()
		}
		return nil
	}
	b, err := ch.Encode()
	if err != nil {
		return err
	}
	switch err := graph.Effect(ctx, b, done); {
	case err == nil:
		return nil
	case !errors.Is(err, graph.ErrNoTask):
		return err
	}
	if err := s.Apply(context.WithoutCancel(ctx), ch); err != nil {
		return err
	}
	if done != nil {
		done()
	}
	return nil
}

// EncodeLine returns l as a store implementation keeps it: JSON without its Seq and its Key,
// which are the row's.
func EncodeLine(l Line) ([]byte, error) {
	return json.Marshal(storedLine(l))
}

// storedLine is a line as EncodeLine encodes it.
type storedLine struct {
	Seq     int64     `json:"-"`
	Time    time.Time `json:"time"`
	Run     string    `json:"run,omitempty"`
	From    string    `json:"from"`
	To      string    `json:"to"`
	Content string    `json:"content"`
	Key     string    `json:"-"`
}

// DecodeLine reads a line EncodeLine made, numbered seq, with its key ("" for none).
func DecodeLine(seq int64, key string, b []byte) (Line, error) {
	var l Line
	err := json.Unmarshal(b, &l) // lines kept before held their Seq and Key
	l.Seq = seq
	if key != "" {
		l.Key = key
	}
	return l, err
}
