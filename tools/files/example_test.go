package files_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/agiraph/agiraph/tools"
	"github.com/agiraph/agiraph/tools/files"
)

// A worker's file tools work in one folder and only where its scope allows: here it may read
// the whole workspace but write only under notes/. A refusal is a result the model reads.
func ExampleScope_Tools() {
	root, err := os.MkdirTemp("", "files")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(root)
	scope := files.Scope{Root: root, Read: []string{"."}, Write: []string{"notes"}}
	reg, err := tools.NewRegistry(scope.Tools())
	if err != nil {
		panic(err)
	}
	call := func(id, name string, args any) tools.Call {
		b, _ := json.Marshal(args)
		return tools.Call{ID: id, Name: name, Args: b}
	}
	for _, res := range reg.Run(context.Background(), []tools.Call{
		call("1", "write_file", files.WriteArgs{Path: "notes/a.md", Content: "first note\n"}),
		call("2", "read_file", files.ReadArgs{Path: "notes/a.md"}),
		call("3", "write_file", files.WriteArgs{Path: "../outside.md", Content: "no"}),
	}) {
		fmt.Printf("%s error=%v: %s\n", res.CallID, res.IsError, strings.Join(strings.Fields(res.Content), " "))
	}
	// Output:
	// 1 error=false: wrote 11 bytes to "notes/a.md" (new file)
	// 2 error=false: 1 first note
	// 3 error=true: path "../outside.md" leads outside the workspace: paths are relative to the workspace root and may not climb above it with ".."
}
