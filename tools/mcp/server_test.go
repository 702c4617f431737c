package mcp_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agiraph/agiraph/internal/leaktest"
	"github.com/agiraph/agiraph/tools/mcp"
)

// serverEnv makes the test binary an MCP server over stdio instead of running the tests; its
// value is the server's behaviour (see serve).
const serverEnv = "AGIRAPH_MCPTEST_SERVER"

// markEnv carries a test's own mark into the server's environment, and into what it starts.
const markEnv = "AGIRAPH_MCPTEST_MARK"

func TestMain(m *testing.M) {
	if mode := os.Getenv(serverEnv); mode != "" {
		serve(mode)
		os.Exit(0)
	}
	leaktest.VerifyTestMain(m)
}

// serve runs the test server over stdin and stdout:
//   - "tools": the tools of newServer, and crash, which makes the process exit mid-call;
//   - "hang": a process that never answers;
//   - "exit": a process that complains on stderr and exits with status 2;
//   - "badschema": a server whose tool's schema names a type JSON Schema does not have.
func serve(mode string) {
	switch mode {
	case "hang":
		time.Sleep(time.Hour)
		return
	case "exit":
		fmt.Fprintln(os.Stderr, "boom: no configuration file")
		os.Exit(2)
	}
	s := newServer(nil)
	switch mode {
	case "tools":
		sdk.AddTool(s, &sdk.Tool{Name: "crash", Description: "Exit in the middle of the call."},
			func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
				fmt.Fprintln(os.Stderr, "crashing now")
				os.Exit(3)
				return nil, nil, nil
			})
	case "badschema":
		s.AddTool(&sdk.Tool{Name: "odd", InputSchema: map[string]any{
			"type": "object", "properties": map[string]any{"x": map[string]any{"type": "anything"}},
		}}, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) { return nil, nil })
	}
	_ = s.Run(context.Background(), &sdk.StdioTransport{})
}

// EchoArgs are the arguments of the test server's echo tool.
type EchoArgs struct {
	Text string `json:"text" jsonschema:"the text to say back"`
}

// BigArgs are the arguments of the test server's big tool.
type BigArgs struct {
	N int `json:"n" jsonschema:"how many bytes to answer"`
}

// testTools are the tools of newServer, as a client lists them (sorted by name).
var testTools = []string{"big", "echo", "fail", "mixed", "sleep", "spawn"}

// newServer returns the test server, which answers two tools a page:
//   - echo says its text back (read-only);
//   - fail answers with an error result;
//   - sleep answers when the call is cancelled, or once released is closed;
//   - mixed answers text, an image, audio, a resource link and an embedded resource;
//   - big answers n bytes;
//   - spawn starts `sleep 300` and answers its PID.
func newServer(released <-chan struct{}) *sdk.Server {
	s := sdk.NewServer(&sdk.Implementation{Name: "test", Version: "1"}, &sdk.ServerOptions{PageSize: 2})
	text := func(s string) *sdk.CallToolResult {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: s}}}
	}
	sdk.AddTool(s, &sdk.Tool{Name: "echo", Description: "Say the text back.", Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, _ *sdk.CallToolRequest, a EchoArgs) (*sdk.CallToolResult, any, error) {
			return text("echo: " + a.Text), nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "fail", Description: "Fail."},
		func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
			r := text("the disk is full")
			r.IsError = true
			return r, nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "sleep", Description: "Answer when cancelled."},
		func(ctx context.Context, _ *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
			select {
			case <-ctx.Done():
			case <-released:
			}
			return text("cancelled"), nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "mixed", Description: "Answer every kind of content."},
		func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{
				&sdk.TextContent{Text: "a picture:"},
				&sdk.ImageContent{MIMEType: "image/png", Data: make([]byte, 1234)},
				&sdk.AudioContent{MIMEType: "audio/wav", Data: make([]byte, 10)},
				&sdk.ResourceLink{URI: "file:///notes.md", Name: "notes", MIMEType: "text/markdown"},
				&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "file:///a.txt", MIMEType: "text/plain", Text: "embedded text"}},
			}}, nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "big", Description: "Answer n bytes."},
		func(_ context.Context, _ *sdk.CallToolRequest, a BigArgs) (*sdk.CallToolResult, any, error) {
			return text(strings.Repeat("x", a.N)), nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "spawn", Description: "Start a process that outlives the call."},
		func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
			cmd := exec.Command("sleep", "300")
			if err := cmd.Start(); err != nil {
				return nil, nil, err
			}
			return text(fmt.Sprint(cmd.Process.Pid)), nil, nil
		})
	return s
}

// stdio returns the test server over stdio, behaving as mode, its processes marked with mark.
func stdio(t *testing.T, mode, mark string) mcp.Server {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// A binary built with -race sleeps a second as it exits, unless told not to.
	env := []string{serverEnv + "=" + mode, markEnv + "=" + mark, "GORACE=atexit_sleep_ms=0"}
	return mcp.Server{Name: "t", Command: []string{exe}, Env: env}
}

// overHTTP serves the test server over streamable HTTP for the test, refusing requests
// without "Authorization: Bearer s3cret", and returns its endpoint.
func overHTTP(t *testing.T) string {
	t.Helper()
	released := make(chan struct{})
	s := newServer(released)
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer s3cret" {
			http.Error(w, "who are you?", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	// The server closes a session once its calls have returned, and a call of sleep may not
	// have heard that the client cancelled it when the client closes the session.
	t.Cleanup(func() { close(released) })
	return srv.URL + "/mcp"
}
