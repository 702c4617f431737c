package providertest

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/models"
	"github.com/agiraph/agiraph/providers"
)

// ByName checks a provider served through package models by its name, against the fake start
// starts: "provider/some-model" reaches the server with the key models.WithAPIKey gave and the
// model's part of the name; models.New's layer of retries sends a lasting server error the
// configured number of times and an error retrying cannot fix once, the error naming the model
// and the attempts; and, without a key, the error names keyEnv (the provider's key variables,
// none for a provider without a key) and models.WithAPIKey. The provider's package must be
// imported by the test, which registers it.
func ByName(t *testing.T, provider string, start func(T, ...Reply) *Server, keyEnv ...string) {
	t.Run("Reaches", func(t *testing.T) {
		srv := start(t, Reply{Text: "hi from " + provider})
		m, err := models.New(provider+"/some-model", models.WithAPIKey("k"), models.WithBaseURL(srv.URL()), models.WithoutRetry())
		require.NoError(t, err)
		assert.Equal(t, provider+"/some-model", m.Name())
		resp, err := m.Generate(context.Background(), providers.Request{Messages: []providers.Message{providers.UserText("hi")}})
		require.NoError(t, err)
		assert.Equal(t, "hi from "+provider, resp.Message.Text())
		req := srv.Requests()[0]
		assert.Equal(t, "some-model", req.Model, "the model on the wire")
		key := req.Header.Get("x-api-key") // Anthropic's header; the others send a bearer token
		if key == "" {
			key = strings.TrimPrefix(req.Header.Get("Authorization"), "Bearer ")
		}
		assert.Equal(t, "k", key, "the key on the wire")
	})
	t.Run("Retries", func(t *testing.T) { retriesByName(t, provider, start) })
	t.Run("FallsBack", func(t *testing.T) { fallsBackByName(t, provider, start) })
	if len(keyEnv) > 0 {
		t.Run("MissingKey", func(t *testing.T) {
			for _, env := range keyEnv {
				t.Setenv(env, "")
			}
			_, err := models.New(provider + "/m")
			require.ErrorIs(t, err, providers.ErrMissingKey)
			assert.Contains(t, err.Error(), keyEnv[0])
			assert.Contains(t, err.Error(), "or pass models.WithAPIKey", "the option a caller of models.New passes")
			assert.NotContains(t, err.Error(), provider+".WithAPIKey")
			assert.NotContains(t, err.Error(), "langchain.WithAPIKey")
			var mk *providers.MissingKeyError
			require.ErrorAs(t, err, &mk)
			assert.Contains(t, mk.Env, keyEnv[0])
			assert.Equal(t, "models.WithAPIKey", mk.Option)
		})
	}
}

// retriesByName: a model of models.New makes one layer of retries over HTTP.
func retriesByName(t *testing.T, provider string, start func(T, ...Reply) *Server) {
	const attempts = 3
	policy := models.WithRetry(providers.Retry{MaxAttempts: attempts, InitialBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond})
	server := Reply{Err: providers.ErrServer}
	for _, tc := range []struct {
		name    string
		replies []Reply
		kind    error  // nil: the call succeeds
		says    string // the end of the error
	}{
		{"lasting 500", []Reply{server, server, server}, providers.ErrServer, "(3 attempts)"},
		{"401", []Reply{{Err: providers.ErrAuth}}, providers.ErrAuth, "(1 attempt; not retried: authentication failed)"},
		{"403", []Reply{{Status: 403}}, providers.ErrAuth, "(1 attempt; not retried: authentication failed)"},
		{"400", []Reply{{Err: providers.ErrBadRequest}}, providers.ErrBadRequest, "(1 attempt; not retried: bad request)"},
		{"404 model not found", []Reply{{Status: 404}}, providers.ErrBadRequest, "(1 attempt; not retried: bad request)"},
		{"context length", []Reply{{Err: providers.ErrContextWindow}}, providers.ErrContextWindow, "(1 attempt; not retried: context window exceeded)"},
		{"429 then success", []Reply{{Err: providers.ErrRateLimit}, {Text: "ok"}}, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := start(t, tc.replies...) // a request past the script fails the test
			m, err := models.New(provider+"/some-model", models.WithAPIKey("k"), models.WithBaseURL(srv.URL()), policy)
			require.NoError(t, err)
			resp, err := m.Generate(context.Background(), providers.Request{Messages: []providers.Message{providers.UserText("hi")}})
			assert.Equal(t, len(tc.replies), len(srv.Requests()), "requests")
			if tc.kind == nil {
				require.NoError(t, err)
				assert.Equal(t, "ok", resp.Message.Text())
				return
			}
			require.ErrorIs(t, err, tc.kind)
			assert.True(t, strings.HasPrefix(err.Error(), provider+"/some-model: "), "error %q names the model", err)
			assert.True(t, strings.HasSuffix(err.Error(), tc.says), "error %q ends with %q", err, tc.says)
		})
	}
}

// fallsBackByName: a chain "p/first,p/second" of models.New moves on to its second model when
// the first fails for good with an error that warrants it, after the first's own retries, and
// not otherwise.
func fallsBackByName(t *testing.T, provider string, start func(T, ...Reply) *Server) {
	policy := models.WithRetry(providers.Retry{MaxAttempts: 2, InitialBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond})
	first, second := provider+"/first", provider+"/second"
	ok := Reply{Text: "ok"}
	for _, tc := range []struct {
		name    string
		opts    []models.Option
		replies []Reply
		models  []string // the models the requests named, in order
		kind    error    // nil: the call succeeds, answered by second
	}{
		{"500", nil, []Reply{{Err: providers.ErrServer}, {Err: providers.ErrServer}, ok}, []string{"first", "first", "second"}, nil},
		{"429", nil, []Reply{{Err: providers.ErrRateLimit}, {Err: providers.ErrRateLimit}, ok}, []string{"first", "first", "second"}, nil},
		{"overloaded", nil, []Reply{{Err: providers.ErrOverloaded}, {Err: providers.ErrOverloaded}, ok}, []string{"first", "first", "second"}, nil},
		{"400 stays", nil, []Reply{{Err: providers.ErrBadRequest}}, []string{"first"}, providers.ErrBadRequest},
		{"401 stays", nil, []Reply{{Err: providers.ErrAuth}}, []string{"first"}, providers.ErrAuth},
		{"401 configured", []models.Option{models.WithFallbackOn(providers.FallbackOn{Auth: true})}, []Reply{{Err: providers.ErrAuth}, ok}, []string{"first", "second"}, nil},
		{"404 configured", []models.Option{models.WithFallbackOn(providers.FallbackOn{NotFound: true})}, []Reply{{Status: 404}, ok}, []string{"first", "second"}, nil},
		{"500 then 400", nil, []Reply{{Err: providers.ErrServer}, {Err: providers.ErrServer}, {Err: providers.ErrBadRequest}}, []string{"first", "first", "second"}, providers.ErrBadRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := start(t, tc.replies...)
			opts := append([]models.Option{models.WithAPIKey("k"), models.WithBaseURL(srv.URL()), policy}, tc.opts...)
			m, err := models.New(first+","+second, opts...)
			require.NoError(t, err)
			assert.Equal(t, first+","+second, m.Name())
			var fellBack []string
			ctx := providers.OnFallback(context.Background(), func(from string, err error, to string) {
				fellBack = append(fellBack, from+" -> "+to)
			})
			resp, err := m.Generate(ctx, providers.Request{Messages: []providers.Message{providers.UserText("hi")}})
			var got []string
			for _, r := range srv.Requests() {
				got = append(got, r.Model)
			}
			assert.Equal(t, tc.models, got, "the models asked, in order")
			if tc.kind == nil {
				require.NoError(t, err)
				assert.Equal(t, "ok", resp.Message.Text())
				assert.Equal(t, second, resp.Model, "the model that answered")
				assert.Equal(t, []string{first + " -> " + second}, fellBack)
				return
			}
			require.ErrorIs(t, err, tc.kind)
			var fe *providers.FallbackError
			if len(fellBack) == 0 {
				assert.False(t, errors.As(err, &fe), "no fall-back, no FallbackError: %v", err)
				return
			}
			require.ErrorAs(t, err, &fe)
			assert.Equal(t, []string{first, second}, fe.Models)
			assert.Contains(t, err.Error(), first+": server error")
		})
	}
}
