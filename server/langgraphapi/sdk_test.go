package langgraphapi_test

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
)

// TestSDK runs the scripts of testdata, each a user of the official client
// (@langchain/langgraph-sdk) against a server of its own.
func TestSDK(t *testing.T) {
	sdk := filepath.Join(clitest.LangGraphSDK.Dir(t), "dist", "index.js")
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
			a := newAPI(t)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, node, script)
			cmd.Env = []string{
				"PATH=" + os.Getenv("PATH"),
				"HOME=" + t.TempDir(),
				"LANGGRAPH_API_URL=" + a.url,
				"LANGGRAPH_SDK=" + sdk,
			}
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, "%s:\n%s", script, out)
		})
	}
}
