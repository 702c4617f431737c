package index_test

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/agiraph/agiraph/nodes/memory"
	"github.com/agiraph/agiraph/nodes/memory/index"
	"github.com/agiraph/agiraph/nodes/workspace"
	"github.com/agiraph/agiraph/providers"
)

// A memory with an index finds sections by the stems of the query's words, and, with an
// embedder, by meaning. The embedder here knows one concept, cars; a program names a provider's,
// such as models.NewEmbedder("openai/text-embedding-3-small").
func ExampleOpen() {
	dir, err := os.MkdirTemp("", "agiraph-index")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	home := workspace.Home(dir)
	cars := providers.EmbedFunc{Model: "example/cars", Fn: func(_ context.Context, texts []string) ([][]float32, error) {
		vecs := make([][]float32, len(texts))
		for i, t := range texts {
			t = strings.ToLower(t)
			vecs[i] = []float32{0.1, float32(strings.Count(t, "car") + strings.Count(t, "automobile"))}
		}
		return vecs, nil
	}}
	ix, err := index.Open(home, index.WithEmbedder(cars))
	if err != nil {
		panic(err)
	}
	defer ix.Close()
	mem, err := memory.Open(home, memory.WithBudget(100), memory.WithIndex(ix))
	if err != nil {
		panic(err)
	}
	notes := "## Releases\n\nWe deploy each service on Tuesdays.\n\n## Garage\n\nThe car needs new brakes.\n"
	if err := mem.Write("coordinator", "knowledge/notes.md", notes, false); err != nil {
		panic(err)
	}
	for _, query := range []string{"deploying services", "automobile"} {
		found, err := mem.Search(query, 1)
		if err != nil {
			panic(err)
		}
		fmt.Println(found)
		fmt.Println()
	}
	// Output:
	// Memory is large (311 bytes in 2 files), so these are the sections best matching "deploying services" by full-text ranking (BM25) and meaning (example/cars), merged by reciprocal rank fusion: 1 section, best first.
	//
	// ---
	//
	// **knowledge/notes.md**
	// ## Releases
	//
	// We deploy each service on Tuesdays.
	//
	// Memory is large (311 bytes in 2 files), so these are the sections best matching "automobile" by full-text ranking (BM25) and meaning (example/cars), merged by reciprocal rank fusion: 1 section, best first.
	//
	// ---
	//
	// **knowledge/notes.md**
	// ## Garage
	//
	// The car needs new brakes.
}
