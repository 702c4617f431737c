package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/tools"
	"github.com/agiraph/agiraph/tools/files"
	"github.com/agiraph/agiraph/tools/mcp"
)

type noteArgs struct {
	Text string `json:"text" jsonschema:"required,description=what to note"`
}

// An endpoint offers tools to an MCP client — here this package's own — with their schemas,
// checks arguments, reports failures as error results, and answers only with its token and Host.
func TestServeOffersTools(t *testing.T) {
	t.Parallel()
	var noted []string
	ts := []tools.Tool{
		tools.Func("note", "Note a line.", func(_ context.Context, a noteArgs) (string, error) {
			noted = append(noted, a.Text)
			return "noted: " + a.Text, nil
		}, tools.WithGuidance("Note what matters.")),
		tools.Func("fail", "Always fails.", func(context.Context, struct{}) (string, error) {
			return "", errors.New("it failed, as it always does")
		}),
	}
	e, err := mcp.Serve("work", ts)
	require.NoError(t, err)
	defer e.Close()
	assert.True(t, strings.HasPrefix(e.URL, "http://127.0.0.1:"))
	var cfg struct {
		MCPServers map[string]struct {
			Type, URL string
			Headers   map[string]string
		} `json:"mcpServers"`
	}
	require.NoError(t, json.Unmarshal(e.Config("agiraph"), &cfg))
	assert.Equal(t, "http", cfg.MCPServers["agiraph"].Type)
	assert.Equal(t, e.URL, cfg.MCPServers["agiraph"].URL)
	assert.Equal(t, "Bearer "+e.Token, cfg.MCPServers["agiraph"].Headers["Authorization"])

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	set, err := mcp.Connect(ctx, mcp.Server{Name: "work", URL: e.URL, Headers: map[string]string{"Authorization": "Bearer " + e.Token}})
	require.NoError(t, err)
	defer set.Close()
	byName := map[string]tools.Tool{}
	for _, tool := range set.Tools() {
		byName[tool.Name] = tool
	}
	note, ok := byName[mcp.ToolName("work", "note")]
	require.True(t, ok, "tools: %v", byName)
	assert.Contains(t, note.Description, "Note what matters.")
	assert.Contains(t, string(note.Schema), `"text"`)

	out, err := note.Handler(ctx, json.RawMessage(`{"text":"hello"}`))
	require.NoError(t, err)
	assert.Equal(t, "noted: hello", out)
	assert.Equal(t, []string{"hello"}, noted)
	_, err = note.Handler(ctx, json.RawMessage(`{"text": 3}`))
	require.Error(t, err, "arguments against the schema were taken")
	_, err = byName[mcp.ToolName("work", "fail")].Handler(ctx, json.RawMessage(`{}`))
	require.ErrorContains(t, err, "it failed, as it always does")

	for _, c := range []struct {
		header, host string
		want         int
	}{
		{"", "", http.StatusUnauthorized},
		{"Bearer wrong", "", http.StatusUnauthorized},
		{"Bearer " + e.Token, "evil.example:80", http.StatusForbidden},
	} {
		req, err := http.NewRequest("POST", e.URL, strings.NewReader(`{}`))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		if c.header != "" {
			req.Header.Set("Authorization", c.header)
		}
		if c.host != "" {
			req.Host = c.host
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, c.want, resp.StatusCode, "%+v", c)
	}

	require.NoError(t, e.Close())
	_, err = mcp.Connect(ctx, mcp.Server{Name: "work", URL: e.URL, Headers: map[string]string{"Authorization": "Bearer " + e.Token}, InitTimeout: 5 * time.Second})
	require.Error(t, err, "a closed endpoint answered")
}

// bearer sends requests with a token.
type bearer string

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(b))
	return http.DefaultTransport.RoundTrip(r)
}

// session serves ts and returns a session of a client connected to the endpoint; both end with
// the test.
func session(ctx context.Context, t *testing.T, ts []tools.Tool) *sdk.ClientSession {
	t.Helper()
	e, err := mcp.Serve("work", ts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = e.Close() })
	client := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: e.URL, HTTPClient: &http.Client{Transport: bearer(e.Token)}}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// A call's ID, in the handler, is the model's id of the call that the client gives in _meta
// (as Claude Code does), and empty without one: each call has its own, never one shared by all.
func TestServeCallID(t *testing.T) {
	t.Parallel()
	var ids []string
	note := tools.Func("note", "Note a line.", func(ctx context.Context, a noteArgs) (string, error) {
		c, ok := tools.CallFrom(ctx)
		require.True(t, ok)
		ids = append(ids, c.ID)
		return "noted", nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs := session(ctx, t, []tools.Tool{note})
	for _, meta := range []sdk.Meta{{mcp.CallIDMeta: "toolu_1"}, {mcp.CallIDMeta: "toolu_2"}, nil} {
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "note", Arguments: map[string]any{"text": "x"}, Meta: meta})
		require.NoError(t, err)
		require.False(t, res.IsError)
	}
	assert.Equal(t, []string{"toolu_1", "toolu_2", ""}, ids)
}

// A file a call attaches follows its text: an image as image content, a PDF as an embedded
// resource of its bytes.
func TestServeAttachments(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	png := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x00\x00\x00\x00")
	pdf := []byte("%PDF-1.4\n%%EOF\n")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "chart.png"), png, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "paper.pdf"), pdf, 0o644))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs := session(ctx, t, files.Scope{Root: dir, Read: []string{""}}.Tools())
	view := func(path string) []sdk.Content {
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "view_file", Arguments: map[string]any{"path": path}})
		require.NoError(t, err)
		require.False(t, res.IsError, "%v", res.Content)
		require.Len(t, res.Content, 2)
		return res.Content
	}

	got := view("chart.png")
	assert.Contains(t, got[0].(*sdk.TextContent).Text, "chart.png (image/png")
	assert.Equal(t, &sdk.ImageContent{Data: png, MIMEType: "image/png"}, got[1])
	got = view("paper.pdf")
	res, ok := got[1].(*sdk.EmbeddedResource)
	require.True(t, ok, "%T", got[1])
	assert.Equal(t, "application/pdf", res.Resource.MIMEType)
	assert.Equal(t, pdf, res.Resource.Blob)
}
