package testenv_test

import (
	"os"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/internal/testenv"
)

// childEnv, set, makes TestChild the test that a parent runs in a child process.
const childEnv = "TESTENV_CHILD"

// TestChild is the test the other tests run in a child process: it needs "a thing", which is missing.
func TestChild(t *testing.T) {
	if os.Getenv(childEnv) == "" {
		t.Skip("run by the other tests of this package in a child process")
	}
	testenv.Need(t, "a thing")
	testenv.Missing(t, "a thing is not installed (install it)")
}

// child runs TestChild in this test binary with args and the environment env, and returns its
// output and whether it passed.
func child(t *testing.T, env []string, args ...string) (string, bool) {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(exe, append([]string{"-test.run=^TestChild$", "-test.v"}, args...)...)
	cmd.Env = append(os.Environ(), append([]string{childEnv + "=1"}, env...)...)
	out, err := cmd.CombinedOutput()
	return string(out), err == nil
}

func TestShortSkipsEvenUnderCI(t *testing.T) {
	out, ok := child(t, []string{"CI=true"}, "-test.short")
	assert.True(t, ok, out)
	assert.Contains(t, out, "--- SKIP: TestChild")
	assert.Contains(t, out, "needs a thing: run go test without -short")
}

func TestMissingSkips(t *testing.T) {
	out, ok := child(t, []string{"CI="})
	assert.True(t, ok, out)
	assert.Contains(t, out, "--- SKIP: TestChild")
	assert.Contains(t, out, "a thing is not installed (install it)")
}

func TestMissingFailsUnderCI(t *testing.T) {
	out, ok := child(t, []string{"CI=true"})
	assert.False(t, ok, out)
	assert.Contains(t, out, "--- FAIL: TestChild")
	assert.Contains(t, out, "a thing is not installed (install it)")
}
