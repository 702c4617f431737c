package graph_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/agiraph/agiraph/checkpoint"
	"github.com/agiraph/agiraph/graph"
	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/providers/scripted"
)

type notes struct {
	Topic string
	Notes []string `graph:"append"`
}

// A graph fans work out with Sends and merges the results in Send order.
func Example() {
	g := graph.New[notes]()
	g.AddRouter(graph.START, func(_ context.Context, s notes) graph.Next[notes] {
		return graph.Next[notes]{Sends: []graph.Send[notes]{
			{Node: "research", Arg: notes{Topic: s.Topic + " history"}},
			{Node: "research", Arg: notes{Topic: s.Topic + " methods"}},
		}}
	}, "research")
	g.AddNode("research", func(_ context.Context, s notes) (notes, error) {
		return notes{Notes: []string{"notes on " + s.Topic}}, nil
	})
	g.AddEdge("research", graph.END)

	compiled, err := g.Compile()
	if err != nil {
		panic(err)
	}
	final, err := compiled.Invoke(context.Background(), notes{Topic: "graphs"})
	if err != nil {
		panic(err)
	}
	fmt.Println(strings.Join(final.Notes, "; "))
	// Output: notes on graphs history; notes on graphs methods
}

type counter struct{ N int }

// A conditional edge loops until the state says to stop.
func ExampleStateGraph_AddConditionalEdges() {
	g := graph.New[counter]()
	g.AddNode("inc", func(_ context.Context, s counter) (counter, error) { return counter{N: s.N + 1}, nil })
	g.AddEdge(graph.START, "inc")
	g.AddConditionalEdges("inc", func(_ context.Context, s counter) string {
		if s.N < 5 {
			return "inc"
		}
		return graph.END
	}, "inc", graph.END)
	compiled, _ := g.Compile()
	final, _ := compiled.Invoke(context.Background(), counter{})
	fmt.Println(final.N)
	// Output: 5
}

type approval struct {
	Draft    string
	Approved bool
}

// A node asks a human with Interrupt; the run pauses and Resume answers it.
func ExampleInterrupt() {
	g := graph.New[approval]()
	g.AddNode("review", func(ctx context.Context, s approval) (approval, error) {
		ok, err := graph.Interrupt[bool](ctx, "approve "+s.Draft+"?")
		if err != nil {
			return approval{}, err
		}
		return approval{Approved: ok}, nil
	})
	g.AddEdge(graph.START, "review")
	g.AddEdge("review", graph.END)
	compiled, _ := g.Compile(graph.WithCheckpointer(checkpoint.NewMemory()))

	ctx, thread := context.Background(), graph.WithThread("doc-42")
	_, err := compiled.Invoke(ctx, approval{Draft: "v1"}, thread)
	var paused *graph.Interrupted
	if errors.As(err, &paused) {
		fmt.Println("asked:", paused.Interrupts[0].Value)
	}
	final, _ := compiled.Resume(ctx, true, thread)
	fmt.Println("approved:", final.Approved)
	// Output:
	// asked: approve v1?
	// approved: true
}

// Stream yields events as the run goes: here each node's update, and what nodes Emit.
func ExampleCompiled_Stream() {
	g := graph.New[counter]()
	g.AddNode("a", func(ctx context.Context, s counter) (counter, error) {
		graph.Emit(ctx, "working")
		return counter{N: s.N + 1}, nil
	})
	g.AddEdge(graph.START, "a")
	g.AddEdge("a", graph.END)
	compiled, _ := g.Compile()
	for ev, err := range compiled.Stream(context.Background(), counter{}, graph.WithStreamMode(graph.ModeUpdates|graph.ModeCustom)) {
		if err != nil {
			panic(err)
		}
		fmt.Printf("step %d %s: %v\n", ev.Step, ev.Node, ev.Data)
	}
	// Output:
	// step 1 a: working
	// step 1 a: {1}
}

// Mermaid draws a compiled graph.
func ExampleCompiled_Mermaid() {
	g := graph.New[counter]()
	g.AddNode("plan", func(_ context.Context, s counter) (counter, error) { return s, nil })
	g.AddNode("act", func(_ context.Context, s counter) (counter, error) { return s, nil })
	g.AddEdge(graph.START, "plan")
	g.AddConditionalEdges("plan", func(context.Context, counter) string { return "act" }, "act", graph.END)
	g.AddEdge("act", "plan")
	compiled, _ := g.Compile()
	fmt.Print(compiled.Mermaid())
	// Output:
	// flowchart TD
	// 	__start__(["start"])
	// 	plan["plan"]
	// 	act["act"]
	// 	__end__(["end"])
	// 	__start__ --> plan
	// 	plan -.-> act
	// 	plan -.-> __end__
	// 	act --> plan
}

type outer struct {
	Question string
	Answer   string
}

type inner struct {
	Q, A string
}

// A compiled graph with its own state type runs as a node of another graph.
func ExampleAddMappedSubgraph() {
	sub := graph.New[inner]()
	sub.AddNode("answer", func(_ context.Context, s inner) (inner, error) {
		return inner{A: strings.ToUpper(s.Q)}, nil
	})
	sub.AddEdge(graph.START, "answer")
	sub.AddEdge("answer", graph.END)
	child, _ := sub.Compile()

	g := graph.New[outer]()
	graph.AddMappedSubgraph(g, "expert", child,
		func(p outer) inner { return inner{Q: p.Question} },
		func(_ outer, c inner) outer { return outer{Answer: c.A} })
	g.AddEdge(graph.START, "expert")
	g.AddEdge("expert", graph.END)
	compiled, _ := g.Compile()
	final, _ := compiled.Invoke(context.Background(), outer{Question: "why?"})
	fmt.Println(final.Answer)
	// Output: WHY?
}

// chat is a conversation that grows by appends, and is sometimes compacted.
type chat struct {
	Messages []string
	Compact  bool // in an update: its Messages replace the conversation
}

// keepDeltas appends an update's messages, or replaces the conversation with them when the update
// says so: each update, and so each checkpoint, holds only what changed.
func keepDeltas(cur, u chat) chat {
	if u.Compact {
		return chat{Messages: u.Messages}
	}
	return chat{Messages: append(cur.Messages, u.Messages...)}
}

// A reducer that keeps deltas: nodes return only new messages, and each invocation on the thread
// (a new message from the user) is saved as an update, not as the whole conversation.
func ExampleStateGraph_SetReducer() {
	g := graph.New[chat]()
	g.SetReducer(keepDeltas)
	g.AddNode("reply", func(_ context.Context, s chat) (chat, error) {
		if len(s.Messages) > 4 {
			return chat{Messages: []string{"(summary)", "ok"}, Compact: true}, nil
		}
		return chat{Messages: []string{"ok"}}, nil
	})
	g.AddEdge(graph.START, "reply")
	g.AddEdge("reply", graph.END)
	compiled, _ := g.Compile(graph.WithCheckpointer(checkpoint.NewMemory()), graph.WithThread("chat"))
	ctx := context.Background()
	for _, said := range []string{"hi", "how are you?", "bye"} {
		final, _ := compiled.Invoke(ctx, chat{Messages: []string{said}})
		fmt.Println(final.Messages)
	}
	// Output:
	// [hi ok]
	// [hi ok how are you? ok]
	// [(summary) ok]
}

type draft struct {
	Tone string
	Text string
}

// A thread's history is kept: a run can be forked from an earlier checkpoint with its state
// edited, and the fork goes on from there while the first branch stays as it was.
func ExampleCompiled_UpdateState() {
	g := graph.New[draft]()
	g.AddNode("choose", func(context.Context, draft) (draft, error) { return draft{Tone: "formal"}, nil })
	g.AddNode("write", func(_ context.Context, d draft) (draft, error) {
		return draft{Tone: d.Tone, Text: "a " + d.Tone + " letter"}, nil
	})
	g.AddEdge(graph.START, "choose")
	g.AddEdge("choose", "write")
	g.AddEdge("write", graph.END)
	compiled, err := g.Compile(graph.WithCheckpointer(checkpoint.NewMemory()), graph.WithThread("letter"))
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	first, err := compiled.Invoke(ctx, draft{})
	if err != nil {
		panic(err)
	}
	fmt.Println(first.Text)

	history, err := compiled.History(ctx, checkpoint.ListOptions{}) // newest first
	if err != nil {
		panic(err)
	}
	var chosen graph.Snapshot[draft]
	for _, h := range history {
		if len(h.Next) == 1 && h.Next[0] == "write" {
			chosen = h // after "choose", before "write"
		}
	}
	if _, err := compiled.UpdateState(ctx, draft{Tone: "friendly"}, "choose", graph.WithCheckpointID(chosen.Config.CheckpointID)); err != nil {
		panic(err)
	}
	fork, err := compiled.Resume(ctx, nil)
	if err != nil {
		panic(err)
	}
	fmt.Println(fork.Text)
	// Output:
	// a formal letter
	// a friendly letter
}

type order struct{ Items []string }

// A task records a change beside the state with Effect: it is saved with the task's output, in
// the same call of the saver, whose handler applies it — here an outbox kept beside the
// checkpoints. An attempt that fails saves none of its effects, so the retry sends once.
func ExampleEffect() {
	var outbox []string
	saver := checkpoint.NewMemory(checkpoint.WithEffects(func(_ string, w checkpoint.Write) error {
		outbox = append(outbox, string(w.Value))
		return nil
	}))
	attempts := 0
	g := graph.New[order]()
	g.AddNode("confirm", func(ctx context.Context, o order) (order, error) {
		attempts++
		if err := graph.Effect(ctx, []byte("mail: order of "+strings.Join(o.Items, ", ")), nil); err != nil {
			return order{}, err
		}
		if attempts == 1 {
			return order{}, errors.New("the mail server timed out")
		}
		return o, nil
	}, graph.WithRetry(graph.RetryPolicy{MaxAttempts: 2, InitialInterval: time.Millisecond}))
	g.AddEdge(graph.START, "confirm")
	g.AddEdge("confirm", graph.END)
	compiled, err := g.Compile(graph.WithCheckpointer(saver), graph.WithThread("order-7"))
	if err != nil {
		panic(err)
	}
	if _, err := compiled.Invoke(context.Background(), order{Items: []string{"tea", "cups"}}); err != nil {
		panic(err)
	}
	fmt.Println(attempts, "attempts;", outbox)
	// Output: 2 attempts; [mail: order of tea, cups]
}

// A workflow as plain Go code: two calls of a task run in parallel, the entrypoint asks a human to
// pick one, and the resumed run replays the finished calls instead of running them again.
func ExampleNewEntrypoint() {
	ctx := context.Background()
	drafts := 0
	var mu sync.Mutex
	draft, err := graph.NewTask("draft", func(ctx context.Context, style string) (string, error) {
		mu.Lock()
		drafts++
		mu.Unlock()
		return "a " + style + " poem about otters", nil
	})
	if err != nil {
		panic(err)
	}
	write, err := graph.NewEntrypoint("write", func(ctx context.Context, topic string) (string, error) {
		a, b := draft.Call(ctx, "long"), draft.Call(ctx, "short")
		long, err := a.Get()
		if err != nil {
			return "", err
		}
		short, err := b.Get()
		if err != nil {
			return "", err
		}
		return graph.Interrupt[string](ctx, []string{long, short})
	}, graph.WithCheckpointer(checkpoint.NewMemory()), graph.WithThread("t1"))
	if err != nil {
		panic(err)
	}
	_, err = write.Invoke(ctx, "otters")
	var paused *graph.Interrupted
	if errors.As(err, &paused) {
		fmt.Println("pick one of", paused.Interrupts[0].Value)
	}
	pick, err := write.Resume(ctx, "a short poem about otters")
	fmt.Println(pick, err)
	fmt.Println("drafts written:", drafts)
	// Output:
	// pick one of [a long poem about otters a short poem about otters]
	// a short poem about otters <nil>
	// drafts written: 2
}

// A chat UI shows a model's answer as it is generated: the node sets graph.OnText as the
// request's OnText, and ModeMessages yields each piece of text tagged with its node.
func ExampleOnText() {
	model := scripted.New("demo", scripted.Turn{Text: "Supersteps merge updates in a fixed order."})
	type chat struct{ Reply string }
	g := graph.New[chat]()
	g.AddNode("answer", func(ctx context.Context, _ chat) (chat, error) {
		resp, err := model.Generate(ctx, providers.Request{
			Messages: []providers.Message{providers.UserText("What is a superstep?")},
			OnText:   graph.OnText(ctx, model.Name()),
		})
		return chat{Reply: resp.Message.Text()}, err
	})
	g.AddEdge(graph.START, "answer")
	c, err := g.Compile()
	if err != nil {
		panic(err)
	}
	for ev, err := range c.Stream(context.Background(), chat{}, graph.WithStreamMode(graph.ModeMessages)) {
		if err != nil {
			panic(err)
		}
		fmt.Printf("%s: %q\n", ev.Node, ev.Data.(graph.MessageChunk).Text)
	}
	// Output:
	// answer: "Supersteps "
	// answer: "merge "
	// answer: "updates "
	// answer: "in "
	// answer: "a "
	// answer: "fixed "
	// answer: "order."
}
