package webhook_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/internal/webhook"
)

func TestRefused(t *testing.T) {
	for addr, want := range map[string]string{
		"127.0.0.1":        "a loopback address",
		"::1":              "a loopback address",
		"::ffff:127.0.0.1": "a loopback address",
		"10.1.2.3":         "a private address",
		"172.16.0.1":       "a private address",
		"192.168.1.1":      "a private address",
		"fd00::1":          "a private address",
		"169.254.169.254":  "a link-local address",
		"fe80::1":          "a link-local address",
		"0.0.0.0":          "the unspecified address",
		"::":               "the unspecified address",
		"8.8.8.8":          "",
		"2001:4860::8888":  "",
	} {
		assert.Equal(t, want, webhook.Refused(netip.MustParseAddr(addr)), addr)
	}
}

func TestCheckURLAndHost(t *testing.T) {
	assert.NoError(t, webhook.CheckURL("https://hooks.example/x"))
	assert.ErrorContains(t, webhook.CheckURL("ftp://x"), `"ftp://x"`)
	assert.Error(t, webhook.CheckURL("/relative"))
	for raw, want := range map[string]string{
		"http://localhost:8080/x":     "localhost is a loopback address",
		"http://[::ffff:10.0.0.7]/x":  "10.0.0.7 is a private address",
		"https://hooks.example/x":     "",
		"http://169.254.169.254/meta": "169.254.169.254 is a link-local address",
	} {
		u, err := url.Parse(raw)
		require.NoError(t, err)
		assert.Equal(t, want, webhook.CheckHost(u), raw)
	}
}

// The client checks the address it connects to, whatever the URL names: an address literal, or
// a name that resolves to a refused address; nothing reaches the server.
func TestClientChecksTheAddress(t *testing.T) {
	var hits atomic.Int32
	ts := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits.Add(1) }))
	defer ts.Close()
	port := ts.URL[strings.LastIndex(ts.URL, ":"):]
	for _, u := range []string{ts.URL, "http://localhost" + port} {
		err := webhook.Post(context.Background(), webhook.Client(false), u+"/hook", nil, []byte(`{}`))
		require.ErrorIs(t, err, webhook.ErrRefused, u)
		assert.Contains(t, err.Error(), "is a loopback address", u)
		assert.Contains(t, err.Error(), "/hook", "the error names the URL")
	}
	assert.Zero(t, hits.Load(), "nothing reached the server, nor was tried again")
}

// Allowed, a post is tried until it is answered with a 2xx status, with its header and type.
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
	require.NoError(t, webhook.Post(context.Background(), webhook.Client(true), srv.URL, http.Header{"X-Test": {"yes"}}, []byte(`{"a":1}`)))
	assert.Equal(t, int32(2), tries.Load())
	assert.Equal(t, `{"a":1} application/json yes`, got.Load())
}
