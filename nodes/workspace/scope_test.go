package workspace_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agiraph/agiraph/nodes/workspace"
	"github.com/agiraph/agiraph/tools"
	"github.com/agiraph/agiraph/tools/files"
)

type op string

const (
	read  op = "read"
	write op = "write"
	list  op = "list"
)

func checkOp(s workspace.Scope, o op, rel string) error {
	switch o {
	case read:
		return s.CanRead(rel)
	case write:
		return s.CanWrite(rel)
	}
	return s.CanList(rel)
}

var (
	_ files.Policy = workspace.Scope{}
	_ files.Lister = workspace.Scope{}
)

func TestScopes(t *testing.T) {
	w := workspace.WorkerScope("n1", "w1")
	c := workspace.CoordinatorScope()
	cases := []struct {
		s       workspace.Scope
		o       op
		rel     string
		allowed bool
	}{
		// Worker reads: the plan, its node's brief and scratch, every published/, its folder.
		{w, read, "_plan.md", true},
		{w, read, "nodes/n1/_spec.md", true},
		{w, read, "nodes/n1/_refs.json", true},
		{w, read, "nodes/n1/_status.md", true},
		{w, read, "nodes/n1/scratch", true},
		{w, read, "nodes/n1/scratch/draft.md", true},
		{w, read, "nodes/n1/scratch/deep/er/x.txt", true},
		{w, read, "./nodes/n1/scratch//x", true},
		{w, read, "nodes/n1/published/out.md", true},
		{w, read, "nodes/n2/published", true},
		{w, read, "nodes/n2/published/findings.md", true},
		{w, read, "nodes/n2/published/sub/dir/x.csv", true},
		{w, read, "workers/w1", true},
		{w, read, "workers/w1/identity.md", true},
		{w, read, "workers/w1/notebook.md", true},
		{w, read, "workers/w1/memory.md", true},
		{w, read, "workers/w1/history.jsonl", true},
		{w, read, "workers/w1/conversation.jsonl", true},
		// Worker read refusals.
		{w, read, ".", false},
		{w, read, "nodes", false},
		{w, read, "workers", false},
		{w, read, "nodes/n1", false},
		{w, read, "nodes/n1/log.jsonl", false},
		{w, read, "nodes/n1/_specs.md", false},
		{w, read, "nodes/n2/_spec.md", false},
		{w, read, "nodes/n2/_status.md", false},
		{w, read, "nodes/n2/scratch/x", false},
		{w, read, "nodes/n10/scratch", false},
		{w, read, "nodes/n10/scratch/x", false},
		{w, read, "nodes/n10/_spec.md", false},
		{w, read, "nodes/n2/published/../scratch/x", false},
		{w, read, "nodes/n1/scratch/../log.jsonl", false},
		{w, read, "nodes/published/x", false},
		{w, read, "workers/w2/notebook.md", false},
		{w, read, "workers/w1x", false},
		{w, read, "workers/w1x/notebook.md", false},
		{w, read, "workers/w1/../w2/memory.md", false},
		{w, read, "_messages", false},
		{w, read, "_messages/0001_a_to_b.md", false},
		{w, read, "coordinator/notes.md", false},
		{w, read, "_plan.md/x", false},
		{w, read, "../r2/_plan.md", false},
		{w, read, "..", false},
		{w, read, "/etc/passwd", false},
		{w, read, "MEMORY.md", false},
		{w, read, "../../MEMORY.md", false},
		// Worker writes: its scratch, its notebook and memory.
		{w, write, "nodes/n1/scratch/draft.md", true},
		{w, write, "nodes/n1/scratch/sub/x.txt", true},
		{w, write, "nodes/n1/scratch", true},
		{w, write, "workers/w1/notebook.md", true},
		{w, write, "workers/w1/memory.md", true},
		// Worker write refusals.
		{w, write, "nodes/n1/published/x", false},
		{w, write, "nodes/n1/published", false},
		{w, write, "nodes/n1/scratch/../published/x", false},
		{w, write, "nodes/n2/published/x", false},
		{w, write, "nodes/n2/scratch/x", false},
		{w, write, "nodes/n10/scratch/x", false},
		{w, write, "nodes/n1/_spec.md", false},
		{w, write, "nodes/n1/_refs.json", false},
		{w, write, "nodes/n1/_status.md", false},
		{w, write, "nodes/n1/log.jsonl", false},
		{w, write, "nodes/n1/x", false},
		{w, write, "workers/w1/identity.md", false},
		{w, write, "workers/w1/history.jsonl", false},
		{w, write, "workers/w1/conversation.jsonl", false},
		{w, write, "workers/w1/other.md", false},
		{w, write, "workers/w1/sub/notebook.md", false},
		{w, write, "workers/w1x/notebook.md", false},
		{w, write, "workers/w2/notebook.md", false},
		{w, write, "_plan.md", false},
		{w, write, "_messages/0002_w1_to_b.md", false},
		{w, write, "coordinator/x", false},
		{w, write, "x.md", false},
		{w, write, "../x.md", false},
		// Worker listing: the way down, and the readable folders.
		{w, list, ".", true},
		{w, list, "", true},
		{w, list, "nodes", true},
		{w, list, "nodes/n1", true},
		{w, list, "nodes/n2", true},
		{w, list, "nodes/n10", true},
		{w, list, "nodes/n1/scratch", true},
		{w, list, "nodes/n1/scratch/sub", true},
		{w, list, "nodes/n2/published", true},
		{w, list, "nodes/n2/published/sub", true},
		{w, list, "workers", true},
		{w, list, "workers/w1", true},
		{w, list, "nodes/n2/scratch", false},
		{w, list, "nodes/n10/scratch", false},
		{w, list, "workers/w2", false},
		{w, list, "workers/w1x", false},
		{w, list, "_messages", false},
		{w, list, "coordinator", false},
		{w, list, "..", false},
		// Coordinator: reads and lists everything in the run.
		{c, read, "_plan.md", true},
		{c, read, "_messages/0001_a_to_b.md", true},
		{c, read, "nodes/n1/scratch/x", true},
		{c, read, "nodes/n1/log.jsonl", true},
		{c, read, "workers/w1/notebook.md", true},
		{c, read, "coordinator/notes.md", true},
		{c, read, "../r2/_plan.md", false},
		{c, read, "/etc/passwd", false},
		{c, list, ".", true},
		{c, list, "_messages", true},
		{c, list, "workers/w2", true},
		{c, list, "..", false},
		// Coordinator writes: the plan, node specs and refs, its own folder.
		{c, write, "_plan.md", true},
		{c, write, "nodes/n1/_spec.md", true},
		{c, write, "nodes/n2/_refs.json", true},
		{c, write, "coordinator", true},
		{c, write, "coordinator/notes.md", true},
		{c, write, "coordinator/a/b.md", true},
		{c, write, "nodes/n1/_status.md", false},
		{c, write, "nodes/n1/scratch/x", false},
		{c, write, "nodes/n1/published/x", false},
		{c, write, "nodes/n1/sub/_spec.md", false},
		{c, write, "nodes/n1", false},
		{c, write, "nodes/_spec.md", false},
		{c, write, "workers/w1/notebook.md", false},
		{c, write, "_messages/0001_a_to_b.md", false},
		{c, write, "coordinatorx/notes.md", false},
		{c, write, "x.md", false},
		{c, write, "../coordinator/x", false},
		// The zero scope allows nothing; a scope with a bad id allows nothing.
		{workspace.Scope{}, read, "_plan.md", false},
		{workspace.Scope{}, list, ".", false},
		{workspace.Scope{}, write, "x", false},
		{workspace.WorkerScope("..", "w1"), read, "_plan.md", false},
		{workspace.WorkerScope("../n1", "w1"), read, "nodes/n1/_spec.md", false},
		{workspace.WorkerScope("n1", ""), read, "nodes/n1/_spec.md", false},
		{workspace.WorkerScope("n1", "a/b"), write, "workers/a/b/notebook.md", false},
	}
	for _, tc := range cases {
		err := checkOp(tc.s, tc.o, tc.rel)
		if tc.allowed {
			if err != nil {
				t.Errorf("%v: %s %q refused (%v), want allowed", tc.s, tc.o, tc.rel, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("%v: %s %q allowed, want refused", tc.s, tc.o, tc.rel)
			continue
		}
		if !errors.Is(err, files.ErrDenied) {
			t.Errorf("%v: %s %q: error %v does not match files.ErrDenied", tc.s, tc.o, tc.rel, err)
		}
	}
}

// TestScopeMessages checks that refusals name the path, say what is allowed, and explain the
// common cases.
func TestScopeMessages(t *testing.T) {
	w := workspace.WorkerScope("n1", "w1")
	c := workspace.CoordinatorScope()
	for _, tc := range []struct {
		err  error
		want []string
	}{
		{w.CanRead("workers/w2/notebook.md"), []string{`"workers/w2/notebook.md"`, "another worker's private folder", "workers/w1/"}},
		{w.CanRead("_messages/0001_a_to_b.md"), []string{`"_messages/0001_a_to_b.md"`, "message bus"}},
		{w.CanRead("nodes/n2/published/../scratch/x"), []string{`"nodes/n2/scratch/x"`, "nodes/n2/published/", "nodes/n1/scratch/"}},
		{w.CanRead("nodes/n2/_spec.md"), []string{`"nodes/n2/_spec.md"`, "only its published outputs"}},
		{w.CanWrite("nodes/n1/published/x"), []string{`"nodes/n1/published/x"`, "immutable", "nodes/n1/scratch/"}},
		{w.CanWrite("workers/w1/identity.md"), []string{`"workers/w1/identity.md"`, "notebook.md and memory.md"}},
		{w.CanWrite("_plan.md"), []string{`"_plan.md"`, "write only in nodes/n1/scratch/", "workers/w1/notebook.md"}},
		{w.CanList("workers/w2"), []string{`listing "workers/w2"`, "another worker"}},
		{w.CanRead("../x"), []string{`"../x"`, "may not leave"}},
		{c.CanWrite("nodes/n1/published/x"), []string{`"nodes/n1/published/x"`, "immutable", "_plan.md", "coordinator/"}},
		{c.CanWrite("workers/w1/notebook.md"), []string{`"workers/w1/notebook.md"`, "nodes/{node}/_spec.md"}},
	} {
		if tc.err == nil {
			t.Fatalf("want a refusal with %q, got nil", tc.want)
		}
		for _, s := range tc.want {
			if !strings.Contains(tc.err.Error(), s) {
				t.Errorf("refusal %q does not contain %q", tc.err, s)
			}
		}
	}
	err := workspace.WorkerScope("n1", "../w").CanRead("_plan.md")
	if err == nil || !strings.Contains(err.Error(), `"../w"`) || !errors.Is(err, files.ErrDenied) {
		t.Errorf("scope with invalid worker id: err = %v, want a refusal naming the id", err)
	}
}

// run builds a run with nodes n1 and n2, workers w1 and w2, and some files.
func setupRun(t *testing.T) workspace.Run {
	t.Helper()
	r := workspace.Home(t.TempDir()).Run("r1")
	must(t, r.Create())
	must(t, os.WriteFile(r.Plan(), []byte("the plan\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(r.Messages(), "0001_w2_to_w1.md"), []byte("psst\n"), 0o644))
	for _, n := range []string{"n1", "n2"} {
		d := r.Node(n)
		must(t, d.Create())
		must(t, os.WriteFile(workspace.Spec(d), []byte("spec of "+n+"\n"), 0o644))
		must(t, os.WriteFile(d.Path("log.jsonl"), []byte("{}\n"), 0o644)) // a node's log, as runs before kept it
		must(t, os.WriteFile(filepath.Join(d.Scratch(), "draft.md"), []byte("draft of "+n+"\n"), 0o644))
		must(t, os.WriteFile(filepath.Join(d.Published(), "findings.md"), []byte("findings of "+n+"\n"), 0o444))
	}
	for _, w := range []string{"w1", "w2"} {
		wk := r.Worker(w)
		must(t, wk.Create())
		must(t, os.WriteFile(wk.Notebook(), []byte("notes of "+w+"\n"), 0o644))
		must(t, os.WriteFile(wk.Identity(), []byte("I am "+w+"\n"), 0o644))
	}
	return r
}

type toolRunner struct {
	t   *testing.T
	reg *tools.Registry
}

func (tr toolRunner) call(name string, args any) tools.Result {
	tr.t.Helper()
	raw, err := json.Marshal(args)
	must(tr.t, err)
	res := tr.reg.Run(context.Background(), []tools.Call{{ID: "c1", Name: name, Args: raw}})
	if len(res) != 1 {
		tr.t.Fatalf("%d results", len(res))
	}
	return res[0]
}

func listed(res tools.Result) []string {
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(res.Content), "\n") {
		if l != "" {
			out = append(out, l)
		}
	}
	return out
}

func TestWorkerScopeThroughFileTools(t *testing.T) {
	r := setupRun(t)
	reg, err := tools.NewRegistry(files.Tools(string(r), workspace.WorkerScope("n1", "w1")))
	must(t, err)
	tr := toolRunner{t, reg}

	// Another worker's notebook: refused, naming the path.
	res := tr.call("read_file", files.ReadArgs{Path: "workers/w2/notebook.md"})
	if !res.IsError || !strings.Contains(res.Content, "workers/w2/notebook.md") {
		t.Errorf("read another worker's notebook: %+v, want an error naming the path", res)
	}
	// Another node's scratch, through published/..: refused.
	res = tr.call("read_file", files.ReadArgs{Path: "nodes/n2/published/../scratch/draft.md"})
	if !res.IsError || !strings.Contains(res.Content, "nodes/n2/scratch/draft.md") {
		t.Errorf("read another node's scratch: %+v, want an error naming the path", res)
	}
	// Messages: refused.
	if res = tr.call("read_file", files.ReadArgs{Path: "_messages/0001_w2_to_w1.md"}); !res.IsError {
		t.Errorf("read a message file: %+v, want an error", res)
	}
	// Another node's published outputs, the plan, its own notebook: readable.
	for path, want := range map[string]string{
		"nodes/n2/published/findings.md": "findings of n2",
		"_plan.md":                       "the plan",
		"workers/w1/notebook.md":         "notes of w1",
		"nodes/n1/_spec.md":              "spec of n1",
	} {
		if res = tr.call("read_file", files.ReadArgs{Path: path}); res.IsError || !strings.Contains(res.Content, want) {
			t.Errorf("read %s: %+v, want its content", path, res)
		}
	}

	// Its own scratch: writable, and the file lands there.
	res = tr.call("write_file", files.WriteArgs{Path: "nodes/n1/scratch/sub/result.md", Content: "result\n"})
	if res.IsError {
		t.Fatalf("write own scratch: %s", res.Content)
	}
	if got, err := os.ReadFile(filepath.Join(r.Node("n1").Scratch(), "sub", "result.md")); err != nil || string(got) != "result\n" {
		t.Errorf("scratch file = %q, %v", got, err)
	}
	// Its notebook: editable (read and write).
	res = tr.call("edit_file", files.EditArgs{Path: "workers/w1/notebook.md", OldString: "notes", NewString: "more notes"})
	if res.IsError {
		t.Errorf("edit own notebook: %s", res.Content)
	}
	// published/, its identity, another node's scratch: not writable, nothing written.
	for _, p := range []string{"nodes/n1/published/x.md", "workers/w1/identity.md", "nodes/n2/scratch/x.md", "nodes/n10/scratch/x.md", "_plan.md"} {
		res = tr.call("write_file", files.WriteArgs{Path: p, Content: "x"})
		if !res.IsError || !strings.Contains(res.Content, p) {
			t.Errorf("write %s: %+v, want an error naming the path", p, res)
		}
	}
	if _, err := os.Stat(filepath.Join(r.Node("n1").Published(), "x.md")); !os.IsNotExist(err) {
		t.Error("a refused write to published/ created the file")
	}
	if got, _ := os.ReadFile(r.Plan()); string(got) != "the plan\n" {
		t.Errorf("plan changed to %q", got)
	}

	// Listing: the root shows the plan, nodes/ and workers/, not _messages/ or coordinator/.
	if got, want := listed(tr.call("list_files", files.ListArgs{})), []string{"_plan.md", "nodes/", "workers/"}; !slices.Equal(got, want) {
		t.Errorf("list . = %q, want %q", got, want)
	}
	// nodes: only published/ for other nodes; its own brief and scratch, not its log.
	res = tr.call("list_files", files.ListArgs{Path: "nodes", Recursive: true})
	want := []string{
		"nodes/n1/", "nodes/n1/_spec.md", "nodes/n1/published/", "nodes/n1/published/findings.md",
		"nodes/n1/scratch/", "nodes/n1/scratch/draft.md", "nodes/n1/scratch/sub/",
		"nodes/n2/", "nodes/n2/published/", "nodes/n2/published/findings.md",
	}
	if got := listed(res); res.IsError || !slices.Equal(got, want) {
		t.Errorf("list nodes (recursive) = %q, want %q", got, want)
	}
	if got, want := listed(tr.call("list_files", files.ListArgs{Path: "nodes/n2"})), []string{"nodes/n2/published/"}; !slices.Equal(got, want) {
		t.Errorf("list nodes/n2 = %q, want %q", got, want)
	}
	// workers: only its own folder.
	if got, want := listed(tr.call("list_files", files.ListArgs{Path: "workers"})), []string{"workers/w1/"}; !slices.Equal(got, want) {
		t.Errorf("list workers = %q, want %q", got, want)
	}
	for _, p := range []string{"workers/w2", "_messages", "nodes/n2/scratch"} {
		if res = tr.call("list_files", files.ListArgs{Path: p}); !res.IsError || !strings.Contains(res.Content, p) {
			t.Errorf("list %s: %+v, want an error naming the path", p, res)
		}
	}
}

func TestCoordinatorScopeThroughFileTools(t *testing.T) {
	r := setupRun(t)
	reg, err := tools.NewRegistry(workspace.CoordinatorScope().Tools(r))
	must(t, err)
	tr := toolRunner{t, reg}
	for _, p := range []string{"workers/w2/notebook.md", "_messages/0001_w2_to_w1.md", "nodes/n2/scratch/draft.md"} {
		if res := tr.call("read_file", files.ReadArgs{Path: p}); res.IsError {
			t.Errorf("coordinator read %s: %s", p, res.Content)
		}
	}
	for _, p := range []string{"_plan.md", "nodes/n2/_refs.json", "coordinator/notes/today.md"} {
		if res := tr.call("write_file", files.WriteArgs{Path: p, Content: "x"}); res.IsError {
			t.Errorf("coordinator write %s: %s", p, res.Content)
		}
	}
	for _, p := range []string{"nodes/n2/published/findings.md", "workers/w1/notebook.md", "nodes/n3/_spec.md"} {
		if res := tr.call("write_file", files.WriteArgs{Path: p, Content: "x"}); !res.IsError || !strings.Contains(res.Content, path.Dir(p)) {
			t.Errorf("coordinator write %s: %+v, want refused", p, res)
		}
	}
	res := tr.call("list_files", files.ListArgs{})
	if got := listed(res); !slices.Contains(got, "_messages/") || !slices.Contains(got, "coordinator/") {
		t.Errorf("coordinator list . = %q, want everything", got)
	}
}

func TestScopeAccessors(t *testing.T) {
	w := workspace.WorkerScope("n1", "w1")
	if w.Node() != "n1" || w.Worker() != "w1" || w.String() != `worker "w1" on node "n1"` {
		t.Errorf("worker scope: Node %q, Worker %q, String %q", w.Node(), w.Worker(), w.String())
	}
	c := workspace.CoordinatorScope()
	if c.Node() != "" || c.Worker() != "" || c.String() != "coordinator" {
		t.Errorf("coordinator scope: Node %q, Worker %q, String %q", c.Node(), c.Worker(), c.String())
	}
	if s := (workspace.Scope{}).String(); s != "no access" {
		t.Errorf("zero scope String = %q", s)
	}
}
