package leaktest_test

import (
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/internal/leaktest"
)

// childEnv makes the test binary, run by TestVerifyTestMain, leak a goroutine in
// TestChildLeaks when it is "leak".
const childEnv = "LEAKTEST_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		leaktest.SetGrace(50 * time.Millisecond)
	}
	leaktest.VerifyTestMain(m)
}

// fakeT is a testing.TB that keeps its errors and cleanups.
type fakeT struct {
	testing.TB
	errs     []string
	cleanups []func()
}

func (f *fakeT) Helper()           {}
func (f *fakeT) Cleanup(fn func()) { f.cleanups = append(f.cleanups, fn) }
func (f *fakeT) Errorf(format string, args ...any) {
	f.errs = append(f.errs, fmt.Sprintf(format, args...))
}

// cleanup runs f's cleanups, the last registered first, as testing does.
func (f *fakeT) cleanup() {
	for i := len(f.cleanups) - 1; i >= 0; i-- {
		f.cleanups[i]()
	}
}

// blockUntil is the function a leaked goroutine of these tests sits in.
func blockUntil(release chan struct{}) { <-release }

func TestCheckNamesALeakedGoroutine(t *testing.T) {
	leaktest.ShortGrace(t, 50*time.Millisecond)
	release := make(chan struct{})
	defer close(release)
	ft := &fakeT{}
	check := leaktest.Check(ft)
	go blockUntil(release)
	check()
	require.Len(t, ft.errs, 1)
	assert.Contains(t, ft.errs[0], "goroutines left running")
	assert.Contains(t, ft.errs[0], "leaktest_test.blockUntil", "the error shows the leaked goroutine's stack")

	ft.cleanup()
	assert.Len(t, ft.errs, 1, "a check that ran does not run again at cleanup")
}

func TestCheckAtCleanup(t *testing.T) {
	leaktest.ShortGrace(t, 50*time.Millisecond)
	release := make(chan struct{})
	defer close(release)
	ft := &fakeT{}
	leaktest.Check(ft)
	go blockUntil(release)
	require.Empty(t, ft.errs, "nothing is checked before the cleanups")
	ft.cleanup()
	require.Len(t, ft.errs, 1)
	assert.Contains(t, ft.errs[0], "leaktest_test.blockUntil")
}

func TestCheckPassesWithoutLeaks(t *testing.T) {
	before := make(chan struct{})
	defer close(before)
	go blockUntil(before) // running before the check began: not the test's leak

	ft := &fakeT{}
	check := leaktest.Check(ft)
	release := make(chan struct{})
	go blockUntil(release)
	close(release) // it ends, maybe only while the check waits
	c := make(chan os.Signal, 1)
	signal.Notify(c, os.Interrupt) // the signal handler's goroutines are the runtime's
	defer signal.Stop(c)
	check()
	ft.cleanup()
	assert.Empty(t, ft.errs)
}

// TestChildLeaks leaks a goroutine when run by TestVerifyTestMain.
func TestChildLeaks(t *testing.T) {
	if os.Getenv(childEnv) == "leak" {
		go blockUntil(make(chan struct{}))
	}
}

// TestVerifyTestMain runs this test binary's TestChildLeaks: the binary fails, naming the
// goroutine, when the test leaks it, and passes when it does not.
func TestVerifyTestMain(t *testing.T) {
	for _, mode := range []string{"leak", "none"} {
		t.Run(mode, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestChildLeaks$")
			cmd.Env = append(os.Environ(), childEnv+"="+mode)
			out, err := cmd.CombinedOutput()
			if mode == "none" {
				require.NoError(t, err, "%s", out)
				return
			}
			var exit *exec.ExitError
			require.ErrorAs(t, err, &exit, "%s", out)
			assert.Equal(t, 1, exit.ExitCode())
			assert.Contains(t, string(out), "leaktest: goroutines left running after the tests")
			assert.Contains(t, string(out), "leaktest_test.blockUntil")
		})
	}
}
