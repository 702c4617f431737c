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

	"github.com/agiraph/agiraph/graph"
	"github.com/agiraph/agiraph/internal/spantest"
	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/providers/scripted"
	"github.com/agiraph/agiraph/runtime"
	"github.com/agiraph/agiraph/runtime/adapter"
	"github.com/agiraph/agiraph/runtime/harnessed"
	"github.com/agiraph/agiraph/tools"
)

// path names s and its ancestors among ss, root first, joined by " > ".
func path(ss spantest.Spans, s spantest.Span) string {
	names := []string{s.Name}
	for p := s.Parent; p.IsValid(); {
		i := 0
		for i < len(ss) && ss[i].SpanContext.SpanID() != p.SpanID() {
			i++
		}
		if i == len(ss) {
			break
		}
		names = append([]string{ss[i].Name}, names...)
		p = ss[i].Parent
	}
	return strings.Join(names, " > ")
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
	rec := spantest.New()
	model := scripted.New("tracer",
		scripted.Turn{Calls: []tools.Call{call("c1", "lookup", lookupArgs{Key: "secret-token"})},
			Usage: providers.Usage{InputTokens: 100, OutputTokens: 20, CacheReadTokens: 30, CacheWriteTokens: 10, CostUSD: 0.0015}},
		scripted.Turn{Calls: []tools.Call{call("c2", "publish", adapter.PublishArgs{Summary: "found it"})},
			Usage: providers.Usage{InputTokens: 150, OutputTokens: 5}},
	)
	rt := harnessed.New(model, harnessed.WithTracerProvider(rec))
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
	c, err := g.Compile(graph.WithTracerProvider(rec))
	require.NoError(t, err)
	final, err := c.Invoke(context.Background(), squad{})
	require.NoError(t, err)
	require.Equal(t, string(runtime.Published), final.Status)

	ss := rec.Ended()
	chats := ss.Named("chat tracer")
	require.Len(t, chats, 2)
	assert.Equal(t, "graph.invoke > graph.step > dispatch > graph.invoke > graph.step > model > chat tracer", path(ss, chats[0]))
	first := chats[0]
	assert.Equal(t, "chat", first.Attr("gen_ai.operation.name").AsString())
	assert.Equal(t, "scripted", first.Attr("gen_ai.provider.name").AsString())
	assert.Equal(t, "tracer", first.Attr("gen_ai.request.model").AsString())
	assert.Equal(t, int64(140), first.Attr("gen_ai.usage.input_tokens").AsInt64(), "uncached, read from and written to the cache")
	assert.Equal(t, int64(20), first.Attr("gen_ai.usage.output_tokens").AsInt64())
	assert.Equal(t, int64(30), first.Attr("gen_ai.usage.cache_read.input_tokens").AsInt64())
	assert.Equal(t, int64(10), first.Attr("gen_ai.usage.cache_creation.input_tokens").AsInt64())
	assert.InDelta(t, 0.0015, first.Attr("agiraph.usage.cost_usd").AsFloat64(), 1e-12)
	assert.Equal(t, []string{"tool_use"}, first.Attr("gen_ai.response.finish_reasons").AsStringSlice())
	assert.Equal(t, int64(1), first.Attr("agiraph.model.tool_calls").AsInt64())
	assert.Equal(t, int64(150), chats[1].Attr("gen_ai.usage.input_tokens").AsInt64())
	assert.Equal(t, attribute.EMPTY, chats[1].Attr("agiraph.usage.cost_usd").Type(), "no cost where the price is unknown")

	tool := ss.Named("execute_tool lookup")
	require.Len(t, tool, 1)
	assert.Equal(t, "graph.invoke > graph.step > dispatch > graph.invoke > graph.step > tools > execute_tool lookup", path(ss, tool[0]))
	assert.Equal(t, "lookup", tool[0].Attr("gen_ai.tool.name").AsString())
	assert.Equal(t, "c1", tool[0].Attr("gen_ai.tool.call.id").AsString())
	assert.Equal(t, int64(len("forty-two")), tool[0].Attr("agiraph.tool.output_bytes").AsInt64())
	assert.Equal(t, codes.Unset, tool[0].Status.Code)
	require.Len(t, ss.Named("execute_tool publish"), 1)

	inner := ss.Named("graph.invoke")[0] // the worker's run ends first
	assert.Equal(t, "tr1", inner.Attr("agiraph.graph.thread_id").AsString())
	for _, s := range ss {
		for _, kv := range s.Attributes {
			assert.NotContains(t, kv.Value.String(), "secret-token", "span %s: arguments are not traced by default", s.Name)
		}
	}
}

// A tool that fails and then a model call that fails: their spans, the task's and the run's carry
// the error; WithTracedArguments records the arguments.
func TestTrace_Errors(t *testing.T) {
	rec := spantest.New()
	down := &providers.Error{Kind: providers.ErrAuth, Provider: "scripted", Message: "bad key"}
	model := scripted.New("failing",
		scripted.Turn{Calls: []tools.Call{call("c1", "lookup", lookupArgs{Key: "missing"})}},
		scripted.Turn{Err: down},
	)
	rt := harnessed.New(model, harnessed.WithTracerProvider(rec), harnessed.WithTracedArguments())
	a := assignment(t, "tr2", "Look the key up.")
	a.Tools = append(a.Tools, lookup)
	o, err := rt.Run(context.Background(), a, func(runtime.Event) {})
	require.ErrorIs(t, err, down)
	assert.Equal(t, runtime.Failed, o.Status)

	ss := rec.Ended()
	tool := ss.Named("execute_tool lookup")
	require.Len(t, tool, 1)
	assert.Equal(t, codes.Error, tool[0].Status.Code)
	assert.Equal(t, "no such key", tool[0].Status.Description)
	assert.JSONEq(t, `{"key":"missing"}`, tool[0].Attr("gen_ai.tool.call.arguments").AsString())

	chats := ss.Named("chat failing")
	require.Len(t, chats, 2)
	assert.Equal(t, codes.Unset, chats[0].Status.Code)
	assert.Equal(t, codes.Error, chats[1].Status.Code)
	assert.Equal(t, "*providers.Error", chats[1].Attr("error.type").AsString())
	assert.Equal(t, "graph.invoke > graph.step > model > chat failing", path(ss, chats[1]))
	for _, name := range []string{"model", "graph.step", "graph.invoke"} {
		all := ss.Named(name)
		last := all[len(all)-1]
		assert.Equal(t, codes.Error, last.Status.Code, name)
	}
	assert.Equal(t, "failed", ss.Named("graph.invoke")[0].Attr("agiraph.graph.outcome").AsString())
}
