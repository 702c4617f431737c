// Command tracing runs a small team under OpenTelemetry tracing: a graph fans a question out to
// two in-process workers, each of which calls a tool and publishes, and a last node gathers what
// they published. Every run, superstep, task, model call and tool call is a span.
//
//	go run ./examples/tracing
//
// With OTEL_EXPORTER_OTLP_ENDPOINT set (a collector, Jaeger, Tempo, Phoenix, ...:
// http://localhost:4318) the spans go there over OTLP/HTTP; without it they are printed as JSON.
// The workers think with a deterministic offline model, so no API key is needed.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"

	"github.com/agiraph/agiraph/graph"
	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/providers/scripted"
	"github.com/agiraph/agiraph/runtime"
	"github.com/agiraph/agiraph/runtime/harnessed"
	"github.com/agiraph/agiraph/tools"
)

func main() {
	if err := run(context.Background(), os.Stdout, os.Getenv); err != nil {
		fmt.Fprintln(os.Stderr, "tracing:", err)
		os.Exit(1)
	}
}

// run traces one run of the team: to the OTLP/HTTP endpoint getenv names, else as JSON on out.
func run(ctx context.Context, out io.Writer, getenv func(string) string) (err error) {
	exporter, err := newExporter(ctx, out, getenv("OTEL_EXPORTER_OTLP_ENDPOINT"))
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
	defer os.RemoveAll(dir)
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

// newExporter returns an OTLP/HTTP exporter to endpoint, or one that prints JSON to out when
// endpoint is "".
func newExporter(ctx context.Context, out io.Writer, endpoint string) (sdktrace.SpanExporter, error) {
	if endpoint != "" {
		return otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(strings.TrimSuffix(endpoint, "/")+"/v1/traces"))
	}
	return stdouttrace.New(stdouttrace.WithWriter(out), stdouttrace.WithPrettyPrint())
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
			call = scripted.Call("publish", runtime.PublishArgs{Summary: results[0].Content})
		}
		call.ID = fmt.Sprintf("call-%d", len(req.Messages))
		return scripted.Turn{Usage: usage, Calls: []tools.Call{call}}, nil
	})
}
