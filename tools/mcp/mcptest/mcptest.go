// Package mcptest serves a small MCP server for tests of the code that connects to one: a fact
// server over streamable HTTP, written with the official SDK, that counts its sessions.
package mcptest

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// LookupArgs are the arguments of the fact server's lookup tool.
type LookupArgs struct {
	Key string `json:"key" jsonschema:"what to look up"`
}

// Facts is a running fact server.
type Facts struct {
	// URL is its endpoint.
	URL    string
	server *sdk.Server
	closed atomic.Int32
}

// NewFacts serves, until the test ends, an MCP server with one tool, lookup, which answers
// "the fact about <key> is 42". A session a client left open when the test ends is cut (the
// test fails rather than hangs).
func NewFacts(t testing.TB) *Facts {
	t.Helper()
	f := &Facts{server: sdk.NewServer(&sdk.Implementation{Name: "facts", Version: "1"}, nil)}
	sdk.AddTool(f.server, &sdk.Tool{Name: "lookup", Description: "Look a fact up."},
		func(_ context.Context, _ *sdk.CallToolRequest, a LookupArgs) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "the fact about " + a.Key + " is 42"}}}, nil, nil
		})
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return f.server }, nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodDelete {
			f.closed.Add(1)
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
	})
	f.URL = srv.URL
	return f
}

// Open returns how many sessions are open.
func (f *Facts) Open() int {
	n := 0
	for range f.server.Sessions() {
		n++
	}
	return n
}

// Closed returns how many sessions their clients closed (the DELETE a client sends when it
// closes one).
func (f *Facts) Closed() int { return int(f.closed.Load()) }
