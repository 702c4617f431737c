// Package spantest records the OpenTelemetry spans a test makes, without the OpenTelemetry SDK: a
// Recorder is a trace.TracerProvider whose spans, once ended, are read back with their names, IDs,
// parents, attributes, status and events.
//
// A span's trace ID is its parent's — the span in the context it starts in, unless it starts a
// new root — or a new random one; its span ID is new and random. RecordError adds an "exception"
// event with exception.type and exception.message, as the SDK does. It is for tests only.
package spantest

import (
	"context"
	"crypto/rand"
	"reflect"
	"slices"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/embedded"
)

// Span is an ended span as it was recorded.
type Span struct {
	Name        string
	SpanContext trace.SpanContext
	Parent      trace.SpanContext // not valid for a span without a parent
	// Attributes are in the order their keys were first set; a key set again keeps its place
	// and takes the new value.
	Attributes []attribute.KeyValue
	Status     Status
	Events     []Event
	Links      []trace.Link
}

// Status is a span's status; Description is kept only for codes.Error.
type Status struct {
	Code        codes.Code
	Description string
}

// Event is an event of a span.
type Event struct {
	Name       string
	Attributes []attribute.KeyValue
}

// Attr returns the value of s's attribute key; its Type is attribute.EMPTY when s has none.
func (s Span) Attr(key attribute.Key) attribute.Value {
	for _, kv := range s.Attributes {
		if kv.Key == key {
			return kv.Value
		}
	}
	return attribute.Value{}
}

// Spans are recorded spans.
type Spans []Span

// Named returns the spans called name, in their order in ss.
func (ss Spans) Named(name string) Spans {
	var out Spans
	for _, s := range ss {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

// Recorder is a trace.TracerProvider that keeps the spans of its tracers when they end. It is
// safe for concurrent use.
type Recorder struct {
	embedded.TracerProvider
	sampled bool

	mu      sync.Mutex
	started int
	ended   Spans
}

// New returns a Recorder whose spans record.
func New() *Recorder { return &Recorder{sampled: true} }

// NewUnsampled returns a Recorder that samples nothing, as the SDK's NeverSample sampler: its
// spans do not record and it keeps none.
func NewUnsampled() *Recorder { return &Recorder{} }

// Tracer returns a tracer whose spans r keeps.
func (r *Recorder) Tracer(string, ...trace.TracerOption) trace.Tracer { return tracer{r: r} }

// Started returns how many spans r's tracers started, recording or not.
func (r *Recorder) Started() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.started
}

// Ended returns the spans that ended, in the order they ended.
func (r *Recorder) Ended() Spans {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.ended)
}

type tracer struct {
	embedded.Tracer
	r *Recorder
}

// Start starts a span under the span in ctx, or a root span.
func (t tracer) Start(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	t.r.mu.Lock()
	t.r.started++
	t.r.mu.Unlock()
	cfg := trace.NewSpanStartConfig(opts...)
	var parent trace.SpanContext
	if !cfg.NewRoot() {
		parent = trace.SpanContextFromContext(ctx)
	}
	sc := trace.SpanContextConfig{TraceID: parent.TraceID()}
	if !sc.TraceID.IsValid() {
		rand.Read(sc.TraceID[:])
	}
	rand.Read(sc.SpanID[:])
	if t.r.sampled {
		sc.TraceFlags = trace.FlagsSampled
	}
	s := &span{r: t.r, recording: t.r.sampled, data: Span{Name: name, SpanContext: trace.NewSpanContext(sc), Parent: parent}}
	s.SetAttributes(cfg.Attributes()...)
	for _, l := range cfg.Links() {
		s.AddLink(l)
	}
	return trace.ContextWithSpan(ctx, s), s
}

// span is a live span; it records until it ends, and then only when its recorder samples.
type span struct {
	embedded.Span
	r *Recorder

	mu        sync.Mutex
	recording bool
	data      Span
}

// update calls f with the span's data while the span records.
func (s *span) update(f func(*Span)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.recording {
		f(&s.data)
	}
}

func (s *span) End(...trace.SpanEndOption) {
	s.mu.Lock()
	was := s.recording
	s.recording = false
	s.mu.Unlock()
	if was {
		s.r.mu.Lock()
		s.r.ended = append(s.r.ended, s.data)
		s.r.mu.Unlock()
	}
}

func (s *span) AddEvent(name string, opts ...trace.EventOption) {
	cfg := trace.NewEventConfig(opts...)
	attrs := cfg.Attributes()
	s.update(func(d *Span) { d.Events = append(d.Events, Event{Name: name, Attributes: attrs}) })
}

func (s *span) AddLink(l trace.Link) {
	s.update(func(d *Span) { d.Links = append(d.Links, l) })
}

func (s *span) IsRecording() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.recording
}

// RecordError adds an exception event naming err's type and message.
func (s *span) RecordError(err error, opts ...trace.EventOption) {
	if err == nil {
		return
	}
	s.AddEvent(semconv.ExceptionEventName, append(opts, trace.WithAttributes(
		semconv.ExceptionType(typeName(err)), semconv.ExceptionMessage(err.Error())))...)
}

// typeName names err's type as the SDK does: package path and name, or as Go writes an unnamed
// type ("*providers.Error").
func typeName(err error) string {
	t := reflect.TypeOf(err)
	if t.PkgPath() == "" && t.Name() == "" {
		return t.String()
	}
	return t.PkgPath() + "." + t.Name()
}

func (s *span) SpanContext() trace.SpanContext { return s.data.SpanContext }

// SetStatus sets the status unless it is of a higher code already (Ok > Error > Unset).
func (s *span) SetStatus(code codes.Code, description string) {
	s.update(func(d *Span) {
		if d.Status.Code > code {
			return
		}
		d.Status = Status{Code: code}
		if code == codes.Error {
			d.Status.Description = description
		}
	})
}

func (s *span) SetName(name string) {
	s.update(func(d *Span) { d.Name = name })
}

// SetAttributes sets kv, skipping invalid ones; a key set before keeps its place.
func (s *span) SetAttributes(kv ...attribute.KeyValue) {
	s.update(func(d *Span) {
		for _, a := range kv {
			if !a.Valid() {
				continue
			}
			if i := slices.IndexFunc(d.Attributes, func(b attribute.KeyValue) bool { return b.Key == a.Key }); i >= 0 {
				d.Attributes[i] = a
			} else {
				d.Attributes = append(d.Attributes, a)
			}
		}
	})
}

func (s *span) TracerProvider() trace.TracerProvider { return s.r }
