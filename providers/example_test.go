package providers_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/providers/scripted"
)

// A model without tool calling of its own gets it through the prompt: WithTextTools lists the
// tools in the system prompt and parses the calls out of the answer's text.
func ExampleWithTextTools() {
	plain := scripted.NewFunc("plain", func(_ context.Context, req providers.Request) (scripted.Turn, error) {
		if !strings.Contains(req.System, "web_search") {
			return scripted.Turn{Text: "I was told of no tools."}, nil
		}
		return scripted.Turn{Text: `Let me look. <tool_call>{"name": "web_search", "arguments": {"query": "AI chips"}}</tool_call>`}, nil
	})
	m := providers.WithTextTools(plain)
	resp, err := m.Generate(context.Background(), providers.Request{
		Messages: []providers.Message{providers.UserText("Who makes AI chips?")},
		Tools:    []providers.ToolSpec{{Name: "web_search", Description: "Search the web.", Schema: []byte(`{"type":"object","properties":{"query":{"type":"string"}}}`)}},
	})
	if err != nil {
		panic(err)
	}
	fmt.Printf("%q\n", resp.Message.Text())
	for _, c := range resp.Message.ToolCalls() {
		fmt.Println(c.Name, string(c.Args))
	}
	fmt.Println(resp.StopReason)
	// Output:
	// "Let me look. "
	// web_search {"query": "AI chips"}
	// tool_use
}

// Generate asks a model for an answer of a Go type: the schema is derived from the type, the
// answer is validated against it (with repair turns when it does not match) and decoded.
func ExampleGenerate() {
	type Forecast struct {
		City  string  `json:"city"`
		HighC float64 `json:"high_c" jsonschema:"description=The day's high in degrees Celsius"`
	}
	m := scripted.New("weather",
		scripted.Turn{Text: `{"city": "Paris", "high_c": "warm"}`}, // not a number: repaired
		scripted.Turn{Text: `{"city": "Paris", "high_c": 24.5}`},
	)
	f, _, err := providers.Generate[Forecast](context.Background(), m, providers.Request{
		Messages: []providers.Message{providers.UserText("Tomorrow's forecast for Paris?")},
	})
	if err != nil {
		panic(err)
	}
	fmt.Printf("%+v\n", f)
	// Output:
	// {City:Paris HighC:24.5}
}
