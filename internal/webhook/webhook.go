// Package webhook posts JSON to URLs that come from configuration or from other parties
// (a squad's webhook for the human, A2A push notifications): a few tries, none waiting on
// another, and no connection to a loopback, private, link-local or otherwise non-public
// address unless the caller allows them. The check is made on the address dialed, after the
// name is resolved, so a name that resolves to an internal address is refused too.
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
var ErrRefused = errors.New("webhook: the address is not a public one")

// CheckURL checks that raw is an absolute http or https URL.
func CheckURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("webhook: url %q: want an absolute http or https URL", raw)
	}
	return nil
}

// Client returns an HTTP client that connects only to public addresses, or to any when
// allowPrivate; it follows no redirect.
func Client(allowPrivate bool) *http.Client {
	d := &net.Dialer{Timeout: Timeout}
	if !allowPrivate {
		d.Control = func(_, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return fmt.Errorf("%w: %s", ErrRefused, address)
			}
			if a := ap.Addr().Unmap(); !a.IsGlobalUnicast() || a.IsPrivate() {
				return fmt.Errorf("%w: %s", ErrRefused, address)
			}
			return nil
		}
	}
	return &http.Client{
		Transport: &http.Transport{DialContext: d.DialContext, Proxy: http.ProxyFromEnvironment, TLSHandshakeTimeout: Timeout},
		Timeout:   Timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
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
