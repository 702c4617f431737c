package graph

import (
	"context"
	"iter"

	"github.com/agiraph/agiraph/checkpoint"
)

// Mode selects kinds of stream events; modes combine with |.
type Mode uint8

// The stream modes.
const (
	// ModeValues yields the whole state after the input is applied and after every superstep.
	// Data is the state (the subgraph's state type for events of subgraphs).
	ModeValues Mode = 1 << iota
	// ModeUpdates yields each task's update as the task finishes. Data is the update.
	ModeUpdates
	// ModeCustom yields what nodes pass to Emit, those of subgraphs too. Data is the emitted value.
	ModeCustom
	// ModeTasks yields the start and the end of every task. Data is a TaskEvent.
	ModeTasks
	// ModeCheckpoints yields every saved checkpoint. Data is a CheckpointEvent.
	ModeCheckpoints
	// ModeMessages yields the text of the models that nodes call as it is generated, what a chat
	// UI shows (see OnText). Data is a MessageChunk.
	ModeMessages
	// ModeDebug is tasks and checkpoints.
	ModeDebug = ModeTasks | ModeCheckpoints
)

// Event is one item of a stream.
type Event struct {
	Mode Mode
	// Namespace is "" for the graph that was invoked, and the path of subgraph tasks
	// ("research:<checkpoint>.<task>/...") for events of subgraphs (see WithSubgraphs) and the
	// custom events of their nodes.
	Namespace string
	Step      int
	Node      string // the node the event is about, where there is one
	TaskID    string
	Data      any
}

// TaskEvent is the Data of a ModeTasks event.
type TaskEvent struct {
	Finished   bool
	Push       bool // the task was made by a Send
	Input      any  // the Send's argument, for push tasks
	Err        error
	Interrupts []InterruptInfo
	Cached     bool // the task's output came from the node cache (see CachePolicy)
}

// MessageChunk is the Data of a ModeMessages event: a piece of a model's answer.
type MessageChunk struct {
	Text  string // the piece of the answer's text
	Model string // the model that generates it, as given to OnText
	// ID is the same for the chunks of one model call and differs between calls: the key by which
	// a reader puts chunks together into messages.
	ID string
}

// CheckpointEvent is the Data of a ModeCheckpoints event.
type CheckpointEvent struct {
	Config checkpoint.Config
	Source checkpoint.Source
	Next   []string // the nodes of the next superstep
}

// Stream runs the graph from input, yielding events of the modes chosen with WithStreamMode
// (default ModeValues). The run's error, if any, is yielded last with a zero Event. Stopping the
// iteration cancels the run.
func (g *Compiled[S]) Stream(ctx context.Context, input S, opts ...Option) iter.Seq2[Event, error] {
	return g.stream(ctx, "graph.stream", opts, func(ctx context.Context, r *run[S]) (S, error) { return r.start(ctx, input) })
}

// StreamResume is Resume with events, as Stream.
func (g *Compiled[S]) StreamResume(ctx context.Context, value any, opts ...Option) iter.Seq2[Event, error] {
	return g.stream(ctx, "graph.stream_resume", opts, func(ctx context.Context, r *run[S]) (S, error) { return r.resume(ctx, value) })
}

func (g *Compiled[S]) stream(ctx context.Context, span string, opts []Option, body func(context.Context, *run[S]) (S, error)) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		cfg := g.cfg.with(opts)
		if cfg.modes == 0 {
			cfg.modes = ModeValues
		}
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		stopped := false
		r, err := g.newRun(cfg, nil)
		if err != nil {
			yield(Event{}, err)
			return
		}
		r.emit = func(ev Event) bool {
			if stopped {
				return false
			}
			if !yield(ev, nil) {
				stopped = true
				cancel()
				return false
			}
			return true
		}
		ctx = r.traceRun(ctx, span)
		_, err = body(ctx, r)
		r.endRun(ctx, err)
		if err != nil && !stopped {
			yield(Event{}, err)
		}
	}
}
