package workspace_test

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/nodes/workspace"
	"github.com/agiraph/agiraph/runtime"
)

func TestPaths(t *testing.T) {
	h := workspace.Home(filepath.Join("agents", "a1"))
	r := h.Run("r1")
	n := r.Node("n1")
	w := r.Worker("w1")
	j := filepath.Join
	for _, c := range []struct{ got, want string }{
		{h.Soul(), j("agents", "a1", "SOUL.md")},
		{h.Goal(), j("agents", "a1", "GOAL.md")},
		{h.Memory(), j("agents", "a1", "MEMORY.md")},
		{h.MemoryDir(), j("agents", "a1", "memory")},
		{h.Conversation(), j("agents", "a1", "conversation.jsonl")},
		{h.Events(), j("agents", "a1", "events.jsonl")},
		{h.Triggers(), j("agents", "a1", "triggers.json")},
		{string(r), j("agents", "a1", "runs", "r1")},
		{r.ID(), "r1"},
		{r.Plan(), j("agents", "a1", "runs", "r1", "_plan.md")},
		{r.Messages(), j("agents", "a1", "runs", "r1", "_messages")},
		{r.Coordinator(), j("agents", "a1", "runs", "r1", "coordinator")},
		{string(n), j("agents", "a1", "runs", "r1", "nodes", "n1")},
		{workspace.Spec(n), j(string(n), "_spec.md")},
		{workspace.Refs(n), j(string(n), "_refs.json")},
		{workspace.Status(n), j(string(n), "_status.md")},
		{n.Scratch(), j(string(n), "scratch")},
		{n.Published(), j(string(n), "published")},
		{string(w), j("agents", "a1", "runs", "r1", "workers", "w1")},
		{w.ID(), "w1"},
		{w.Identity(), j(string(w), "identity.md")},
		{w.Memory(), j(string(w), "memory.md")},
		{w.Notebook(), j(string(w), "notebook.md")},
		{w.History(), j(string(w), "history.jsonl")},
		{w.Conversation(), j(string(w), "conversation.jsonl")},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}

func isDir(t *testing.T, p string) {
	t.Helper()
	st, err := os.Stat(p)
	if err != nil {
		t.Fatalf("%s: %v", p, err)
	}
	if !st.IsDir() {
		t.Fatalf("%s is not a directory", p)
	}
}

func notExist(t *testing.T, p string) {
	t.Helper()
	if _, err := os.Lstat(p); !os.IsNotExist(err) {
		t.Errorf("%s: want it not to exist, got err %v", p, err)
	}
}

func TestCreate(t *testing.T) {
	h := workspace.Home(filepath.Join(t.TempDir(), "agents", "a1"))
	if ids, err := h.Runs(); err != nil || ids != nil {
		t.Fatalf("Runs before Create = %v, %v; want none, nil", ids, err)
	}
	if err := h.Create(); err != nil {
		t.Fatal(err)
	}
	isDir(t, h.MemoryDir())
	isDir(t, filepath.Join(string(h), "runs"))
	for _, p := range []string{h.Soul(), h.Goal(), h.Memory(), h.Events()} {
		notExist(t, p)
	}
	if err := h.Create(); err != nil { // idempotent
		t.Fatal(err)
	}

	r := h.Run("r1")
	if ids, err := r.NodeIDs(); err != nil || ids != nil {
		t.Fatalf("NodeIDs before Create = %v, %v; want none, nil", ids, err)
	}
	if err := r.Create(); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{r.Messages(), r.Coordinator(), filepath.Join(string(r), "nodes"), filepath.Join(string(r), "workers")} {
		isDir(t, d)
	}
	notExist(t, r.Plan())

	w := r.Worker("w1")
	if err := w.Create(); err != nil {
		t.Fatal(err)
	}
	isDir(t, string(w))
	notExist(t, w.Notebook())

	if err := r.Node("n1").Create(); err != nil {
		t.Fatal(err)
	}
	isDir(t, r.Node("n1").Scratch())

	// Create fails, naming the folder, where a file is in the way.
	blocked := workspace.Run(filepath.Join(t.TempDir(), "r2"))
	if err := os.WriteFile(string(blocked), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := blocked.Create(); err == nil || !strings.Contains(err.Error(), string(blocked)) {
		t.Errorf("Create over a file: err = %v, want one naming %s", err, blocked)
	}
}

func TestListIDs(t *testing.T) {
	h := workspace.Home(t.TempDir())
	if err := h.Create(); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"r2", "r10", "r1"} {
		if err := h.Run(id).Create(); err != nil {
			t.Fatal(err)
		}
	}
	// Not runs: a file, a hidden folder, a folder whose name is not an id.
	runs := filepath.Join(string(h), "runs")
	must(t, os.WriteFile(filepath.Join(runs, "r3"), nil, 0o644))
	must(t, os.Mkdir(filepath.Join(runs, ".tmp"), 0o755))
	must(t, os.Mkdir(filepath.Join(runs, "has space"), 0o755))
	ids, err := h.Runs()
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"r1", "r10", "r2"}; !slices.Equal(ids, want) {
		t.Errorf("Runs = %q, want %q", ids, want)
	}

	r := h.Run("r1")
	for _, id := range []string{"b", "a", "c"} {
		must(t, r.Node(id).Create())
	}
	for _, id := range []string{"bob", "alice"} {
		must(t, r.Worker(id).Create())
	}
	must(t, os.WriteFile(filepath.Join(string(r), "workers", "notes.md"), nil, 0o644))
	if ids, err := r.NodeIDs(); err != nil || !slices.Equal(ids, []string{"a", "b", "c"}) {
		t.Errorf("NodeIDs = %q, %v", ids, err)
	}
	if ids, err := r.WorkerIDs(); err != nil || !slices.Equal(ids, []string{"alice", "bob"}) {
		t.Errorf("WorkerIDs = %q, %v", ids, err)
	}

	// A run folder that is a file cannot be listed: an error, not an empty list.
	f := workspace.Run(filepath.Join(t.TempDir(), "r"))
	must(t, os.MkdirAll(string(f), 0o755))
	must(t, os.WriteFile(filepath.Join(string(f), "nodes"), nil, 0o644))
	if _, err := f.NodeIDs(); err == nil {
		t.Error("NodeIDs with nodes a file: no error")
	}
}

func TestValidID(t *testing.T) {
	for _, id := range []string{"n1", "node_a", "claude-code-1", "v1.2", "A", strings.Repeat("x", 64), "a..b"} {
		if err := workspace.ValidID(id); err != nil {
			t.Errorf("ValidID(%q) = %v, want nil", id, err)
		}
	}
	for _, id := range []string{"", ".", "..", ".hidden", "a/b", "../x", `a\b`, "a b", strings.Repeat("x", 65), "é", "a\x00", "n1\n"} {
		err := workspace.ValidID(id)
		if err == nil {
			t.Errorf("ValidID(%q) = nil, want an error", id)
			continue
		}
		if !strings.Contains(err.Error(), strconv.Quote(id)) {
			t.Errorf("ValidID(%q) = %q, want it to name the id", id, err)
		}
	}
	long := strings.Repeat("y", 1<<20)
	err := workspace.ValidID(long)
	require.Error(t, err)
	assert.Less(t, len(err.Error()), 1000, "a long id is not echoed whole")
	assert.Contains(t, err.Error(), "1048576 bytes long")
}

func TestNumber(t *testing.T) {
	for id, want := range map[string]int{"n1": 1, "n12": 12, "t3": 3, "m0040": 40} {
		n, ok := workspace.Number(id, id[:1])
		if !ok || n != want {
			t.Errorf("Number(%q, %q) = %d, %v; want %d, true", id, id[:1], n, ok, want)
		}
	}
	for _, id := range []string{"n", "n0", "n-1", "n+1", "nx", "x1", "", "n1.5", "n99999999999999999999"} {
		if n, ok := workspace.Number(id, "n"); ok || n != 0 {
			t.Errorf("Number(%q, \"n\") = %d, %v; want not a numbered id", id, n, ok)
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

var _ runtime.NodeDir = workspace.Run("r").Node("n")
