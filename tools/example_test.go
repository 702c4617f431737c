package tools_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agiraph/agiraph/tools"
)

type shoutArgs struct {
	Text  string `json:"text" jsonschema:"description=What to shout"`
	Times int    `json:"times,omitempty" jsonschema:"description=How many times (default 1),minimum=1,maximum=3"`
}

func ExampleFunc() {
	shout := tools.Func("shout", "Repeat text in capitals.",
		func(ctx context.Context, a shoutArgs) (string, error) {
			return strings.TrimSpace(strings.Repeat(strings.ToUpper(a.Text)+"! ", max(a.Times, 1))), nil
		},
		tools.Safe(),
		tools.WithGuidance("Shout only when the user asks for emphasis."),
	)
	fmt.Println(string(shout.Schema))

	reg, err := tools.NewRegistry([]tools.Tool{shout})
	if err != nil {
		panic(err)
	}
	fmt.Println(reg.Guidance())
	for _, res := range reg.Run(context.Background(), []tools.Call{
		{ID: "call_1", Name: "shout", Args: json.RawMessage(`{"text":"hello","times":2}`)},
		{ID: "call_2", Name: "shout", Args: json.RawMessage(`{"times":5}`)},
	}) {
		fmt.Printf("%s error=%v: %s\n", res.CallID, res.IsError, res.Content)
	}
	// Output:
	// {"properties":{"text":{"type":"string","description":"What to shout"},"times":{"type":"integer","maximum":3,"minimum":1,"description":"How many times (default 1)"}},"additionalProperties":false,"type":"object","required":["text"]}
	// ## Tool: shout
	// Shout only when the user asks for emphasis.
	// call_1 error=false: HELLO! HELLO!
	// call_2 error=true: invalid arguments for tool "shout"; fix these and call it again:
	// - args.text: missing required property
	// - args.times: 5 is greater than maximum 3
}

// A call of a tool the registry does not have, or with arguments that are not JSON, gets an
// error result the model can read and act on; the calls around it run.
func ExampleRegistry_Run() {
	add := tools.Func("add", "Add two numbers.", func(_ context.Context, a struct {
		A int `json:"a"`
		B int `json:"b"`
	}) (string, error) {
		return fmt.Sprint(a.A + a.B), nil
	})
	reg, err := tools.NewRegistry([]tools.Tool{add})
	if err != nil {
		panic(err)
	}
	for _, res := range reg.Run(context.Background(), []tools.Call{
		{ID: "1", Name: "add", Args: json.RawMessage(`{"a":2,"b":3}`)},
		{ID: "2", Name: "multiply", Args: json.RawMessage(`{"a":2,"b":3}`)},
		{ID: "3", Name: "add", Args: json.RawMessage(`{"a":2,`)},
	}) {
		fmt.Printf("%s error=%v: %s\n", res.CallID, res.IsError, res.Content)
	}
	// Output:
	// 1 error=false: 5
	// 2 error=true: unknown tool "multiply"; available tools: add
	// 3 error=true: invalid arguments for tool "add": arguments are not valid JSON (unexpected end of JSON input): "{\"a\":2,"; send the arguments as one JSON object matching the tool's schema
}
