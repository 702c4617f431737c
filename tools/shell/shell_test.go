//go:build unix

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
	"sync/atomic"
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

// tagCounter makes sleep durations no other process uses, to find a test's processes by.
var tagCounter atomic.Int64

// newTag returns a sleep duration ("100.000123") unique to this test binary's run.
func newTag() string {
	return fmt.Sprintf("100.%06d%d", tagCounter.Add(1), os.Getpid()%1000)
}

// sleeping reports whether a live process runs `sleep tag`. It reads /proc, which shows the
// processes of every PID namespace of this one, so it finds a command's children whether the
// command ran in a namespace of its own or not.
func sleeping(tag string) bool {
	want := "sleep\x00" + tag + "\x00"
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !strings.Contains(string(cmdline), want) {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err == nil && !strings.Contains(string(stat), ") Z ") { // a zombie is dead
			return true
		}
	}
	return false
}

// waitGone fails the test unless no process runs `sleep tag` within guard.
func waitGone(t *testing.T, tag string) {
	t.Helper()
	for deadline := time.Now().Add(guard); sleeping(tag); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("sleep %s still runs %s after the call returned", tag, guard)
		}
	}
}

// waitFile waits for path to exist.
func waitFile(t *testing.T, path string) {
	t.Helper()
	for deadline := time.Now().Add(guard); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s after %s", path, guard)
		}
	}
}

// spawnGrandchild is a shell fragment that starts a background grandchild running `sleep
// tag`, which creates file, and waits until it has.
func spawnGrandchild(file, tag string) string {
	return fmt.Sprintf(`bash -c 'touch %[1]s; exec sleep %[2]s' & while [ ! -e %[1]s ]; do sleep 0.01; done; `, file, tag)
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
	} {
		if got := mustRun(t, tool, tc.command); got != tc.want {
			t.Errorf("%q: got %q, want %q", tc.command, got, tc.want)
		}
	}
	// Killed by a signal: in a PID namespace, bwrap reports it as the shell would, 128+N.
	if got := mustRun(t, tool, "kill -9 $$"); got != "terminated by signal SIGKILL" && got != "exit status 137" {
		t.Errorf("kill -9: got %q", got)
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
	started, tag := filepath.Join(dir, "started"), newTag()
	out, err := call(t, context.Background(), tool, shell.Args{
		Command:        "echo ready; " + spawnGrandchild(started, tag) + "sleep 100",
		TimeoutSeconds: 1,
	})
	if !errors.Is(err, shell.ErrTimeout) {
		t.Fatalf("want ErrTimeout, got %q, %v", out, err)
	}
	if msg := err.Error(); !strings.HasPrefix(msg, "ready\n") || !strings.Contains(msg, "killed after 1s") {
		t.Errorf("error message %q", msg)
	}
	waitGone(t, tag)
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
	started, tag := filepath.Join(dir, "started"), newTag()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		waitFile(t, started) // cancel once the grandchild is running
		cancel()
	}()
	out, err := call(t, ctx, tool, shell.Args{Command: "echo ready; " + spawnGrandchild(started, tag) + "sleep 100"})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("want context.Canceled, got %q, %v", out, err)
	}
	if !strings.HasPrefix(err.Error(), "ready\n") {
		t.Errorf("error message %q lacks the output so far", err)
	}
	waitGone(t, tag)
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
	tag := newTag()
	if got := mustRun(t, tool, spawnGrandchild(filepath.Join(dir, "started"), tag)+"echo done"); got != "done\n" {
		t.Errorf("got %q", got)
	}
	waitGone(t, tag)
}

// A command's children are killed with it however they try to escape: nohup, a session of
// their own (setsid), a double fork into one. The one holding the output pipe does not hold
// the call either.
func TestEscapesAreKilled(t *testing.T) {
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Fatal("this test needs setsid (Debian's util-linux): install it")
	}
	dir := t.TempDir()
	tool := shell.Bash(shell.Dir(dir))
	tags := []string{newTag(), newTag(), newTag(), newTag()}
	cmd := fmt.Sprintf(`nohup sleep %s >/dev/null 2>&1 & setsid sleep %s & (setsid bash -c 'sleep %s &' &) ; setsid bash -c 'exec sleep %s' & while ! pgrep -f "sleep %[4]s" >/dev/null; do sleep 0.01; done; echo done`, tags[0], tags[1], tags[2], tags[3])
	if got := mustRun(t, tool, cmd); got != "done\n" {
		t.Errorf("got %q", got)
	}
	for _, tag := range tags {
		waitGone(t, tag)
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
