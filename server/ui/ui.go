// Package ui is the web UI of package server: plain ES modules, a style sheet and an HTML page,
// embedded in the binary, with no build step and no third-party code. The server serves the
// page at / and its files under /ui/; the page talks to the server's HTTP API with the cookie
// that the login URL sets.
package ui

import (
	"embed"
	"io/fs"
	"net/http"
)

//go:embed static
var static embed.FS

// Files are the UI's files: index.html at the root, the modules, the style sheet and the icon
// (favicon.svg) beside it.
func Files() fs.FS {
	sub, err := fs.Sub(static, "static")
	if err != nil {
		panic(err) // the embedded folder is part of the build
	}
	return sub
}

// ContentSecurityPolicy is the policy the pages are served with: scripts, styles and requests
// of the server's own origin only, no inline script, no framing. Model output that reached the
// page as markup could run nothing.
const ContentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// Handler serves the page at / and the files under /ui/, with the security headers.
func Handler() http.Handler {
	files := http.FileServerFS(Files())
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", ContentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-cache")
		if r.URL.Path == "/" {
			http.ServeFileFS(w, r, Files(), "index.html")
			return
		}
		http.StripPrefix("/ui", files).ServeHTTP(w, r)
	})
}
