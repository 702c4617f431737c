package scripted_test

import (
	"context"
	"fmt"

	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/providers/scripted"
	"github.com/agiraph/agiraph/tools"
)

// A scripted model answers with the turns it was given, in order: a test of an agent's loop
// needs no key and no network.
func ExampleNew() {
	m := scripted.New("helper",
		scripted.Turn{Calls: []tools.Call{scripted.Call("web_search", map[string]string{"query": "AI chips"})}},
		scripted.Turn{Text: "Three vendors lead."},
	)
	ctx := context.Background()
	req := providers.Request{Messages: []providers.Message{providers.UserText("Who makes AI chips?")}}
	for range 2 {
		resp, err := m.Generate(ctx, req)
		if err != nil {
			panic(err)
		}
		for _, c := range resp.Message.ToolCalls() {
			fmt.Println("call:", c.Name, string(c.Args))
		}
		if text := resp.Message.Text(); text != "" {
			fmt.Println("text:", text, "stop:", resp.StopReason)
		}
	}
	// Output:
	// call: web_search {"query":"AI chips"}
	// text: Three vendors lead. stop: end
}

// A scripted function decides each answer from the request, as a model would from the
// conversation.
func ExampleNewFunc() {
	m := scripted.NewFunc("echo", func(_ context.Context, req providers.Request) (scripted.Turn, error) {
		last := req.Messages[len(req.Messages)-1]
		return scripted.Turn{Text: "You said: " + last.Text()}, nil
	})
	resp, err := m.Generate(context.Background(), providers.Request{Messages: []providers.Message{providers.UserText("hello")}})
	if err != nil {
		panic(err)
	}
	fmt.Println(resp.Message.Text())
	// Output: You said: hello
}
