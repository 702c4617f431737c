package autonomous_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/agiraph/agiraph/runtime"
	"github.com/agiraph/agiraph/runtime/autonomous"
)

// Any program can be a CLI agent: it works in the node's scratch folder, reads the task in
// _task.md, and says it is done by writing _result.md; what else it wrote there is published.
// Here the agent is a shell script; autonomous.Codex(), Gemini() and Aider() are the templates
// of real CLI agents.
func ExampleNew() {
	dir, err := os.MkdirTemp("", "autonomous")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	agent := filepath.Join(dir, "agent.sh")
	script := "#!/bin/sh\ncd \"$(dirname \"$1\")\"\necho 'Tallinn is the capital.' > answer.md\necho 'Answered.' > _result.md\n"
	if err := os.WriteFile(agent, []byte(script), 0o755); err != nil {
		panic(err)
	}

	rt := autonomous.New(autonomous.Script(agent))
	out, err := rt.Run(context.Background(), runtime.Assignment{
		ID: "a1", Run: "r1", Node: "n1", Worker: "w1",
		Task: "What is the capital of Estonia? Write it in answer.md.",
		Dir:  runtime.NodeDir(filepath.Join(dir, "n1")),
	}, nil)
	if err != nil {
		panic(err)
	}
	fmt.Println(out.Status, out.Summary, out.Published)
	// Output:
	// published Answered. [answer.md]
}
