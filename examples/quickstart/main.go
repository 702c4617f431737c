// Command quickstart runs a small graph that shows the engine's main moves: a planner fans work
// out with Sends, the workers' results are merged deterministically, a reviewer loops until the
// draft is long enough, a human approves it through an interrupt, and every superstep is saved
// so the paused run is resumed from its checkpoint.
//
//	go run ./examples/quickstart "topic"
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agiraph/agiraph/checkpoint"
	"github.com/agiraph/agiraph/checkpoint/sqlite"
	"github.com/agiraph/agiraph/graph"
	"github.com/agiraph/agiraph/internal/cmdline"
)

// State is the whole state of the run. Tags tell the default reducer how to merge updates.
type State struct {
	Topic    string
	Aspect   string   // the argument of one worker's task
	Notes    []string `graph:"append"`
	Draft    string
	Rounds   int
	Approved bool
}

func build(saver checkpoint.Saver) (*graph.Compiled[State], error) {
	g := graph.New[State]()
	g.AddRouter(graph.START, func(_ context.Context, s State) graph.Next[State] {
		var next graph.Next[State]
		for _, a := range []string{"history", "methods", "open questions"} {
			next.Sends = append(next.Sends, graph.Send[State]{Node: "research", Arg: State{Topic: s.Topic, Aspect: a}})
		}
		return next
	}, "research")
	g.AddNode("research", func(ctx context.Context, s State) (State, error) {
		graph.Emit(ctx, "researching "+s.Aspect)
		return State{Notes: []string{fmt.Sprintf("%s of %s", s.Aspect, s.Topic)}}, nil
	})
	g.AddNode("write", func(_ context.Context, s State) (State, error) {
		if s.Draft == "" {
			return State{Draft: "On " + s.Topic + ": " + strings.Join(s.Notes, "; ") + ".", Rounds: 1}, nil
		}
		return State{Draft: s.Draft + " (revised)", Rounds: s.Rounds + 1}, nil
	})
	g.AddNode("approve", func(ctx context.Context, s State) (State, error) {
		ok, err := graph.Interrupt[bool](ctx, "approve this draft? "+s.Draft)
		if err != nil {
			return State{}, err
		}
		return State{Approved: ok}, nil
	})
	g.AddEdge("research", "write")
	g.AddConditionalEdges("write", func(_ context.Context, s State) string {
		if s.Rounds < 2 {
			return "write"
		}
		return "approve"
	}, "write", "approve")
	g.AddEdge("approve", graph.END)
	return g.Compile(graph.WithCheckpointer(saver))
}

func main() {
	dir := flag.String("dir", filepath.Join(".agiraph", "runs", "quickstart"), "the run directory, which holds the checkpoint database")
	words, _ := cmdline.Parse(flag.CommandLine, os.Args[1:]) // flag.CommandLine exits on an error
	topic := "state graphs"
	if len(words) > 0 {
		topic = strings.Join(words, " ")
	}
	if err := run(context.Background(), os.Stdout, topic, filepath.Join(*dir, "checkpoints.db")); err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, w io.Writer, topic, db string) (err error) {
	saver, err := sqlite.Open(db)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, saver.Close()) }()
	g, err := build(saver)
	if err != nil {
		return err
	}
	fmt.Fprintln(w, g.Mermaid())

	id := fmt.Sprintf("%s-%d", topic, time.Now().UnixNano())
	fmt.Fprintf(w, "thread %q, saved in %s\n", id, db)
	thread := graph.WithThread(id)
	modes := graph.WithStreamMode(graph.ModeUpdates | graph.ModeCustom)
	var paused *graph.Interrupted
	for ev, err := range g.Stream(ctx, State{Topic: topic}, thread, modes) {
		if errors.As(err, &paused) {
			break
		} else if err != nil {
			return err
		}
		switch ev.Mode {
		case graph.ModeCustom:
			fmt.Fprintf(w, "step %d  %-8s says %v\n", ev.Step, ev.Node, ev.Data)
		case graph.ModeUpdates:
			fmt.Fprintf(w, "step %d  %-8s returned %+v\n", ev.Step, ev.Node, ev.Data)
		}
	}
	if paused == nil {
		return errors.New("the run did not ask for approval")
	}
	fmt.Fprintf(w, "paused for a human: %v\n", paused.Interrupts[0].Value)

	// The question is saved: any process could answer it. This one reads it back and answers.
	snap, err := g.State(ctx, thread)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "saved at step %d, waiting in %v\n", snap.Step, snap.Next)
	final, err := g.Resume(ctx, true, thread)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "resumed and finished: approved=%v after %d rounds\n%s\n", final.Approved, final.Rounds, final.Draft)
	return nil
}
