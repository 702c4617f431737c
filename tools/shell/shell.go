// Package shell provides a "bash" tool that lets an agent run shell commands.
//
// [Bash] builds a [tools.Tool] that runs `bash -c <command>` in a configured working directory
// and returns the combined stdout and stderr, in the order they were written, followed by
// "exit status N" when the command fails. A non-zero exit status is a normal result the model
// reads, not a tool error; a timeout or a cancelled context is a tool error.
//
// Each command runs with stdin empty (/dev/null), contained by internal/proc: on Linux with
// bubblewrap, in a PID namespace of its own, so that when the command finishes, times out or
// its context ends, every process it started dies with it — backgrounded, nohup'd, setsid'd or
// double-forked. Without bubblewrap the command's process group and every process carrying its
// mark in the environment are killed with SIGKILL (a process that clears its environment and
// leaves the group survives; on other systems only the group, or on Windows only bash). If a
// survivor keeps the output pipe open, the call still returns after a short grace period.
//
// Commands run in a sandbox (see [Sandbox] and package sandbox) where bubblewrap runs: the file
// system read-only except the working directory and a /tmp of their own, the environment
// without its secrets. Where it does not run — or with the sandbox off — commands run with the
// privileges, environment and file system of the current process, and the working directory is
// a convenience, not a boundary. Even sandboxed, commands can read what the process can read
// and reach the network: run agents inside a container or VM if their commands are not trusted.
package shell

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/agiraph/agiraph/internal/proc"
	"github.com/agiraph/agiraph/sandbox"
	"github.com/agiraph/agiraph/tools"
)

// Defaults of the [Bash] options.
const (
	// DefaultTimeout is how long a command may run when the call sets no timeout_seconds.
	DefaultTimeout = 2 * time.Minute
	// DefaultMaxTimeout is the largest timeout a call may ask for.
	DefaultMaxTimeout = 10 * time.Minute
	// DefaultMaxOutput is the default cap, in bytes, on a call's result text.
	DefaultMaxOutput = 32 << 10
	// MinMaxOutput is the smallest output cap [MaxOutput] accepts; smaller positive values are
	// raised to it, so the head, the tail and the truncation marker always fit.
	MinMaxOutput = 1 << 10
)

// pipeGrace is how long a call waits for the output pipe to reach EOF after the process group
// has been killed; only a process that escaped the group can hold it open that long.
const pipeGrace = 2 * time.Second

// ErrTimeout is wrapped by the error a call returns when its command ran out of time and was
// killed.
var ErrTimeout = errors.New("command timed out")

// Option configures the tool built by [Bash].
type Option func(*config)

type config struct {
	dir        string
	timeout    time.Duration
	maxTimeout time.Duration
	maxOutput  int
	env        []string
	sandbox    *sandbox.Policy
}

// Dir sets the working directory commands start in, and the folder the default sandbox lets
// them write. The default, "", is the current directory of the process, which is rarely what
// an agent should use: set it in practice. A command can cd elsewhere, but each call starts
// afresh in dir.
func Dir(path string) Option {
	return func(c *config) { c.dir = path }
}

// Timeout sets how long a command may run when the call does not set timeout_seconds
// (default [DefaultTimeout]). d <= 0 means the default. If d exceeds the maximum timeout, the
// maximum is raised to d.
func Timeout(d time.Duration) Option {
	return func(c *config) { c.timeout = d }
}

// MaxTimeout sets the largest timeout a call may ask for with timeout_seconds (default
// [DefaultMaxTimeout]); it is advertised in the schema, and larger requests are clamped to it.
// d <= 0 means the default.
func MaxTimeout(d time.Duration) Option {
	return func(c *config) { c.maxTimeout = d }
}

// MaxOutput caps a call's result text at n bytes (default [DefaultMaxOutput]), counting the
// truncation marker and the trailing status line. Longer output keeps its head and its tail,
// joined by a marker saying how many bytes were cut, so the model sees both how the command
// started and how it ended. Positive n below [MinMaxOutput] is raised to it; n <= 0 means the
// default. Keep n at or below the registry's cap ([tools.WithMaxOutput]) so the registry does
// not cut the tail off.
func MaxOutput(n int) Option {
	return func(c *config) { c.maxOutput = n }
}

// Env adds variables, as "KEY=value" strings, to the environment commands run with: the
// process's own environment followed by these, a later entry replacing an earlier one with the
// same key. Repeated Env options accumulate. The sandbox keeps them, secrets or not: they were
// given on purpose.
func Env(vars []string) Option {
	return func(c *config) { c.env = append(c.env, vars...) }
}

// Sandbox sets what commands may reach (see package sandbox). The default policy lets them
// write only in the working directory ([Dir]) and a /tmp of their own, with the network, and
// without the environment's secrets; sandbox.Policy{Off: true} gives them the process's rights.
// It is enforced where bubblewrap runs (Linux); elsewhere only the environment is cleaned.
func Sandbox(p sandbox.Policy) Option {
	return func(c *config) { c.sandbox = &p }
}

// Args are the arguments of a bash call.
type Args struct {
	// Command is the bash script to run, passed to `bash -c`.
	Command string `json:"command" jsonschema:"minLength=1" jsonschema_description:"The bash command to run, non-interactively, e.g. 'go test ./...' or 'ls -la src && git status'."`
	// TimeoutSeconds overrides the default timeout; 0 (absent) means the default.
	TimeoutSeconds int `json:"timeout_seconds,omitempty" jsonschema:"minimum=1" jsonschema_description:"Seconds before the command is killed."`
}

// Bash returns a tool named "bash" that runs a command with `bash -c` (see the package
// documentation for how it runs and what it returns). The tool is not [tools.Safe]: commands
// change state other calls may read.
//
// The handler returns the command's combined output followed by "exit status N" when N is
// non-zero (or "terminated by signal S"; in a PID namespace, a signal shows as status 128+S), and "(no output)" for a silent success. On timeout it
// returns an error wrapping [ErrTimeout] whose message holds the output so far and "killed
// after <timeout>"; when ctx ends it returns an error wrapping the context's cause, also with
// the output so far. It returns an error if bash is not in PATH or the command cannot start
// (for example, a missing working directory).
func Bash(opts ...Option) tools.Tool {
	c := config{timeout: DefaultTimeout, maxTimeout: DefaultMaxTimeout, maxOutput: DefaultMaxOutput}
	for _, o := range opts {
		o(&c)
	}
	if c.timeout <= 0 {
		c.timeout = DefaultTimeout
	}
	if c.maxTimeout <= 0 {
		c.maxTimeout = DefaultMaxTimeout
	}
	c.maxTimeout = max(c.maxTimeout, c.timeout)
	if c.maxOutput <= 0 {
		c.maxOutput = DefaultMaxOutput
	}
	c.maxOutput = max(c.maxOutput, MinMaxOutput)
	c.env = append([]string(nil), c.env...)

	t := tools.Func("bash", "Run a bash command in the workspace and return its combined stdout and stderr.",
		func(ctx context.Context, a Args) (string, error) { return c.run(ctx, a) },
		tools.WithGuidance(c.guidance()))
	t.Schema = c.patchSchema(t.Schema)
	return t
}

// maxSeconds is the largest timeout_seconds a call may send.
func (c *config) maxSeconds() int { return max(int(c.maxTimeout/time.Second), 1) }

// patchSchema advertises the configured default and maximum timeout in the schema, so the
// registry rejects larger values with a message the model can act on.
func (c *config) patchSchema(schema json.RawMessage) json.RawMessage {
	var s map[string]any
	if err := json.Unmarshal(schema, &s); err != nil {
		panic(fmt.Sprintf("shell.Bash: derived schema: %v", err))
	}
	props, _ := s["properties"].(map[string]any)
	ts, _ := props["timeout_seconds"].(map[string]any)
	if ts == nil {
		panic("shell.Bash: derived schema has no timeout_seconds")
	}
	ts["maximum"] = c.maxSeconds()
	ts["description"] = fmt.Sprintf("Seconds before the command is killed (default %d, at most %d).",
		max(int(c.timeout/time.Second), 1), c.maxSeconds())
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // keep "&&" readable in the description
	if err := enc.Encode(s); err != nil {
		panic(fmt.Sprintf("shell.Bash: schema: %v", err))
	}
	return bytes.TrimSpace(buf.Bytes())
}

func (c *config) guidance() string {
	where := "the current directory of the agent process"
	if c.dir != "" {
		where = c.dir
	}
	return fmt.Sprintf(`Run shell commands with bash -c. Each call is a fresh shell: it starts in %s, and cd, variables and aliases do not carry over to the next call; chain dependent steps with && in one command, and use paths relative to that directory.
- Commands must be non-interactive: stdin is empty, so anything that prompts fails or gets EOF. Pass flags such as -y, --no-pager or --batch, and never start editors, pagers or REPLs.
- A command is killed after %s unless you set timeout_seconds (at most %d). Set it higher for long builds or test runs; do not start servers or watchers that never exit.
- Background processes (cmd &) are killed when the command finishes; nothing keeps running between calls.
- You get stdout and stderr together, then "exit status N" if the command failed. Output longer than about %d KiB keeps only its beginning and end, so filter it (grep, head, tail, wc -l) when you expect a lot.
- Prefer the dedicated file tools, when you have them, for reading, creating and editing files rather than cat, sed, echo > file or heredocs.`,
		where, c.timeout, c.maxSeconds(), c.maxOutput>>10) + c.sandboxGuidance()
}

// sandboxGuidance tells the model what the sandbox lets commands write, where it is enforced.
func (c *config) sandboxGuidance() string {
	p := c.policy()
	if p.Off || proc.Weakness(p) != "" {
		return ""
	}
	s := "\n- Commands may write only in /tmp, which is your own and starts empty at every call; the rest of the file system is read-only."
	if len(p.Writable) > 0 {
		s = fmt.Sprintf("\n- Commands may write only in %s and /tmp; the rest of the file system is read-only. /tmp is your own and starts empty at every call: keep what you need in %s.",
			strings.Join(p.Writable, ", "), p.Writable[0])
	}
	if p.NoNetwork {
		s += " They have no network."
	}
	return s
}

func (c *config) run(ctx context.Context, a Args) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", fmt.Errorf("command not run: %w", context.Cause(ctx))
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		return "", fmt.Errorf("the bash tool is unavailable: bash was not found in PATH (%v)", err)
	}
	timeout := c.timeout
	if a.TimeoutSeconds > 0 {
		timeout = min(time.Duration(a.TimeoutSeconds)*time.Second, c.maxTimeout)
	}

	pr, pw, err := os.Pipe()
	if err != nil {
		return "", fmt.Errorf("creating output pipe: %w", err)
	}
	defer func() { _ = pr.Close() }() // read only
	cmd := exec.Command(bash, "-c", a.Command)
	cmd.Dir = c.dir
	cmd.Env = append(os.Environ(), c.env...)
	cmd.Stdin = nil // /dev/null
	cmd.Stdout = pw // one pipe for both keeps their order
	cmd.Stderr = pw
	p, err := proc.Start(cmd, c.policy().Keep(c.env))
	_ = pw.Close() // the child holds its own copy
	if err != nil {
		return "", fmt.Errorf("starting bash: %w", err)
	}
	killGroup := p.Kill // the command and everything it started

	out := &capture{limit: c.maxOutput}
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		_, _ = io.Copy(out, pr)
	}()
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()

	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var waitErr, failure error
	select {
	case waitErr = <-waited:
	case <-timer.C:
		killGroup()
		waitErr = <-waited
		failure = fmt.Errorf("killed after %s: %w; set timeout_seconds higher (at most %d) or make the command finish sooner", timeout, ErrTimeout, c.maxSeconds())
	case <-ctx.Done():
		killGroup()
		waitErr = <-waited
		failure = fmt.Errorf("command stopped and killed: %w", context.Cause(ctx))
	}
	// The shell has exited; kill whatever it left behind, then drain the pipe.
	killGroup()
	_ = pr.SetReadDeadline(time.Now().Add(pipeGrace))
	<-copied

	if failure != nil {
		return "", &callError{msg: out.render(failure.Error()), err: failure}
	}
	status := ""
	var exitErr *exec.ExitError
	if errors.As(waitErr, &exitErr) {
		if ws, ok := exitErr.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			status = fmt.Sprintf("terminated by signal %s", sigName(ws.Signal()))
		} else {
			status = fmt.Sprintf("exit status %d", exitErr.ExitCode())
		}
	} else if waitErr != nil {
		failure = fmt.Errorf("waiting for bash: %w", waitErr)
		return "", &callError{msg: out.render(failure.Error()), err: failure}
	}
	if status == "" && out.total == 0 {
		return "(no output)", nil
	}
	return out.render(status), nil
}

// policy is the sandbox commands run in: Sandbox's, or the default.
func (c *config) policy() sandbox.Policy {
	if c.sandbox != nil {
		return *c.sandbox
	}
	dir := c.dir
	if dir == "" {
		dir, _ = os.Getwd()
	}
	return sandbox.Policy{Writable: []string{dir}}
}

// callError carries the output so far in its message and wraps the cause of the failure.
type callError struct {
	msg string
	err error
}

func (e *callError) Error() string { return e.msg }
func (e *callError) Unwrap() error { return e.err }

// sigName names a signal like "SIGKILL" when it can, falling back to its description.
func sigName(s syscall.Signal) string {
	names := map[syscall.Signal]string{
		syscall.SIGABRT: "SIGABRT", syscall.SIGBUS: "SIGBUS", syscall.SIGFPE: "SIGFPE",
		syscall.SIGHUP: "SIGHUP", syscall.SIGINT: "SIGINT", syscall.SIGKILL: "SIGKILL",
		syscall.SIGPIPE: "SIGPIPE", syscall.SIGQUIT: "SIGQUIT", syscall.SIGSEGV: "SIGSEGV",
		syscall.SIGTERM: "SIGTERM", syscall.SIGILL: "SIGILL",
	}
	if n, ok := names[s]; ok {
		return n
	}
	return s.String()
}

// capture keeps the first limit/2 and the last limit-limit/2 bytes written to it, and counts
// them all.
type capture struct {
	limit int
	head  []byte
	tail  []byte // the last bytes written after head filled; may hold up to 2x its share
	total int
}

func (c *capture) Write(p []byte) (int, error) {
	n := len(p)
	c.total += n
	headCap := c.limit / 2
	if room := headCap - len(c.head); room > 0 {
		k := min(room, len(p))
		c.head = append(c.head, p[:k]...)
		p = p[k:]
	}
	tailCap := c.limit - headCap
	if len(p) >= tailCap {
		c.tail = append(c.tail[:0], p[len(p)-tailCap:]...)
		return n, nil
	}
	c.tail = append(c.tail, p...)
	if len(c.tail) > 2*tailCap {
		k := copy(c.tail, c.tail[len(c.tail)-tailCap:])
		c.tail = c.tail[:k]
	}
	return n, nil
}

// render returns the captured output followed by status (a line, or ""), in at most c.limit
// bytes: if it does not fit, the middle of the output is replaced by a marker saying how many
// bytes were cut. Invalid UTF-8 is replaced by U+FFFD.
func (c *capture) render(status string) string {
	tailCap := c.limit - c.limit/2
	tail := c.tail
	if len(tail) > tailCap {
		tail = tail[len(tail)-tailCap:]
	}
	sep := ""
	if status != "" {
		sep = "\n"
	}
	dropped := c.total - len(c.head) - len(tail)
	if dropped == 0 {
		s := strings.ToValidUTF8(string(c.head)+string(tail), "\uFFFD")
		if s != "" && !strings.HasSuffix(s, "\n") && status != "" {
			s += "\n"
		}
		if len(s)+len(status) <= c.limit {
			return s + status
		}
	}
	head := strings.ToValidUTF8(string(c.head), "\uFFFD")
	tl := strings.ToValidUTF8(string(tail), "\uFFFD")
	marker := func(cut int) string { return fmt.Sprintf("\n[... %d bytes of output cut ...]\n", cut) }
	budget := max(c.limit-len(status)-len(sep)-len(marker(c.total)), 0)
	t := min(len(tl), budget-min(len(head), budget/2))
	h := min(len(head), budget-t)
	for h > 0 && h < len(head) && !utf8.RuneStart(head[h]) {
		h--
	}
	start := len(tl) - t
	for start < len(tl) && !utf8.RuneStart(tl[start]) {
		start++
	}
	kept := head[:h] + marker(max(c.total-h-(len(tl)-start), 0)) + tl[start:]
	if status != "" && !strings.HasSuffix(kept, "\n") {
		kept += "\n"
	}
	return kept + status
}
