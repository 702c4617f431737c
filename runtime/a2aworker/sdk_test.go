package a2aworker_test

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/internal/clitest"
	"github.com/agiraph/agiraph/runtime/a2aworker"
)

// TestSDKAgent runs an assignment on a remote agent built on the official SDK (@a2a-js/sdk,
// testdata/agent.mjs), one that speaks A2A 1.0 and one that speaks 0.3: its question comes
// back as the worker's, and the answer finishes the task, whose artifact is published.
func TestSDKAgent(t *testing.T) {
	for _, version := range []string{"1.0", "0.3"} {
		t.Run(version, func(t *testing.T) { yearAsked(t, a2aworker.New(sdkAgent(t, version))) })
	}
}

// sdkAgent starts the SDK's agent, speaking version, and returns its URL.
func sdkAgent(t *testing.T, version string) string {
	dist := filepath.Join(clitest.A2ASDK.Dir(t), "dist")
	node, err := exec.LookPath("node")
	require.NoError(t, err, "node runs the SDK's agent")
	cmd := exec.Command(node, filepath.Join("testdata", "agent.mjs"))
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "A2A_SDK_DIST=" + dist, "A2A_VERSION=" + version}
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	sc := bufio.NewScanner(out)
	require.True(t, sc.Scan(), "the agent prints its URL")
	return sc.Text()
}
