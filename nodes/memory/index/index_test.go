package index_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/nodes/memory"
	"github.com/agiraph/agiraph/nodes/memory/index"
	"github.com/agiraph/agiraph/nodes/workspace"
	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/providers/providertest"
)

// budget is small, so that the fixtures' memory is searched by section.
const budget = 300

// setup opens the memory of a new home with an index (opts), and writes files to it.
func setup(t *testing.T, files map[string]string, opts ...index.Option) (*memory.Store, *index.Index, workspace.Home) {
	t.Helper()
	home := workspace.Home(filepath.Join(t.TempDir(), "agent"))
	ix, err := index.Open(home, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = ix.Close() })
	mem, err := memory.Open(home, memory.WithBudget(budget), memory.WithIndex(ix))
	require.NoError(t, err)
	for p, content := range files {
		require.NoError(t, mem.Write("tester", p, content, false))
	}
	return mem, ix, home
}

// sections returns the sections of a search's result, each "path: header".
func sections(result string) []string {
	var out []string
	for _, block := range strings.Split(result, "\n\n---\n\n")[1:] {
		if strings.HasPrefix(block, "(") { // sections not shown
			continue
		}
		head, body, _ := strings.Cut(block, "\n")
		first, _, _ := strings.Cut(body, "\n")
		out = append(out, strings.Trim(head, "*")+": "+strings.TrimLeft(first, "# "))
	}
	return out
}

// deployFiles are notes where the words of a question about deploying are found in other forms.
var deployFiles = map[string]string{
	"knowledge/releases.md": "## Releases\n\nWe deploy each service behind a feature flag; deploys happen on Tuesdays.\n",
	"knowledge/desk.md":     "## Service desk\n\nThe service desk answers tickets about the service catalogue, the service hours and the service levels.\n",
	"knowledge/coffee.md":   "## Coffee\n\nThe machine on the second floor makes the best espresso.\n",
}

// Stemming finds the note about deploying services, which keyword matching ranks below a note
// that says "service" often and never "deploy".
func TestFullTextRanksByStems(t *testing.T) {
	mem, _, home := setup(t, deployFiles)
	found, err := mem.Search("deploying services", 3)
	require.NoError(t, err)
	assert.Contains(t, found, "full-text ranking (BM25)")
	require.NotEmpty(t, sections(found))
	assert.Equal(t, "knowledge/releases.md: Releases", sections(found)[0], found)

	plain, err := memory.Open(home, memory.WithBudget(budget))
	require.NoError(t, err)
	found, err = plain.Search("deploying services", 3)
	require.NoError(t, err)
	assert.Equal(t, []string{"knowledge/desk.md: Service desk", "knowledge/releases.md: Releases"}, sections(found),
		"keyword matching, the comparison: %s", found)
}

// concepts is an embedder that knows what some words mean (see meaning), and records what it
// embeds.
type concepts struct {
	mu    sync.Mutex
	texts []string // every text embedded, in order
	fail  error    // when set, Embed fails with it
}

// meaning knows what some words mean.
var meaning = providertest.Concepts(
	[]string{"car", "automobile", "vehicle", "engine", "brakes"},
	[]string{"dog", "puppy", "canine", "leash"},
	[]string{"money", "budget", "invoice", "salary", "expenses"},
)

func (c *concepts) embedder() providers.Embedder {
	return providers.EmbedFunc{Model: "test/concepts", Fn: func(_ context.Context, texts []string) ([][]float32, error) {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.fail != nil {
			return nil, c.fail
		}
		c.texts = append(c.texts, texts...)
		out := make([][]float32, len(texts))
		for i, t := range texts {
			out[i] = meaning(t)
		}
		return out, nil
	}}
}

func (c *concepts) embedded() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.texts...)
}

var meaningFiles = map[string]string{
	"knowledge/garage.md": "## Garage\n\nThe car needs new brakes before winter; the engine is fine.\n",
	"knowledge/pets.md":   "## Pets\n\nThe puppy walks twice a day on a short leash.\n",
	"knowledge/admin.md":  "## Admin\n\nSend the invoice by the fifth; expenses go in the budget sheet.\n",
}

// With an embedder a section is found by its meaning: no section holds the word "automobile".
func TestMeaningFindsWhatWordsDoNot(t *testing.T) {
	mem, _, _ := setup(t, meaningFiles)
	found, err := mem.Search("automobile", 3)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(found, `no memory matches "automobile"`), found)

	var c concepts
	mem, _, _ = setup(t, meaningFiles, index.WithEmbedder(c.embedder()))
	found, err = mem.Search("automobile", 3)
	require.NoError(t, err)
	assert.Contains(t, found, "meaning (test/concepts), merged by reciprocal rank fusion")
	assert.Equal(t, []string{"knowledge/garage.md: Garage"}, sections(found), found)
}

// Only new and changed sections are embedded: a vector is kept by its section's text.
func TestOnlyChangedSectionsAreEmbedded(t *testing.T) {
	var c concepts
	mem, _, _ := setup(t, meaningFiles, index.WithEmbedder(c.embedder()))
	_, err := mem.Search("automobile", 3)
	require.NoError(t, err)
	assert.Len(t, c.embedded(), 4, "three sections and the query")

	require.NoError(t, mem.Write("tester", "knowledge/pets.md", "## Walks\n\nThe dog likes the park.\n", true))
	found, err := mem.Search("canine", 3)
	require.NoError(t, err)
	assert.Equal(t, []string{"knowledge/pets.md: Pets", "knowledge/pets.md: Walks"}, sections(found), found)
	assert.Equal(t, []string{"## Walks\n\nThe dog likes the park.", "canine"}, c.embedded()[4:], "the new section and the query")
}

// An embedder that fails leaves the search to BM25, and the result says so.
func TestEmbedderFailureFallsBackToFullText(t *testing.T) {
	c := concepts{fail: &providers.Error{Provider: "test", Model: "concepts", Status: 500, Kind: providers.ErrServer, Message: "boom"}}
	mem, _, _ := setup(t, meaningFiles, index.WithEmbedder(c.embedder()))
	found, err := mem.Search("brakes", 3)
	require.NoError(t, err)
	assert.Contains(t, found, "by full-text ranking (BM25): 1 section, best first.")
	assert.Contains(t, found, "Ranked by full text only, since the embedder failed: test/concepts: server error (HTTP 500): boom.")
	assert.Equal(t, []string{"knowledge/garage.md: Garage"}, sections(found))

	c.mu.Lock()
	c.fail = nil
	c.mu.Unlock()
	found, err = mem.Search("automobile", 3)
	require.NoError(t, err)
	assert.Equal(t, []string{"knowledge/garage.md: Garage"}, sections(found), "the sections are embedded once the embedder answers")
}

// A write reindexes its file at once, without waiting for a search.
func TestWriteReindexes(t *testing.T) {
	mem, ix, _ := setup(t, deployFiles)
	ctx := context.Background()
	search := func(q string) []string {
		r, err := ix.Search(ctx, memory.Query{Text: q, Keywords: strings.Fields(q)}, 5)
		require.NoError(t, err)
		var out []string
		for _, h := range r.Hits {
			out = append(out, h.Path+": "+h.Header)
		}
		return out
	}
	assert.Equal(t, []string{"knowledge/coffee.md: Coffee"}, search("espresso"))

	require.NoError(t, mem.Write("tester", "knowledge/coffee.md", "## Tea\n\nGreen tea is in the top drawer.\n", false))
	assert.Empty(t, search("espresso"), "the replaced section")
	assert.Equal(t, []string{"knowledge/coffee.md: Tea"}, search("tea"))

	require.NoError(t, mem.Write("tester", "knowledge/coffee.md", "## Cups\n\nCups are by the tea.\n", true))
	assert.Equal(t, []string{"knowledge/coffee.md: Cups", "knowledge/coffee.md: Tea"}, search("cups tea"))
	require.NoError(t, mem.Log("tester", "bought oolong"))
	assert.Len(t, search("oolong"), 1, "the daily log")
}

// An index lost or damaged, while closed or while open, is rebuilt from the memory files, and a
// search finds what it found before.
func TestRebuiltWhenLostOrDamaged(t *testing.T) {
	var c concepts
	files := map[string]string{}
	for _, m := range []map[string]string{deployFiles, meaningFiles} {
		for p, content := range m {
			files[p] = content
		}
	}
	mem, ix, home := setup(t, files, index.WithEmbedder(c.embedder()))
	file := filepath.Join(home.MemoryDir(), index.FileName)
	const query = "deploying the car"
	want, err := mem.Search(query, 5)
	require.NoError(t, err)
	require.Len(t, sections(want), 2, want)

	reopen := func() {
		require.NoError(t, ix.Close())
		ix, err = index.Open(home, index.WithEmbedder(c.embedder()))
		require.NoError(t, err)
		t.Cleanup(func() { _ = ix.Close() })
		mem, err = memory.Open(home, memory.WithBudget(budget), memory.WithIndex(ix))
		require.NoError(t, err)
	}
	for _, tc := range []struct {
		name   string
		damage func()
		reopen bool
	}{
		{"removed while closed", func() { require.NoError(t, os.Remove(file)) }, true},
		{"garbage while closed", func() { require.NoError(t, os.WriteFile(file, []byte(strings.Repeat("not a database ", 500)), 0o644)) }, true},
		{"removed while open", func() { require.NoError(t, os.Remove(file)) }, false},
		{"replaced while open", func() {
			require.NoError(t, os.WriteFile(file+".new", []byte("garbage"), 0o644))
			require.NoError(t, os.Rename(file+".new", file))
		}, false},
		{"overwritten while open", func() { require.NoError(t, os.WriteFile(file, make([]byte, 8192), 0o644)) }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.reopen {
				require.NoError(t, ix.Close())
				tc.damage()
				reopen()
			} else {
				tc.damage()
			}
			got, err := mem.Search(query, 5)
			require.NoError(t, err)
			assert.Equal(t, want, got)
			_, err = os.Stat(file)
			assert.NoError(t, err, "the index is back")
		})
	}
}

// A search whose index fails is answered by keyword matching, and says so.
func TestIndexFailureFallsBackToKeywords(t *testing.T) {
	mem, ix, _ := setup(t, deployFiles)
	require.NoError(t, ix.Close())
	found, err := mem.Search("espresso", 3)
	require.NoError(t, err)
	assert.Contains(t, found, "(keywords: espresso)")
	assert.Contains(t, found, "(The search index failed, so sections were matched by keyword: memory index: update")
	assert.Equal(t, []string{"knowledge/coffee.md: Coffee"}, sections(found))
}

// Writes and searches at the same time: each search answers, and once they are done a search
// finds every note written.
func TestConcurrentWritesAndSearches(t *testing.T) {
	var c concepts
	mem, _, _ := setup(t, meaningFiles, index.WithEmbedder(c.embedder()))
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			note := fmt.Sprintf("## Trip %d\n\nDrove the car to town number%d.\n", i, i)
			assert.NoError(t, mem.Write("tester", fmt.Sprintf("experiences/trip%d.md", i), note, false))
		})
		wg.Go(func() {
			_, err := mem.Search("automobile", 3)
			assert.NoError(t, err)
		})
	}
	wg.Wait()
	for i := range 4 {
		found, err := mem.Search(fmt.Sprintf("number%d", i), 1)
		require.NoError(t, err)
		assert.Contains(t, found, fmt.Sprintf("## Trip %d", i))
	}
}

// A home whose path holds what a SQLite URI reserves keeps its index in its own memory folder.
func TestHomeWithURICharacters(t *testing.T) {
	home := workspace.Home(filepath.Join(t.TempDir(), "run#2", "what?", "100%"))
	ix, err := index.Open(home)
	require.NoError(t, err)
	require.NoError(t, ix.Close())
	assert.FileExists(t, filepath.Join(home.MemoryDir(), index.FileName))
}

// An index a killed process left half made is made anew.
func TestHalfMadeIndexIsRebuilt(t *testing.T) {
	home := workspace.Home(filepath.Join(t.TempDir(), "agent"))
	require.NoError(t, os.MkdirAll(home.MemoryDir(), 0o755))
	db, err := sql.Open("sqlite", filepath.Join(home.MemoryDir(), index.FileName))
	require.NoError(t, err)
	_, err = db.Exec("CREATE TABLE files (path TEXT PRIMARY KEY, hash TEXT NOT NULL)")
	require.NoError(t, err)
	require.NoError(t, db.Close())

	ix, err := index.Open(home)
	require.NoError(t, err)
	require.NoError(t, ix.Close())
}
