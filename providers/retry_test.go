package providers_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/providers/scripted"
)

func fail(kind error, retryAfter time.Duration) scripted.Turn {
	return scripted.Turn{Err: &providers.Error{Provider: "scripted", Model: "m", Kind: kind, RetryAfter: retryAfter}}
}

func TestRetry(t *testing.T) {
	t.Parallel()
	fast := providers.Retry{MaxAttempts: 3, InitialBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond}
	for _, tc := range []struct {
		name     string
		turns    []scripted.Turn
		wantText string
		wantErr  error
		wantMsg  string
		played   int
	}{
		{"rate limit then success", []scripted.Turn{fail(providers.ErrRateLimit, time.Millisecond), {Text: "ok"}}, "ok", nil, "", 2},
		{"overload and server error then success", []scripted.Turn{fail(providers.ErrOverloaded, 0), fail(providers.ErrServer, 0), {Text: "ok"}}, "ok", nil, "", 3},
		{"gives up after the last attempt", []scripted.Turn{fail(providers.ErrConnection, 0), fail(providers.ErrConnection, 0), fail(providers.ErrConnection, 0), {Text: "never"}}, "", providers.ErrConnection, "(3 attempts)", 3},
		{"no retry on a bad request", []scripted.Turn{fail(providers.ErrBadRequest, 0), {Text: "never"}}, "", providers.ErrBadRequest, "", 1},
		{"no retry on auth", []scripted.Turn{fail(providers.ErrAuth, 0), {Text: "never"}}, "", providers.ErrAuth, "", 1},
		{"retry-after is capped", []scripted.Turn{fail(providers.ErrRateLimit, time.Hour), {Text: "ok"}}, "ok", nil, "", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := scripted.New("m", tc.turns...)
			resp, err := providers.WithRetry(m, fast).Generate(context.Background(), providers.Request{})
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil && err != nil) {
				t.Fatalf("err %v, want %v", err, tc.wantErr)
			}
			if tc.wantMsg != "" && !strings.Contains(err.Error(), tc.wantMsg) {
				t.Errorf("err %v, want it to say %q", err, tc.wantMsg)
			}
			if resp.Message.Text() != tc.wantText {
				t.Errorf("text %q, want %q", resp.Message.Text(), tc.wantText)
			}
			if played := len(tc.turns) - m.Remaining(); played != tc.played {
				t.Errorf("%d calls, want %d", played, tc.played)
			}
		})
	}
}

func TestRetryStopsWhenTheContextEnds(t *testing.T) {
	t.Parallel()
	m := scripted.New("m", fail(providers.ErrRateLimit, time.Hour), scripted.Turn{Text: "never"})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := providers.WithRetry(m, providers.Retry{MaxBackoff: time.Hour}).Generate(ctx, providers.Request{})
		done <- err
	}()
	for m.Remaining() == 2 {
		time.Sleep(time.Millisecond)
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("err %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the wait did not end with the context")
	}
}

// failStatus is a failed turn with an HTTP status, of the kind the status maps to.
func failStatus(status int) scripted.Turn {
	return scripted.Turn{Err: &providers.Error{Provider: "scripted", Model: "m", Status: status, Kind: providers.KindOfStatus(status)}}
}

// A call that fails makes as many attempts as retrying can help, and its error says how many
// were made and, when the error cannot be fixed by retrying, that it was not retried.
func TestRetryErrorCountsTheAttempts(t *testing.T) {
	t.Parallel()
	fast := providers.Retry{MaxAttempts: 4, InitialBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond}
	never := scripted.Turn{Text: "never"}
	for _, tc := range []struct {
		name  string
		turns []scripted.Turn
		kind  error
		msg   string
		calls int
	}{
		{"lasting server error", []scripted.Turn{failStatus(500), failStatus(500), failStatus(500), failStatus(500), never},
			providers.ErrServer, "scripted/m: server error (HTTP 500) (4 attempts)", 4},
		{"unauthorized", []scripted.Turn{failStatus(401), never},
			providers.ErrAuth, "scripted/m: authentication failed (HTTP 401) (1 attempt; not retried: authentication failed)", 1},
		{"forbidden", []scripted.Turn{failStatus(403), never},
			providers.ErrAuth, "scripted/m: authentication failed (HTTP 403) (1 attempt; not retried: authentication failed)", 1},
		{"bad request", []scripted.Turn{failStatus(400), never},
			providers.ErrBadRequest, "scripted/m: bad request (HTTP 400) (1 attempt; not retried: bad request)", 1},
		{"model not found", []scripted.Turn{failStatus(404), never},
			providers.ErrBadRequest, "scripted/m: bad request (HTTP 404) (1 attempt; not retried: bad request)", 1},
		{"context window", []scripted.Turn{fail(providers.ErrContextWindow, 0), never},
			providers.ErrContextWindow, "scripted/m: context window exceeded (1 attempt; not retried: context window exceeded)", 1},
		{"rate limit then unauthorized", []scripted.Turn{failStatus(429), failStatus(401), never},
			providers.ErrAuth, "scripted/m: authentication failed (HTTP 401) (2 attempts; not retried: authentication failed)", 2},
		{"an error of no kind", []scripted.Turn{{Err: errors.New("boom")}, never},
			nil, "boom (1 attempt; not retried)", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := scripted.New("m", tc.turns...)
			_, err := providers.WithRetry(m, fast).Generate(context.Background(), providers.Request{})
			require.Error(t, err)
			assert.Equal(t, tc.msg, err.Error())
			if tc.kind != nil {
				assert.ErrorIs(t, err, tc.kind)
			}
			var re *providers.RetryError
			require.ErrorAs(t, err, &re)
			assert.Equal(t, tc.calls, re.Attempts)
			assert.Equal(t, tc.calls, len(tc.turns)-m.Remaining(), "calls made")
		})
	}
}

// OnRetry is told of every retry, before its wait, with the provider's retry-after (capped).
func TestOnRetry(t *testing.T) {
	t.Parallel()
	m := scripted.New("m", fail(providers.ErrRateLimit, 2*time.Millisecond), fail(providers.ErrServer, time.Hour), scripted.Turn{Text: "ok"})
	type retry struct {
		attempt int
		kind    error
		wait    time.Duration
	}
	var got []retry
	ctx := providers.OnRetry(context.Background(), func(attempt int, err error, wait time.Duration) {
		var pe *providers.Error
		require.ErrorAs(t, err, &pe)
		got = append(got, retry{attempt, pe.Kind, wait})
	})
	resp, err := providers.WithRetry(m, providers.Retry{InitialBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond}).Generate(ctx, providers.Request{})
	require.NoError(t, err)
	assert.Equal(t, "ok", resp.Message.Text())
	assert.Equal(t, []retry{{1, providers.ErrRateLimit, 2 * time.Millisecond}, {2, providers.ErrServer, 5 * time.Millisecond}}, got)

	// A call that succeeds at once, or a model without retrying, tells it nothing.
	got = nil
	_, err = providers.WithRetry(scripted.New("m", scripted.Turn{Text: "ok"}), providers.Retry{}).Generate(ctx, providers.Request{})
	require.NoError(t, err)
	_, err = scripted.New("m", fail(providers.ErrServer, 0)).Generate(ctx, providers.Request{})
	require.ErrorIs(t, err, providers.ErrServer)
	assert.Empty(t, got)
}
