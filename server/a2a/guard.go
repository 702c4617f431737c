package a2a

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"
)

// WithPrivatePush lets push notifications go to any address: loopback, link-local, private and
// unspecified ones included, which the handler refuses by default (a client could otherwise
// make the server post to its own network). For tests and local setups.
func WithPrivatePush() Option { return func(h *Handler) { h.privatePush = true } }

// refused returns why a push notification may not go to ip, or "".
func refused(ip netip.Addr) string {
	ip = ip.Unmap()
	switch {
	case ip.IsLoopback():
		return "a loopback address"
	case ip.IsLinkLocalUnicast(), ip.IsLinkLocalMulticast(), ip.IsInterfaceLocalMulticast():
		return "a link-local address"
	case ip.IsPrivate():
		return "a private address"
	case ip.IsUnspecified():
		return "the unspecified address"
	}
	return ""
}

// checkPushURL returns why u may not be a push notification URL, as far as it shows before
// delivery: a host that is a refused address, or localhost. The address a name resolves to is
// checked as each notification is posted (pushClient).
func checkPushURL(u *url.URL) string {
	host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return "localhost is a loopback address"
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		if why := refused(ip); why != "" {
			return ip.String() + " is " + why
		}
	}
	return ""
}

// pushClient returns the HTTP client that posts push notifications: it dials no proxy, and a
// connection to a refused address fails, the error naming the address and why — whatever the
// URL's host resolved to.
func pushClient() *http.Client {
	dialer := &net.Dialer{Timeout: pushTimeout, Control: func(_, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return fmt.Errorf("a2a: push notification to %s: %w", address, err)
		}
		if why := refused(ap.Addr()); why != "" {
			return fmt.Errorf("a2a: push notification refused: %s is %s (a2a.WithPrivatePush allows it)", ap.Addr().Unmap(), why)
		}
		return nil
	}}
	return &http.Client{Timeout: pushTimeout, Transport: &http.Transport{
		DialContext:         dialer.DialContext,
		ForceAttemptHTTP2:   true,
		MaxIdleConns:        16,
		IdleConnTimeout:     90 * time.Second,
		TLSHandshakeTimeout: pushTimeout,
	}}
}
