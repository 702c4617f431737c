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
