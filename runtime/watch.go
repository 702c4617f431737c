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
// stall is stopped: its context is cancelled with a cause wrapping ErrStalled, and Run returns an
// Outcome with status Stalled and an error saying how long it went without progress, what its
// last progress was and what it reported since. A stall of zero or less returns rt unchanged.
//
// Progress is the model or its tools at work — an event of kind Started, ModelTurn, TextDelta,
// ToolCalled, ToolResult, MessageSent, MessageReceived, AskedHuman or Compacted — or a file
// written under the assignment's node folder. Output lines (what a CLI agent prints) and
// Retrying events are not: a CLI that prints a line per attempt while it retries an endpoint
// that never answers is stalled all the same. A CLI agent whose runtime reports only its output
// (runtime/autonomous) thus shows progress through the files it writes and the messages it
// sends; give it a stall longer than its longest silent step.
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

// progress reports whether an event of kind k is a sign of progress.
func progress(k Kind) bool {
	switch k {
	case Started, ModelTurn, ToolCalled, ToolResult, MessageSent, MessageReceived, AskedHuman, Compacted:
		return true
	}
	return false
}

// activity is the last sign of progress of one assignment, and the last event after it that
// was none.
type activity struct {
	mu    sync.Mutex
	at    time.Time
	what  string
	since string
}

// saw records progress.
func (a *activity) saw(at time.Time, what string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if at.After(a.at) {
		a.at, a.what, a.since = at, what, ""
	}
}

// noted records an event that is no progress.
func (a *activity) noted(what string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.since = what
}

func (a *activity) last() (time.Time, string, string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.at, a.what, a.since
}

func (w *watched) Run(ctx context.Context, a Assignment, sink Sink) (Outcome, error) {
	act := &activity{at: time.Now(), what: "starting"}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	inner := func(e Event) {
		if progress(e.Kind) {
			act.saw(time.Now(), describe(e))
		} else {
			act.noted(describe(e))
		}
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
			at, what, since := act.last()
			if silent := now.Sub(at); silent >= w.stall {
				cancel(&stallError{silent: silent.Round(time.Millisecond), what: what, since: since})
				return
			}
		}
	}
}

// stallError is the cause a stalled run is cancelled with.
type stallError struct {
	silent time.Duration
	what   string // the last progress
	since  string // the last event after it, if any
}

func (e *stallError) Error() string {
	s := fmt.Sprintf("%v for %s; last progress: %s", ErrStalled, e.silent, e.what)
	if e.since != "" {
		s += "; latest event: " + e.since
	}
	return s
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
	_ = filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error { // nil: it skips what it cannot read
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
