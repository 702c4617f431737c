package hooks_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/agiraph/agiraph/hooks"
	"github.com/agiraph/agiraph/providers/scripted"
	"github.com/agiraph/agiraph/runtime"
	"github.com/agiraph/agiraph/runtime/harnessed"
	"github.com/agiraph/agiraph/tools"
)

// A guardrail: the worker may not run shell commands, and what its tools return reaches the
// model with e-mail addresses, phone numbers and card numbers redacted.
func Example() {
	lookup := tools.Func("lookup", "Look a customer up.", func(context.Context, struct{}) (string, error) {
		return "Jane Roe, jane@example.com, +1 415 555 0100", nil
	})
	model := scripted.New("support",
		scripted.Turn{Calls: []tools.Call{
			{ID: "c1", Name: "lookup", Args: json.RawMessage(`{}`)},
			{ID: "c2", Name: "bash", Args: json.RawMessage(`{"command":"cat /etc/passwd"}`)},
		}},
		scripted.Turn{Text: "Done."},
	).KeepRequests()
	rt := harnessed.New(model, harnessed.WithoutWorkTools(), harnessed.WithTextEndsTurn(),
		harnessed.WithHooks(hooks.Denylist("bash", "shell*"), hooks.RedactPII()))
	dir, err := os.MkdirTemp("", "hooks-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	a := runtime.Assignment{ID: "support-1", Worker: "support", Task: "Who is customer 7?",
		Dir: runtime.NodeDir(dir), Tools: []tools.Tool{lookup}}
	if _, err := rt.Run(context.Background(), a, nil); err != nil {
		fmt.Println(err)
		return
	}
	for name, content := range scripted.Results(model.Requests()[1]) {
		fmt.Printf("%s: %s\n", name, content)
	}
	// Unordered output:
	// lookup: Jane Roe, [email], [phone]
	// bash: The call of bash was refused: the tool bash is not allowed here (denied by "bash")
}
