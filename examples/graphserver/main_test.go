package main

import (
	"bufio"
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/internal/clitest"
)

// TestClients serves the notes graph as the command does and runs the clients of
// docs/serve-a-graph.md against it: the official LangGraph SDK and the official A2A SDK.
func TestClients(t *testing.T) {
	lgSDK := filepath.Join(clitest.LangGraphSDK.Dir(t), "dist", "index.js")
	a2aSDK := filepath.Join(clitest.A2ASDK.Dir(t), "dist", "client", "index.js")
	clitest.RunScripts(t, func(t *testing.T) []string {
		base, token := serve(t)
		return []string{"SERVER_URL=" + base, "LANGGRAPH_URL=" + base + "/langgraph", "TOKEN=" + token,
			"LANGGRAPH_SDK=" + lgSDK, "A2A_SDK=" + a2aSDK}
	})
}

// serve runs the command on a free port until the test ends, and returns its URL and token.
func serve(t *testing.T) (base, token string) {
	ctx, cancel := context.WithCancel(context.Background())
	out, w := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"-addr", "127.0.0.1:0", "-root", t.TempDir()}, w)
		w.Close()
	}()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	lines := bufio.NewScanner(out)
	for token == "" && lines.Scan() {
		name, value, _ := strings.Cut(lines.Text(), ":")
		value = strings.TrimSpace(value)
		switch name {
		case "A2A agent":
			base = strings.TrimSuffix(value, "/.well-known/agent-card.json")
		case "token":
			token = value
		}
	}
	require.NotEmpty(t, token, "the command printed no token")
	go func() { _, _ = io.Copy(io.Discard, out) }()
	return base, token
}
