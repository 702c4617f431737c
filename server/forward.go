package server

import (
	"net/http"
	"net/http/httputil"
	"net/url"
)

// forwardedHeader marks a request one replica forwarded to another: it is not forwarded again.
const forwardedHeader = "X-Agiraph-Forwarded"

// forward serves h here unless another replica of the host's fleet holds agent {id}
// (host.Host.Holder): the request is then forwarded to that replica, with the server's token,
// and its answer given back.
func (s *Server) forward(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		if r.Header.Get(forwardedHeader) != "" {
			h(w, r)
			return
		}
		base, err := s.host.Holder(r.Context(), id)
		if err != nil {
			hostError(w, err)
			return
		}
		target, err := url.Parse(base)
		if base == "" || err != nil {
			h(w, r)
			return
		}
		proxy := &httputil.ReverseProxy{
			Rewrite: func(pr *httputil.ProxyRequest) {
				pr.SetURL(target)
				pr.Out.Header.Del("Cookie")
				pr.Out.Header.Del("Origin") // checked here already
				pr.Out.Header.Set(forwardedHeader, "1")
				if s.token != "" {
					pr.Out.Header.Set("Authorization", "Bearer "+s.token)
				}
			},
			FlushInterval: -1, // event streams as they come
			ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
				writeError(w, http.StatusBadGateway, "agent %q: its replica at %s: %v", id, base, err)
			},
		}
		proxy.ServeHTTP(w, r)
	}
}
