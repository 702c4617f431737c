package harnessed_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/agiraph/agiraph/graph"
	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/providers/scripted"
	"github.com/agiraph/agiraph/runtime"
	"github.com/agiraph/agiraph/runtime/harnessed"
	"github.com/agiraph/agiraph/tools"
)

// spans is what a test recorded, with ways to find a span and its ancestors.
type spans []sdktrace.ReadOnlySpan

func record(t *testing.T) (*sdktrace.TracerProvider, *tracetest.SpanRecorder) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return tp, rec
}

// named returns the spans called name, in the order they ended.
func (ss spans) named(name string) spans {
	var out spans
	for _, s := range ss {
		if s.Name() == name {
			out = append(out, s)
		}
	}
	return out
}

// path names s and its ancestors, root first, joined by " > ".
func (ss spans) path(s sdktrace.ReadOnlySpan) string {
	names := []string{s.Name()}
	for p := s.Parent(); p.IsValid(); {
		i := 0
		for i < len(ss) && ss[i].SpanContext().SpanID() != p.SpanID() {
			i++
		}
		if i == len(ss) {
			break
		}
		names = append([]string{ss[i].Name()}, names...)
		p = ss[i].Parent()
	}
	return strings.Join(names, " > ")
}

// attrs returns a span's attributes by key.
func attrs(s sdktrace.ReadOnlySpan) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes() {
		m[kv.Key] = kv.Value
	}
	return m
}

type lookupArgs struct {
	Key string `json:"key"`
}

var lookup = tools.Func("lookup", "Looks a key up.", func(_ context.Context, a lookupArgs) (string, error) {
	if a.Key == "missing" {
		return "", errors.New("no such key")
	}
	return "forty-two", nil
})

// A worker run as a task of a squad's graph: its run nests under that task, its model calls under
// its model tasks and its tool calls under its tools tasks, with the usage of each call.
func TestTrace_AssignmentInsideASquadTask(t *testing.T) {
	tp, rec := record(t)
	model := scripted.New("tracer",
		scripted.Turn{Calls: []tools.Call{call("c1", "lookup", lookupArgs{Key: "secret-token"})},
			Usage: providers.Usage{InputTokens: 100, OutputTokens: 20, CacheReadTokens: 30, CacheWriteTokens: 10, CostUSD: 0.0015}},
		scripted.Turn{Calls: []tools.Call{call("c2", "publish", runtime.PublishArgs{Summary: "found it"})},
			Usage: providers.Usage{InputTokens: 150, OutputTokens: 5}},
	)
	rt := harnessed.New(model, harnessed.WithTracerProvider(tp))
	a := assignment(t, "tr1", "Look the key up, then publish.")
	a.Tools = append(a.Tools, lookup)

	type squad struct{ Status string }
	g := graph.New[squad]()
	g.AddNode("dispatch", func(ctx context.Context, _ squad) (squad, error) {
		o, err := rt.Run(ctx, a, func(runtime.Event) {})
		return squad{Status: string(o.Status)}, err
	})
	g.AddEdge(graph.START, "dispatch")
	g.AddEdge("dispatch", graph.END)
	c, err := g.Compile(graph.WithTracerProvider(tp))
	require.NoError(t, err)
	final, err := c.Invoke(context.Background(), squad{})
	require.NoError(t, err)
	require.Equal(t, string(runtime.Published), final.Status)

	ss := spans(rec.Ended())
	chats := ss.named("chat tracer")
	require.Len(t, chats, 2)
	assert.Equal(t, "graph.invoke > graph.step > dispatch > graph.invoke > graph.step > model > chat tracer", ss.path(chats[0]))
	first := attrs(chats[0])
	assert.Equal(t, "chat", first["gen_ai.operation.name"].AsString())
	assert.Equal(t, "scripted", first["gen_ai.provider.name"].AsString())
	assert.Equal(t, "tracer", first["gen_ai.request.model"].AsString())
	assert.Equal(t, int64(140), first["gen_ai.usage.input_tokens"].AsInt64(), "uncached, read from and written to the cache")
	assert.Equal(t, int64(20), first["gen_ai.usage.output_tokens"].AsInt64())
	assert.Equal(t, int64(30), first["gen_ai.usage.cache_read.input_tokens"].AsInt64())
	assert.Equal(t, int64(10), first["gen_ai.usage.cache_creation.input_tokens"].AsInt64())
	assert.InDelta(t, 0.0015, first["agiraph.usage.cost_usd"].AsFloat64(), 1e-12)
	assert.Equal(t, []string{"tool_use"}, first["gen_ai.response.finish_reasons"].AsStringSlice())
	assert.Equal(t, int64(1), first["agiraph.model.tool_calls"].AsInt64())
	second := attrs(chats[1])
	assert.Equal(t, int64(150), second["gen_ai.usage.input_tokens"].AsInt64())
	assert.NotContains(t, second, attribute.Key("agiraph.usage.cost_usd"), "no cost where the price is unknown")

	tool := ss.named("execute_tool lookup")
	require.Len(t, tool, 1)
	assert.Equal(t, "graph.invoke > graph.step > dispatch > graph.invoke > graph.step > tools > execute_tool lookup", ss.path(tool[0]))
	ta := attrs(tool[0])
	assert.Equal(t, "lookup", ta["gen_ai.tool.name"].AsString())
	assert.Equal(t, "c1", ta["gen_ai.tool.call.id"].AsString())
	assert.Equal(t, int64(len("forty-two")), ta["agiraph.tool.output_bytes"].AsInt64())
	assert.Equal(t, codes.Unset, tool[0].Status().Code)
	require.Len(t, ss.named("execute_tool publish"), 1)

	inner := ss.named("graph.invoke")[0] // the worker's run ends first
	assert.Equal(t, "tr1", attrs(inner)["agiraph.graph.thread_id"].AsString())
	for _, s := range ss {
		for _, kv := range s.Attributes() {
			assert.NotContains(t, kv.Value.String(), "secret-token", "span %s: arguments are not traced by default", s.Name())
		}
	}
}

// A tool that fails and then a model call that fails: their spans, the task's and the run's carry
// the error; WithTracedArguments records the arguments.
func TestTrace_Errors(t *testing.T) {
	tp, rec := record(t)
	down := &providers.Error{Kind: providers.ErrAuth, Provider: "scripted", Message: "bad key"}
	model := scripted.New("failing",
		scripted.Turn{Calls: []tools.Call{call("c1", "lookup", lookupArgs{Key: "missing"})}},
		scripted.Turn{Err: down},
	)
	rt := harnessed.New(model, harnessed.WithTracerProvider(tp), harnessed.WithTracedArguments())
	a := assignment(t, "tr2", "Look the key up.")
	a.Tools = append(a.Tools, lookup)
	o, err := rt.Run(context.Background(), a, func(runtime.Event) {})
	require.ErrorIs(t, err, down)
	assert.Equal(t, runtime.Failed, o.Status)

	ss := spans(rec.Ended())
	tool := ss.named("execute_tool lookup")
	require.Len(t, tool, 1)
	assert.Equal(t, codes.Error, tool[0].Status().Code)
	assert.Equal(t, "no such key", tool[0].Status().Description)
	assert.JSONEq(t, `{"key":"missing"}`, attrs(tool[0])["gen_ai.tool.call.arguments"].AsString())

	chats := ss.named("chat failing")
	require.Len(t, chats, 2)
	assert.Equal(t, codes.Unset, chats[0].Status().Code)
	assert.Equal(t, codes.Error, chats[1].Status().Code)
	assert.Equal(t, "*providers.Error", attrs(chats[1])["error.type"].AsString())
	assert.Equal(t, "graph.invoke > graph.step > model > chat failing", ss.path(chats[1]))
	for _, name := range []string{"model", "graph.step", "graph.invoke"} {
		all := ss.named(name)
		last := all[len(all)-1]
		assert.Equal(t, codes.Error, last.Status().Code, name)
	}
	assert.Equal(t, "failed", attrs(ss.named("graph.invoke")[0])["agiraph.graph.outcome"].AsString())
}
