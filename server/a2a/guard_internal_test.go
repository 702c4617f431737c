package a2a

import (
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
		assert.Equal(t, want, refused(netip.MustParseAddr(addr)), addr)
	}
}

// The push client checks the address it connects to, whatever the URL names: an address
// literal, or a name that resolves to a refused address.
func TestPushClientChecksTheAddress(t *testing.T) {
	var hits atomic.Int32
	ts := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits.Add(1) }))
	defer ts.Close()
	port := ts.URL[strings.LastIndex(ts.URL, ":"):]
	for _, u := range []string{ts.URL, "http://localhost" + port} {
		_, err := pushClient().Post(u+"/hook", "application/json", strings.NewReader("{}"))
		require.Error(t, err, u)
		assert.Contains(t, err.Error(), "is a loopback address", u)
		assert.Contains(t, err.Error(), "/hook", "the error names the URL")
	}
	assert.Zero(t, hits.Load(), "nothing reached the server")
	resp, err := (&http.Client{}).Post(ts.URL, "application/json", strings.NewReader("{}"))
	require.NoError(t, err, "the server is there")
	resp.Body.Close()
}
