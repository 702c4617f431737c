package a2a

// WithPrivatePush lets push notifications go to any address: loopback, link-local, private and
// unspecified ones included, which the handler refuses by default (a client could otherwise
// make the server post to its own network; see internal/webhook). For tests and local setups.
func WithPrivatePush() Option { return func(h *Handler) { h.privatePush = true } }
