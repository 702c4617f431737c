package sqliteuri

import (
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestOf(t *testing.T) {
	for in, want := range map[string]string{
		"/tmp/a b/c.db":       "file:/tmp/a b/c.db",
		"/x?y#z%w":            "file:/x%3Fy%23z%25w",
		"/tab\there":          "file:/tab%09here",
		"/ü/ok":               "file:/ü/ok",
		"C:/Users/me/data.db": "file:/C:/Users/me/data.db",
	} {
		assert.Equal(t, want, Of(in, nil), "Of(%q)", in)
	}
	assert.Equal(t, "file:/tmp/x.db?_busy_timeout=5000", Of("/tmp/x.db", url.Values{"_busy_timeout": {"5000"}}))
}
