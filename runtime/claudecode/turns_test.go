package claudecode_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/providers/providertest"
	"github.com/agiraph/agiraph/runtime"
	"github.com/agiraph/agiraph/runtime/claudecode"
	"github.com/agiraph/agiraph/tools"
)

// TestReplayTurnUsage runs the real CLI's output with stream events (testdata/2.1.330+partial)
// through a Run: each model turn reports what the fake API charged for it, not message_start's
// output_tokens 1, and the turns add up to the result's totals; without the result, the
// Outcome's usage is that sum.
func TestReplayTurnUsage(t *testing.T) {
	const transcript = "testdata/2.1.330+partial/tools.jsonl"
	turn := providers.Usage{InputTokens: 1000, OutputTokens: 200, CacheReadTokens: 300, CacheWriteTokens: 50}
	total := providers.Usage{InputTokens: 3000, OutputTokens: 600, CacheReadTokens: 900, CacheWriteTokens: 150}

	// replay runs the transcript through command (cat, sed...) as the CLI's output.
	replay := func(t *testing.T, command string) (runtime.Outcome, error, []runtime.Event) { //nolint:staticcheck // Run's results, then the events
		var events []runtime.Event // Run calls the sink in order, never concurrently
		rt := claudecode.New(claudecode.WithBinary(fakeCLI(t, command+" '"+beside(t, transcript)+"'\n")))
		o, err := rt.Run(context.Background(), assignment(t, "x"), func(e runtime.Event) { events = append(events, e) })
		var turns []runtime.Event
		for _, e := range events {
			assert.NotEqual(t, runtime.Output, e.Kind, "an Output event: %s", e.Text)
			if e.Kind == runtime.ModelTurn {
				turns = append(turns, e)
			}
		}
		require.NotEmpty(t, events)
		last := events[len(events)-1]
		assert.Equal(t, runtime.Ended, last.Kind)
		require.NotNil(t, last.Usage)
		assert.Equal(t, o.Usage, *last.Usage, "the Ended event's usage")
		return o, err, turns
	}
	check := func(t *testing.T, turns []runtime.Event) {
		require.Len(t, turns, 3)
		for i, e := range turns {
			require.NotNil(t, e.Usage, "turn %d", i+1)
			assert.Equal(t, turn, *e.Usage, "turn %d", i+1)
		}
	}

	t.Run("with the result", func(t *testing.T) {
		o, err, turns := replay(t, "cat")
		require.NoError(t, err)
		assert.Equal(t, runtime.Published, o.Status)
		check(t, turns)
		assert.Equal(t, 3, o.Turns)
		assert.InDelta(t, 0.0188325, o.Usage.CostUSD, 1e-12, "the result's cost")
		o.Usage.CostUSD = 0
		assert.Equal(t, total, o.Usage)
	})
	t.Run("without the result", func(t *testing.T) {
		o, err, turns := replay(t, "sed '$d'")
		require.ErrorIs(t, err, runtime.ErrNoResult)
		assert.Equal(t, runtime.Failed, o.Status)
		check(t, turns)
		assert.Equal(t, 3, o.Turns)
		assert.Equal(t, total, o.Usage, "the turns' sum")
	})
}

// TestRealCLITurnUsage runs the real CLI against the fake Messages API, which charges its two
// turns differently: each model turn reports its own, and the Outcome the result's total.
func TestRealCLITurnUsage(t *testing.T) {
	bin := claudeBinary(t)
	first := providers.Usage{InputTokens: 1200, OutputTokens: 37, CacheReadTokens: 400, CacheWriteTokens: 60}
	second := providers.Usage{InputTokens: 1300, OutputTokens: 11, CacheReadTokens: 500, CacheWriteTokens: 70}
	fake := providertest.NewAnthropicFunc(t, func(r providertest.Request) providertest.Reply {
		switch last := lastMessage(r); {
		case strings.Contains(last, `"tool_use_id":"toolu_bash"`):
			return providertest.Reply{Text: "Done.", Usage: second}
		case strings.Contains(last, "Count the widgets."):
			return providertest.Reply{Text: "Counting.", Calls: []tools.Call{{ID: "toolu_bash", Name: "Bash", Args: json.RawMessage(`{"command":"echo 3","description":"Count"}`)}}, Usage: first}
		}
		return providertest.Reply{Text: "OK"} // the CLI's own side requests, of no cost
	})
	// Only POST /v1/messages reaches the fake (it would fail the test on anything else).
	target, err := url.Parse(fake.URL())
	require.NoError(t, err)
	proxy := httputil.NewSingleHostReverseProxy(target)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.URL.Path == "/v1/messages" {
			proxy.ServeHTTP(w, r)
			return
		}
		http.NotFound(w, r)
	}))
	defer front.Close()

	rt := claudecode.New(claudecode.WithBinary(bin), claudecode.WithModel("claude-sonnet-4-5"),
		claudecode.WithEnv(offlineEnv(t, front.URL)), claudecode.WithMaxTurns(5))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var turns []runtime.Event
	o, err := rt.Run(ctx, assignment(t, "Count the widgets."), func(e runtime.Event) {
		assert.NotEqual(t, runtime.Output, e.Kind, "an Output event: %s", e.Text)
		if e.Kind == runtime.ModelTurn {
			turns = append(turns, e)
		}
	})
	require.NoError(t, err)
	require.Len(t, turns, 2)
	for i, want := range []providers.Usage{first, second} {
		require.NotNil(t, turns[i].Usage, "turn %d", i+1)
		assert.Equal(t, want, *turns[i].Usage, "turn %d", i+1)
	}
	assert.Equal(t, "Counting.", turns[0].Text)
	assert.Equal(t, "Done.", turns[1].Text)
	assert.Positive(t, o.Usage.CostUSD)
	o.Usage.CostUSD = 0
	assert.Equal(t, first.Add(second), o.Usage)
}
