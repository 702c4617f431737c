// Package autonomous is the runtime adapter for any CLI agent — Codex, Gemini CLI, Aider, a
// shell script — driven through files in its working directory.
//
// [New] takes the agent's command line as a template over [Vars] ({{.Prompt}}, {{.TaskFile}},
// {{.MCPConfig}}…); [Codex], [Gemini], [Aider] and [Script] are templates to start from. Each
// Run writes _task.md and the other protocol files into the node's scratch folder, starts the
// agent there, contained and sandboxed, relays messages through _inbox.md and _outbox.md, and
// ends when the agent writes _result.md (published) or _checkpoint.md, or reports through the
// work tools over MCP. Usage is unknown for generic agents: outcomes report none.
//
// The template, the environment, the protocol and how a run ends are in docs/runtimes.md
// (CLI agents).
package autonomous

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/agiraph/agiraph/internal/osfile"
	"github.com/agiraph/agiraph/internal/proc"
	"github.com/agiraph/agiraph/runtime"
	"github.com/agiraph/agiraph/runtime/adapter"
	"github.com/agiraph/agiraph/runtime/filebridge"
	"github.com/agiraph/agiraph/runtime/internal/workmcp"
	"github.com/agiraph/agiraph/sandbox"
)

// Defaults of the options.
const (
	DefaultPollInterval = 200 * time.Millisecond
	DefaultStopGrace    = 3 * time.Second
	DefaultOutputTail   = 4 << 10
)

// pipeGrace is how long Run waits for the output pipe to close after the process group was
// killed; only a process that left the group can keep it open.
const pipeGrace = 2 * time.Second

// Example command templates. They are examples: check them against the version of the agent
// you run, and add the flags (model, sandbox, approvals) your deployment needs.

// Codex runs OpenAI's Codex CLI non-interactively, printing its events as JSON lines, allowed
// to write in its working directory, with the work tools' MCP server added to its
// configuration: -c mcp_servers.agiraph.url=..., its bearer token read from MCPTokenEnv, its
// tools approved (codex exec approves nothing it would ask about).
func Codex() []string {
	server := "mcp_servers." + workmcp.Name
	return []string{"codex", "exec", "--json", "--sandbox", "workspace-write", "--skip-git-repo-check",
		"-c", server + `.url="{{.MCPURL}}"`,
		"-c", server + `.bearer_token_env_var="` + MCPTokenEnv + `"`,
		"-c", server + `.default_tools_approval_mode="approve"`,
		"{{.Prompt}}"}
}

// Gemini runs Google's Gemini CLI non-interactively, approving its own tool calls and trusting
// the folder for the session (without --skip-trust it exits 55 in the node's untrusted scratch
// folder), with the work tools' MCP server in the settings it reads as system defaults
// (GEMINI_CLI_SYSTEM_DEFAULTS_PATH, which replaces /etc/gemini-cli/system-defaults.json; the
// user's and the workspace's settings still apply over it).
func Gemini() []string {
	return []string{"GEMINI_CLI_SYSTEM_DEFAULTS_PATH={{.MCPConfig}}", "gemini", "--skip-trust", "--yolo", "-p", "{{.Prompt}}"}
}

// Aider runs Aider on one message, with _task.md as read-only context, without git.
func Aider() []string {
	return []string{"aider", "--yes-always", "--no-git", "--read", "{{.TaskFile}}", "--message", "{{.Prompt}}"}
}

// Script runs an executable (a shell script, say) with the path of _task.md as its argument.
func Script(path string) []string {
	return []string{path, "{{.TaskFile}}"}
}

// Option configures a Runtime.
type Option func(*Runtime)

// WithEnv adds entries ("KEY=value") to the agent's environment; they override the inherited
// ones.
func WithEnv(extra []string) Option {
	return func(r *Runtime) { r.env = append(r.env, extra...) }
}

// WithSandbox changes the sandbox the agent runs in (see package sandbox): fn gets the policy
// a Run would use — the assignment's (Assignment.Sandbox) letting the agent also write its
// working directory and, for an agent the sandbox knows (codex, gemini, claude, aider), its
// configuration folder, and keep its keys and WithEnv's variables — and returns the one to
// use: say with the configuration folder of another agent writable, or Off.
func WithSandbox(fn func(a runtime.Assignment, p sandbox.Policy) sandbox.Policy) Option {
	return func(r *Runtime) { r.sandbox = fn }
}

// WithPollInterval sets how often Run bridges messages and looks for _result.md and
// _checkpoint.md (default DefaultPollInterval). d <= 0 means the default.
func WithPollInterval(d time.Duration) Option {
	return func(r *Runtime) {
		if d > 0 {
			r.poll = d
		}
	}
}

// WithStopGrace sets how long a stopped agent has between SIGTERM and SIGKILL (default
// DefaultStopGrace). d <= 0 sends SIGKILL at once.
func WithStopGrace(d time.Duration) Option {
	return func(r *Runtime) { r.grace = max(d, 0) }
}

// WithOutputTail sets how many bytes of the agent's last output a failure reports (default
// DefaultOutputTail). n <= 0 means the default.
func WithOutputTail(n int) Option {
	return func(r *Runtime) {
		if n > 0 {
			r.tail = n
		}
	}
}

// Runtime runs a CLI agent per assignment. It is safe for concurrent use.
type Runtime struct {
	argv  []string
	cmd   *command
	err   error
	env   []string
	poll  time.Duration
	grace time.Duration
	tail  int
	// sandbox changes the policy the agent runs under (WithSandbox).
	sandbox func(runtime.Assignment, sandbox.Policy) sandbox.Policy
}

var _ runtime.Runtime = (*Runtime)(nil)

// New returns a Runtime that runs the command template command (see the package
// documentation). A bad template does not fail here: Err reports it, and Run fails with it.
func New(command []string, opts ...Option) *Runtime {
	r := &Runtime{argv: append([]string(nil), command...), poll: DefaultPollInterval, grace: DefaultStopGrace, tail: DefaultOutputTail}
	r.cmd, r.err = parseCommand(r.argv)
	for _, o := range opts {
		o(r)
	}
	return r
}

// Err returns the error of the command template (wrapping ErrTemplate), or nil when it is
// valid.
func (r *Runtime) Err() error { return r.err }

// Run runs a's agent to its end, as docs/runtimes.md (CLI agents) describes.
func (r *Runtime) Run(ctx context.Context, a runtime.Assignment, sink runtime.Sink) (runtime.Outcome, error) {
	var mu sync.Mutex // the output goroutine, the work tools and this one all emit
	rep := adapter.NewEmitter(a, func(e runtime.Event) {
		if sink != nil {
			mu.Lock()
			defer mu.Unlock()
			sink(e)
		}
	})
	emit := rep.Emit
	var srv *workmcp.Server // the work tools over MCP, when the template uses them
	end := func(o runtime.Outcome, err error) (runtime.Outcome, error) {
		_ = srv.Close() // no tool reports after the outcome is decided
		reported := srv.Reported()
		o.Suggestions, o.SubNodes = reported.Suggestions, reported.SubNodes // the ending is o's
		return rep.End(o, err)
	}
	fail := func(err error) (runtime.Outcome, error) {
		return end(runtime.Outcome{Status: runtime.StatusOf(ctx, err), Summary: err.Error()}, err)
	}
	if r.err != nil {
		return fail(r.err)
	}
	if a.Dir == "" {
		return fail(errors.New("autonomous: the assignment has no node folder"))
	}
	if err := ctx.Err(); err != nil {
		return fail(fmt.Errorf("autonomous: not started: %w", context.Cause(ctx)))
	}
	if r.cmd.mcp {
		var err error
		if srv, err = workmcp.Serve(a, rep, nil); err != nil {
			return fail(fmt.Errorf("autonomous: %w", err))
		}
	}
	env, argv, v, err := r.prepare(a, srv)
	if v.MCPConfig != "" {
		defer func() { _ = os.RemoveAll(filepath.Dir(v.MCPConfig)) }() // best effort: a temporary folder
	}
	if err != nil {
		return fail(err)
	}
	b, err := filebridge.New(a, v.Scratch, emit) // before the agent starts: its outbox is empty
	if err != nil {
		return fail(fmt.Errorf("autonomous: %w", err))
	}

	pr, pw, err := os.Pipe()
	if err != nil {
		return fail(fmt.Errorf("autonomous: output pipe: %w", err))
	}
	defer func() { _ = pr.Close() }() // read only
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = v.Scratch
	cmd.Env = append(os.Environ(),
		"AGIRAPH_ASSIGNMENT="+a.ID, "AGIRAPH_NODE="+a.Node, "AGIRAPH_WORKER="+a.Worker,
		"AGIRAPH_SCRATCH="+v.Scratch)
	given := slices.Concat(env, r.env) // the MCP server's and the template's variables, then WithEnv's, which win
	cmd.Env = append(cmd.Env, given...)
	cmd.Stdin = nil
	cmd.Stdout, cmd.Stderr = pw, pw
	var change func(sandbox.Policy) sandbox.Policy
	if r.sandbox != nil {
		change = func(p sandbox.Policy) sandbox.Policy { return r.sandbox(a, p) }
	}
	assigned := a.Sandbox
	if v.MCPConfig != "" { // shown even where it is under /tmp, which the sandbox hides
		assigned.Readable = append(slices.Clone(assigned.Readable), v.MCPConfig)
	}
	policy, err := sandbox.CLI{Program: argv[0], Dir: v.Scratch, Env: cmd.Env, Given: given}.Policy(assigned, change)
	var p *proc.Process
	if err == nil {
		p, err = proc.Start(cmd, policy)
	}
	_ = pw.Close() // the child holds its own copy
	if err != nil {
		return fail(fmt.Errorf("autonomous: starting %s: %w", argv[0], err))
	}
	how := fmt.Sprintf("%s (pid %d) in %s; %s", describeArgv(argv), cmd.Process.Pid, v.Scratch, policy)
	if w := p.Weakness(); w != "" {
		how += "; containment is weaker here: " + w
	}
	if srv != nil {
		how += "; the work tools over MCP at " + srv.URL
	}
	emit(runtime.Event{Kind: runtime.Started, Text: how})

	out := &output{limit: r.tail, line: func(s string) { emit(runtime.Event{Kind: runtime.Output, Text: s}) }}
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		buf := make([]byte, 32<<10)
		for {
			n, err := pr.Read(buf)
			if n > 0 {
				_, _ = out.Write(buf[:n]) // it keeps what it is given and does not fail
			}
			if err != nil {
				break
			}
		}
		out.flush()
	}()
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()

	var waitErr error
	exited := false
	// stop ends the process group, gracefully if there is a grace, and reaps the agent.
	stop := func() {
		if exited {
			return
		}
		if r.grace > 0 {
			_ = p.Signal(syscall.SIGTERM)
			t := time.NewTimer(r.grace)
			select {
			case waitErr = <-waited:
				exited = true
			case <-t.C:
			}
			t.Stop()
		}
		if !exited {
			p.Kill()
			waitErr = <-waited
			exited = true
		}
	}
	// finish kills what the agent left behind and drains the output; after it, no goroutine
	// of this run is left and out may be read.
	finish := func() {
		stop()
		p.Kill()
		_ = pr.SetReadDeadline(time.Now().Add(pipeGrace))
		<-copied
	}

	result := &watchFile{path: filepath.Join(v.Scratch, ResultFile)}
	checkpoint := &watchFile{path: filepath.Join(v.Scratch, CheckpointFile)}
	ticker := time.NewTicker(r.poll)
	defer ticker.Stop()
	for {
		var done bool
		select {
		case <-ctx.Done():
			finish()
			err := fmt.Errorf("autonomous: agent stopped: %w%s", context.Cause(ctx), out.lastErrors())
			return end(runtime.Outcome{Status: runtime.StatusOf(ctx, err), Summary: err.Error()}, err)
		case waitErr = <-waited:
			exited, done = true, true
		case <-ticker.C:
			// Look for the end first: a finishing agent is not handed messages it will not
			// read (they stay in the mailbox); its outbox is still sent below.
			if done = srv.Ended() || result.complete() || checkpoint.complete(); !done {
				b.Step(ctx, false)
			}
		}
		if !done {
			continue
		}
		finish()
		b.Step(ctx, true)
		_ = srv.Close() // what the agent reported is final
		if o, ok := srv.Complete(runtime.Outcome{}); ok {
			return end(o, nil)
		}
		if o, ok, err := r.ended(a, result.path, checkpoint.path); ok {
			return end(o, err)
		}
		err := fmt.Errorf("autonomous: %w: %s%s", runtime.ErrNoResult, exitStatus(waitErr), out.lastErrors())
		if t := strings.TrimSpace(out.last()); t != "" {
			err = fmt.Errorf("%w; last output:\n%s", err, t)
		} else {
			err = fmt.Errorf("%w; no output", err)
		}
		return end(runtime.Outcome{Status: runtime.Failed, Summary: err.Error()}, err)
	}
}

// prepare creates the node folder, writes the protocol files (and, with srv, the MCP client
// configuration, in a folder of its own outside the node's) and renders the command: the
// agent's environment entries and its command line.
func (r *Runtime) prepare(a runtime.Assignment, srv *workmcp.Server) (env, argv []string, v Vars, err error) {
	if err := a.Dir.Create(); err != nil {
		return nil, nil, Vars{}, err
	}
	abs := func(p string) string {
		if q, err := filepath.Abs(p); err == nil {
			return q
		}
		return p
	}
	scratch := abs(a.Dir.Scratch())
	v = Vars{
		Task: a.Task, Prompt: Prompt,
		TaskFile: filepath.Join(scratch, TaskFile), ContextFile: filepath.Join(scratch, ContextFile),
		Dir: abs(string(a.Dir)), Scratch: scratch, Published: abs(a.Dir.Published()),
		ID: a.ID, Run: a.Run, Node: a.Node, Worker: a.Worker,
	}
	if srv != nil {
		v.MCPURL = srv.URL
		if v.MCPConfig, err = writeMCPConfig(srv.URL); err != nil {
			return nil, nil, v, fmt.Errorf("autonomous: %w", err)
		}
		env = []string{MCPURLEnv + "=" + srv.URL, MCPTokenEnv + "=" + srv.Token}
	}
	tenv, argv, err := r.cmd.render(v)
	if err != nil {
		return nil, nil, v, err
	}
	env = append(env, tenv...)
	var previous string
	if data, err := osfile.ReadFile(filepath.Join(scratch, CheckpointFile)); err == nil {
		previous = string(data)
	}
	for _, name := range []string{ResultFile, CheckpointFile} {
		if err := os.Remove(filepath.Join(scratch, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, nil, v, fmt.Errorf("autonomous: %w", err)
		}
	}
	ctxJSON, err := contextJSON(a, v)
	if err != nil {
		return nil, nil, v, fmt.Errorf("autonomous: %s: %w", ContextFile, err)
	}
	files := []struct {
		name string
		data []byte
	}{
		{TaskFile, []byte(taskText(a, scratch, previous, srv != nil))},
		{ContextFile, ctxJSON},
		{InboxFile, nil},
		{OutboxFile, nil},
	}
	for _, f := range files {
		if err := writeFile(scratch, f.name, f.data); err != nil {
			return nil, nil, v, fmt.Errorf("autonomous: %w", err)
		}
	}
	return env, argv, v, nil
}

// ended reads how the agent ended: published (result), checkpointed, or neither (ok false). A
// result or checkpoint the agent made that is not a regular file, or is too large to read, fails
// the assignment, naming the file.
func (r *Runtime) ended(a runtime.Assignment, result, checkpoint string) (runtime.Outcome, bool, error) {
	for _, end := range []struct {
		path   string
		status runtime.Status
	}{{result, runtime.Published}, {checkpoint, runtime.Checkpointed}} {
		data, err := osfile.ReadFile(end.path)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue
		case err != nil:
			err = fmt.Errorf("autonomous: the agent's %w", err)
			return runtime.Outcome{Status: runtime.Failed, Summary: err.Error()}, true, err
		}
		o := runtime.Outcome{Status: end.status, Summary: strings.TrimSpace(string(data))}
		if end.status != runtime.Published {
			return o, true, nil
		}
		files, err := a.Dir.Publish()
		o.Published = files
		if err != nil {
			err = fmt.Errorf("autonomous: the agent finished but publishing failed: %w", err)
			o.Status, o.Summary = runtime.Failed, err.Error()
			return o, true, err
		}
		return o, true, nil
	}
	return runtime.Outcome{}, false, nil
}

// watchFile tells when a file the agent writes is complete: present, with the same size and
// modification time at two successive polls.
type watchFile struct {
	path string
	seen bool
	size int64
	mod  time.Time
}

func (w *watchFile) complete() bool {
	info, err := os.Stat(w.path)
	if err != nil || !info.Mode().IsRegular() {
		w.seen = false
		return false
	}
	if w.seen && info.Size() == w.size && info.ModTime().Equal(w.mod) {
		return true
	}
	w.seen, w.size, w.mod = true, info.Size(), info.ModTime()
	return false
}

// exitStatus says how the agent's process ended.
func exitStatus(err error) string {
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		if ws, ok := exitErr.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return "the agent was killed by signal " + ws.Signal().String()
		}
		return fmt.Sprintf("the agent exited with exit status %d", exitErr.ExitCode())
	}
	if err != nil {
		return "waiting for the agent: " + err.Error()
	}
	return "the agent exited with exit status 0"
}

// describeArgv renders a command line for an event, each argument cut to a readable length.
func describeArgv(argv []string) string {
	parts := make([]string, len(argv))
	for i, a := range argv {
		if len(a) > 80 {
			a = a[:80] + "…"
		}
		if strings.ContainsAny(a, " \t\n\"'") || a == "" {
			a = fmt.Sprintf("%q", a)
		}
		parts[i] = a
	}
	return strings.Join(parts, " ")
}
