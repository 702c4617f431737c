// Package claudecode runs the Claude Code CLI (claude, the npm package @anthropic-ai/claude-code)
// as a worker: an adapter of the runtime.Runtime port.
//
// [New] makes a [Runtime]; each Run starts one claude -p process in the node's scratch folder,
// contained and sandboxed, maps its stream-json output to runtime events, and serves it the
// squad's work tools over MCP ([WithoutMCP] for a CLI without MCP). A successful result
// publishes the node's files; a checkpoint or a question ends the stage without publishing.
// [WithModel], [WithAllowedTools] and [WithEnv] choose what the CLI runs with.
//
// The command line, how the stream maps to events, the errors and the file protocol are in
// docs/runtimes.md (Claude Code).
package claudecode

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/agiraph/agiraph/internal/osfile"
	"github.com/agiraph/agiraph/internal/proc"
	"github.com/agiraph/agiraph/runtime"
	"github.com/agiraph/agiraph/runtime/adapter"
	"github.com/agiraph/agiraph/runtime/filebridge"
	"github.com/agiraph/agiraph/runtime/internal/workmcp"
	"github.com/agiraph/agiraph/sandbox"
)

// The protocol files, in the scratch directory.
const (
	InboxFile      = filebridge.InboxFile
	OutboxFile     = filebridge.OutboxFile
	CheckpointFile = filebridge.CheckpointFile
)

// DefaultBridgeInterval is how often the inbox and outbox are bridged by default.
const DefaultBridgeInterval = time.Second

// stderrTail is how much of the CLI's stderr is kept for error messages.
const stderrTail = 4 << 10

// Runtime runs assignments with the Claude Code CLI. It is safe for concurrent use: each Run
// starts its own process.
type Runtime struct {
	binary   string
	model    string
	allowed  []string
	mode     string
	maxTurns int
	env      []string
	interval time.Duration
	sandbox  func(runtime.Assignment, sandbox.Policy) sandbox.Policy
	noMCP    bool
}

var _ runtime.Runtime = (*Runtime)(nil)

// Option configures a Runtime.
type Option func(*Runtime)

// WithBinary sets the CLI to run: a path, or a name looked up on PATH. The default is "claude".
func WithBinary(path string) Option { return func(r *Runtime) { r.binary = path } }

// WithModel sets the model, an alias ("sonnet", "opus", "haiku") or a full id
// ("claude-sonnet-4-5"). By default the CLI picks.
func WithModel(model string) Option { return func(r *Runtime) { r.model = model } }

// WithAllowedTools sets the tools the agent may use without asking, in the CLI's syntax ("Read",
// "Write", "Bash(git *)"). With a list and no WithPermissionMode, the permission mode is dontAsk:
// other tools are denied.
func WithAllowedTools(tools []string) Option {
	return func(r *Runtime) { r.allowed = append([]string(nil), tools...) }
}

// WithPermissionMode sets the CLI's permission mode (acceptEdits, bypassPermissions, dontAsk,
// plan, ...). The default is bypassPermissions, or dontAsk with WithAllowedTools. With
// bypassPermissions, a child of a root process gets IS_SANDBOX=1, without which the CLI refuses.
func WithPermissionMode(mode string) Option { return func(r *Runtime) { r.mode = mode } }

// WithMaxTurns limits the agent's turns (--max-turns); zero or less means the CLI's default. A run
// that reaches the limit fails.
func WithMaxTurns(n int) Option { return func(r *Runtime) { r.maxTurns = n } }

// WithEnv adds "KEY=value" entries to the child's environment, after os.Environ() (so they win
// over it), for example ANTHROPIC_BASE_URL, ANTHROPIC_API_KEY or HOME.
func WithEnv(extra []string) Option {
	return func(r *Runtime) { r.env = append(r.env, extra...) }
}

// WithSandbox changes the sandbox the CLI runs in (see package sandbox): fn gets the policy a
// Run would use — the assignment's (Assignment.Sandbox) letting the CLI also write its working
// directory and its configuration folder, and keep its API key and WithEnv's variables — and
// returns the one to use: say with more writable folders, more variables kept, or Off.
func WithSandbox(fn func(a runtime.Assignment, p sandbox.Policy) sandbox.Policy) Option {
	return func(r *Runtime) { r.sandbox = fn }
}

// WithoutMCP gives the CLI no MCP server of the assignment's work tools: it works through the
// file protocol alone (for a CLI without MCP support).
func WithoutMCP() Option { return func(r *Runtime) { r.noMCP = true } }

// WithBridgeInterval sets how often, while the CLI runs, incoming messages are appended to
// _inbox.md and new blocks of _outbox.md are sent. Zero or less means DefaultBridgeInterval.
func WithBridgeInterval(d time.Duration) Option { return func(r *Runtime) { r.interval = d } }

// New returns a Runtime with the options applied.
func New(opts ...Option) *Runtime {
	r := &Runtime{binary: "claude"}
	for _, o := range opts {
		o(r)
	}
	if r.interval <= 0 {
		r.interval = DefaultBridgeInterval
	}
	return r
}

// permissionMode returns the permission mode a run uses.
func (r *Runtime) permissionMode() string {
	switch {
	case r.mode != "":
		return r.mode
	case len(r.allowed) > 0:
		return "dontAsk"
	}
	return "bypassPermissions"
}

// args returns the CLI's arguments for a, with mcpConfig (the --mcp-config JSON of the
// assignment's work tools) unless it is empty.
func (r *Runtime) args(a runtime.Assignment, mcpConfig string) []string {
	// --include-partial-messages: the stream events carry each model turn's final usage.
	args := []string{"-p", "--output-format", "stream-json", "--verbose", "--include-partial-messages"}
	if r.model != "" {
		args = append(args, "--model", r.model)
	}
	system := SystemPrompt(a)
	if mcpConfig != "" {
		system += workmcp.Prompt
	}
	args = append(args, "--append-system-prompt", system, "--permission-mode", r.permissionMode())
	if r.maxTurns > 0 {
		args = append(args, "--max-turns", fmt.Sprint(r.maxTurns))
	}
	if a.Session != "" {
		args = append(args, "--resume", a.Session)
	}
	if mcpConfig != "" {
		args = append(args, "--mcp-config", mcpConfig)
	}
	if len(r.allowed) > 0 {
		// --allowedTools takes any number of values: "--" ends them before the prompt.
		args = append(args, "--allowedTools")
		args = append(args, r.allowed...)
		if mcpConfig != "" {
			args = append(args, "mcp__"+workmcp.Name)
		}
	}
	return append(args, "--", Prompt(a))
}

// environ returns the child's environment.
func (r *Runtime) environ() []string {
	env := os.Environ()
	if r.permissionMode() == "bypassPermissions" && os.Geteuid() == 0 {
		env = append(env, "IS_SANDBOX=1")
	}
	return append(env, r.env...)
}

// Prompt returns the prompt a Run gives the CLI for a: its Task, followed by the human's Answer
// when it has one.
func Prompt(a runtime.Assignment) string {
	if a.Answer == "" {
		return a.Task
	}
	return a.Task + "\n\nYou asked the human a question earlier; their answer:\n" + a.Answer
}

// SystemPrompt returns the system prompt a Run appends to Claude Code's own: a's System followed
// by the file protocol.
func SystemPrompt(a runtime.Assignment) string {
	var b strings.Builder
	if s := strings.TrimSpace(a.System); s != "" {
		b.WriteString(s)
		b.WriteString("\n\n")
	}
	fmt.Fprintf(&b, `# How this assignment works

Your working directory (%s) is your scratch folder. Write every output of your work there, as files.

- When you finish normally, every file in the working directory whose name does not start with "_" or "." is published: it becomes read-only and other workers can read it. End with a short summary of what you produced and where.
- To end this stage without publishing (you are blocked, or a stage is done and more work remains), write %s with a summary of what was achieved and what remains, then stop.
- Messages for you are appended to %s, one paragraph each: "[Message from NAME]: text". Read it when you start, while you wait for an answer, and before you finish. Do not edit it.
- To send a message, append a block to %s (never change blocks already written):

TO: <recipient: a worker's name or role, coordinator, human, or * for everyone>
<the message>
---

  Each block is sent once, as soon as its closing "---" line is written.
`, a.Dir.Scratch(), CheckpointFile, InboxFile, OutboxFile)
	return b.String()
}

// Run runs a with the CLI in a.Dir's scratch directory, as docs/runtimes.md (Claude Code)
// describes.
func (r *Runtime) Run(ctx context.Context, a runtime.Assignment, sink runtime.Sink) (runtime.Outcome, error) {
	var mu sync.Mutex // the port wants events in order, never concurrently
	rep := adapter.NewEmitter(a, func(e runtime.Event) {
		if sink != nil {
			mu.Lock()
			defer mu.Unlock()
			sink(e)
		}
	})
	fail := func(err error) (runtime.Outcome, error) {
		return rep.End(runtime.Outcome{Status: runtime.StatusOf(ctx, err), Summary: err.Error()}, err)
	}
	if err := ctx.Err(); err != nil {
		return fail(fmt.Errorf("claudecode: not started: %w", context.Cause(ctx)))
	}
	if err := a.Dir.Create(); err != nil {
		return fail(fmt.Errorf("claudecode: %w", err))
	}
	// A checkpoint left by an earlier run must not end this one.
	if err := os.Remove(filepath.Join(a.Dir.Scratch(), CheckpointFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fail(fmt.Errorf("claudecode: %w", err))
	}
	br, err := filebridge.New(a, a.Dir.Scratch(), rep.Emit)
	if err != nil {
		return fail(fmt.Errorf("claudecode: %w", err))
	}

	// The assignment's work tools, over MCP: srv has what the CLI reports through them.
	st := &stream{rep: rep, tools: map[string]string{}, turns: map[string]bool{}}
	var srv *workmcp.Server
	var mcpConfig string
	if !r.noMCP {
		if srv, err = workmcp.Serve(a, rep, st.mcpCall); err != nil {
			return fail(fmt.Errorf("claudecode: %w", err))
		}
		defer func() { _ = srv.Close() }() // for the returns before the outcome's Close below
		mcpConfig = string(srv.Config(workmcp.Name))
	}

	p, err := r.start(a, mcpConfig)
	if err != nil {
		return fail(err)
	}
	st.kill, st.how = p.kill, p.how
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); st.read(p.stdout) }()
	go func() { defer wg.Done(); _, _ = io.Copy(p.tail, p.stderr) }()

	exited := make(chan struct{})
	wg.Add(2)
	go func() { // the context ends the whole group
		defer wg.Done()
		select {
		case <-ctx.Done():
			p.kill()
		case <-exited:
		}
	}()
	go func() {
		defer wg.Done()
		t := time.NewTicker(r.interval)
		defer t.Stop()
		for {
			select {
			case <-exited:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				br.Step(ctx, false)
			}
		}
	}()

	waitErr := p.cmd.Wait()
	p.kill() // stragglers the CLI left in its group
	close(exited)
	// The pipes close once the group is gone; one held by a process that left the group is
	// closed here, after a grace period for what is already buffered in it.
	readers := make(chan struct{})
	go func() { wg.Wait(); close(readers) }()
	select {
	case <-readers:
	case <-time.After(2 * time.Second):
		_ = p.stdout.Close() // read only: closing them ends the reads
		_ = p.stderr.Close()
		<-readers
	}
	_ = p.stdout.Close() // read only
	_ = p.stderr.Close()

	if ctx.Err() == nil {
		br.Step(ctx, true) // the final bridge: blocks written just before the end
	}
	if srv != nil {
		_ = srv.Close() // no tool reports after the outcome is decided
	}
	return rep.End(r.outcome(ctx, a, st, waitErr, p.tail.String(), srv))
}

// outcome decides how a run ended once the process and its readers are done; srv has what the
// CLI reported through the work tools (MCP), which takes precedence over the file protocol.
func (r *Runtime) outcome(ctx context.Context, a runtime.Assignment, st *stream, waitErr error, stderr string, srv *workmcp.Server) (runtime.Outcome, error) {
	reported := srv.Reported()
	o := runtime.Outcome{Status: runtime.Failed, Usage: st.usage(), Session: st.session, Turns: len(st.perMsg),
		Suggestions: reported.Suggestions, SubNodes: reported.SubNodes}
	res := st.result
	if res != nil {
		o.Turns = res.NumTurns
		if res.SessionID != "" {
			o.Session = res.SessionID
		}
	}
	withStderr := func(msg string) string {
		if s := strings.TrimSpace(stderr); s != "" {
			return msg + "; stderr: " + s
		}
		return msg + " (no stderr)"
	}
	switch {
	case res == nil && ctx.Err() != nil:
		err := fmt.Errorf("claudecode: %s stopped: %w", r.binary, context.Cause(ctx))
		if !errors.Is(err, ctx.Err()) {
			err = fmt.Errorf("%w (%w)", err, ctx.Err())
		}
		o.Status, o.Summary = runtime.StatusOf(ctx, err), err.Error()
		return o, err
	case res == nil:
		how := "exited with status 0"
		if waitErr != nil {
			how = waitErr.Error()
		}
		if st.readErr != nil {
			how += fmt.Sprintf(" (reading its output: %v)", st.readErr)
		}
		err := fmt.Errorf("claudecode: %w: %s %s before its result event; %s", runtime.ErrNoResult, r.binary, how, withStderr("last event: "+st.lastKind()))
		o.Summary = err.Error()
		return o, err
	}
	denials := res.denials()
	if res.IsError || strings.HasPrefix(res.Subtype, "error") {
		msg := res.Result
		if msg == "" && len(res.Errors) > 0 {
			msg = strings.Join(res.Errors, "; ")
		}
		if msg == "" {
			msg = "no message"
		}
		if res.APIErrorStatus != nil {
			msg += fmt.Sprintf(" (API status %d)", *res.APIErrorStatus)
		}
		if denials != "" {
			msg += "; " + denials
		}
		how := "failed"
		if strings.HasPrefix(res.Subtype, "error") { // not "success", which an API error has too
			how += " (" + res.Subtype + ")"
		}
		err := fmt.Errorf("claudecode: %s %s: %s", r.binary, how, msg)
		if waitErr != nil {
			err = fmt.Errorf("%s", withStderr(fmt.Sprintf("%v; %v", err, waitErr)))
		}
		o.Summary = err.Error()
		return o, err
	}
	o.Summary = res.Result
	if denials != "" {
		o.Summary = strings.TrimSpace(o.Summary + "\n\n" + denials)
	}
	if o, ok := srv.Complete(o); ok {
		return o, nil
	}
	cp, err := osfile.ReadFile(a.Dir.Path("scratch/" + CheckpointFile))
	switch {
	case err == nil:
		o.Status = runtime.Checkpointed
		if s := strings.TrimSpace(string(cp)); s != "" {
			o.Summary = s
			if denials != "" {
				o.Summary += "\n\n" + denials
			}
		}
		return o, nil
	case !errors.Is(err, fs.ErrNotExist):
		err = fmt.Errorf("claudecode: reading %s: %w", CheckpointFile, err)
		o.Summary = err.Error()
		return o, err
	}
	files, err := a.Dir.Publish()
	o.Published = files
	if err != nil {
		err = fmt.Errorf("claudecode: %w", err)
		o.Summary = err.Error()
		return o, err
	}
	o.Status = runtime.Published
	return o, nil
}

// process is a started CLI.
type process struct {
	cmd            *exec.Cmd
	proc           *proc.Process
	stdout, stderr *os.File // the read ends of its pipes
	tail           *proc.Tail
	how            string // its sandbox and containment, for the Started event
}

// kill kills the CLI and every process it started (see internal/proc); it may be called any
// number of times, from any goroutine.
func (p *process) kill() { p.proc.Kill() }

// start starts the CLI for a, contained (internal/proc), with stdin closed.
func (r *Runtime) start(a runtime.Assignment, mcpConfig string) (*process, error) {
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("claudecode: %w", err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		_ = outR.Close() // unused: the error before is the one to report
		_ = outW.Close()
		return nil, fmt.Errorf("claudecode: %w", err)
	}
	cmd := exec.Command(r.binary, r.args(a, mcpConfig)...)
	cmd.Dir = a.Dir.Scratch()
	cmd.Env = r.environ()
	cmd.Stdin = nil // /dev/null: the prompt is an argument
	cmd.Stdout, cmd.Stderr = outW, errW
	policy, err := r.policy(a, cmd.Env)
	var pr *proc.Process
	if err == nil {
		pr, err = proc.Start(cmd, policy)
	}
	_ = outW.Close() // the child holds its own copies
	_ = errW.Close()
	if err != nil {
		_ = outR.Close() // unused: the start's error is the one to report
		_ = errR.Close()
		return nil, fmt.Errorf("claudecode: starting %s: %w", r.binary, err)
	}
	how := policy.String()
	if w := pr.Weakness(); w != "" {
		how += "; containment is weaker here: " + w
	}
	return &process{cmd: cmd, proc: pr, stdout: outR, stderr: errR, tail: proc.NewTail(stderrTail), how: how}, nil
}

// policy returns the sandbox a's CLI runs in, started with env: a's, letting the CLI also
// write its working directory and its configuration folder ($CLAUDE_CONFIG_DIR, or ~/.claude),
// and keep its keys and WithEnv's variables (sandbox.CLI); then WithSandbox's changes.
// ~/.claude.json, which the CLI rewrites by renaming a new file into the home folder, stays
// read-only: the CLI reads it, and what it would change there (counters, tips) is not kept.
func (r *Runtime) policy(a runtime.Assignment, env []string) (sandbox.Policy, error) {
	var change func(sandbox.Policy) sandbox.Policy
	if r.sandbox != nil {
		change = func(p sandbox.Policy) sandbox.Policy { return r.sandbox(a, p) }
	}
	cli := sandbox.CLI{Program: "claude", Dir: a.Dir.Scratch(), Env: env, Given: r.env}
	return cli.Policy(a.Sandbox, change)
}
