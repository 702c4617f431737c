package a2a_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/checkpoint"
	"github.com/agiraph/agiraph/internal/clitest"
	"github.com/agiraph/agiraph/nodes/demo"
	"github.com/agiraph/agiraph/server/host"
)

// TestSDK runs the scripts of testdata, each a user of the official client (@a2a-js/sdk)
// against a server of its own, whose agents are ready: "ada" and "asker" (whose squad asks the
// human) done with their first run, "slow" at work on its first; and against the story graph
// served as an agent (A2A_GRAPH_URL).
func TestSDK(t *testing.T) {
	sdk := filepath.Join(clitest.A2ASDK.Dir(t), "dist", "client", "index.js")
	clitest.RunScripts(t, func(t *testing.T) []string {
		f := start(t, "", privatePush)
		f.agent("ada")
		f.agent("asker")
		_, err := f.srv.Host().Create("slow", "Research the history of the kite.", "", "")
		require.NoError(t, err)
		f.await("slow", host.StatusWorking)
		g := startGraph(t, checkpoint.NewMemory())
		return []string{
			"A2A_GRAPH_URL=" + g.ts.URL + "/a2a/story/",
			"A2A_URL=" + f.ts.URL,
			"A2A_TOKEN=" + f.srv.Token(),
			"A2A_SDK=" + sdk,
			"A2A_QUESTION=" + demo.HumanQuestion,
		}
	})
}
