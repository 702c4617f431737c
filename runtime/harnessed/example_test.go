package harnessed_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/agiraph/agiraph/nodes/workspace"
	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/providers/providertest"
	"github.com/agiraph/agiraph/providers/scripted"
	"github.com/agiraph/agiraph/runtime"
	"github.com/agiraph/agiraph/runtime/harnessed"
	"github.com/agiraph/agiraph/tools"
	"github.com/agiraph/agiraph/tools/files"
)

// A harnessed worker is a model loop in the process: it works on its node with its tools and
// the work tools (publish among them) until it publishes, and reports what it does as events.
func ExampleNew() {
	dir, err := os.MkdirTemp("", "agiraph-worker")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	run := workspace.Home(dir).Run("r1")
	node := run.Node("n1")
	if err := node.Create(); err != nil {
		panic(err)
	}
	model := scripted.New("writer",
		scripted.Turn{Calls: []tools.Call{scripted.Call("write_file", map[string]string{"path": "nodes/n1/scratch/note.md", "content": "Three vendors lead.\n"})}},
		scripted.Turn{Calls: []tools.Call{scripted.Call("publish", map[string]string{"summary": "a note on the vendors"})}},
	)
	var toolCalls []string
	out, err := harnessed.New(model).Run(context.Background(), runtime.Assignment{
		ID: "r1.n1.1", Run: "r1", Node: "n1", Worker: "w1", Task: "Write a note on the chip vendors.", Dir: node,
		Tools: files.Tools(string(run), workspace.WorkerScope("n1", "w1")), // what a worker of n1 may read and write
	}, func(e runtime.Event) {
		if e.Kind == runtime.ToolCalled {
			toolCalls = append(toolCalls, e.Tool.Name)
		}
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(out.Status, out.Published, toolCalls)
	// Output:
	// published [note.md] [write_file publish]
}

// A worker looks at an image of its node with view_file: the file's bytes go to the model in
// its next request, after the tool's result, while the saved conversation keeps only a reference.
func ExampleNew_viewFile() {
	dir, err := os.MkdirTemp("", "agiraph-worker")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	run := workspace.Home(dir).Run("r1")
	node := run.Node("n1")
	if err := node.Create(); err != nil {
		panic(err)
	}
	if err := os.WriteFile(filepath.Join(node.Scratch(), "chart.png"), providertest.PNG, 0o644); err != nil {
		panic(err)
	}
	model := scripted.NewFunc("viewer", func(_ context.Context, req providers.Request) (scripted.Turn, error) {
		last := req.Messages[len(req.Messages)-1]
		for _, p := range last.Parts {
			if p.Type == providers.FilePart {
				fmt.Printf("the model sees %s: %s, %d bytes\n", p.File.Name, p.File.MediaType, len(p.File.Data))
				return scripted.Turn{Calls: []tools.Call{scripted.Call("publish", map[string]string{"summary": "a grey square"})}}, nil
			}
		}
		return scripted.Turn{Calls: []tools.Call{scripted.Call("view_file", map[string]string{"path": "nodes/n1/scratch/chart.png"})}}, nil
	})
	out, err := harnessed.New(model).Run(context.Background(), runtime.Assignment{
		ID: "r1.n1.1", Run: "r1", Node: "n1", Worker: "w1", Task: "Describe the chart.", Dir: node,
		Tools: files.Tools(string(run), workspace.WorkerScope("n1", "w1")),
	}, nil)
	if err != nil {
		panic(err)
	}
	fmt.Println(out.Status, out.Summary)
	// Output:
	// the model sees nodes/n1/scratch/chart.png: image/png, 67 bytes
	// published a grey square
}
