package claudecode_test

import (
	"context"
	"fmt"
	"time"

	"github.com/agiraph/agiraph/runtime"
	"github.com/agiraph/agiraph/runtime/claudecode"
)

// Claude Code runs an assignment in the node's scratch folder, with the squad's work tools over
// MCP; Watch stops it if it shows no progress for five minutes. (It needs the claude CLI on
// PATH and ANTHROPIC_API_KEY; in a squad, workers of kind claude-code get this runtime, set up
// with nodes.WithClaudeCode.)
func ExampleNew() {
	rt := runtime.Watch(claudecode.New(claudecode.WithModel("sonnet"), claudecode.WithMaxTurns(40)), 5*time.Minute)
	out, err := rt.Run(context.Background(), runtime.Assignment{
		ID: "report-1", Run: "r1", Node: "n1", Worker: "w1",
		Task: "Write a one-page summary of README.md into summary.md.",
		Dir:  runtime.NodeDir("/srv/agents/reports/n1"),
	}, func(e runtime.Event) {
		if e.Kind == runtime.ToolCalled {
			fmt.Println("tool:", e.Tool.Name)
		}
	})
	if err != nil {
		fmt.Println(out.Status, err)
		return
	}
	fmt.Println(out.Status, out.Published, out.Usage.CostUSD)
}
