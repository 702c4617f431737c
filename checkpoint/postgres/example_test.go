package postgres_test

import (
	"context"
	"fmt"
	"os"

	"github.com/agiraph/agiraph/checkpoint/postgres"
	"github.com/agiraph/agiraph/graph"
)

type order struct {
	Steps []string `graph:"append"`
}

// A graph checkpoints to PostgreSQL as it does to SQLite: Open makes the saver's tables if they
// are missing, and every process given the same database and thread continues the same run.
// (It needs a database: DATABASE_URL, e.g. postgres://user:pass@localhost/app.)
func ExampleOpen() {
	ctx := context.Background()
	saver, err := postgres.Open(ctx, os.Getenv("DATABASE_URL"))
	if err != nil {
		panic(err)
	}
	defer saver.Close()

	g := graph.New[order]()
	g.AddNode("pack", func(context.Context, order) (order, error) { return order{Steps: []string{"packed"}}, nil })
	g.AddNode("ship", func(context.Context, order) (order, error) { return order{Steps: []string{"shipped"}}, nil })
	g.AddEdge(graph.START, "pack")
	g.AddEdge("pack", "ship")
	g.AddEdge("ship", graph.END)
	compiled, err := g.Compile(graph.WithCheckpointer(saver), graph.WithThread("order-42"))
	if err != nil {
		panic(err)
	}
	out, err := compiled.Invoke(ctx, order{})
	if err != nil {
		panic(err)
	}
	fmt.Println(out.Steps)
}
