package host_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/agiraph/agiraph/nodes"
	"github.com/agiraph/agiraph/nodes/demo"
	"github.com/agiraph/agiraph/server/host"
)

// A host keeps agents under its root and runs them in the background: make an agent with a goal,
// read its summary as its run goes on, then its board.
func ExampleNew() {
	root, err := os.MkdirTemp("", "agiraph-host")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(root)
	team := func(id string) []nodes.Option { return demo.Team() } // the offline team
	h, err := host.New(host.WithRoot(root), host.WithSquadOptions(team))
	if err != nil {
		panic(err)
	}
	defer h.Close()
	sum, err := h.Create("ada", "the state of AI chips", "", "")
	if err != nil {
		panic(err)
	}
	fmt.Println(sum.ID, sum.Status)
	for sum.Status != host.StatusComplete {
		time.Sleep(20 * time.Millisecond)
		if sum, err = h.Summary("ada"); err != nil {
			panic(err)
		}
	}
	a, err := h.Agent(context.Background(), "ada")
	if err != nil {
		panic(err)
	}
	board, _, err := a.Board()
	if err != nil {
		panic(err)
	}
	fmt.Println(sum.Status, len(board.Nodes), "nodes")
	// Output:
	// ada working
	// completed 4 nodes
}
