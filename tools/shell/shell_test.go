package shell_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/agiraph/agiraph/tools"
	"github.com/agiraph/agiraph/tools/shell"
)

// guard bounds every wait in these tests; it fails the test instead of hanging it. It is
// not an assertion on speed.
const guard = 10 * time.Second

// call runs the tool's handler with args, failing the test if it does not return within guard.
func call(t *testing.T, ctx context.Context, tool tools.Tool, args shell.Args) (string, error) {
	t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		out string
		err error
	}
	done := make(chan result, 1)
	go func() {
		out, err := tool.Handler(ctx, raw)
		done <- result{out, err}
	}()
	select {
	case r := <-done:
		return r.out, r.err
	case <-time.After(guard):
		t.Fatalf("command %q did not return within %s", args.Command, guard)
		return "", nil
	}
}

func mustRun(t *testing.T, tool tools.Tool, command string) string {
	t.Helper()
	out, err := call(t, context.Background(), tool, shell.Args{Command: command})
	if err != nil {
		t.Fatalf("%q: unexpected error: %v", command, err)
	}
	return out
}

// readPID waits for a process to write its PID to path.
func readPID(t *testing.T, path string) int {
	t.Helper()
	deadline := time.Now().Add(guard)
	for {
		b, err := os.ReadFile(path)
		if err == nil && strings.HasSuffix(string(b), "\n") {
			pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil {
				t.Fatalf("pid file %s: %v", path, err)
			}
			return pid
		}
		if time.Now().After(deadline) {
			t.Fatalf("no pid in %s after %s", path, guard)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// dead reports whether pid no longer runs: kill(pid, 0) fails with ESRCH, or the process is
// a zombie waiting for a reaper (killed, but its new parent, init, has not reaped it yet).
func dead(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return os.IsNotExist(err)
	}
	// The state follows the command name in parentheses: "pid (comm) S ...".
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] == 'Z'
}

// waitDead fails the test unless pid dies within guard.
func waitDead(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(guard)
	for !dead(pid) {
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("process %d still alive %s after the call returned", pid, guard)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// spawnGrandchild is a shell fragment that starts a background grandchild sleeping 100s,
// which writes its PID to file, and waits until it has.
func spawnGrandchild(file string) string {
	return fmt.Sprintf(`bash -c 'echo $$ > %[1]s; exec sleep 100' & while [ ! -s %[1]s ]; do sleep 0.01; done; `, file)
}

func TestEchoAndExitCodes(t *testing.T) {
	tool := shell.Bash(shell.Dir(t.TempDir()))
	for _, tc := range []struct{ command, want string }{
		{"echo hello", "hello\n"},
		{"echo out; exit 3", "out\nexit status 3"},
		{"printf abc; exit 1", "abc\nexit status 1"},
		{"exit 7", "exit status 7"},
		{"true", "(no output)"},
		{"false", "exit status 1"},
		{"no-such-command-xyz 2>/dev/null", "exit status 127"},
		{"kill -9 $$", "terminated by signal SIGKILL"},
	} {
		if got := mustRun(t, tool, tc.command); got != tc.want {
			t.Errorf("%q: got %q, want %q", tc.command, got, tc.want)
		}
	}
}

func TestStderrInterleaved(t *testing.T) {
	tool := shell.Bash(shell.Dir(t.TempDir()))
	got := mustRun(t, tool, "echo 1; echo 2 >&2; echo 3; echo 4 >&2; echo 5")
	if got != "1\n2\n3\n4\n5\n" {
		t.Errorf("got %q", got)
	}
}

func TestWorkingDirectory(t *testing.T) {
	dir := t.TempDir()
	tool := shell.Bash(shell.Dir(dir))
	got := mustRun(t, tool, "pwd -P")
	want, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got != want+"\n" {
		t.Errorf("pwd: got %q, want %q", got, want+"\n")
	}
	mustRun(t, tool, "mkdir sub && cd sub && echo x > f.txt")
	if b, err := os.ReadFile(filepath.Join(dir, "sub", "f.txt")); err != nil || string(b) != "x\n" {
		t.Errorf("file written relative to dir: %q, %v", b, err)
	}
	// Each call starts afresh in dir.
	if got := mustRun(t, tool, "ls"); got != "sub\n" {
		t.Errorf("second call: ls gave %q", got)
	}

	missing := shell.Bash(shell.Dir(filepath.Join(dir, "missing")))
	if _, err := call(t, context.Background(), missing, shell.Args{Command: "true"}); err == nil {
		t.Error("missing working directory: no error")
	}
}

func TestEnv(t *testing.T) {
	t.Setenv("SHELL_TEST_INHERITED", "inherited")
	tool := shell.Bash(shell.Dir(t.TempDir()),
		shell.Env([]string{"SHELL_TEST_A=alpha", "SHELL_TEST_B=one"}),
		shell.Env([]string{"SHELL_TEST_B=two"}))
	got := mustRun(t, tool, `echo "$SHELL_TEST_A $SHELL_TEST_B $SHELL_TEST_INHERITED"`)
	if got != "alpha two inherited\n" {
		t.Errorf("got %q", got)
	}
}

func TestStdinIsEmpty(t *testing.T) {
	tool := shell.Bash(shell.Dir(t.TempDir()))
	if got := mustRun(t, tool, "cat"); got != "(no output)" {
		t.Errorf("cat: got %q", got)
	}
	if got := mustRun(t, tool, "read -r line; echo rc=$?"); got != "rc=1\n" {
		t.Errorf("read: got %q", got)
	}
}

func TestTimeoutKillsProcessGroup(t *testing.T) {
	dir := t.TempDir()
	tool := shell.Bash(shell.Dir(dir))
	pidFile := filepath.Join(dir, "gc.pid")
	out, err := call(t, context.Background(), tool, shell.Args{
		Command:        "echo ready; " + spawnGrandchild(pidFile) + "sleep 100",
		TimeoutSeconds: 1,
	})
	if !errors.Is(err, shell.ErrTimeout) {
		t.Fatalf("want ErrTimeout, got %q, %v", out, err)
	}
	if msg := err.Error(); !strings.HasPrefix(msg, "ready\n") || !strings.Contains(msg, "killed after 1s") {
		t.Errorf("error message %q", msg)
	}
	waitDead(t, readPID(t, pidFile))
}

func TestDefaultTimeoutOption(t *testing.T) {
	tool := shell.Bash(shell.Dir(t.TempDir()), shell.Timeout(300*time.Millisecond))
	_, err := call(t, context.Background(), tool, shell.Args{Command: "sleep 100"})
	if !errors.Is(err, shell.ErrTimeout) || !strings.Contains(err.Error(), "killed after 300ms") {
		t.Errorf("got %v", err)
	}
}

func TestMaxTimeoutClamps(t *testing.T) {
	tool := shell.Bash(shell.Dir(t.TempDir()), shell.Timeout(200*time.Millisecond), shell.MaxTimeout(time.Second))
	// The handler clamps a timeout above the maximum (the registry would reject it).
	_, err := call(t, context.Background(), tool, shell.Args{Command: "sleep 100", TimeoutSeconds: 3600})
	if !errors.Is(err, shell.ErrTimeout) || !strings.Contains(err.Error(), "killed after 1s") {
		t.Errorf("got %v", err)
	}
}

func TestContextCancellationKillsProcessGroup(t *testing.T) {
	dir := t.TempDir()
	tool := shell.Bash(shell.Dir(dir))
	pidFile := filepath.Join(dir, "gc.pid")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		// Cancel once the grandchild is running.
		deadline := time.Now().Add(guard)
		for time.Now().Before(deadline) {
			if b, err := os.ReadFile(pidFile); err == nil && len(b) > 0 {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		cancel()
	}()
	out, err := call(t, ctx, tool, shell.Args{Command: "echo ready; " + spawnGrandchild(pidFile) + "sleep 100"})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("want context.Canceled, got %q, %v", out, err)
	}
	if !strings.HasPrefix(err.Error(), "ready\n") {
		t.Errorf("error message %q lacks the output so far", err)
	}
	waitDead(t, readPID(t, pidFile))
}

func TestCancelledContextDoesNotRun(t *testing.T) {
	dir := t.TempDir()
	tool := shell.Bash(shell.Dir(dir))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := call(t, ctx, tool, shell.Args{Command: "touch ran"}); !errors.Is(err, context.Canceled) {
		t.Errorf("got %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "ran")); err == nil {
		t.Error("command ran with a cancelled context")
	}
}

func TestBackgroundChildKilledOnExit(t *testing.T) {
	dir := t.TempDir()
	tool := shell.Bash(shell.Dir(dir))
	pidFile := filepath.Join(dir, "bg.pid")
	if got := mustRun(t, tool, spawnGrandchild(pidFile)+"echo done"); got != "done\n" {
		t.Errorf("got %q", got)
	}
	waitDead(t, readPID(t, pidFile))
}

func TestEscapedGrandchildHoldingPipe(t *testing.T) {
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Fatal("this test needs setsid (Debian's util-linux): install it")
	}
	dir := t.TempDir()
	tool := shell.Bash(shell.Dir(dir))
	pidFile := filepath.Join(dir, "esc.pid")
	// setsid moves the grandchild out of the process group, so it survives the kill and
	// keeps stdout open; the call must return anyway (call fails the test after guard).
	cmd := fmt.Sprintf(`setsid bash -c 'echo $$ > %[1]s; exec sleep 100' & while [ ! -s %[1]s ]; do sleep 0.01; done; echo done`, pidFile)
	got := mustRun(t, tool, cmd)
	pid := readPID(t, pidFile)
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	if got != "done\n" {
		t.Errorf("got %q", got)
	}
}

var markerRe = regexp.MustCompile(`\n\[\.\.\. (\d+) bytes of output cut \.\.\.\]\n`)

func TestOutputCapKeepsHeadAndTail(t *testing.T) {
	const limit = 2048
	tool := shell.Bash(shell.Dir(t.TempDir()), shell.MaxOutput(limit))
	var full strings.Builder
	for i := 1; i <= 100000; i++ {
		fmt.Fprintf(&full, "%d\n", i)
	}
	for _, tc := range []struct{ command, status string }{
		{"seq 1 100000", ""},
		{"seq 1 100000; exit 2", "exit status 2"},
		{"seq 1 50000; seq 50001 100000 >&2; exit 2", "exit status 2"},
	} {
		got := mustRun(t, tool, tc.command)
		if len(got) > limit {
			t.Errorf("%q: %d bytes, cap %d", tc.command, len(got), limit)
		}
		if !strings.HasPrefix(got, "1\n2\n3\n") || !strings.HasSuffix(got, "99999\n100000\n"+tc.status) {
			t.Errorf("%q: head or tail missing:\n%s", tc.command, got)
		}
		m := markerRe.FindStringSubmatchIndex(got)
		if m == nil {
			t.Fatalf("%q: no marker in %q", tc.command, got)
		}
		cut, _ := strconv.Atoi(got[m[2]:m[3]])
		head, tail := got[:m[0]], strings.TrimSuffix(got[m[1]:], tc.status)
		if len(head)+cut+len(tail) != full.Len() || !strings.HasPrefix(full.String(), head) || !strings.HasSuffix(full.String(), tail) {
			t.Errorf("%q: head %d + cut %d + tail %d bytes does not make the %d-byte output", tc.command, len(head), cut, len(tail), full.Len())
		}
	}
	// Output that fits is untouched.
	if got := mustRun(t, tool, "seq 1 10"); got != "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n" {
		t.Errorf("short output: %q", got)
	}
}

func TestOutputIsValidUTF8(t *testing.T) {
	tool := shell.Bash(shell.Dir(t.TempDir()), shell.MaxOutput(1024))
	for _, command := range []string{
		`printf 'ok \xff\xfe done\n'`,
		`for i in $(seq 1 2000); do printf 'é'; done`, // cut inside multi-byte runes
	} {
		got := mustRun(t, tool, command)
		if !utf8.ValidString(got) || len(got) > 1024 {
			t.Errorf("%q: %d bytes, valid UTF-8 %v", command, len(got), utf8.ValidString(got))
		}
	}
}

func TestThroughRegistry(t *testing.T) {
	dir := t.TempDir()
	reg, err := tools.NewRegistry([]tools.Tool{shell.Bash(shell.Dir(dir), shell.MaxTimeout(5*time.Minute))})
	if err != nil {
		t.Fatal(err)
	}
	tool, ok := reg.Get("bash")
	if !ok || tool.Safe {
		t.Fatalf("tool: %+v, %v", tool, ok)
	}
	var schema struct {
		Required   []string `json:"required"`
		Properties map[string]struct {
			Maximum *int `json:"maximum"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(tool.Schema, &schema); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(schema.Required) != "[command]" || schema.Properties["timeout_seconds"].Maximum == nil || *schema.Properties["timeout_seconds"].Maximum != 300 {
		t.Errorf("schema %s", tool.Schema)
	}
	if g := reg.Guidance(); !strings.Contains(g, "## Tool: bash") || !strings.Contains(g, dir) || !strings.Contains(g, "not") {
		t.Errorf("guidance %q", g)
	}

	calls := []tools.Call{
		{ID: "1", Name: "bash", Args: json.RawMessage(`{"command":"echo hi"}`)},
		{ID: "2", Name: "bash", Args: json.RawMessage(`{"command":"echo oops >&2; exit 4","timeout_seconds":30}`)},
		{ID: "3", Name: "bash", Args: json.RawMessage(`{}`)},
		{ID: "4", Name: "bash", Args: json.RawMessage(`{"command":"true","timeout_seconds":301}`)},
		{ID: "5", Name: "bash", Args: json.RawMessage(`{"command":"true","cwd":"/"}`)},
		{ID: "6", Name: "bash", Args: json.RawMessage(`{"command":`)},
	}
	done := make(chan []tools.Result, 1)
	go func() { done <- reg.Run(context.Background(), calls) }()
	var res []tools.Result
	select {
	case res = <-done:
	case <-time.After(guard):
		t.Fatal("registry run did not return")
	}
	for i, want := range []struct {
		isErr    bool
		contains []string
	}{
		{false, []string{"hi\n"}},
		{false, []string{"oops\nexit status 4"}},
		{true, []string{"args.command: missing required property"}},
		{true, []string{"args.timeout_seconds", "maximum 300"}},
		{true, []string{"args.cwd: unknown property"}},
		{true, []string{"not valid JSON"}},
	} {
		r := res[i]
		if r.IsError != want.isErr {
			t.Errorf("call %s: IsError %v, content %q", r.CallID, r.IsError, r.Content)
		}
		for _, s := range want.contains {
			if !strings.Contains(r.Content, s) {
				t.Errorf("call %s: content %q lacks %q", r.CallID, r.Content, s)
			}
		}
	}
}

func TestBashMissing(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	tool := shell.Bash(shell.Dir(t.TempDir()))
	_, err := call(t, context.Background(), tool, shell.Args{Command: "echo hi"})
	if err == nil || !strings.Contains(err.Error(), "bash was not found") {
		t.Errorf("got %v", err)
	}
}
