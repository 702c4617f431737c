package a2a_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/internal/clitest"
	"github.com/agiraph/agiraph/nodes/demo"
	"github.com/agiraph/agiraph/server/host"
)

// TestSDK runs the scripts of testdata, each a user of the official client (@a2a-js/sdk)
// against a server of its own, whose agents are ready: "ada" and "asker" (whose squad asks the
// human) done with their first run, "slow" at work on its first.
func TestSDK(t *testing.T) {
	sdk := filepath.Join(clitest.A2ASDK.Dir(t), "dist", "client", "index.js")
	node, err := exec.LookPath("node")
	require.NoError(t, err, "node runs the SDK's scripts")
	scripts, err := filepath.Glob(filepath.Join("testdata", "*.mjs"))
	require.NoError(t, err)
	for _, script := range scripts {
		name := strings.TrimSuffix(filepath.Base(script), ".mjs")
		if name == "lib" {
			continue
		}
		t.Run(name, func(t *testing.T) {
			f := start(t, "")
			f.agent("ada")
			f.agent("asker")
			_, err := f.srv.Host().Create("slow", "Research the history of the kite.", "", "")
			require.NoError(t, err)
			f.await("slow", host.StatusWorking)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, node, script)
			cmd.Env = []string{
				"PATH=" + os.Getenv("PATH"),
				"HOME=" + t.TempDir(),
				"A2A_URL=" + f.ts.URL,
				"A2A_TOKEN=" + f.srv.Token(),
				"A2A_SDK=" + sdk,
				"A2A_QUESTION=" + demo.HumanQuestion,
			}
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, "%s:\n%s", script, out)
		})
	}
}
