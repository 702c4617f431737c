package lease

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/google/uuid"
)

// ErrLost is wrapped by the error Keep reports when a lease is lost.
var ErrLost = errors.New("the lease was lost")

// Owner returns a name for this process in the leases it holds: host/pid/random.
func Owner() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%s/%d/%s", host, os.Getpid(), uuid.NewString()[:8])
}

// Renew renews a lease for ttl more, counted by the database; it reports whether the lease was
// still the caller's (false: another process took it).
type Renew func(ctx context.Context) (held bool, err error)

// Keep renews a lease every heartbeat until the returned stop is called or ctx ends. deadline is
// when the lease, as taken, may expire by the local clock (counted from before it was taken); a
// renewal moves it to ttl after the renewal was sent. When a renewal finds the lease taken, or
// none succeeds before the deadline, Keep calls lost with an error wrapping ErrLost, once, and
// stops renewing: the holder must stop its work then, before another process may take the lease.
// A renewal that fails for another reason is logged and tried again at the next heartbeat.
func Keep(ctx context.Context, deadline time.Time, ttl, heartbeat time.Duration, renew Renew, lost func(error), logger *slog.Logger) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(heartbeat)
		defer tick.Stop()
		expire := time.NewTimer(time.Until(deadline))
		defer expire.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-expire.C:
				lost(fmt.Errorf("%w: not renewed by %v", ErrLost, deadline.Format(time.RFC3339Nano)))
				return
			case <-tick.C:
			}
			sent := time.Now()
			rctx, cancel := context.WithDeadline(ctx, deadline)
			held, err := renew(rctx)
			cancel()
			switch {
			case err == nil && !held:
				lost(fmt.Errorf("%w: another process took it over", ErrLost))
				return
			case err == nil:
				deadline = sent.Add(ttl)
				expire.Reset(time.Until(deadline))
			case ctx.Err() == nil:
				logger.Warn("cannot renew a lease", "error", err)
			}
		}
	})
	var once sync.Once
	return func() {
		once.Do(func() { close(done) })
		wg.Wait()
	}
}
