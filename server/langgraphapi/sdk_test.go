package langgraphapi_test

import (
	"path/filepath"
	"testing"

	"github.com/agiraph/agiraph/internal/clitest"
)

// TestSDK runs the scripts of testdata, each a user of the official client
// (@langchain/langgraph-sdk) against a server of its own.
func TestSDK(t *testing.T) {
	sdk := filepath.Join(clitest.LangGraphSDK.Dir(t), "dist", "index.js")
	clitest.RunScripts(t, func(t *testing.T) []string {
		a := newAPI(t)
		return []string{"LANGGRAPH_API_URL=" + a.url, "LANGGRAPH_SDK=" + sdk}
	})
}
