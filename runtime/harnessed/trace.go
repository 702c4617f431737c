package harnessed

import (
	"context"
	"encoding/json"
	"fmt"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/tools"
)

// tracerName is the instrumentation scope of the model and tool spans.
const tracerName = "github.com/agiraph/agiraph/runtime/harnessed"

// globalTracer follows the global TracerProvider, also one set after this package was loaded.
var globalTracer = otel.Tracer(tracerName)

// WithTracerProvider sets where the OpenTelemetry spans of assignments go (default: the global
// provider, otel.GetTracerProvider()). An assignment's loop is a graph run (see
// graph.WithTracerProvider) whose thread is the assignment's ID; under each of its model tasks is
// a span for the model call, under each tools task a span for each tool call. Both follow the
// OpenTelemetry conventions for generative AI:
//
//   - "chat <model>": gen_ai.operation.name, gen_ai.provider.name, gen_ai.request.model,
//     gen_ai.response.model, gen_ai.response.finish_reasons (the stop reason),
//     gen_ai.usage.input_tokens (all input, cached included), gen_ai.usage.output_tokens,
//     gen_ai.usage.cache_read.input_tokens and gen_ai.usage.cache_creation.input_tokens,
//     agiraph.usage.cost_usd where the price is known, agiraph.model.tool_calls; each retry of
//     the model (providers.WithRetry) as an exception event.
//   - "execute_tool <tool>": gen_ai.tool.name, gen_ai.tool.call.id, agiraph.tool.output_bytes;
//     not the arguments, which may hold secrets, unless WithTracedArguments.
//
// A failed call sets its span's error status. Model and tool spans are made only under a task
// span that records.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(c *config) { c.tracerProvider = tp }
}

// WithTracedArguments records the arguments of tool calls in their spans
// (gen_ai.tool.call.arguments). Off by default: arguments may hold secrets.
func WithTracedArguments() Option { return func(c *config) { c.traceArgs = true } }

const (
	attrCost        = attribute.Key("agiraph.usage.cost_usd")
	attrToolCalls   = attribute.Key("agiraph.model.tool_calls")
	attrOutputBytes = attribute.Key("agiraph.tool.output_bytes")
	attrAttempt     = attribute.Key("agiraph.model.attempt")
	attrFallbackTo  = attribute.Key("agiraph.model.fallback_to")
)

// tracerOf returns the tracer of tp, or the global one when tp is nil.
func tracerOf(tp trace.TracerProvider) trace.Tracer {
	if tp != nil {
		return tp.Tracer(tracerName)
	}
	return globalTracer
}

// traceModel starts the span of a model call made with req; nil when the task's span does not
// record.
func (w *worker) traceModel(ctx context.Context, req providers.Request) (context.Context, trace.Span) {
	if !trace.SpanFromContext(ctx).IsRecording() {
		return ctx, nil
	}
	name := w.rt.model.Name()
	provider, model, err := providers.ParseName(name)
	if err != nil {
		model = name
	}
	attrs := []attribute.KeyValue{semconv.GenAIOperationNameChat, semconv.GenAIRequestModel(model)}
	if provider != "" {
		attrs = append(attrs, semconv.GenAIProviderNameKey.String(provider))
	}
	if req.MaxTokens > 0 {
		attrs = append(attrs, semconv.GenAIRequestMaxTokens(req.MaxTokens))
	}
	return w.rt.tracer.Start(ctx, "chat "+model, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
}

// traceRetry records a failed attempt of the model call of span, which the model retries.
func traceRetry(span trace.Span, attempt int, err error) {
	if span != nil {
		span.RecordError(err, trace.WithAttributes(attrAttempt.Int(attempt)))
	}
}

// traceFallback records that the model from failed with err in the call of span, which a
// fallback chain passes on to the model to.
func traceFallback(span trace.Span, from string, err error, to string) {
	if span != nil {
		span.RecordError(fmt.Errorf("%s: %w", from, err), trace.WithAttributes(attrFallbackTo.String(to)))
	}
}

// endModel ends the span of a model call that answered resp or failed with err.
func endModel(span trace.Span, resp providers.Response, err error) {
	if span == nil {
		return
	}
	if err != nil {
		endSpan(span, err)
		return
	}
	u := resp.Usage
	span.SetAttributes(
		semconv.GenAIResponseModel(resp.Model),
		semconv.GenAIResponseFinishReasons(string(resp.StopReason)),
		semconv.GenAIUsageInputTokens(u.InputTokens+u.CacheReadTokens+u.CacheWriteTokens),
		semconv.GenAIUsageOutputTokens(u.OutputTokens),
		attrToolCalls.Int(len(resp.Message.ToolCalls())),
	)
	if u.CacheReadTokens > 0 {
		span.SetAttributes(semconv.GenAIUsageCacheReadInputTokens(u.CacheReadTokens))
	}
	if u.CacheWriteTokens > 0 {
		span.SetAttributes(semconv.GenAIUsageCacheCreationInputTokens(u.CacheWriteTokens))
	}
	if u.CostUSD > 0 {
		span.SetAttributes(attrCost.Float64(u.CostUSD))
	}
	span.End()
}

// traceTools returns ts with handlers that make a span for each call, under the span of the
// task that runs it when that span records.
func (rt *Runtime) traceTools(ts []tools.Tool) []tools.Tool {
	out := make([]tools.Tool, len(ts))
	for i, t := range ts {
		out[i] = t
		out[i].Handler = rt.traceHandler(t.Name, t.Handler)
	}
	return out
}

// traceHandler wraps the handler h of tool name in its span.
func (rt *Runtime) traceHandler(name string, h tools.Handler) tools.Handler {
	return func(ctx context.Context, args json.RawMessage) (out string, err error) {
		if !trace.SpanFromContext(ctx).IsRecording() {
			return h(ctx, args)
		}
		attrs := []attribute.KeyValue{semconv.GenAIOperationNameExecuteTool, semconv.GenAIToolName(name)}
		if c, ok := tools.CallFrom(ctx); ok {
			attrs = append(attrs, semconv.GenAIToolCallID(c.ID))
		}
		if rt.cfg.traceArgs {
			attrs = append(attrs, semconv.GenAIToolCallArgumentsKey.String(string(args)))
		}
		ctx, span := rt.tracer.Start(ctx, "execute_tool "+name, trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
		defer func() {
			if v := recover(); v != nil {
				endSpan(span, fmt.Errorf("tool %q panicked: %v", name, v))
				panic(v) // the registry turns it into an error result
			}
			span.SetAttributes(attrOutputBytes.Int(len(out)))
			endSpan(span, err)
		}()
		return h(ctx, args)
	}
}

// endSpan ends span, with err as its error when err is not nil.
func endSpan(span trace.Span, err error) {
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
		span.SetAttributes(semconv.ErrorType(err))
	}
	span.End()
}
