package adapter

import (
	"time"

	"github.com/agiraph/agiraph/runtime"
)

// Emitter stamps events with their assignment's identity and time and passes them to a sink;
// a nil sink drops them. Adapters use one per Run.
type Emitter struct {
	a    runtime.Assignment
	sink runtime.Sink
	now  func() time.Time
}

// NewEmitter returns an Emitter for a's events.
func NewEmitter(a runtime.Assignment, sink runtime.Sink) *Emitter {
	return &Emitter{a: a, sink: sink, now: time.Now}
}

// Emit reports e, filling its time, assignment, node and worker.
func (r *Emitter) Emit(e runtime.Event) {
	if r.sink == nil {
		return
	}
	if e.Time.IsZero() {
		e.Time = r.now()
	}
	e.Assignment, e.Node, e.Worker = r.a.ID, r.a.Node, r.a.Worker
	r.sink(e)
}

// End reports the end of the assignment, with the summary or err's text, and returns o and err
// unchanged, so adapters can end Run with it.
func (r *Emitter) End(o runtime.Outcome, err error) (runtime.Outcome, error) {
	u, text := o.Usage, o.Summary
	if err != nil {
		text = err.Error()
	}
	r.Emit(runtime.Event{Kind: runtime.Ended, Text: text, Usage: &u, Status: o.Status})
	return o, err
}
