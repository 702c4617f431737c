package memory_test

import (
	"fmt"
	"os"

	"github.com/agiraph/agiraph/nodes/memory"
	"github.com/agiraph/agiraph/nodes/workspace"
)

// An agent's memory is markdown files in its home: written by path, indexed, and searched by
// the query's words once it outgrows its budget.
func ExampleOpen() {
	dir, err := os.MkdirTemp("", "agiraph-memory")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	home := workspace.Home(dir)
	if err := home.Create(); err != nil {
		panic(err)
	}
	mem, err := memory.Open(home, memory.WithBudget(100))
	if err != nil {
		panic(err)
	}
	write := func(path, content string) {
		if err := mem.Write("coordinator", path, content, false); err != nil {
			panic(err)
		}
	}
	write("knowledge/chips.md", "# Chips\n\n## Vendors\n\nThree vendors make most accelerators.\n\n## Memory\n\nHBM supply limits output.\n")
	write("knowledge/go.md", "# Go\n\n## Errors\n\nWrap errors with %w.\n")
	files, err := mem.List()
	if err != nil {
		panic(err)
	}
	fmt.Println(files)
	found, err := mem.Search("HBM supply", 1)
	if err != nil {
		panic(err)
	}
	fmt.Println(found)
	// Output:
	// [index.md knowledge/chips.md knowledge/go.md]
	// Memory is large (378 bytes in 3 files), so these are the sections best matching "HBM supply" (keywords: hbm, supply): 1 of 1 matching sections, best first.
	//
	// ---
	//
	// **knowledge/chips.md**
	// ## Memory
	//
	// HBM supply limits output.
}
