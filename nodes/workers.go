package nodes

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/agiraph/agiraph/internal/osfile"
	"github.com/agiraph/agiraph/nodes/memory"
	"github.com/agiraph/agiraph/nodes/workspace"
	"github.com/agiraph/agiraph/runtime"
	"github.com/agiraph/agiraph/runtime/autonomous"
	"github.com/agiraph/agiraph/runtime/claudecode"
	"github.com/agiraph/agiraph/runtime/harnessed"
	"github.com/agiraph/agiraph/sandbox"
	"github.com/agiraph/agiraph/tools"
	"github.com/agiraph/agiraph/tools/shell"
	"github.com/agiraph/agiraph/tools/web"
)

// assignment builds what worker w needs to work on node n: the task (the spec, the inputs, the
// results of its sub-nodes), its standing instructions (identity, memory, the rules of the
// folders), its tools, its mailbox, the human's answer if it asked, and policy, the sandbox its
// processes run in (see run.sandbox).
func (r *run) assignment(n Node, w Worker, policy sandbox.Policy) (runtime.Assignment, error) {
	dir := r.dir.Node(n.ID)
	spec, err := osfile.ReadFile(workspace.Spec(dir))
	if err != nil {
		return runtime.Assignment{}, fmt.Errorf("nodes: node %s: %w", n.ID, err)
	}
	var task strings.Builder
	task.WriteString(strings.TrimSpace(string(spec)))
	if len(n.Refs) > 0 {
		fmt.Fprintf(&task, "\n\nInputs (paths relative to the run folder, %s):\n%s", r.dir, refsText(n.Refs))
	}
	task.WriteString(r.skippedDeps(n))
	if len(n.Children) > 0 {
		task.WriteString("\n\nYour sub-tasks have ended:")
		for _, c := range n.Children {
			cn, _ := r.board.node(c)
			fmt.Fprintf(&task, "\n- %s (%s): %s", c, cn.Status, firstLine(cn.Summary))
			for _, f := range cn.Published {
				fmt.Fprintf(&task, "\n  nodes/%s/published/%s", c, f)
			}
		}
		task.WriteString("\nIntegrate their results, then publish.")
	}
	a := runtime.Assignment{
		Run: r.id, Node: n.ID, Worker: w.ID, Task: task.String(), System: r.workerSystem(n, w), Dir: dir,
		Mailbox: r.bus.Mailbox(w.Name), Answer: n.Answer, Sandbox: policy, OutputSchema: n.OutputSchema,
	}
	if w.Kind == Harnessed || r.cfg.runtimes[w.Kind] != nil {
		a.Tools = r.workerTools(n, w, a.Sandbox)
	} else { // a CLI agent, which brings its own file, shell and web tools
		a.Tools = r.teamTools(n, w, workspace.WorkerScope(n.ID, w.ID).Tools(r.dir, r.s.fileOptions()...)[0])
	}
	a.Tools = r.chosenTools(w, a.Tools)
	return a, nil
}

// workerSystem is a worker's standing instructions for a node.
func (r *run) workerSystem(n Node, w Worker) string {
	wd := r.dir.Worker(w.ID)
	identity := readText(wd.Identity())
	memory := readText(wd.Memory())
	var b strings.Builder
	b.Grow(len(w.Name) + len(identity) + len(memory) + 1024 + 3*len(r.dir)) // the text below, in one allocation
	fmt.Fprintf(&b, "You are %s. %s\n", w.Name, identity)
	if memory != "" {
		fmt.Fprintf(&b, "\nYOUR MEMORY (from past work):\n%s\n", memory)
	}
	fmt.Fprintf(&b, `
---
You are a worker in a team run by a coordinator. You are on work node %[1]s.
The run folder is %[2]s; file paths are relative to it.
- Your task is in nodes/%[1]s/_spec.md; the outputs of other nodes are in nodes/<id>/published/.
- Write your work in progress and your outputs in nodes/%[1]s/scratch/ (your working directory for commands).
- Your own files: workers/%[3]s/notebook.md (scratchpad) and workers/%[3]s/memory.md (what you learn, kept for your next assignments).
- You cannot read other workers' files or other nodes' scratch folders, and published outputs cannot be changed.
- When you are done, publish: your scratch files become the node's published output.
`, n.ID, r.dir, w.ID)
	return b.String()
}

func readText(path string) string {
	b, err := osfile.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// sandbox is what worker w's processes may reach on node n — its bash commands, or its CLI
// agent and what that starts (see WithSandbox).
func (r *run) sandbox(n Node, w Worker) sandbox.Policy {
	policy := sandbox.Policy{Writable: []string{r.dir.Node(n.ID).Scratch(), string(r.dir.Worker(w.ID))}, Readable: []string{string(r.dir)}}
	if r.cfg.sandbox != nil {
		policy = r.cfg.sandbox(w, n, policy)
	}
	return policy
}

// workerTools are a harnessed worker's tools on a node: the file tools confined to what it may
// touch, the team's tools, bash in its scratch folder within policy, the web tools, and the
// squad's extra tools.
func (r *run) workerTools(n Node, w Worker, policy sandbox.Policy) []tools.Tool {
	ts := workspace.WorkerScope(n.ID, w.ID).Tools(r.dir, r.s.fileOptions()...)
	ts = append(ts, r.teamTools(n, w, ts[0])...)
	ts = append(ts, shell.Bash(shell.Dir(r.dir.Node(n.ID).Scratch()), shell.Sandbox(policy)))
	var extra []tools.Tool
	if r.cfg.tools != nil {
		extra = r.cfg.tools(w, n)
	}
	has := func(name string) bool {
		return slices.ContainsFunc(extra, func(t tools.Tool) bool { return t.Name == name })
	}
	if !has("web_fetch") {
		ts = append(ts, web.Fetch())
	}
	if backend, err := web.BackendFromEnv(os.Getenv); err == nil && !has("web_search") {
		ts = append(ts, web.Search(backend))
	}
	return append(ts, extra...)
}

// teamTools are the tools of the team every worker gets, beside the work tools (a CLI agent
// over MCP with them): read_ref (through readFile, so the worker's scope applies), the memory
// tools (memory_write when the worker may write the agent's memory) and the trigger tools.
func (r *run) teamTools(n Node, w Worker, readFile tools.Tool) []tools.Tool {
	ts := []tools.Tool{readRef(n, readFile)}
	ts = append(ts, r.s.mem.Tools(memory.ToolOptions{By: w.Name, CanWrite: w.Memory})...)
	return append(ts, r.sched.ToolsFor(w.Name, n.Assignment)...)
}

// refArgs are read_ref's arguments.
type refArgs struct {
	Name   string `json:"name" jsonschema_description:"The ref's name, as the task lists it"`
	Offset int    `json:"offset,omitempty" jsonschema_description:"The first line to read (default 1)"`
}

// readRef is read_ref: read_file (readFile, so the worker's scope applies) on a ref by name.
func readRef(n Node, readFile tools.Tool) tools.Tool {
	return tools.Func("read_ref", "Read an input of this node (another node's published output) by its ref name.",
		func(ctx context.Context, a refArgs) (string, error) {
			path, ok := n.Refs[a.Name]
			if !ok {
				names := make([]string, 0, len(n.Refs))
				for k := range n.Refs {
					names = append(names, k)
				}
				slices.Sort(names)
				if len(names) == 0 {
					return "", fmt.Errorf("node %s has no refs", n.ID)
				}
				return "", fmt.Errorf("no ref %q; this node's refs: %s", a.Name, strings.Join(names, ", "))
			}
			args, _ := json.Marshal(map[string]any{"path": path, "offset": a.Offset})
			return readFile.Handler(ctx, args)
		}, tools.Safe(),
		tools.WithGuidance("Your task lists its inputs by name; read_ref reads one (read_file works too, with its path)."))
}

// runtimeFor returns the runtime worker w runs on.
func (r *run) runtimeFor(w Worker) (runtime.Runtime, error) {
	var rt runtime.Runtime
	switch fn := r.cfg.runtimes[w.Kind]; {
	case fn != nil:
		var err error
		if rt, err = fn(w); err != nil {
			return nil, fmt.Errorf("nodes: worker %s: %w", w.Name, err)
		}
	case w.Kind == Harnessed:
		name := w.Model
		if name == "" {
			name = r.cfg.roleModels[w.Role]
		}
		if name == "" {
			name = r.cfg.model
		}
		model, err := r.cfg.resolve(name)
		if err != nil {
			return nil, fmt.Errorf("nodes: worker %s: %w", w.Name, err)
		}
		opts := []harnessed.Option{harnessed.WithSaver(r.s.saver), harnessed.WithMaxIterations(r.board.runState().Contract.MaxIterations),
			harnessed.WithConversationCache(r.workerConvs), harnessed.WithHooks(r.cfg.hooks...)}
		if w.Single {
			opts = append(opts, harnessed.WithSingleInference())
		}
		if r.cfg.contextLimit > 0 {
			opts = append(opts, harnessed.WithContextLimit(r.cfg.contextLimit))
		}
		rt = harnessed.New(model, opts...)
	case w.Kind == ClaudeCode:
		opts := append([]claudecode.Option(nil), r.cfg.claude...)
		if w.Model != "" {
			opts = append(opts, claudecode.WithModel(w.Model))
		}
		rt = claudecode.New(opts...)
	case w.Kind == Autonomous:
		a := autonomous.New(w.Command, r.cfg.auto...)
		if err := a.Err(); err != nil {
			return nil, fmt.Errorf("nodes: worker %s: %w", w.Name, err)
		}
		rt = a
	default:
		return nil, fmt.Errorf("nodes: worker %s: no runtime for kind %q", w.Name, w.Kind)
	}
	return runtime.Watch(r.cfg.recorded(w.Kind, rt), r.cfg.stall), nil
}
