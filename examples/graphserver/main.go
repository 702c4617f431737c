// Command graphserver serves a compiled graph over the two protocols agent clients already
// speak: the LangGraph API (for @langchain/langgraph-sdk, its React useStream and the chat UIs
// built on it) and A2A (for A2A clients and the agents of other frameworks).
//
//	go run ./examples/graphserver
//
// The graph, "notes", drafts a note on the topic it is given, asks whether to publish it (an
// interrupt: a LangGraph client answers with a command, an A2A client with its next message on
// the task) and publishes it or says why not. Its threads are kept in <root>/notes.db, so a
// server started again finds them. To serve a graph of your own, give server.WithGraph your
// compiled graph, its checkpointer, and how a message becomes its input and its final state an
// answer; see docs/serve-a-graph.md.
//
// Every request needs the server's token (made on first start, kept in <root>/token, printed at
// start); a LangGraph client sends it as its apiKey, an A2A client as a bearer token.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/agiraph/agiraph/checkpoint/sqlite"
	"github.com/agiraph/agiraph/graph"
	"github.com/agiraph/agiraph/internal/cmdline"
	"github.com/agiraph/agiraph/server"
	"github.com/agiraph/agiraph/server/a2a"
	"github.com/agiraph/agiraph/server/host"
)

// Note is the graph's state; its JSON names are what clients send and read.
type Note struct {
	Topic  string `json:"topic"`
	Draft  string `json:"draft,omitempty"`
	Answer string `json:"answer,omitempty"`
	Output string `json:"output,omitempty"`
}

// NewGraph returns the notes graph: draft, then ask (an interrupt), then publish.
func NewGraph() *graph.StateGraph[Note] {
	g := graph.New[Note]()
	g.AddNode("draft", func(_ context.Context, n Note) (Note, error) {
		if n.Topic == "" {
			return Note{}, errors.New("the input has no topic")
		}
		return Note{Draft: fmt.Sprintf("A short note on %s.", n.Topic)}, nil
	})
	g.AddNode("ask", func(ctx context.Context, n Note) (Note, error) {
		answer, err := graph.Interrupt[string](ctx, "Publish this? "+n.Draft)
		return Note{Answer: answer}, err
	})
	g.AddNode("publish", func(_ context.Context, n Note) (Note, error) {
		if n.Answer != "yes" {
			return Note{Output: fmt.Sprintf("Not published (%q).", n.Answer)}, nil
		}
		return Note{Output: "Published: " + n.Draft}, nil
	})
	g.AddEdge(graph.START, "draft")
	g.AddEdge("draft", "ask")
	g.AddEdge("ask", "publish")
	g.AddEdge("publish", graph.END)
	return g
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "graphserver:", err)
		os.Exit(1)
	}
}

// run serves the notes graph until ctx ends.
func run(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("graphserver", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:2024", "the address to serve on (port 0: a free one)")
	root := fs.String("root", ".agiraph/graphserver", "the folder of the threads and the token")
	token := fs.String("token", os.Getenv("AGIRAPH_TOKEN"), "the token requests must carry (default: one kept in the root)")
	if _, err := cmdline.Parse(fs, args); err != nil {
		return err
	}
	if err := os.MkdirAll(*root, 0o700); err != nil {
		return err
	}
	saver, err := sqlite.Open(filepath.Join(*root, "notes.db"))
	if err != nil {
		return err
	}
	defer saver.Close()
	compiled, err := NewGraph().Compile(graph.WithCheckpointer(saver))
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	defer ln.Close()
	srv, err := server.New(
		server.WithHost(host.WithRoot(*root)),
		server.WithAddr(ln.Addr().String()),
		server.WithToken(*token),
		server.WithGraph(a2a.Graph[Note]{
			Name:        "notes",
			Description: "Drafts a note on the topic you send, and asks before publishing it.",
			Graph:       compiled,
			Saver:       saver,
			In:          func(text string) Note { return Note{Topic: text} },
			Out:         func(n Note) string { return n.Output },
		}),
		server.WithA2AAgent("notes"),
	)
	if err != nil {
		return err
	}
	defer srv.Close()
	base := "http://" + ln.Addr().String()
	fmt.Fprintf(stdout, "LangGraph API: %s%s (assistant \"notes\")\n", base, server.LangGraphPath)
	fmt.Fprintf(stdout, "A2A agent:     %s/.well-known/agent-card.json\n", base)
	fmt.Fprintf(stdout, "token:         %s\n", srv.Token())
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return hs.Shutdown(shut)
}
