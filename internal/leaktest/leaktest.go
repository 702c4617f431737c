// Package leaktest fails a test, or a whole test binary, that leaves goroutines running: those
// that were not there when the check began and are still there after a grace period. Goroutines
// that the runtime and the testing package run for themselves (a test waiting for its subtests,
// the signal handler) are not leaks.
//
// It is for tests only and imports nothing outside the standard library.
package leaktest

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// grace is how long a check waits for new goroutines to end before it calls them leaked.
var grace = 5 * time.Second

// VerifyTestMain runs the tests and, when they pass, fails the binary if goroutines started
// while they ran are still running after the grace period, printing their stacks. Call it from
// TestMain; it does not return.
func VerifyTestMain(m *testing.M) {
	before := ids()
	code := m.Run()
	if code == 0 {
		if left := leaks(before); left != "" {
			fmt.Fprintf(os.Stderr, "leaktest: goroutines left running after the tests:\n\n%s\n", left)
			code = 1
		}
	}
	os.Exit(code)
}

// Check records the goroutines running now and fails t, naming the stacks of the goroutines
// started since that are still running after the grace period. The check runs when t's
// cleanups run, or earlier when the function it returns is called, as in
//
//	defer leaktest.Check(t)()
//
// which checks before the test's cleanups (a cancelled context, a closed server) run.
func Check(t testing.TB) func() {
	t.Helper()
	before := ids()
	var checked atomic.Bool
	check := func() {
		t.Helper()
		if checked.Swap(true) {
			return
		}
		if left := leaks(before); left != "" {
			t.Errorf("leaktest: goroutines left running:\n\n%s", left)
		}
	}
	t.Cleanup(check)
	return check
}

// goroutine is one goroutine of a runtime.Stack dump.
type goroutine struct {
	id    string
	state string // "chan receive", "syscall, locked to thread"
	top   string // the function at the top of the stack, without arguments
	stack string // the whole block, header included
}

// dump returns the running goroutines, the caller's first.
func dump() []goroutine {
	buf := make([]byte, 64<<10)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var gs []goroutine
	for block := range strings.SplitSeq(strings.TrimSpace(string(buf)), "\n\n") {
		header, body, _ := strings.Cut(block, "\n") // goroutine 7 [chan receive]:
		g := goroutine{stack: block}
		if f := strings.Fields(header); len(f) > 1 {
			g.id = f[1]
		}
		if i, j := strings.IndexByte(header, '['), strings.LastIndexByte(header, ']'); i >= 0 && j > i {
			g.state = header[i+1 : j]
		}
		top, _, _ := strings.Cut(body, "\n")
		if i := strings.LastIndexByte(top, '('); i > 0 {
			top = top[:i]
		}
		g.top = top
		gs = append(gs, g)
	}
	return gs
}

// ids returns the IDs of the running goroutines.
func ids() map[string]bool {
	m := map[string]bool{}
	for _, g := range dump() {
		m[g.id] = true
	}
	return m
}

// leaks waits up to the grace period for the goroutines not in before, but the caller's and
// those of the runtime and the testing package, to end; it returns the stacks of those left,
// or "".
func leaks(before map[string]bool) string {
	deadline := time.Now().Add(grace)
	for wait := time.Millisecond; ; wait = min(2*wait, 100*time.Millisecond) {
		var left []string
		for i, g := range dump() {
			if i > 0 && !before[g.id] && !ignored(g) {
				left = append(left, g.stack)
			}
		}
		if len(left) == 0 || time.Now().After(deadline) {
			return strings.Join(left, "\n\n")
		}
		time.Sleep(wait)
	}
}

// ignored reports whether g is one the runtime or the testing package runs for itself.
func ignored(g goroutine) bool {
	switch g.top {
	case "testing.RunTests", "testing.(*T).Run", "testing.(*T).Parallel", "testing.runFuzzing", "testing.runFuzzTests":
		return strings.HasPrefix(g.state, "chan receive") // waiting for tests to end
	case "os/signal.signal_recv", "os/signal.loop", "runtime.ReadTrace":
		return true
	case "runtime.goexit":
		return strings.HasPrefix(g.state, "syscall") // a thread cgo made
	}
	return strings.Contains(g.stack, "runtime.ensureSigM") // signal.Notify's
}
