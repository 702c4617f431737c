package runtime

import (
	"context"
	"fmt"
	"io/fs"
	"path/filepath"
	"sync"
	"time"
)

// Watch returns rt with a liveness watchdog. An assignment that shows no sign of progress for
// stall — no event, and no file written under its node folder — is stopped: its context is
// cancelled with a cause wrapping ErrStalled, and Run returns an Outcome with status Stalled and
// an error saying how long it was silent and what it was last doing. A stall of zero or less
// returns rt unchanged.
func Watch(rt Runtime, stall time.Duration) Runtime {
	if stall <= 0 {
		return rt
	}
	return &watched{rt: rt, stall: stall}
}

type watched struct {
	rt    Runtime
	stall time.Duration
}

// activity is the last sign of progress of one assignment.
type activity struct {
	mu   sync.Mutex
	at   time.Time
	what string
}

func (a *activity) saw(at time.Time, what string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if at.After(a.at) {
		a.at, a.what = at, what
	}
}

func (a *activity) last() (time.Time, string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.at, a.what
}

func (w *watched) Run(ctx context.Context, a Assignment, sink Sink) (Outcome, error) {
	act := &activity{at: time.Now(), what: "starting"}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	inner := func(e Event) {
		act.saw(time.Now(), describe(e))
		if sink != nil {
			sink(e)
		}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		w.watch(ctx, a.Dir, act, cancel, done)
	}()
	o, err := w.rt.Run(ctx, a, inner)
	close(done)
	wg.Wait()
	if cause := context.Cause(ctx); cause != nil && isStall(cause) {
		o.Status = Stalled
		return o, cause
	}
	return o, err
}

// watch cancels the run when act and the files under dir have been still for w.stall.
func (w *watched) watch(ctx context.Context, dir NodeDir, act *activity, cancel context.CancelCauseFunc, done <-chan struct{}) {
	t := time.NewTicker(max(w.stall/4, time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-ctx.Done():
			return
		case now := <-t.C:
			if dir != "" {
				if mod, name := newestFile(string(dir)); !mod.IsZero() {
					act.saw(mod, "writing "+name)
				}
			}
			at, what := act.last()
			if silent := now.Sub(at); silent >= w.stall {
				cancel(&stallError{silent: silent.Round(time.Millisecond), what: what})
				return
			}
		}
	}
}

// stallError is the cause a stalled run is cancelled with.
type stallError struct {
	silent time.Duration
	what   string
}

func (e *stallError) Error() string {
	return fmt.Sprintf("%v for %s; last activity: %s", ErrStalled, e.silent, e.what)
}

func (e *stallError) Unwrap() error { return ErrStalled }

func isStall(err error) bool {
	_, ok := err.(*stallError)
	return ok
}

// newestFile returns the modification time and path (relative to dir) of the newest file
// under dir.
func newestFile(dir string) (time.Time, string) {
	var newest time.Time
	var name string
	filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if info, err := e.Info(); err == nil && info.ModTime().After(newest) {
			newest = info.ModTime()
			name, _ = filepath.Rel(dir, p)
		}
		return nil
	})
	return newest, name
}

// describe says in a few words what an event shows the worker doing.
func describe(e Event) string {
	switch {
	case e.Tool != nil:
		return fmt.Sprintf("%s %s", e.Kind, e.Tool.Name)
	case e.Text != "":
		t := e.Text
		if len(t) > 80 {
			t = t[:80] + "…"
		}
		return fmt.Sprintf("%s: %s", e.Kind, t)
	}
	return string(e.Kind)
}
