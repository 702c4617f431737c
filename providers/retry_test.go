package providers_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/providers/scripted"
)

func fail(kind error, retryAfter time.Duration) scripted.Turn {
	return scripted.Turn{Err: &providers.Error{Provider: "scripted", Model: "m", Kind: kind, RetryAfter: retryAfter}}
}

func TestRetry(t *testing.T) {
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
		{"gives up after the last attempt", []scripted.Turn{fail(providers.ErrConnection, 0), fail(providers.ErrConnection, 0), fail(providers.ErrConnection, 0), {Text: "never"}}, "", providers.ErrConnection, "gave up after 3 attempts", 3},
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
