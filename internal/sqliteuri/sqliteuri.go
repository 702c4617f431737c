// Package sqliteuri writes the "file:" URI that opens a SQLite database at a path, whatever
// characters the path holds.
package sqliteuri

import (
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
)

// Of returns the URI of the database at path with the query q (nil: none). What a SQLite URI
// reserves in a path ('?', '#', '%') and control characters are escaped, SQLite decoding %XX,
// so that a folder named "run#2" or "what?" is opened as itself; a path that does not start with
// a slash (Windows) gets one.
func Of(path string, q url.Values) string {
	p := filepath.ToSlash(path)
	var b strings.Builder
	b.WriteString("file:")
	if !strings.HasPrefix(p, "/") {
		b.WriteByte('/')
	}
	for i := 0; i < len(p); i++ {
		c := p[i]
		if c == '?' || c == '#' || c == '%' || c < 0x20 || c == 0x7f {
			fmt.Fprintf(&b, "%%%02X", c)
		} else {
			b.WriteByte(c)
		}
	}
	if len(q) > 0 {
		b.WriteByte('?')
		b.WriteString(q.Encode())
	}
	return b.String()
}
