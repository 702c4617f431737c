package webhook_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/internal/webhook"
)

// A post to a loopback address is refused unless allowed, and not tried again; allowed, it is
// tried until it is answered with a 2xx status.
func TestPost(t *testing.T) {
	var tries atomic.Int32
	var got atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got.Store(string(b) + " " + r.Header.Get("Content-Type") + " " + r.Header.Get("X-Test"))
		if tries.Add(1) == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()

	err := webhook.Post(context.Background(), webhook.Client(false), srv.URL, nil, []byte(`{}`))
	require.ErrorIs(t, err, webhook.ErrRefused)
	assert.Contains(t, err.Error(), "127.0.0.1")
	assert.Zero(t, tries.Load())

	require.NoError(t, webhook.Post(context.Background(), webhook.Client(true), srv.URL, http.Header{"X-Test": {"yes"}}, []byte(`{"a":1}`)))
	assert.Equal(t, int32(2), tries.Load())
	assert.Equal(t, `{"a":1} application/json yes`, got.Load())

	assert.NoError(t, webhook.CheckURL("https://hooks.example/x"))
	assert.ErrorContains(t, webhook.CheckURL("ftp://x"), `"ftp://x"`)
	assert.Error(t, webhook.CheckURL("/relative"))
}
