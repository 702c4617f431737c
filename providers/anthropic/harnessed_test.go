package anthropic_test

import (
	"context"
	"encoding/json"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/models"
	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/providers/providertest"
	"github.com/agiraph/agiraph/runtime"
	"github.com/agiraph/agiraph/runtime/adapter"
	"github.com/agiraph/agiraph/runtime/harnessed"
	"github.com/agiraph/agiraph/runtime/runtimetest"
	"github.com/agiraph/agiraph/tools"
	"github.com/agiraph/agiraph/tools/files"
)

// A harnessed worker's model over the Messages API.

// assignment returns an assignment whose worker may read and write its scratch folder.
func assignment(t *testing.T) runtime.Assignment {
	a := runtimetest.NewAssignment(t, nil)
	a.Tools = files.Scope{Root: a.Dir.Scratch(), Read: []string{""}, Write: []string{""}}.Tools()
	return a
}

// recorder collects a run's events.
type recorder struct {
	mu     sync.Mutex
	events []runtime.Event
}

func (r *recorder) sink(e runtime.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

// of returns the events of kind k.
func (r *recorder) of(k runtime.Kind) []runtime.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var es []runtime.Event
	for _, e := range r.events {
		if e.Kind == k {
			es = append(es, e)
		}
	}
	return es
}

func call(id, name string, args any) tools.Call {
	raw, err := json.Marshal(args)
	if err != nil {
		panic(err)
	}
	return tools.Call{ID: id, Name: name, Args: raw}
}

// One failing model call of a worker makes exactly the attempts of the model's retrying, over
// HTTP: as many as configured for a lasting server error, one for an authentication error;
// never twice as many.
func TestModelFailureMakesTheRetryingAttempts(t *testing.T) {
	const attempts = 3
	policy := models.WithRetry(providers.Retry{MaxAttempts: attempts, InitialBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond})
	server := providertest.Reply{Err: providers.ErrServer}
	for _, tc := range []struct {
		name     string
		replies  []providertest.Reply
		kind     error
		says     string
		retrying int // Retrying events
	}{
		{"lasting 500", []providertest.Reply{server, server, server}, providers.ErrServer, "(3 attempts)", attempts - 1},
		{"401", []providertest.Reply{{Err: providers.ErrAuth}}, providers.ErrAuth, "(1 attempt; not retried: authentication failed)", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := providertest.NewAnthropic(t, tc.replies...) // a request past the script fails the test
			m, err := models.New("anthropic/claude-x", models.WithAPIKey("k"), models.WithBaseURL(srv.URL()), policy)
			require.NoError(t, err)
			a := assignment(t)
			var rec recorder
			o, err := harnessed.New(m).Run(context.Background(), a, rec.sink)
			require.ErrorIs(t, err, tc.kind)
			assert.Equal(t, len(tc.replies), len(srv.Requests()), "requests")
			assert.Contains(t, err.Error(), "anthropic/claude-x: ")
			assert.Contains(t, err.Error(), tc.says)
			assert.Equal(t, runtime.Failed, o.Status)
			assert.Len(t, rec.of(runtime.Retrying), tc.retrying)
			notes, err := os.ReadFile(a.Dir.Path("failure_notes.md"))
			require.NoError(t, err)
			assert.Contains(t, string(notes), tc.says)
		})
	}
}

// Over the Anthropic API, answered as JSON (WithoutStreaming) or as a stream (by default, and
// when the SDK requires it; its message_start reports one output token, its message_delta the
// turn's), each model_turn carries its answer's usage.
func TestModelTurnUsageOverHTTP(t *testing.T) {
	u1 := providers.Usage{InputTokens: 1200, OutputTokens: 85, CacheReadTokens: 300, CacheWriteTokens: 40}
	u2 := providers.Usage{InputTokens: 90, OutputTokens: 412, CacheReadTokens: 1500}
	for _, tc := range []struct {
		name      string
		maxTokens int // more than the SDK lets a call wait for without streaming
		opts      []harnessed.Option
		stream    bool
	}{
		{"json", 0, []harnessed.Option{harnessed.WithoutStreaming()}, false},
		{"stream", 0, nil, true},
		{"stream required", 32000, []harnessed.Option{harnessed.WithoutStreaming()}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := providertest.NewAnthropic(t,
				providertest.Reply{Calls: []tools.Call{call("c1", "write_file", files.WriteArgs{Path: "a.md", Content: "a"})}, Usage: u1},
				providertest.Reply{Calls: []tools.Call{call("c2", "publish", adapter.PublishArgs{Summary: "done"})}, Usage: u2},
			)
			m, err := models.New("anthropic/claude-sonnet-4-5", models.WithAPIKey("k"), models.WithBaseURL(srv.URL()))
			require.NoError(t, err)
			a := assignment(t)
			var rec recorder
			o, err := harnessed.New(m, append(tc.opts, harnessed.WithMaxTokens(tc.maxTokens))...).Run(context.Background(), a, rec.sink)
			require.NoError(t, err)
			for _, r := range srv.Requests() {
				assert.Equal(t, tc.stream, r.Stream, "streamed")
			}
			var got []providers.Usage
			for _, e := range rec.of(runtime.ModelTurn) {
				require.NotNil(t, e.Usage, "model_turn without usage")
				got = append(got, *e.Usage)
			}
			require.Len(t, got, 2)
			var sum providers.Usage
			for i, want := range []providers.Usage{u1, u2} {
				assert.Positive(t, got[i].CostUSD, "turn %d priced", i+1)
				sum = sum.Add(got[i])
				got[i].CostUSD = 0
				assert.Equal(t, want, got[i], "turn %d", i+1)
			}
			assert.Equal(t, sum, o.Usage)
		})
	}
}
