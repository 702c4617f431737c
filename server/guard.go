package server

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"mime"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/agiraph/agiraph/internal/osfile"
)

// The server's guard stands before every handler. In order, it refuses:
//   - a request whose Host is not an allowed host (403): a web page that rebinds its own name
//     to 127.0.0.1 cannot reach the server;
//   - a cross-origin request from an origin that is not allowed (403), and answers the CORS
//     preflight of one that is;
//   - a request without the token (401), but for the web UI's page and files, which hold no
//     data: the page asks for the token when the API refuses it;
//   - a state-changing request (POST, PUT, PATCH) whose body is not declared JSON (415): a
//     cross-site HTML form can send text/plain, urlencoded or multipart bodies, never JSON. A
//     request with no body at all (Content-Length 0) and no Content-Type passes: a form always
//     declares its type, even with no field, and the requests a page's script sends without a
//     type carry the page's Origin, which the check above refuses unless it is allowed.
//
// Every answer but the web UI's is inert (see inert): the API serves what models wrote, and a
// browser holding the cookie may be led to open it.

// tokenFile is the token's file in the root, mode 0600.
const tokenFile = "token"

// TokenCookie is the cookie that carries the token for a browser: opening the URL the server
// prints (/?token=...) sets it.
const TokenCookie = "agiraph_token"

// loadToken returns the token the server requires: the configured one, else the one kept in
// the root, else a new one, kept there.
func loadToken(root, given string) (string, error) {
	if given != "" {
		return given, nil
	}
	p := filepath.Join(root, tokenFile)
	data, err := osfile.ReadFile(p)
	switch {
	case err == nil && len(strings.TrimSpace(string(data))) >= 16:
		if err := os.Chmod(p, 0o600); err != nil {
			return "", fmt.Errorf("server: token file %s: %w", p, err)
		}
		return strings.TrimSpace(string(data)), nil
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return "", fmt.Errorf("server: token file %s: %w", p, err)
	}
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("server: token: %w", err)
	}
	tok := hex.EncodeToString(b)
	if err := os.WriteFile(p, []byte(tok+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("server: token file %s: %w", p, err)
	}
	return tok, nil
}

// Token returns the token requests must carry ("" when the server was made WithoutAuth).
func (s *Server) Token() string { return s.token }

// LoginURL returns the URL that opens the server in a browser at base ("http://host:port"):
// it carries the token once, and the server answers with a cookie that carries it from then on.
func (s *Server) LoginURL(base string) string {
	if s.token == "" {
		return base + "/"
	}
	return base + "/?token=" + url.QueryEscape(s.token)
}

// guard wraps the API with the checks above.
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		inert(w.Header()) // the web UI's handler sets its own policy
		if !s.hostAllowed(r.Host) {
			writeError(w, http.StatusForbidden, "host %s is not allowed (allowed: %s); a server reached under another name is configured with server.WithAllowedHosts (-allow-host)", shown(r.Host), strings.Join(s.hosts(), ", "))
			return
		}
		origin := r.Header.Get("Origin")
		cross := origin != "" && !sameOrigin(origin, r.Host)
		if cross {
			if !slices.Contains(s.cfg.origins, origin) {
				writeError(w, http.StatusForbidden, "origin %s is not allowed; allowed origins are configured with server.WithAllowedOrigins (-allow-origin)", shown(origin))
				return
			}
			h := w.Header()
			h.Set("Access-Control-Allow-Origin", origin)
			h.Set("Access-Control-Allow-Credentials", "true")
			h.Add("Vary", "Origin")
			h.Set("Access-Control-Expose-Headers", "Location, Content-Location")
			if r.Method == http.MethodOptions {
				h.Set("Access-Control-Allow-Methods", "GET, POST, PATCH, PUT, DELETE")
				h.Set("Access-Control-Allow-Headers", "Authorization, X-Api-Key, Content-Type, Last-Event-ID")
				h.Set("Access-Control-Max-Age", "600")
				w.WriteHeader(http.StatusNoContent)
				return
			}
		} else if r.Header.Get("Sec-Fetch-Site") == "cross-site" && r.Method != http.MethodGet && r.Method != http.MethodHead {
			writeError(w, http.StatusForbidden, "a cross-site request without an allowed origin is refused")
			return
		}
		if r.Method == http.MethodGet && r.URL.Path == "/" && r.URL.Query().Has("token") {
			s.login(w, r)
			return
		}
		if public(r) {
			next.ServeHTTP(w, r)
			return
		}
		if !s.authorized(r) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="agiraph"`)
			writeError(w, http.StatusUnauthorized, "missing or wrong token: open the URL the server printed as it started, or send \"Authorization: Bearer <token>\" with the token it printed (its operator finds it in the file %q of the server's root folder)", tokenFile)
			return
		}
		switch ct := r.Header.Get("Content-Type"); r.Method {
		case http.MethodPost, http.MethodPut, http.MethodPatch:
			if ct == "" && r.ContentLength == 0 {
				break // no body, and nothing declared
			}
			if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
				writeError(w, http.StatusUnsupportedMediaType, "content type %s: want application/json (or no body and no content type)", shown(ct))
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// inertPolicy is the Content-Security-Policy of the API's answers: a document a browser makes
// of one runs in a sandbox — an origin of its own, which the cookie does not reach and the
// guard refuses — with no script, no form, no plugin, and loads nothing.
const inertPolicy = "sandbox; default-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// inert sets the headers that keep an answer of the API from being active content in the
// server's origin, whatever it holds: the sandboxing policy, and no sniffing of another type
// than the one it is served as.
func inert(h http.Header) {
	h.Set("Content-Security-Policy", inertPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
}

// login answers the URL the server prints: with the right token it sets the cookie and sends
// the browser on to /, without the token in its address.
func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	if !s.equalToken(r.URL.Query().Get("token")) {
		writeError(w, http.StatusUnauthorized, "wrong token")
		return
	}
	http.SetCookie(w, &http.Cookie{Name: TokenCookie, Value: s.token, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// public reports whether r asks for the web UI's page or files, or an A2A agent card, which
// hold no data and are served without the token: the page asks for it when the API refuses it,
// and a card declares it.
func public(r *http.Request) bool {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return false
	}
	p := r.URL.Path
	return p == "/" || strings.HasPrefix(p, "/ui/") ||
		strings.HasSuffix(p, agentCardPath) && (p == agentCardPath || strings.HasPrefix(p, A2APath+"/") && strings.Count(p, "/") == 4)
}

// agentCardPath is where A2A clients look for an agent's card, below its server's URL.
const agentCardPath = "/.well-known/agent-card.json"

// authorized reports whether r carries the token: as a bearer token, as X-Api-Key (what the
// LangGraph SDKs send their apiKey as), or in the cookie.
func (s *Server) authorized(r *http.Request) bool {
	if s.token == "" {
		return true
	}
	if key := r.Header.Get("X-Api-Key"); key != "" {
		return s.equalToken(key)
	}
	if auth := r.Header.Get("Authorization"); auth != "" {
		scheme, tok, ok := strings.Cut(auth, " ")
		return ok && strings.EqualFold(scheme, "Bearer") && s.equalToken(strings.TrimSpace(tok))
	}
	if c, err := r.Cookie(TokenCookie); err == nil {
		return s.equalToken(c.Value)
	}
	return false
}

// equalToken compares tok with the server's token in constant time.
func (s *Server) equalToken(tok string) bool {
	return subtle.ConstantTimeCompare([]byte(tok), []byte(s.token)) == 1
}

// loopback are the names under which a server on this machine is reached by default.
var loopback = []string{"localhost", "127.0.0.1", "::1"}

// hosts returns the allowed host names.
func (s *Server) hosts() []string { return append(slices.Clone(loopback), s.cfg.hosts...) }

// hostAllowed reports whether a request's Host (with or without its port) is allowed. An
// allowed host given with a port allows that port only.
func (s *Server) hostAllowed(host string) bool {
	name := host
	if h, _, err := net.SplitHostPort(host); err == nil {
		name = h
	}
	name = strings.ToLower(strings.TrimSuffix(strings.Trim(name, "[]"), "."))
	for _, a := range s.hosts() {
		a = strings.ToLower(a)
		if a == strings.ToLower(host) || strings.Trim(a, "[]") == name {
			return true
		}
	}
	return false
}

// sameOrigin reports whether origin (scheme://host[:port]) is the request's own: its host and
// port are the request's Host.
func sameOrigin(origin, host string) bool {
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return false
	}
	return strings.EqualFold(u.Host, host)
}
