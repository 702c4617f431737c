package langgraphapi

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/agiraph/agiraph/nodes/store"
)

// The API's records are documents of the store under these key prefixes.
const (
	assistantPrefix = "langgraph/assistant/"
	versionPrefix   = "langgraph/version/" // then <assistant>/<version>
	threadPrefix    = "langgraph/thread/"
	runPrefix       = "langgraph/run/" // then <thread>/<run>
)

// Thread statuses.
const (
	threadIdle        = "idle"
	threadBusy        = "busy"
	threadInterrupted = "interrupted"
	threadError       = "error"
)

// Run statuses.
const (
	runPending     = "pending"
	runRunning     = "running"
	runSuccess     = "success"
	runError       = "error"
	runInterrupted = "interrupted"
)

// assistant is an assistant as the API shows it. Each registered graph has one, made by the
// registration.
type assistant struct {
	AssistantID string         `json:"assistant_id"`
	GraphID     string         `json:"graph_id"`
	Name        string         `json:"name"`
	Description *string        `json:"description"`
	Config      map[string]any `json:"config"`
	Context     map[string]any `json:"context"`
	Metadata    map[string]any `json:"metadata"`
	Version     int            `json:"version"`
	CreatedAt   time.Time      `json:"created_at"`
	UpdatedAt   time.Time      `json:"updated_at"`
}

// thread is a thread's record. Values and Interrupts are not stored: they are read from the
// graph's checkpointer when the thread is shown.
type thread struct {
	ThreadID   string                     `json:"thread_id"`
	CreatedAt  time.Time                  `json:"created_at"`
	UpdatedAt  time.Time                  `json:"updated_at"`
	Metadata   map[string]any             `json:"metadata"`
	Status     string                     `json:"status"`
	Config     map[string]any             `json:"config"`
	Values     any                        `json:"values,omitempty"`
	Interrupts map[string][]interruptJSON `json:"interrupts"`
}

// graphID is the graph whose checkpoints hold the thread's state ("" before its first run).
func (t *thread) graphID() string {
	id, _ := t.Metadata["graph_id"].(string)
	return id
}

// run is a run's record.
type run struct {
	RunID             string         `json:"run_id"`
	ThreadID          string         `json:"thread_id"`
	AssistantID       string         `json:"assistant_id"`
	CreatedAt         time.Time      `json:"created_at"`
	UpdatedAt         time.Time      `json:"updated_at"`
	Status            string         `json:"status"`
	Metadata          map[string]any `json:"metadata"`
	Kwargs            runKwargs      `json:"kwargs"`
	MultitaskStrategy string         `json:"multitask_strategy"`
}

// runKwargs is what a run was asked to do, kept so that a restarted handler can do it.
type runKwargs struct {
	Input           json.RawMessage `json:"input,omitempty"`
	Command         *command        `json:"command,omitempty"`
	StreamMode      []string        `json:"stream_mode"`
	InterruptBefore nodeList        `json:"interrupt_before,omitempty"`
	InterruptAfter  nodeList        `json:"interrupt_after,omitempty"`
	Config          map[string]any  `json:"config,omitempty"`
	Subgraphs       bool            `json:"subgraphs"`
	// CheckpointID is the checkpoint the run starts from ("": the thread's latest).
	CheckpointID string `json:"checkpoint_id,omitempty"`
	// Temporary is set on stateless runs whose thread is deleted when they end.
	Temporary bool `json:"temporary"`
}

func assistantKey(id string) string { return assistantPrefix + id }

// versionKey orders an assistant's versions by number.
func versionKey(id string, version int) string {
	return fmt.Sprintf("%s%s/%010d", versionPrefix, id, version)
}
func threadKey(id string) string      { return threadPrefix + id }
func runKey(thread, id string) string { return runPrefix + thread + "/" + id }

// records reads and writes the API's records in a store.
type records struct{ st store.Store }

// get decodes the document under key into v; it reports whether there was one.
func (r records) get(ctx context.Context, key string, v any) (bool, error) {
	d, err := r.st.Doc(ctx, key)
	if err != nil || d.Value == nil {
		return false, err
	}
	if err := json.Unmarshal(d.Value, v); err != nil {
		return false, fmt.Errorf("langgraphapi: record %s: %w", key, err)
	}
	return true, nil
}

// list decodes every document under prefix, in key order.
func list[T any](ctx context.Context, r records, prefix string) ([]T, error) {
	docs, err := r.st.Docs(ctx, prefix)
	if err != nil {
		return nil, err
	}
	out := make([]T, 0, len(docs))
	for _, d := range docs {
		var v T
		if err := json.Unmarshal(d.Value, &v); err != nil {
			return nil, fmt.Errorf("langgraphapi: record %s: %w", d.Key, err)
		}
		out = append(out, v)
	}
	return out, nil
}

// change collects puts and deletes of records to commit in one transaction.
type change struct {
	store.Change
	err error
}

func (c *change) put(key string, v any) {
	if err := c.Put(key, v); err != nil && c.err == nil {
		c.err = err
	}
}

func (r records) apply(ctx context.Context, c *change) error {
	if c.err != nil {
		return c.err
	}
	return r.st.Apply(ctx, c.Change)
}

// put stores one record.
func (r records) put(ctx context.Context, key string, v any) error {
	var c change
	c.put(key, v)
	return r.apply(ctx, &c)
}
