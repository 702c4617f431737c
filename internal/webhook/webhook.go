// Package webhook posts JSON to URLs that come from configuration or from other parties (a
// squad's webhook for the human, A2A push notifications): a few tries, none waiting on another,
// and no connection to a loopback, link-local, private or unspecified address unless the caller
// allows them. The address is checked as it is dialed, after the name is resolved, so a name
// that resolves to such an address is refused too; CheckHost tells it of a URL beforehand, as
// far as the URL shows.
package webhook

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"
)

// The delivery of a post: each try bounded by Timeout, Attempts tries in all, the n-th retry
// after n times Backoff.
const (
	Timeout  = 10 * time.Second
	Attempts = 3
	Backoff  = 500 * time.Millisecond
)

// ErrRefused is wrapped by the error of a post to an address that is not allowed.
var ErrRefused = errors.New("webhook: refused")

// Refused returns why a post may not go to ip ("a loopback address"...), or "" when it may.
func Refused(ip netip.Addr) string {
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

// CheckURL checks that raw is an absolute http or https URL.
func CheckURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("webhook: url %q: want an absolute http or https URL", raw)
	}
	return nil
}

// CheckHost returns why u may not be posted to, as far as it shows before a post: a host that is
// a refused address ("10.0.0.7 is a private address"), or localhost; "" when it may. The address
// a name resolves to is checked as each post is made (Client).
func CheckHost(u *url.URL) string {
	host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return "localhost is a loopback address"
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		if why := Refused(ip); why != "" {
			return ip.Unmap().String() + " is " + why
		}
	}
	return ""
}

// Client returns the HTTP client that posts: it dials no proxy, and unless allowPrivate a
// connection to a refused address fails, the error (wrapping ErrRefused) naming the address and
// why — whatever the URL's host resolved to.
func Client(allowPrivate bool) *http.Client {
	dialer := &net.Dialer{Timeout: Timeout}
	if !allowPrivate {
		dialer.Control = func(_, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return fmt.Errorf("%w: %s: %w", ErrRefused, address, err)
			}
			if why := Refused(ap.Addr()); why != "" {
				return fmt.Errorf("%w: %s is %s", ErrRefused, ap.Addr().Unmap(), why)
			}
			return nil
		}
	}
	return &http.Client{Timeout: Timeout, Transport: &http.Transport{
		DialContext:         dialer.DialContext,
		ForceAttemptHTTP2:   true,
		MaxIdleConns:        16,
		IdleConnTimeout:     90 * time.Second,
		TLSHandshakeTimeout: Timeout,
	}}
}

// Post posts body (JSON) to target with c, with header's fields, up to Attempts times until it
// is answered with a 2xx status, and returns the last try's error. A refused address is not
// tried again. It returns at once when ctx ends.
func Post(ctx context.Context, c *http.Client, target string, header http.Header, body []byte) error {
	for attempt := 1; ; attempt++ {
		err := postOnce(ctx, c, target, header, body)
		if err == nil || attempt == Attempts || errors.Is(err, ErrRefused) {
			return err
		}
		select {
		case <-ctx.Done():
			return errors.Join(err, context.Cause(ctx))
		case <-time.After(time.Duration(attempt) * Backoff):
		}
	}
}

func postOnce(ctx context.Context, c *http.Client, target string, header http.Header, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		return err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("webhook: %s answered %s", target, resp.Status)
	}
	return nil
}
