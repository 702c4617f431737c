package nodes_test

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/agiraph/agiraph/nodes"
	"github.com/agiraph/agiraph/nodes/demo"
)

// A squad playing the offline demo team on a goal: the coordinator grows the board, workers
// publish, and the run ends with the coordinator's report.
func Example() {
	home, _ := os.MkdirTemp("", "agent")
	defer os.RemoveAll(home)
	squad, err := nodes.New(append(demo.Team(), nodes.WithHome(home))...)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer squad.Close()
	res, err := squad.Run(context.Background(), "the history of the transistor")
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, n := range res.Board.Nodes {
		fmt.Println(n.ID, n.Status, firstTaskWords(n.Task))
	}
	fmt.Println(strings.SplitN(res.Output, "\n", 2)[0])
	// Output:
	// n1 completed Research the background and history
	// n2 completed Research the current state of:
	// n3 completed Research the open questions and
	// n4 completed Synthesize the findings of the
	// # Report
}

// A run started in the background: Start returns its handle once it has begun, the handle's
// methods act on it while it goes on (Send, Answer, Board, Stop, Pause), and Wait gives how it
// ended. Once it has ended, the handle acts on nothing.
func ExampleSquad_Start() {
	home, _ := os.MkdirTemp("", "agent")
	defer os.RemoveAll(home)
	squad, err := nodes.New(append(demo.Team(), nodes.WithHome(home))...)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer squad.Close()
	run, err := squad.Start(context.Background(), "the history of the transistor", nodes.WithRunID("transistor"))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("started", run.ID())
	res, err := run.Wait()
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("finished:", res.Finished)
	fmt.Println(run.Send("", "one more thing"))
	// Output:
	// started transistor
	// finished: true
	// nodes: no run in progress: run transistor has ended
}

func firstTaskWords(task string) string {
	w := strings.Fields(task)
	if len(w) > 5 {
		w = w[:5]
	}
	return strings.Join(w, " ")
}

// A program that keeps many agents need not keep their squads open: ReadFiles reads an agent's
// board, events and conversation at rest, and changes nothing.
func ExampleReadFiles() {
	home, _ := os.MkdirTemp("", "agent")
	defer os.RemoveAll(home)
	squad, err := nodes.New(append(demo.Team(), nodes.WithHome(home))...)
	if err != nil {
		panic(err)
	}
	res, err := squad.Run(context.Background(), "the history of the transistor")
	if err != nil {
		panic(err)
	}
	squad.Close()

	files := nodes.ReadFiles(nodes.WithHome(home))
	board, err := files.Board(res.RunID)
	if err != nil {
		panic(err)
	}
	fmt.Println(len(board.Nodes), "nodes,", len(board.Workers), "workers")
	events, err := files.Events(0, 0)
	if err != nil {
		panic(err)
	}
	fmt.Println(events[0].Type, "…", events[len(events)-1].Type)
	// Output:
	// 4 nodes, 3 workers
	// agent.created … agent.completed
}
