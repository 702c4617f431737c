package nodes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/agiraph/agiraph/nodes/bus"
	"github.com/agiraph/agiraph/nodes/eventlog"
	"github.com/agiraph/agiraph/nodes/memory"
	"github.com/agiraph/agiraph/nodes/workspace"
	"github.com/agiraph/agiraph/runtime"
	"github.com/agiraph/agiraph/runtime/adapter"
	"github.com/agiraph/agiraph/runtime/harnessed"
	"github.com/agiraph/agiraph/tools"
	"github.com/agiraph/agiraph/tools/mcp"
)

// coordinate gives the coordinator a turn: the first one with the goal, later ones woken by its
// mail (or by the human's answer to its question), all in one conversation. Without wake, a
// turn that ended returns how it ended and takes no mail; a turn a crash cut short goes on
// either way. Mail the coordinator took in a turn a crash cut short before the turn's first
// step was saved is given back by its mailbox, under the turn's key, when it is woken next.
func (r *run) coordinate(ctx context.Context, wake bool) (runtime.Outcome, error) {
	st := r.board.runState()
	name := r.cfg.coordModel
	if st.CoordModel != "" {
		name = st.CoordModel
	}
	model, err := r.cfg.resolve(name)
	if err != nil {
		return runtime.Outcome{}, fmt.Errorf("nodes: coordinator: %w", err)
	}
	opts := []harnessed.Option{harnessed.WithSaver(r.s.saver), harnessed.WithTextEndsTurn(), harnessed.WithoutWorkTools(),
		harnessed.WithMaxIterations(1000), harnessed.WithConversationCache(r.coordConv), harnessed.WithHooks(r.cfg.hooks...)}
	rt := harnessed.New(model, opts...)
	a := runtime.Assignment{
		ID: r.id + ".coordinator", Run: r.id, Worker: bus.Coordinator,
		Task: "GOAL: " + st.Goal, System: r.coordinatorSystem(), Dir: runtime.NodeDir(r.dir.Coordinator()),
		Mailbox: r.bus.Mailbox(bus.Coordinator), Answer: st.Answer, Wake: wake,
	}
	a.Tools = r.coordinatorTools(a)
	if len(r.cfg.coordMCP) > 0 {
		if r.coordMCP == nil {
			set, err := mcp.Connect(ctx, r.cfg.coordMCP...)
			if err != nil {
				return runtime.Outcome{}, fmt.Errorf("nodes: coordinator: %w", err)
			}
			r.coordMCP = set
		}
		a.Tools = append(a.Tools, r.coordMCP.Tools()...)
	}
	if st.Answer != "" {
		if err := r.heard(ctx, st.Asked, bus.Coordinator, st.Answer); err != nil {
			return runtime.Outcome{}, err
		}
	}
	sink, done := r.sink(filepath.Join(r.dir.Coordinator(), "conversation.jsonl"), "", bus.Coordinator)
	defer done()
	o, err := r.cfg.recorded(Harnessed, rt).Run(ctx, a, sink)
	if err != nil {
		return o, fmt.Errorf("nodes: coordinator: %w", err)
	}
	if st.Answer != "" { // the coordinator has it now
		_, err = r.updateRun(ctx, func(s *runState) {
			if s.Answer == st.Answer {
				s.Answer = ""
			}
		})
	}
	return o, err
}

// coordinatorSystem assembles the coordinator's system prompt from the agent's home: identity,
// goal, date, memory, and the operating rules.
func (r *run) coordinatorSystem() string {
	home := r.s.home
	var sections []string
	soul := readText(home.Soul())
	if soul == "" {
		soul = "You are the coordinator of a team of AI workers: you plan the work, hand it out, follow it, and answer for the result."
	}
	sections = append(sections, soul)
	if g := readText(home.Goal()); g != "" {
		sections = append(sections, "YOUR STANDING GOAL:\n"+g)
	}
	sections = append(sections, "Today is "+r.cfg.now().Format("Monday, 2 January 2006")+".")
	if m := r.s.mem.Prompt(); m != "" {
		sections = append(sections, "YOUR MEMORY\n"+m)
	}
	sections = append(sections, fmt.Sprintf(operatingRules, r.dir))
	if len(r.cfg.mcp) > 0 {
		sections = append(sections, "MCP SERVERS\nHarnessed workers can be given the tools of these MCP servers (spawn_worker's mcp_servers): "+r.mcpNames()+".")
	}
	if r.cfg.mode == Infinite {
		sections = append(sections, infiniteRules)
	}
	return strings.Join(sections, "\n\n---\n\n")
}

const operatingRules = `OPERATING RULES
- You run a team. Break the goal into work nodes with create_work_node; nodes without dependencies run in parallel. A node can depend on others and read their published outputs through refs (paths "nodes/<id>/published/<file>").
- Workers are spawned for nodes that have none. Use spawn_worker to choose a name, a role, a model, or a CLI agent (kind claude-code or autonomous), and the node's worker parameter (or assign_worker) to hand it a node.
- After handing out work, call wait. You are woken when something happens: a node completes or fails, a worker messages you, the human writes. wait with until "stage" wakes you only when the stage is complete, a node fails, or someone writes: use it when you need the stage's results only together.
- When a stage's nodes are done, read their outputs (read_file), then reconvene to start the next stage, or finish.
- Write the plan in _plan.md. File paths are relative to the run folder, %s.
- A reply without tool calls goes to the human and ends your turn; keep it short.
- finish ends the run with the final answer, written to _output.md.`

const infiniteRules = `YOU WORK IN CYCLES
This goal has no end: each time you are woken — by a trigger you scheduled, or by the human — do one cycle of work, then call finish with the cycle's report. You then sleep until the next wake-up; your conversation and memory carry over. Keep track of what you already reported so a cycle reports only what is new.`

// The coordinator's tool arguments.
type (
	createArgs struct {
		Task         string            `json:"task" jsonschema_description:"What to do and what to produce; the worker sees only this and the inputs"`
		Deps         []string          `json:"deps,omitempty" jsonschema_description:"Ids of nodes that must be done first"`
		Refs         map[string]string `json:"refs,omitempty" jsonschema_description:"Inputs: a name for each and the path of another node's published output (nodes/<id>/published/<file>)"`
		Worker       string            `json:"worker,omitempty" jsonschema_description:"The worker to give it to (name); by default any free worker"`
		OutputSchema json.RawMessage   `json:"output_schema,omitempty" jsonschema_description:"A JSON Schema (root type object) of the node's result: its worker then publishes a result object valid against it, saved with the node and published as result.json"`
		Budget       Budget            `json:"budget,omitzero" jsonschema_description:"What the node's work may spend: past it the node stops until set_budget raises it"`
	}
	setBudgetArgs struct {
		Node   string `json:"node,omitempty" jsonschema_description:"The node whose budget to set"`
		Worker string `json:"worker,omitempty" jsonschema_description:"Or the worker whose budget to set (name)"`
		Budget Budget `json:"budget"`
	}
	spawnArgs struct {
		Name     string   `json:"name" jsonschema_description:"A first name, unique in the team"`
		Role     string   `json:"role,omitempty" jsonschema_description:"A role others can address messages to (researcher, coder...)"`
		Kind     string   `json:"kind,omitempty" jsonschema:"enum=harnessed,enum=claude-code,enum=autonomous" jsonschema_description:"How it runs (default harnessed: a model with tools)"`
		Model    string   `json:"model,omitempty" jsonschema_description:"For harnessed workers a provider/model name; for claude-code a Claude model"`
		Command  []string `json:"command,omitempty" jsonschema_description:"For autonomous workers: the command template"`
		Single   bool     `json:"single,omitempty" jsonschema_description:"Answer in one model call without tools (cheap, for small well-defined tasks)"`
		Memory   bool     `json:"agent_memory,omitempty" jsonschema_description:"Let the worker write to your long-term memory (it can always search and read it)"`
		Identity string   `json:"identity,omitempty" jsonschema_description:"Who the worker is and what it is good at"`
		MCP      []string `json:"mcp_servers,omitempty" jsonschema_description:"MCP servers whose tools a harnessed worker gets, by name, among those the run offers"`
		Budget   Budget   `json:"budget,omitzero" jsonschema_description:"What the worker may spend across its nodes: past it the worker gets no work until set_budget raises it"`
		Tools    []string `json:"tools,omitempty" jsonschema_description:"The built-in tools the worker may use, by name, among the team's (default all of them); the work tools are always its"`
	}
	assignArgs struct {
		Node   string `json:"node"`
		Worker string `json:"worker"`
	}
	retireArgs struct {
		Worker string `json:"worker"`
	}
	reconveneArgs struct {
		Assessment    string `json:"assessment" jsonschema_description:"What the stage achieved and what comes next"`
		Policy        string `json:"policy,omitempty" jsonschema:"enum=all,enum=majority,enum=any" jsonschema_description:"When the next stage counts as complete (default all)"`
		MaxIterations int    `json:"max_iterations,omitempty" jsonschema_description:"Model turns each node may take in the next stage"`
		TimeoutSec    int    `json:"timeout_seconds,omitempty" jsonschema_description:"Time each node may take in the next stage"`
	}
	finishArgs struct {
		Output string `json:"output" jsonschema_description:"The final answer: the complete deliverable for the human"`
	}
	// finishResultArgs are finish's arguments when the squad has an output schema.
	finishResultArgs struct {
		Output string          `json:"output" jsonschema_description:"The final answer: the complete deliverable for the human"`
		Result json.RawMessage `json:"result" jsonschema_description:"The run's result: a JSON object of the run's output schema"`
	}
	waitArgs struct {
		Reason string `json:"reason,omitempty"`
		Until  string `json:"until,omitempty" jsonschema:"enum=any,enum=stage" jsonschema_description:"What wakes you: any (default) a node ending, a message, the human; stage only the stage complete, a node failing, a message or the human (you are not told of each node that completes)"`
	}
)

// coordinatorTools are the coordinator's tools: the board, the team, messages, the run's files,
// stages, and the end of its turn or of the run.
func (r *run) coordinatorTools(a runtime.Assignment) []tools.Tool {
	ts := []tools.Tool{
		tools.Func("create_work_node", "Put a piece of work on the board.", r.toolCreate, tools.Idempotent(),
			tools.WithGuidance("Give each node a self-contained task: the worker knows nothing else. Say what file to produce. Use deps and refs for work that builds on other nodes' outputs.")),
		tools.Func("spawn_worker", "Add a worker to the team.", r.toolSpawn,
			tools.WithGuidance("Workers are spawned for you when a node has none; spawn one yourself to pick its name, role and model, to use a CLI agent (claude-code for coding work, autonomous for another agent's command), or a single-inference worker for small well-defined tasks. A worker keeps its memory from node to node.")),
		tools.Func("assign_worker", "Give a pending node to a worker.", r.toolAssign,
			tools.WithGuidance("assign_worker hands a pending node to a particular worker, for example one who already knows the subject; create_work_node's worker parameter does the same when you create it.")),
		tools.Func("retire_worker", "Take an idle worker off the team.", r.toolRetire),
		tools.Func("set_budget", "Set a work node's or a worker's budget in dollars and tokens.", r.toolSetBudget,
			tools.WithGuidance("A node or a worker past its budget gets no more work: raise its budget with set_budget when the work is worth it, or plan without it.")),
		tools.Func("check_board", "See every node and worker and their status.", r.toolBoard, tools.Safe(),
			tools.WithGuidance("check_board shows every node (status, worker, summary, published files) and every worker; look at it before planning a stage.")),
		tools.Func("reconvene", "End the current stage and start the next.", r.toolReconvene,
			tools.WithGuidance("Reconvene when a stage is complete: assess what it produced, then create the next stage's nodes. You may set the next stage's contract: when it counts as complete (all, majority or any node done), and the turns and time each node may take.")),
		tools.Func("wait", "End your turn until something happens.", r.toolWait,
			tools.WithGuidance("Call wait after handing out work; do not poll the board. You are woken by results, messages and the human. With until \"stage\" you are woken only when the stage is complete (the note lists every node), a node fails, or someone writes to you: each model turn costs, so use it when the nodes' results matter only together.")),
		r.finishTool(),
	}
	ts = append(ts, adapter.MessageTools(a, adapter.NewEmitter(a, nil))...)
	ts = append(ts, r.s.mem.Tools(memory.ToolOptions{By: bus.Coordinator, CanWrite: true})...)
	ts = append(ts, r.sched.ToolsFor(bus.Coordinator, a.ID)...)
	ts = append(ts, r.cfg.coordTools...)
	return append(ts, workspace.CoordinatorScope().Tools(r.dir, r.s.fileOptions()...)...)
}

func endTurn(ctx context.Context, summary string) error {
	rep, ok := adapter.ReportFrom(ctx)
	if !ok {
		return errors.New("no assignment to end")
	}
	return rep.End(runtime.Checkpointed, summary)
}

// callKey returns a key for the effects of the coordinator's tool call in ctx, so that a call
// run again after a crash has them once; "" when the call has no id.
func (r *run) callKey(ctx context.Context) string {
	if c, ok := tools.CallFrom(ctx); ok && c.ID != "" {
		return r.id + ".coordinator." + c.ID
	}
	return ""
}

func (r *run) toolCreate(ctx context.Context, args createArgs) (string, error) {
	n, _, err := r.board.create(ctx, nodeSpec{Task: args.Task, Deps: args.Deps, Refs: args.Refs, Worker: args.Worker,
		Stage: r.board.runState().Stage, By: bus.Coordinator, Key: r.callKey(ctx), OutputSchema: args.OutputSchema, Budget: args.Budget})
	if err != nil {
		return "", err
	}
	r.emit(ctx, eventlog.Event{Type: eventlog.NodeCreated, Node: n.ID, Text: firstLine(n.Task), Key: "node/" + n.ID + "/created"})
	return fmt.Sprintf("Created node %s (stage %d).", n.ID, n.Stage), nil
}

func (r *run) toolSpawn(ctx context.Context, args spawnArgs) (string, error) {
	for _, name := range args.MCP {
		if _, ok := r.cfg.mcp[name]; !ok {
			return "", fmt.Errorf("no MCP server %q: the run offers %s", name, r.mcpNames())
		}
	}
	if len(args.MCP) > 0 && args.Kind != "" && args.Kind != string(Harnessed) {
		return "", fmt.Errorf("MCP servers are for harnessed workers; a %s worker has the team's tools over MCP already", args.Kind)
	}
	if err := checkTools(args.Tools, r.teamToolNames()); err != nil {
		return "", err
	}
	w, created, err := r.spawn(ctx, workerSpec(args))
	if err != nil {
		return "", err
	}
	if !created {
		return fmt.Sprintf("%s is already on the team (%s, %s).", w.Name, w.Kind, w.Status), nil
	}
	return fmt.Sprintf("Spawned %s (%s).", w.Name, w.Kind), nil
}

func (r *run) toolAssign(ctx context.Context, args assignArgs) (string, error) {
	w, ok := r.board.worker(args.Worker)
	if !ok {
		return "", fmt.Errorf("worker %q does not exist", args.Worker)
	}
	_, err := r.board.update(ctx, args.Node, func(n *Node) error {
		if n.Status != NodePending {
			return fmt.Errorf("node %s is %s; only pending nodes can be assigned", n.ID, n.Status)
		}
		n.Worker = w.ID
		return nil
	})
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%s goes to %s.", args.Node, w.Name), nil
}

func (r *run) toolRetire(ctx context.Context, args retireArgs) (string, error) {
	w, err := r.board.updateWorker(ctx, args.Worker, func(w *Worker) {
		if w.Status == WorkerIdle {
			w.Status = WorkerStopped
		}
	})
	if err != nil {
		return "", err
	}
	if w.Status != WorkerStopped {
		return "", fmt.Errorf("%s is %s; only idle workers can be retired", w.Name, w.Status)
	}
	r.emit(ctx, eventlog.Event{Type: eventlog.WorkerStopped, Worker: w.ID, Text: "retired"})
	return w.Name + " is retired.", nil
}

func (r *run) toolBoard(ctx context.Context, _ struct{}) (string, error) {
	snap := r.board.Snapshot()
	var b strings.Builder
	st := r.board.runState()
	fmt.Fprintf(&b, "Stage %d (policy %s).\n\nNODES\n", st.Stage, policyName(st.Contract.Policy))
	if len(snap.Nodes) == 0 {
		b.WriteString("(none)\n")
	}
	for _, n := range snap.Nodes {
		fmt.Fprintf(&b, "- %s [%s] stage %d", n.ID, n.Status, n.Stage)
		if n.Worker != "" {
			fmt.Fprintf(&b, ", worker %s", n.Worker)
		}
		if len(n.Deps) > 0 {
			fmt.Fprintf(&b, ", after %s", strings.Join(n.Deps, ","))
		}
		if n.Parent != "" {
			fmt.Fprintf(&b, ", part of %s", n.Parent)
		}
		fmt.Fprintf(&b, ": %s\n", firstLine(n.Task))
		if n.Summary != "" {
			fmt.Fprintf(&b, "  summary: %s\n", firstLine(n.Summary))
		}
		for _, f := range n.Published {
			fmt.Fprintf(&b, "  published: nodes/%s/published/%s\n", n.ID, f)
		}
		if n.Result != nil {
			fmt.Fprintf(&b, "  result: %s\n", firstLine(string(n.Result)))
		}
		if n.Question != "" {
			fmt.Fprintf(&b, "  asked the human: %s\n", n.Question)
		}
	}
	b.WriteString("\nWORKERS\n")
	if len(snap.Workers) == 0 {
		b.WriteString("(none)\n")
	}
	for _, w := range snap.Workers {
		fmt.Fprintf(&b, "- %s (%s", w.Name, w.Kind)
		if w.Model != "" {
			fmt.Fprintf(&b, " %s", w.Model)
		}
		if w.Role != "" {
			fmt.Fprintf(&b, ", %s", w.Role)
		}
		fmt.Fprintf(&b, ") %s", w.Status)
		if w.Node != "" {
			fmt.Fprintf(&b, " on %s", w.Node)
		}
		b.WriteString("\n")
	}
	return b.String(), nil
}

func (r *run) toolReconvene(ctx context.Context, args reconveneArgs) (string, error) {
	switch args.Policy {
	case "", "all", "majority", "any":
	default:
		return "", fmt.Errorf("unknown policy %q: use all, majority or any", args.Policy)
	}
	st, err := r.updateRun(ctx, func(s *runState) {
		s.Stage++
		if args.Policy != "" {
			s.Contract.Policy = args.Policy
		}
		if args.MaxIterations > 0 {
			s.Contract.MaxIterations = args.MaxIterations
		}
		if args.TimeoutSec > 0 {
			s.Contract.Timeout = time.Duration(args.TimeoutSec) * time.Second
		}
	})
	if err != nil {
		return "", err
	}
	stage, old := st.Stage, st.Stage-1
	r.emit(ctx, eventlog.Event{Type: eventlog.StageReconvened, Text: args.Assessment, Key: fmt.Sprintf("stage%d/reconvened", old)})
	if err := r.s.mem.LogOnce(bus.Coordinator, fmt.Sprintf("run %s: stage %d done: %s", r.id, old, firstLine(args.Assessment))); err != nil {
		return "", err
	}
	r.emit(ctx, eventlog.Event{Type: eventlog.StageCompleted, Text: fmt.Sprintf("stage %d", old), Key: fmt.Sprintf("stage%d/completed", old)})
	r.emit(ctx, eventlog.Event{Type: eventlog.StageStarted, Text: fmt.Sprintf("stage %d", stage), Key: fmt.Sprintf("stage%d/started", stage)})
	return fmt.Sprintf("Stage %d started; nodes you create now belong to it. Before you plan it, store what this stage taught you with memory_write.", stage), nil
}

// The values of wait's until: what wakes the coordinator.
const (
	untilAny   = "any"   // a node ending, besides what untilStage names (the default)
	untilStage = "stage" // the stage complete, a node failing, a message, the human
)

func (r *run) toolWait(ctx context.Context, args waitArgs) (string, error) {
	until := args.Until // any or stage: the tool's schema refuses others
	if until == untilAny {
		until = ""
	}
	if r.board.runState().Until != until {
		if _, err := r.updateRun(ctx, func(s *runState) { s.Until = until }); err != nil {
			return "", err
		}
	}
	return "Waiting.", endTurn(ctx, "")
}

// finishTool is the coordinator's finish. With an output schema it takes a result as well,
// required and shown with the schema, and refuses one that does not match it.
func (r *run) finishTool() tools.Tool {
	const guidance = "finish only when the goal is met: the output is the complete deliverable (usually the final report's content), not a pointer to it."
	schema := r.cfg.outputSchema
	if schema == nil {
		return tools.Func("finish", "End the run with the final answer.", func(ctx context.Context, args finishArgs) (string, error) {
			return r.finish(ctx, args.Output, nil)
		}, tools.WithGuidance(guidance))
	}
	t := tools.Func("finish", "End the run with the final answer and its result.", func(ctx context.Context, args finishResultArgs) (string, error) {
		return r.finish(ctx, args.Output, args.Result)
	}, tools.WithGuidance(guidance+" This run has an output schema: give finish the result as a JSON object of it (see finish's result parameter)."))
	t.Schema = adapter.ResultSchema(t.Schema, schema)
	return t
}

// finish ends the run with output and, when the squad has an output schema, its result.
func (r *run) finish(ctx context.Context, output string, result json.RawMessage) (string, error) {
	if strings.TrimSpace(output) == "" {
		return "", errors.New("the output is empty")
	}
	if schema := r.cfg.outputSchema; schema != nil {
		if err := adapter.CheckResult(schema, result, "finish"); err != nil {
			return "", err
		}
	}
	if r.board.runState().Finished {
		return "The run is already finished.", endTurn(ctx, "")
	}
	if err := workspace.WriteFile(filepath.Join(string(r.dir), outputFile), []byte(output+"\n")); err != nil {
		return "", err
	}
	if _, err := r.updateRun(ctx, func(s *runState) { s.Finished, s.Output, s.Result = true, output, result }); err != nil {
		return "", err
	}
	return "The run is finished; the output is in " + outputFile + ".", endTurn(ctx, "")
}

// mcpNames lists the MCP servers the run offers, by name.
func (r *run) mcpNames() string {
	if len(r.cfg.mcp) == 0 {
		return "none"
	}
	return strings.Join(slices.Sorted(maps.Keys(r.cfg.mcp)), ", ")
}
