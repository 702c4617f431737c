package graph

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// tracerName is the instrumentation scope of the engine's spans.
const tracerName = "github.com/agiraph/agiraph/graph"

// globalTracer follows the global TracerProvider, also one set after this package was loaded.
var globalTracer = otel.Tracer(tracerName)

// WithTracerProvider sets where the OpenTelemetry spans of runs go (default: the global provider,
// otel.GetTracerProvider(), which drops them until an SDK is installed).
//
// A run is a span named graph.invoke, graph.resume, graph.stream or graph.stream_resume — a
// subgraph's run is graph.subgraph, under the task that runs it — with the thread
// (agiraph.graph.thread_id), the run ID, the checkpoint it started from and the last one it
// saved (agiraph.graph.checkpoint.from, agiraph.graph.checkpoint.last), the supersteps it ran
// and its outcome (agiraph.graph.outcome: done, interrupted, stopped, cancelled or failed).
// Each superstep is a span graph.step under it (agiraph.graph.step, agiraph.graph.tasks, the
// checkpoint it saved), and each task a span named after its node under that (agiraph.graph.node,
// agiraph.graph.task_id, agiraph.graph.push, agiraph.graph.task.retries, .cached and
// .interrupted, each failed attempt as an exception event). Errors set the span's status. Spans
// inside a node — a model call, a tool call, a graph it invokes — are children of its task's span.
//
// When the run's span does not record (no SDK, or sampled out) no step or task span is made, so
// an untraced run costs one span start.
func WithTracerProvider(tp trace.TracerProvider) Option {
	var t trace.Tracer
	if tp != nil {
		t = tp.Tracer(tracerName)
	}
	return func(c *config) { c.tracer = t }
}

// Span names and attribute keys.
const (
	spanStep = "graph.step"

	attrThread      = attribute.Key("agiraph.graph.thread_id")
	attrRunID       = attribute.Key("agiraph.graph.run_id")
	attrNamespace   = attribute.Key("agiraph.graph.namespace")
	attrFrom        = attribute.Key("agiraph.graph.checkpoint.from")
	attrLast        = attribute.Key("agiraph.graph.checkpoint.last")
	attrCheckpoint  = attribute.Key("agiraph.graph.checkpoint.id")
	attrSteps       = attribute.Key("agiraph.graph.steps")
	attrOutcome     = attribute.Key("agiraph.graph.outcome")
	attrInterrupts  = attribute.Key("agiraph.graph.interrupts")
	attrStep        = attribute.Key("agiraph.graph.step")
	attrTasks       = attribute.Key("agiraph.graph.tasks")
	attrNode        = attribute.Key("agiraph.graph.node")
	attrTaskID      = attribute.Key("agiraph.graph.task_id")
	attrPush        = attribute.Key("agiraph.graph.push")
	attrRetries     = attribute.Key("agiraph.graph.task.retries")
	attrAttempt     = attribute.Key("agiraph.graph.task.attempt")
	attrCached      = attribute.Key("agiraph.graph.task.cached")
	attrInterrupted = attribute.Key("agiraph.graph.task.interrupted")
)

// tracer returns the run's tracer: WithTracerProvider's, or the global one.
func (r *run[S]) tracer() trace.Tracer {
	if r.cfg.tracer != nil {
		return r.cfg.tracer
	}
	return globalTracer
}

// traceRun starts the run's span, named name, and returns the context the run goes on in. The
// span is kept in r.span only when it records; a subgraph's run starts none unless its task's
// span records.
func (r *run[S]) traceRun(ctx context.Context, name string) context.Context {
	if r.parent != nil && !trace.SpanFromContext(ctx).IsRecording() {
		return ctx
	}
	ctx, span := r.tracer().Start(ctx, name)
	if !span.IsRecording() {
		return ctx
	}
	r.span = span
	if r.cfg.thread != "" {
		span.SetAttributes(attrThread.String(r.cfg.thread))
	}
	if r.cfg.runID != "" {
		span.SetAttributes(attrRunID.String(r.cfg.runID))
	}
	if r.ns != "" {
		span.SetAttributes(attrNamespace.String(r.ns))
	}
	return ctx
}

// traceFrom records the checkpoint the run starts from.
func (r *run[S]) traceFrom(id string) {
	if r.span != nil && id != "" {
		r.span.SetAttributes(attrFrom.String(id))
	}
}

// endRun ends the run's span with the run's outcome: err, in ctx.
func (r *run[S]) endRun(ctx context.Context, err error) {
	if r.span == nil {
		return
	}
	r.span.SetAttributes(attrSteps.Int(r.stepsRun), attrOutcome.String(outcome(ctx, err)))
	if r.cp.CheckpointID != "" {
		r.span.SetAttributes(attrLast.String(r.cp.CheckpointID))
	}
	var in *Interrupted
	if errors.As(err, &in) {
		r.span.SetAttributes(attrInterrupts.Int(len(in.Interrupts)))
	}
	end(r.span, err)
}

// traceStep starts the span of the next superstep, in which n tasks run; nil when the run is
// not traced.
func (r *run[S]) traceStep(ctx context.Context, n int) (context.Context, trace.Span) {
	if r.span == nil {
		return ctx, nil
	}
	return r.tracer().Start(ctx, spanStep, trace.WithAttributes(attrStep.Int(r.step+1), attrTasks.Int(n)))
}

// endStep ends a superstep's span, naming the checkpoint the step saved.
func (r *run[S]) endStep(span trace.Span, err error) {
	if span == nil {
		return
	}
	if err == nil && r.cp.CheckpointID != "" {
		span.SetAttributes(attrCheckpoint.String(r.cp.CheckpointID))
	}
	end(span, err)
}

// traceTask starts the span of task t; nil when the run is not traced.
func (r *run[S]) traceTask(ctx context.Context, t *task[S]) (context.Context, trace.Span) {
	if r.span == nil {
		return ctx, nil
	}
	attrs := []attribute.KeyValue{attrNode.String(t.node.name), attrTaskID.String(t.id)}
	if t.push {
		attrs = append(attrs, attrPush.Bool(true))
	}
	return r.tracer().Start(ctx, t.node.name, trace.WithAttributes(attrs...))
}

// traceRetry records a failed attempt of the task whose context is ctx, about to be retried.
func (r *run[S]) traceRetry(ctx context.Context, attempt int, err error) {
	if r.span == nil {
		return
	}
	span := trace.SpanFromContext(ctx)
	span.RecordError(err, trace.WithAttributes(attrAttempt.Int(attempt)))
	span.SetAttributes(attrRetries.Int(attempt))
}

// endTask ends the span of task t, which returned err.
func (r *run[S]) endTask(span trace.Span, t *task[S], err error) {
	if span == nil {
		return
	}
	if t.cached {
		span.SetAttributes(attrCached.Bool(true))
	}
	var sig *interruptSignal
	if errors.As(err, &sig) {
		span.SetAttributes(attrInterrupted.Bool(true))
		err = nil
	}
	end(span, err)
}

// outcome names how a run in ctx that returned err ended.
func outcome(ctx context.Context, err error) string {
	var in *Interrupted
	switch {
	case err == nil:
		return "done"
	case errors.As(err, &in):
		return "interrupted"
	case errors.Is(err, errStopped):
		return "stopped"
	case ctx.Err() != nil:
		return "cancelled"
	}
	return "failed"
}

// end ends span, recording err as its error unless it is nil, a pause or a stopped stream.
func end(span trace.Span, err error) {
	var in *Interrupted
	if err != nil && !errors.As(err, &in) && !errors.Is(err, errStopped) {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}
