package spantest_test

import (
	"context"
	"errors"
	"io/fs"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/agiraph/agiraph/internal/spantest"
)

func TestRecorderKeepsEndedSpans(t *testing.T) {
	rec := spantest.New()
	tr := rec.Tracer("test")
	ctx, root := tr.Start(context.Background(), "root", trace.WithAttributes(attribute.String("a", "1"), attribute.Int("b", 2)))
	_, child := tr.Start(ctx, "child")
	_, other := tr.Start(ctx, "other", trace.WithNewRoot())
	assert.True(t, child.IsRecording())

	child.SetAttributes(attribute.String("c", "x"))
	child.SetStatus(codes.Error, "broke")
	child.SetStatus(codes.Unset, "") // a lower code does not replace it
	child.RecordError(&fs.PathError{Op: "open", Path: "f", Err: fs.ErrNotExist}, trace.WithAttributes(attribute.Int("attempt", 1)))
	child.RecordError(nil)
	child.SetName("renamed")
	child.End()
	child.End()
	assert.False(t, child.IsRecording(), "an ended span does not record")
	child.SetAttributes(attribute.String("late", "y"))
	root.SetAttributes(attribute.String("a", "3"), attribute.String("d", "4"))
	root.SetStatus(codes.Ok, "not kept")
	root.End()
	other.End()

	ss := rec.Ended()
	require.Len(t, ss, 3, "a span ended twice is kept once")
	assert.Equal(t, 3, rec.Started())
	c, r, o := ss[0], ss[1], ss[2]
	assert.Equal(t, "renamed", c.Name)
	assert.Equal(t, r.SpanContext, c.Parent)
	assert.Equal(t, r.SpanContext.TraceID(), c.SpanContext.TraceID(), "a child is in its parent's trace")
	assert.NotEqual(t, r.SpanContext.SpanID(), c.SpanContext.SpanID())
	assert.True(t, c.SpanContext.IsSampled())
	assert.False(t, r.Parent.IsValid())
	assert.False(t, o.Parent.IsValid(), "WithNewRoot ignores the context's span")
	assert.NotEqual(t, r.SpanContext.TraceID(), o.SpanContext.TraceID(), "a root starts a trace")

	assert.Equal(t, []attribute.KeyValue{attribute.String("c", "x")}, c.Attributes, "nothing is set after End")
	assert.Equal(t, spantest.Status{Code: codes.Error, Description: "broke"}, c.Status)
	require.Len(t, c.Events, 1)
	assert.Equal(t, spantest.Event{Name: "exception", Attributes: []attribute.KeyValue{
		attribute.Int("attempt", 1),
		attribute.String("exception.type", "*fs.PathError"),
		attribute.String("exception.message", "open f: file does not exist"),
	}}, c.Events[0])

	assert.Equal(t, []attribute.KeyValue{attribute.String("a", "3"), attribute.Int("b", 2), attribute.String("d", "4")}, r.Attributes)
	assert.Equal(t, "3", r.Attr("a").AsString())
	assert.Equal(t, attribute.EMPTY, r.Attr("missing").Type())
	assert.Equal(t, spantest.Status{Code: codes.Ok}, r.Status, "only an error keeps its description")
	assert.Equal(t, spantest.Spans{r}, ss.Named("root"))
	assert.Same(t, rec, root.TracerProvider())
}

func TestRecorderRecordsErrorTypes(t *testing.T) {
	rec := spantest.New()
	_, s := rec.Tracer("test").Start(context.Background(), "s")
	s.RecordError(errors.New("plain"))
	s.RecordError(fs.ErrNotExist)
	s.End()
	events := rec.Ended()[0].Events
	require.Len(t, events, 2)
	assert.Contains(t, events[0].Attributes, attribute.String("exception.type", "*errors.errorString"))
	assert.Contains(t, events[1].Attributes, attribute.String("exception.message", "file does not exist"))
}

func TestRecorderFollowsARemoteParent(t *testing.T) {
	remote := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{1}, SpanID: trace.SpanID{2}, TraceFlags: trace.FlagsSampled, Remote: true,
	})
	rec := spantest.New()
	_, s := rec.Tracer("test").Start(trace.ContextWithRemoteSpanContext(context.Background(), remote), "s")
	s.End()
	got := rec.Ended()[0]
	assert.Equal(t, remote, got.Parent)
	assert.Equal(t, remote.TraceID(), got.SpanContext.TraceID())
}

func TestUnsampledRecordsNothing(t *testing.T) {
	rec := spantest.NewUnsampled()
	ctx, s := rec.Tracer("test").Start(context.Background(), "s", trace.WithAttributes(attribute.String("a", "1")))
	assert.False(t, s.IsRecording())
	assert.True(t, s.SpanContext().IsValid())
	assert.False(t, s.SpanContext().IsSampled())
	_, child := rec.Tracer("test").Start(ctx, "child")
	assert.False(t, child.IsRecording())
	assert.Equal(t, s.SpanContext().TraceID(), child.SpanContext().TraceID())
	child.End()
	s.End()
	assert.Empty(t, rec.Ended())
	assert.Equal(t, 2, rec.Started())
}
