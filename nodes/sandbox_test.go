//go:build linux

package nodes_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/internal/testenv"
	"github.com/agiraph/agiraph/nodes"
	"github.com/agiraph/agiraph/nodes/eventlog"
	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/providers/scripted"
	"github.com/agiraph/agiraph/sandbox"
	"github.com/agiraph/agiraph/tools"
)

// A harnessed worker's bash commands write in its node's scratch folder and its own folder, and
// nowhere else in the run (where bubblewrap runs); nodes.WithSandbox changes that per worker.
func TestWorkerBashIsSandboxed(t *testing.T) {
	skipUnenforced(t)
	worker := scripted.NewFunc("sandbox-worker", func(_ context.Context, req providers.Request) (scripted.Turn, error) {
		switch called := scCalled(req); {
		case called["bash"] == 0:
			return scTurn(req, scripted.Call("bash", map[string]string{"command": script})), nil
		case called["write_file"] == 0:
			out := scResults(req, "bash")[0].Content
			return scTurn(req, scripted.Call("write_file", map[string]string{"path": "nodes/n1/scratch/result.txt", "content": out})), nil
		}
		return scTurn(req, scripted.Call("publish", map[string]string{"summary": "done"})), nil
	})
	plan := func() []tools.Call {
		return []tools.Call{scripted.Call("create_work_node", map[string]any{"task": "Try the sandbox."})}
	}
	// run runs the squad and returns the output and the run's folder.
	run := func(opts ...nodes.Option) (string, string) {
		coord := scCoordinator("sandbox-coord", plan, "nodes/n1/published/result.txt", func(c string) string { return c })
		s := scSquad(t, coord, []providers.Model{worker}, append([]nodes.Option{nodes.WithWorkerNames("Ada")}, opts...)...)
		res := scRun(t, s, "sandbox")
		return res.Output, filepath.Join(string(s.Home()), "runs", res.RunID)
	}
	read := func(path string) string {
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		return string(b)
	}

	// The run folder can be read, and written only in the scope.
	out, dir := run()
	assert.Contains(t, out, "note-ok")
	assert.Contains(t, out, "# Plan")
	assert.Contains(t, out, "_plan.md: Read-only file system")
	assert.Contains(t, out, "_spec.md: Read-only file system")
	assert.Contains(t, read(filepath.Join(dir, "workers", "ada", "notebook.md")), "note\n")
	assert.NotContains(t, read(filepath.Join(dir, "_plan.md")), "ESCAPED")
	assert.NotContains(t, read(filepath.Join(dir, "nodes", "n1", "_spec.md")), "ESCAPED")

	_, dir = run(nodes.WithSandbox(func(w nodes.Worker, n nodes.Node, scope sandbox.Policy) sandbox.Policy {
		require.Equal(t, "n1", n.ID)
		require.Len(t, scope.Writable, 2)
		assert.True(t, strings.HasSuffix(scope.Writable[0], filepath.Join("nodes", "n1", "scratch")))
		return sandbox.Policy{Off: true}
	}))
	assert.Contains(t, read(filepath.Join(dir, "_plan.md")), "ESCAPED", "with the sandbox off the command writes anywhere")
}

// A CLI worker (an autonomous agent, here a shell script) runs under the same policy: it
// writes in its scratch folder and its own folder, and nowhere else in the run.
func TestCLIWorkerIsSandboxed(t *testing.T) {
	skipUnenforced(t)
	plan := func() []tools.Call {
		return []tools.Call{
			scripted.Call("spawn_worker", map[string]any{"name": "Ada", "role": "tester", "kind": "autonomous",
				"command": []string{"sh", "-c", script + "; cat mine.txt > /dev/null && echo tried > _result.md", "agent"}}),
			scripted.Call("create_work_node", map[string]any{"task": "Try the sandbox.", "worker": "Ada"}),
		}
	}
	coord := scCoordinator("cli-sandbox-coord", plan, "nodes/n1/published/mine.txt", func(c string) string { return c })
	idle := scripted.NewFunc("cli-sandbox-unused", func(context.Context, providers.Request) (scripted.Turn, error) {
		return scripted.Turn{Text: "no harnessed worker should run"}, nil
	})
	s := scSquad(t, coord, []providers.Model{idle})
	res := scRun(t, s, "sandbox")
	dir := filepath.Join(string(s.Home()), "runs", res.RunID)
	assert.Equal(t, "mine\n", res.Output)
	notebook, err := os.ReadFile(filepath.Join(dir, "workers", "ada", "notebook.md"))
	require.NoError(t, err)
	assert.Contains(t, string(notebook), "note\n")
	for _, f := range []string{"_plan.md", filepath.Join("nodes", "n1", "_spec.md")} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		require.NoError(t, err)
		assert.NotContains(t, string(b), "ESCAPED", f)
	}
}

// script, run in nodes/n1/scratch (the run folder is ../../..), writes in its scratch folder
// and its worker's notebook, reads the plan, and tries to change the plan and the node's spec.
const script = `echo mine > mine.txt; echo note >> ../../../workers/ada/notebook.md && echo note-ok; head -1 ../../../_plan.md; echo ESCAPED >> ../../../_plan.md; echo ESCAPED > ../../../nodes/n1/_spec.md`

// skipUnenforced skips a test of the sandbox where it is not enforced: with AGIRAPH_CONTAIN=group,
// or without a bwrap that runs (internal/testenv: under CI, which installs it, that fails the
// test), and under -short.
func skipUnenforced(t *testing.T) {
	t.Helper()
	testenv.Need(t, "bubblewrap")
	switch {
	case os.Getenv("AGIRAPH_CONTAIN") == "group":
		t.Skip("the sandbox is not enforced with AGIRAPH_CONTAIN=group")
	case exec.Command("bwrap", "--unshare-pid", "--ro-bind", "/", "/", "true").Run() != nil:
		testenv.Missing(t, "the sandbox is not enforced here: bwrap is missing or cannot run (apt-get install bubblewrap)")
	}
}

// Where the sandbox is not enforced, a node's start event says so.
func TestNodeStartedSaysContainmentIsWeaker(t *testing.T) {
	t.Setenv("AGIRAPH_CONTAIN", "group")
	plan := func() []tools.Call {
		return []tools.Call{
			scripted.Call("spawn_worker", map[string]any{"name": "Ada", "role": "tester", "kind": "autonomous",
				"command": []string{"sh", "-c", "echo done > out.txt; echo done > _result.md"}}),
			scripted.Call("create_work_node", map[string]any{"task": "Do it.", "worker": "Ada"}),
		}
	}
	coord := scCoordinator("weak-coord", plan, "nodes/n1/published/out.txt", func(c string) string { return c })
	idle := scripted.NewFunc("weak-unused", func(context.Context, providers.Request) (scripted.Turn, error) {
		return scripted.Turn{Text: "no harnessed worker should run"}, nil
	})
	s := scSquad(t, coord, []providers.Model{idle})
	scRun(t, s, "weak")
	var started []string
	for _, e := range scEvents(t, s) {
		if e.Type == eventlog.NodeStarted {
			started = append(started, e.Text)
		}
	}
	require.Len(t, started, 1)
	assert.Contains(t, started[0], "Ada (autonomous) on n1; containment is weaker here: no PID namespace")
	assert.Contains(t, started[0], "the sandbox is not enforced either")
}
