package nodes_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/models"
	"github.com/agiraph/agiraph/nodes"
	"github.com/agiraph/agiraph/nodes/demo"
	"github.com/agiraph/agiraph/nodes/eventlog"
	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/providers/providertest"
	"github.com/agiraph/agiraph/providers/scripted"
	"github.com/agiraph/agiraph/tools"
)

// Scenario 6: memory across runs. Run 1 researches Python's async patterns and, in its memory
// flush, writes what it learned to memory/knowledge/python-asyncio.md; run 2, with a new goal,
// finds that note with memory_search and uses it instead of researching again.
func TestMemoryAcrossRuns(t *testing.T) {
	const note = "## Event loops\n\nasyncio runs coroutines on one event loop; use asyncio.gather to run fetches concurrently.\n"
	coord := scripted.NewFunc("mem-coordinator", func(_ context.Context, req providers.Request) (scripted.Turn, error) {
		text, results := scripted.Last(req)
		goal := req.Messages[0].Text()
		switch {
		case strings.Contains(text, "The run is ending"):
			if strings.Contains(goal, "Research") {
				return scTurn(req, scripted.Call("memory_write", map[string]string{"path": "knowledge/python-asyncio.md", "content": note})), nil
			}
			return scripted.Turn{Text: "nothing new to store"}, nil
		case len(results) == 1 && results[0].Name == "memory_write":
			return scripted.Turn{Text: "stored"}, nil
		case len(req.Messages) == 1 && strings.Contains(goal, "Research"):
			return scTurn(req, scripted.Call("finish", map[string]string{"output": "asyncio: one event loop, gather for concurrency"})), nil
		case len(req.Messages) == 1:
			return scTurn(req, scripted.Call("memory_search", map[string]string{"query": "python async"})), nil
		case len(results) == 1 && results[0].Name == "memory_search":
			return scTurn(req, scripted.Call("finish", map[string]string{"output": "scraper.py uses what I know: " + firstMatch(results[0].Content)})), nil
		}
		return scTurn(req, scripted.Call("wait", map[string]string{})), nil
	}).KeepRequests()
	s := scSquad(t, coord, []providers.Model{scripted.New("unused")})
	scRun(t, s, "Research Python async patterns. Write what you learn to memory.")
	path := filepath.Join(string(s.Home()), "memory", "knowledge", "python-asyncio.md")
	if b, err := os.ReadFile(path); err != nil || !strings.Contains(string(b), "## Event loops") {
		t.Fatalf("after run 1, %s = %q, %v", path, b, err)
	}

	res := scRun(t, s, "Write an async web scraper in Python.")
	if !strings.Contains(res.Output, "asyncio.gather") {
		t.Fatalf("run 2 did not use its note: %q", res.Output)
	}
	if len(res.Board.Nodes) != 0 {
		t.Fatalf("run 2 researched again: %d nodes", len(res.Board.Nodes))
	}
	// Run 2's coordinator saw its memory in its prompt: the index lists the note.
	var run2 providers.Request
	for _, r := range coord.Requests() {
		if strings.Contains(r.Messages[0].Text(), "scraper") {
			run2 = r
			break
		}
	}
	if !strings.Contains(run2.System, "knowledge/python-asyncio.md") {
		t.Errorf("run 2's system prompt does not show the memory index:\n%s", run2.System)
	}
	if !slices.ContainsFunc(scEvents(t, s), func(e eventlog.Event) bool { return e.Type == eventlog.MemoryWritten }) {
		t.Error("no memory.written event")
	}
}

func firstMatch(s string) string {
	if m := regexp.MustCompile(`use asyncio\.gather[^.\n]*`).FindString(s); m != "" {
		return m
	}
	return "(nothing)"
}

// Scenario 7: a worker researching ten companies outgrows a small context window. Before each
// compaction it saves its notes; the conversation is archived and rebuilt; it keeps track of
// what it has done from its notes, and publishes a report covering all ten.
func TestCompactionOnALongAssignment(t *testing.T) {
	companies := []string{"Anthropic", "OpenAI", "Mistral", "Cohere", "Perplexity", "Scale", "Databricks", "Hugging Face", "Runway", "Character"}
	big := strings.Repeat("lorem ipsum ", 350)
	lookup := tools.Func("lookup", "Research one company.", func(_ context.Context, a struct {
		Name string `json:"name"`
	}) (string, error) {
		return fmt.Sprintf("%s: founded, funded, shipping. %s", a.Name, big), nil
	})
	// The worker decides only from its notes (read back from the file after a compaction) and
	// the last message, as a model with a compacted conversation must.
	worker := scripted.NewFunc("long-worker", func(_ context.Context, req providers.Request) (scripted.Turn, error) {
		node := scNode(req)
		notesPath := "nodes/" + node + "/scratch/notes.md"
		text, results := scripted.Last(req)
		all := scAll(req)
		done := map[string]bool{}
		for _, c := range companies {
			if strings.Contains(all, "- "+c+": researched") {
				done[c] = true
			}
		}
		switch {
		case strings.Contains(text, "about to be compacted"):
			return scTurn(req, scripted.Call("memory_write", map[string]string{"path": "experiences/long-research.md", "content": "## Long research\n\nKeep per-company notes in notes.md; compaction keeps files.\n"})), nil
		case strings.Contains(req.Messages[0].Text(), "This conversation was compacted") && scCalled(req)["read_file"] == 0:
			return scTurn(req, scripted.Call("read_file", map[string]string{"path": notesPath})), nil
		case len(results) == 1 && results[0].Name == "lookup":
			name := strings.SplitN(results[0].Content, ":", 2)[0]
			return scTurn(req, scripted.Call("note_done", map[string]string{"name": name})), nil
		}
		for _, c := range companies {
			if !done[c] {
				return scTurn(req, scripted.Call("lookup", map[string]string{"name": c})), nil
			}
		}
		if scCalled(req)["write_file"] == 0 && !strings.Contains(all, "report.md (") { // not written, nor listed in a compaction summary
			var b strings.Builder
			b.WriteString("# Ten AI startups\n")
			for _, c := range companies {
				fmt.Fprintf(&b, "\n## %s\n\nResearched.\n", c)
			}
			return scTurn(req, scripted.Call("write_file", map[string]string{"path": "nodes/" + node + "/scratch/report.md", "content": b.String()})), nil
		}
		return scTurn(req, scripted.Call("publish", map[string]string{"summary": "report.md covers all ten"})), nil
	})
	// note appends a line to notes.md (the worker's way of keeping track).
	var squadRef *nodes.Squad
	note := tools.Func("note_done", "Add a company to the notes.", func(_ context.Context, a struct {
		Name string `json:"name"`
	}) (string, error) {
		runs, _ := squadRef.Home().Runs()
		p := filepath.Join(string(squadRef.Home()), "runs", runs[len(runs)-1], "nodes", "n1", "scratch", "notes.md")
		f, err := os.OpenFile(p, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return "", err
		}
		defer f.Close()
		_, err = fmt.Fprintf(f, "- %s: researched\n", a.Name)
		return "- " + a.Name + ": researched", err
	})
	coord := scCoordinator("long-coordinator", func() []tools.Call {
		return []tools.Call{
			scripted.Call("spawn_worker", map[string]any{"name": "Lena", "agent_memory": true}),
			scripted.Call("create_work_node", map[string]any{"task": "Research the top 10 AI startups one by one; write report.md.", "worker": "Lena"}),
		}
	}, "nodes/n1/published/report.md", func(content string) string { return content })
	s := scSquad(t, coord, []providers.Model{worker},
		nodes.WithContextLimit(9000), nodes.WithContract(nodes.Contract{MaxIterations: 100}),
		nodes.WithWorkerTools(func(nodes.Worker, nodes.Node) []tools.Tool { return []tools.Tool{lookup, note} }))
	squadRef = s
	res := scRun(t, s, "Analyse the top 10 AI startups.")
	defer func() {
		if t.Failed() {
			dump(t, s)
		}
	}()
	for _, c := range companies {
		if !strings.Contains(res.Output, "## "+c) {
			t.Errorf("the report lacks %s", c)
		}
	}
	evs := scEvents(t, s)
	compactions := 0
	for _, e := range evs {
		if e.Type == "memory.compacted" {
			compactions++
		}
	}
	if compactions == 0 {
		t.Fatal("no compaction happened")
	}
	runs, _ := s.Home().Runs()
	archives, _ := filepath.Glob(filepath.Join(string(s.Home()), "runs", runs[0], "nodes", "n1", "_archive", "*.jsonl"))
	if len(archives) != compactions {
		t.Errorf("%d archives for %d compactions", len(archives), compactions)
	}
	notes, _ := os.ReadFile(filepath.Join(string(s.Home()), "runs", runs[0], "nodes", "n1", "published", "notes.md"))
	for _, c := range companies {
		if n := strings.Count(string(notes), "- "+c+": researched"); n != 1 {
			t.Errorf("%s researched %d times", c, n)
		}
	}
	if _, err := os.Stat(filepath.Join(string(s.Home()), "memory", "experiences", "long-research.md")); err != nil {
		t.Errorf("no durable note from the memory flush: %v", err)
	}
}

// A squad's memory search ranks by meaning with the embedder named by WithEmbedder, and keeps
// its index beside the memory files, not among them; an embedder no provider serves is refused.
func TestMemorySearchWithEmbedder(t *testing.T) {
	meaning := providertest.Concepts([]string{"car", "automobile", "brakes"}, []string{"puppy", "dog", "leash"})
	concepts := providers.EmbedFunc{Model: "test/concepts", Fn: func(_ context.Context, texts []string) ([][]float32, error) {
		out := make([][]float32, len(texts))
		for i, text := range texts {
			out[i] = meaning(text)
		}
		return out, nil
	}}
	s := newSquad(t, nodes.WithEmbedder("test/concepts"), nodes.WithModelOptions(models.WithEmbedders(concepts)))
	mem := s.Memory()
	var filler strings.Builder
	for i := range 300 { // past the budget of memory that is returned whole
		fmt.Fprintf(&filler, "## Filler %d\n\nWords about nothing in particular, kept to fill memory.\n\n", i)
	}
	require.NoError(t, mem.Write("test", "knowledge/filler.md", filler.String(), false))
	require.NoError(t, mem.Write("test", "knowledge/garage.md", "## Garage\n\nThe car needs new brakes before winter.\n", false))

	found, err := mem.Search("automobile", 1)
	require.NoError(t, err)
	assert.Contains(t, found, "meaning (test/concepts)")
	assert.Contains(t, found, "## Garage")
	files, err := mem.List()
	require.NoError(t, err)
	assert.Equal(t, []string{"index.md", "knowledge/filler.md", "knowledge/garage.md"}, files)
	assert.FileExists(t, filepath.Join(string(mem.Home()), "memory", ".index.db"))

	_, err = nodes.New(append(demo.Team(), nodes.WithHome(t.TempDir()), nodes.WithEmbedder("nosuch/embedder"))...)
	require.ErrorIs(t, err, providers.ErrUnknownModel)
}
