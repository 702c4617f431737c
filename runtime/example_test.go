package runtime_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/agiraph/agiraph/runtime"
)

// copyist is a minimal Runtime: it writes the task into a file of its scratch folder and
// publishes it. Real adapters run a model or a CLI agent between the two.
type copyist struct{}

func (copyist) Run(ctx context.Context, a runtime.Assignment, sink runtime.Sink) (runtime.Outcome, error) {
	if sink != nil {
		sink(runtime.Event{Time: time.Now(), Kind: runtime.Started, Assignment: a.ID, Node: a.Node, Worker: a.Worker})
	}
	if err := a.Dir.Create(); err != nil {
		return runtime.Outcome{Status: runtime.Failed, Summary: err.Error()}, err
	}
	if err := os.WriteFile(filepath.Join(a.Dir.Scratch(), "copy.md"), []byte(a.Task), 0o644); err != nil {
		return runtime.Outcome{Status: runtime.Failed, Summary: err.Error()}, err
	}
	published, err := a.Dir.Publish()
	if err != nil {
		return runtime.Outcome{Status: runtime.Failed, Summary: err.Error()}, err
	}
	return runtime.Outcome{Status: runtime.Published, Summary: "Copied the task.", Published: published}, nil
}

// A Runtime takes an assignment and returns its outcome; Watch adds a watchdog that stops an
// assignment that shows no progress for a while.
func Example() {
	dir, err := os.MkdirTemp("", "runtime")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	node := runtime.NodeDir(filepath.Join(dir, "n1"))
	rt := runtime.Watch(copyist{}, time.Minute)
	out, err := rt.Run(context.Background(), runtime.Assignment{
		ID: "a1", Run: "r1", Node: "n1", Worker: "w1", Task: "Copy me.",
		Dir: node,
	}, func(e runtime.Event) { fmt.Println("event:", e.Kind) })
	if err != nil {
		panic(err)
	}
	fmt.Println(out.Status, out.Published)
	copied, err := os.ReadFile(filepath.Join(node.Published(), "copy.md"))
	if err != nil {
		panic(err)
	}
	fmt.Println(string(copied))
	// Output:
	// event: started
	// published [copy.md]
	// Copy me.
}
