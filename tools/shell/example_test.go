package shell_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/agiraph/agiraph/tools"
	"github.com/agiraph/agiraph/tools/shell"
)

// The bash tool runs a command in its folder and returns what it printed; a failing command
// is a result the model reads, with its exit status.
func ExampleBash() {
	dir, err := os.MkdirTemp("", "shell")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	reg, err := tools.NewRegistry([]tools.Tool{shell.Bash(shell.Dir(dir))})
	if err != nil {
		panic(err)
	}
	call := func(id, command string) tools.Call {
		b, _ := json.Marshal(shell.Args{Command: command})
		return tools.Call{ID: id, Name: "bash", Args: b}
	}
	for _, res := range reg.Run(context.Background(), []tools.Call{
		call("1", "echo hello > a.txt && cat a.txt"),
		call("2", "echo no such file >&2; exit 3"),
	}) {
		fmt.Printf("%s error=%v: %s\n", res.CallID, res.IsError, strings.Join(strings.Fields(res.Content), " "))
	}
	// Output:
	// 1 error=false: hello
	// 2 error=false: no such file exit status 3
}
