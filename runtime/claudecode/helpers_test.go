package claudecode_test

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agiraph/agiraph/internal/clitest"
	"github.com/agiraph/agiraph/internal/leaktest"
	"github.com/agiraph/agiraph/runtime"
	"github.com/agiraph/agiraph/runtime/claudecode"
	"github.com/agiraph/agiraph/sandbox"
)

func TestMain(m *testing.M) { leaktest.VerifyTestMain(m) }

// claudeVersions are the Claude Code releases the tests run, the newest first: every real-CLI
// test runs the newest; TestRealCLI runs them all (2.1.197 printed fractional retry delays).
var claudeVersions = []clitest.Package{clitest.Claude, clitest.Claude197}

// claudeBinary returns the newest real CLI the tests run: $CLAUDE_BIN, or the copy in
// <repo>/.cache/claude-code that .ci/run installs.
func claudeBinary(t *testing.T) string {
	t.Helper()
	return clitest.Claude.Bin(t, "claude", "CLAUDE_BIN")
}

// fakeCLI writes a shell script standing in for claude and returns its path.
func fakeCLI(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "claude")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// assignment returns an assignment with a fresh node folder.
func assignment(t *testing.T, task string) runtime.Assignment {
	t.Helper()
	dir := runtime.NodeDir(filepath.Join(t.TempDir(), "node"))
	if err := dir.Create(); err != nil {
		t.Fatal(err)
	}
	return runtime.Assignment{ID: "a1", Run: "r1", Node: "n1", Worker: "ada", Task: task, System: "You are Ada, a careful analyst.", Dir: dir}
}

// recorder collects events and fails the test if the sink is ever called concurrently.
type recorder struct {
	t      *testing.T
	mu     sync.Mutex
	events []runtime.Event
	inside atomic.Int32
}

func newRecorder(t *testing.T) *recorder { return &recorder{t: t} }

func (r *recorder) sink(e runtime.Event) {
	if r.inside.Add(1) != 1 {
		r.t.Errorf("the sink was called concurrently (event %s)", e.Kind)
	}
	defer r.inside.Add(-1)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

func (r *recorder) all() []runtime.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]runtime.Event(nil), r.events...)
}

func (r *recorder) of(k runtime.Kind) []runtime.Event {
	var out []runtime.Event
	for _, e := range r.all() {
		if e.Kind == k {
			out = append(out, e)
		}
	}
	return out
}

func (r *recorder) kinds() string {
	var ks []string
	for _, e := range r.all() {
		ks = append(ks, string(e.Kind))
	}
	return strings.Join(ks, " ")
}

// waitFile polls until path exists and returns its content.
func waitFile(t *testing.T, path string) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if b, err := os.ReadFile(path); err == nil && len(b) > 0 {
			return string(b)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not appear", path)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// assertGone fails unless the processes of the run that wrote pidFile have ended: every live
// process whose environment carries PIDDIR=<pidFile's folder> (the tests give the fake CLI
// that variable, and everything it starts inherits it). It reads /proc, which shows the
// processes of every PID namespace of this one, so it finds them whether the CLI ran in a
// namespace of its own or not.
func assertGone(t *testing.T, pidFile string) {
	t.Helper()
	waitFile(t, pidFile) // the CLI got that far
	want := "\x00PIDDIR=" + filepath.Dir(pidFile) + "\x00"
	left := func() []string {
		var pids []string
		entries, _ := os.ReadDir("/proc")
		for _, e := range entries {
			env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
			if err != nil || !strings.Contains("\x00"+string(env), want) {
				continue
			}
			if stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); err == nil && !strings.Contains(string(stat), ") Z ") {
				pids = append(pids, e.Name())
			}
		}
		return pids
	}
	for deadline := time.Now().Add(10 * time.Second); len(left()) > 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("processes %v of the run that wrote %s are still running", left(), pidFile)
		}
	}
}

func eq[T comparable](t *testing.T, what string, got, want T) {
	t.Helper()
	if got != want {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
}

func contains(t *testing.T, what, s, sub string) {
	t.Helper()
	if !strings.Contains(s, sub) {
		t.Errorf("%s does not contain %q:\n%s", what, sub, s)
	}
}

// beside copies the file at path into a temporary folder of the test, where a fake CLI (in
// another temporary folder of the test) sees it in its sandbox, and returns the copy's path.
func beside(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), filepath.Base(path))
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// writable lets the CLI write dir besides what its sandbox allows (a fake CLI's pid files).
func writable(dir string) claudecode.Option {
	return claudecode.WithSandbox(func(_ runtime.Assignment, p sandbox.Policy) sandbox.Policy {
		p.Writable = append(p.Writable, dir)
		return p
	})
}
