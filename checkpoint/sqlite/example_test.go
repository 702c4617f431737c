package sqlite_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/agiraph/agiraph/checkpoint/sqlite"
	"github.com/agiraph/agiraph/graph"
)

type report struct {
	Done []string `graph:"append"`
}

// A run that fails part way resumes from its database — here with a new Saver on the same file,
// as a restarted process would — without running again what finished.
func ExampleOpen() {
	dir, err := os.MkdirTemp("", "agiraph-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "state.db")

	runs := map[string]int{}
	build := func(fail bool) *graph.StateGraph[report] {
		g := graph.New[report]()
		g.AddNode("research", func(context.Context, report) (report, error) {
			runs["research"]++
			return report{Done: []string{"research"}}, nil
		})
		g.AddNode("write", func(context.Context, report) (report, error) {
			runs["write"]++
			if fail {
				return report{}, errors.New("the model is down")
			}
			return report{Done: []string{"write"}}, nil
		})
		g.AddEdge(graph.START, "research")
		g.AddEdge("research", "write")
		g.AddEdge("write", graph.END)
		return g
	}
	ctx := context.Background()
	for _, fail := range []bool{true, false} {
		saver, err := sqlite.Open(path)
		if err != nil {
			panic(err)
		}
		compiled, err := build(fail).Compile(graph.WithCheckpointer(saver), graph.WithThread("report-1"))
		if err != nil {
			panic(err)
		}
		if fail {
			_, err = compiled.Invoke(ctx, report{})
		} else {
			var out report
			out, err = compiled.Resume(ctx, nil)
			fmt.Println(out.Done)
		}
		fmt.Println("error:", err != nil)
		saver.Close()
	}
	fmt.Println("research ran", runs["research"], "time(s), write", runs["write"])
	// Output:
	// error: true
	// [research write]
	// error: false
	// research ran 1 time(s), write 2
}
