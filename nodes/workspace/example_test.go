package workspace_test

import (
	"fmt"
	"path/filepath"

	"github.com/agiraph/agiraph/nodes/workspace"
)

// An agent's files have one layout: the home outlasts its runs; a run has its nodes, each with
// a spec, scratch and published outputs, and its workers' own files.
func ExampleHome() {
	home := workspace.Home("/agents/ada")
	run := home.Run("20261127-090000")
	node := run.Node("n1")
	rel := func(p string) string {
		r, err := filepath.Rel(string(home), p)
		if err != nil {
			panic(err)
		}
		return filepath.ToSlash(r)
	}
	for _, p := range []string{home.Soul(), home.Memory(), home.Events(), workspace.Spec(node),
		node.Published(), run.Worker("w1").Memory()} {
		fmt.Println(rel(p))
	}
	// Output:
	// SOUL.md
	// MEMORY.md
	// events.jsonl
	// runs/20261127-090000/nodes/n1/_spec.md
	// runs/20261127-090000/nodes/n1/published
	// runs/20261127-090000/workers/w1/memory.md
}
