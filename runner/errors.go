package runner

import (
	"errors"
	"fmt"
)

// ErrBusy is wrapped by the error of Invoke or Resume on a thread that is queued or running.
var ErrBusy = errors.New("the thread is busy")

// ErrUnknownGraph is wrapped by the error of Lookup for a name no graph is registered under.
var ErrUnknownGraph = errors.New("no graph is registered under this name")

// ErrUnknownThread is wrapped by the error of Result and Wait for a thread never enqueued.
var ErrUnknownThread = errors.New("the thread was never enqueued")

// Error is an error of the runner about a thread of a graph: a call that failed (Err is set), or
// a run that failed, possibly in another process (Text is its error's text).
type Error struct {
	Graph, Thread string
	Text          string // a failed run's error
	Err           error  // why a call failed
}

func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("runner: graph %q thread %q: %v", e.Graph, e.Thread, e.Err)
	}
	return fmt.Sprintf("runner: graph %q thread %q failed: %s", e.Graph, e.Thread, e.Text)
}

// Unwrap returns why the call failed (nil for a failed run).
func (e *Error) Unwrap() error { return e.Err }
