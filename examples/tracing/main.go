// Command tracing runs a small team under OpenTelemetry tracing: a graph fans a question out to
// two in-process workers, each of which calls a tool and publishes, and a last node gathers what
// they published. Every run, superstep, task, model call and tool call is a span.
//
//	go run ./examples/tracing
//
// With OTEL_EXPORTER_OTLP_ENDPOINT set (a collector, Jaeger, Tempo, Phoenix, ...:
// http://localhost:4318) the spans go there over OTLP/HTTP; without it they are printed as a
// tree, each span under its parent with its duration and key attributes (-json prints them as
// OpenTelemetry's JSON instead). The workers think with a deterministic offline model, so no API
// key is needed.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/agiraph/agiraph/graph"
	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/providers/scripted"
	"github.com/agiraph/agiraph/runtime"
	"github.com/agiraph/agiraph/runtime/adapter"
	"github.com/agiraph/agiraph/runtime/harnessed"
	"github.com/agiraph/agiraph/tools"
)

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout, os.Getenv); err != nil {
		fmt.Fprintln(os.Stderr, "tracing:", err)
		os.Exit(1)
	}
}

// run traces one run of the team: to the OTLP/HTTP endpoint getenv names, else as a tree (or
// with -json as JSON) on out.
func run(ctx context.Context, args []string, out io.Writer, getenv func(string) string) (err error) {
	fs := flag.NewFlagSet("tracing", flag.ContinueOnError)
	fs.SetOutput(out)
	asJSON := fs.Bool("json", false, "print the spans as OpenTelemetry's JSON, not as a tree (without OTEL_EXPORTER_OTLP_ENDPOINT)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	exporter, err := newExporter(ctx, out, getenv("OTEL_EXPORTER_OTLP_ENDPOINT"), *asJSON)
	if err != nil {
		return err
	}
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exporter),
		sdktrace.WithResource(resource.NewSchemaless(semconv.ServiceName("agiraph-tracing-example"))),
	)
	// Shutdown sends the spans still batched; a program that traces everything would instead
	// call otel.SetTracerProvider(tp) once and pass no provider to the options below.
	defer func() { err = errors.Join(err, tp.Shutdown(context.WithoutCancel(ctx))) }()

	dir, err := os.MkdirTemp("", "agiraph-tracing-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(dir) }() // best effort: a temporary folder
	team, err := build(harnessed.New(offlineModel(), harnessed.WithTracerProvider(tp)), dir)
	if err != nil {
		return err
	}
	final, err := team.Invoke(ctx, State{Question: "why is the sky blue"}, graph.WithTracerProvider(tp))
	if err != nil {
		return err
	}
	fmt.Fprintln(out, final.Answer)
	return nil
}

// newExporter returns an OTLP/HTTP exporter to endpoint; when endpoint is "", one that prints
// the spans to out, as JSON or as a tree.
func newExporter(ctx context.Context, out io.Writer, endpoint string, asJSON bool) (sdktrace.SpanExporter, error) {
	switch {
	case endpoint != "":
		return otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(strings.TrimSuffix(endpoint, "/")+"/v1/traces"))
	case asJSON:
		return stdouttrace.New(stdouttrace.WithWriter(out), stdouttrace.WithPrettyPrint())
	}
	return &treeExporter{out: out}, nil
}

// treeExporter keeps the spans it is given and prints them as a tree when it shuts down: each
// span under its parent, in the order they started, with its duration and key attributes.
type treeExporter struct {
	out   io.Writer
	mu    sync.Mutex
	spans []sdktrace.ReadOnlySpan
}

func (e *treeExporter) ExportSpans(_ context.Context, spans []sdktrace.ReadOnlySpan) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.spans = append(e.spans, spans...)
	return nil
}

func (e *treeExporter) Shutdown(context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.spans) == 0 {
		return nil
	}
	// A span whose parent is not among them (the root, or one whose parent is elsewhere) is a root.
	known := map[trace.SpanID]bool{}
	for _, s := range e.spans {
		known[s.SpanContext().SpanID()] = true
	}
	children := map[trace.SpanID][]sdktrace.ReadOnlySpan{} // by parent; the roots under the zero ID
	for _, s := range e.spans {
		parent := s.Parent().SpanID()
		if !known[parent] {
			parent = trace.SpanID{}
		}
		children[parent] = append(children[parent], s)
	}
	type line struct {
		label string
		span  sdktrace.ReadOnlySpan
	}
	var lines []line
	var walk func(parent trace.SpanID, indent string)
	walk = func(parent trace.SpanID, indent string) {
		kids := children[parent]
		slices.SortStableFunc(kids, func(a, b sdktrace.ReadOnlySpan) int { return a.StartTime().Compare(b.StartTime()) })
		for _, s := range kids {
			lines = append(lines, line{indent + s.Name(), s})
			walk(s.SpanContext().SpanID(), indent+"  ")
		}
	}
	walk(trace.SpanID{}, "")
	width := 0
	for _, l := range lines {
		width = max(width, len(l.label))
	}
	fmt.Fprintf(e.out, "\n%d spans:\n", len(lines))
	for _, l := range lines {
		fmt.Fprintln(e.out, strings.TrimRight(fmt.Sprintf("%-*s  %8s  %s", width, l.label, duration(l.span), brief(l.span)), " "))
	}
	return nil
}

// duration is how long span s took, to three or four digits.
func duration(s sdktrace.ReadOnlySpan) string {
	d := s.EndTime().Sub(s.StartTime())
	switch {
	case d >= time.Second:
		d = d.Round(time.Millisecond)
	case d >= time.Millisecond:
		d = d.Round(10 * time.Microsecond)
	default:
		d = d.Round(time.Microsecond)
	}
	return d.String()
}

// shown are the attributes a span's line shows, in this order, each under a short label.
var shown = []struct {
	key   attribute.Key
	label string
}{
	{"agiraph.graph.thread_id", "thread"},
	{"agiraph.graph.step", "step"},
	{"agiraph.graph.tasks", "tasks"},
	{"agiraph.graph.steps", "steps"},
	{"agiraph.graph.outcome", "outcome"},
	{"agiraph.graph.interrupts", "interrupts"},
	{"agiraph.graph.task.retries", "retries"},
	{"agiraph.graph.task.cached", "cached"},
	{"agiraph.graph.task.interrupted", "interrupted"},
	{"gen_ai.usage.input_tokens", "in"},
	{"gen_ai.usage.output_tokens", "out"},
	{"agiraph.usage.cost_usd", "cost"},
	{"gen_ai.response.finish_reasons", "stop"},
	{"agiraph.model.tool_calls", "calls"},
	{"agiraph.tool.output_bytes", "bytes"},
}

// brief returns span s's key attributes, as label=value, and its error if it failed.
func brief(s sdktrace.ReadOnlySpan) string {
	var parts []string
	for _, a := range shown {
		for _, kv := range s.Attributes() {
			if kv.Key != a.key {
				continue
			}
			v := kv.Value.String()
			if kv.Value.Type() == attribute.STRINGSLICE {
				v = strings.Join(kv.Value.AsStringSlice(), ",")
			}
			parts = append(parts, a.label+"="+v)
		}
	}
	if st := s.Status(); st.Code == codes.Error {
		parts = append(parts, "error: "+st.Description)
	}
	return strings.Join(parts, " ")
}

// State is the team's state: the question, one worker's angle on it, and what they found.
type State struct {
	Question string
	Angle    string   // the argument of one worker's task
	Findings []string `graph:"append"`
	Answer   string
}

// build returns the team: START sends the question to a worker per angle; each runs an assignment
// with rt, in a folder below dir; gather joins their findings.
func build(rt *harnessed.Runtime, dir string) (*graph.Compiled[State], error) {
	g := graph.New[State]()
	g.AddRouter(graph.START, func(_ context.Context, s State) graph.Next[State] {
		var next graph.Next[State]
		for _, angle := range []string{"physics", "history"} {
			next.Sends = append(next.Sends, graph.Send[State]{Node: "research", Arg: State{Question: s.Question, Angle: angle}})
		}
		return next
	}, "research")
	g.AddNode("research", func(ctx context.Context, s State) (State, error) {
		a := runtime.Assignment{
			ID: "research-" + s.Angle, Run: "tracing", Node: s.Angle, Worker: s.Angle + "-worker",
			Task: fmt.Sprintf("Answer %q from the angle of %s.", s.Question, s.Angle),
			Dir:  runtime.NodeDir(filepath.Join(dir, s.Angle)), Tools: []tools.Tool{lookup},
		}
		o, err := rt.Run(ctx, a, func(runtime.Event) {})
		if err != nil {
			return State{}, err
		}
		return State{Findings: []string{s.Angle + ": " + o.Summary}}, nil
	})
	g.AddNode("gather", func(_ context.Context, s State) (State, error) {
		return State{Answer: strings.Join(s.Findings, "\n")}, nil
	}, graph.Defer())
	g.AddEdge("research", "gather")
	g.AddEdge("gather", graph.END)
	return g.Compile()
}

type lookupArgs struct {
	Topic string `json:"topic" jsonschema_description:"What to look up"`
}

// lookup is the workers' one tool: an encyclopedia of one entry.
var lookup = tools.Func("lookup", "Looks a topic up in the encyclopedia.", func(_ context.Context, a lookupArgs) (string, error) {
	return "Rayleigh scattering: shorter wavelengths scatter more, so blue light fills the sky (" + a.Topic + ").", nil
}, tools.Safe())

// offlineModel plays a worker that looks its angle up, then publishes what it read.
func offlineModel() providers.Model {
	return scripted.NewFunc("offline", func(_ context.Context, req providers.Request) (scripted.Turn, error) {
		usage := providers.Usage{InputTokens: 40 * len(req.Messages), OutputTokens: 25}
		call := scripted.Call("lookup", lookupArgs{Topic: req.Messages[0].Text()})
		if _, results := scripted.Last(req); len(results) > 0 {
			call = scripted.Call("publish", adapter.PublishArgs{Summary: results[0].Content})
		}
		call.ID = fmt.Sprintf("call-%d", len(req.Messages))
		return scripted.Turn{Usage: usage, Calls: []tools.Call{call}}, nil
	})
}
