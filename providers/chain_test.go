package providers_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/providers/scripted"
)

// A chain's second model answers when the first fails in a way that warrants it, and is not
// asked otherwise: the caller's context ending, a streamed answer already under way, or a refusal.
func TestFallbackWhenItWarrants(t *testing.T) {
	hi := providers.Request{Messages: []providers.Message{providers.UserText("hi")}}
	ok := scripted.Turn{Text: "from second"}
	for _, tc := range []struct {
		name   string
		first  scripted.Func
		req    func(context.Context) (context.Context, providers.Request)
		second bool // whether the second model answers
	}{
		{"server error", func(context.Context, providers.Request) (scripted.Turn, error) {
			return fail(providers.ErrServer, 0), nil
		}, nil, true},
		{"a call that timed out", func(context.Context, providers.Request) (scripted.Turn, error) {
			return scripted.Turn{}, context.DeadlineExceeded
		}, nil, true},
		{"the caller's context ended", func(ctx context.Context, _ providers.Request) (scripted.Turn, error) {
			return scripted.Turn{}, ctx.Err()
		}, func(ctx context.Context) (context.Context, providers.Request) {
			ctx, cancel := context.WithCancel(ctx)
			cancel()
			return ctx, hi
		}, false},
		{"a refusal is an answer", func(context.Context, providers.Request) (scripted.Turn, error) {
			return scripted.Turn{Text: "no", Stop: providers.StopRefusal}, nil
		}, nil, false},
		{"text already streamed", func(_ context.Context, req providers.Request) (scripted.Turn, error) {
			req.OnText("partial ")
			return fail(providers.ErrServer, 0), nil
		}, func(ctx context.Context) (context.Context, providers.Request) {
			req := hi
			req.OnText = func(string) {}
			return ctx, req
		}, false},
		{"a stream that failed before its first delta", func(context.Context, providers.Request) (scripted.Turn, error) {
			return fail(providers.ErrOverloaded, 0), nil
		}, func(ctx context.Context) (context.Context, providers.Request) {
			req := hi
			req.OnText = func(string) {}
			return ctx, req
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			second := scripted.New("second", ok)
			m := providers.Fallback(providers.FallbackOn{}, scripted.NewFunc("first", tc.first), second)
			assert.Equal(t, "scripted/first,scripted/second", m.Name())
			ctx, req := context.Background(), hi
			if tc.req != nil {
				ctx, req = tc.req(ctx)
			}
			resp, err := m.Generate(ctx, req)
			if !tc.second {
				assert.Equal(t, 1, second.Remaining(), "the second model was not asked")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, "from second", resp.Message.Text())
			assert.Equal(t, "scripted/second", resp.Model)
		})
	}
}

// When every model fails, the error names each with its failure and unwraps to the last.
func TestFallbackAllFail(t *testing.T) {
	m := providers.Fallback(providers.FallbackOn{},
		scripted.New("a", fail(providers.ErrRateLimit, 0)), scripted.New("b", fail(providers.ErrServer, 0)))
	var told []string
	ctx := providers.OnFallback(context.Background(), func(from string, err error, to string) {
		told = append(told, from+" -> "+to+": "+err.Error())
	})
	_, err := m.Generate(ctx, providers.Request{})
	require.ErrorIs(t, err, providers.ErrServer)
	assert.NotErrorIs(t, err, providers.ErrRateLimit, "unwraps to the last error")
	var fe *providers.FallbackError
	require.ErrorAs(t, err, &fe)
	assert.Equal(t, []string{"scripted/a", "scripted/b"}, fe.Models)
	assert.Equal(t, "fallback chain failed: scripted/a: scripted/m: rate limited; then scripted/b: scripted/m: server error", err.Error())
	assert.Equal(t, []string{"scripted/a -> scripted/b: scripted/m: rate limited"}, told)
	assert.Panics(t, func() { providers.Fallback(providers.FallbackOn{}) })
}
