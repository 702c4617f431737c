package mcp

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agiraph/agiraph/tools"
)

// Endpoint offers tools to MCP clients: a streamable-HTTP MCP server on a loopback port that
// answers only requests carrying its token. It is how a CLI agent (Claude Code with
// --mcp-config) reaches the tools of one assignment. Calls run through a tools.Registry, so
// arguments are checked against each tool's schema and results capped as for in-process agents;
// a file a call attaches (tools.Attach) follows its text, as image content or, for a PDF, as an
// embedded resource of its bytes.
type Endpoint struct {
	// URL is the endpoint's address, http://127.0.0.1:<port>/mcp.
	URL string
	// Token is what a client sends as "Authorization: Bearer <token>".
	Token string

	srv *http.Server
	mcp *sdk.Server
	ln  net.Listener
}

// Serve starts an endpoint offering ts (named as they are), under the server name name.
func Serve(name string, ts []tools.Tool, opts ...tools.RegistryOption) (*Endpoint, error) {
	reg, err := tools.NewRegistry(ts, append(opts, tools.WithAttachments())...)
	if err != nil {
		return nil, fmt.Errorf("mcp: serve %s: %w", name, err)
	}
	srv := sdk.NewServer(&sdk.Implementation{Name: name, Version: "1"}, nil)
	for _, t := range reg.Tools() {
		var schema map[string]any
		if err := json.Unmarshal(t.Schema, &schema); err != nil {
			return nil, fmt.Errorf("mcp: serve %s: tool %s: schema: %w", name, t.Name, err)
		}
		srv.AddTool(&sdk.Tool{Name: t.Name, Description: toolText(t), InputSchema: schema}, serveTool(reg, t.Name))
	}
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return nil, fmt.Errorf("mcp: serve %s: token: %w", name, err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("mcp: serve %s: %w", name, err)
	}
	e := &Endpoint{URL: "http://" + ln.Addr().String() + "/mcp", Token: hex.EncodeToString(b), mcp: srv, ln: ln}
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)
	mux := http.NewServeMux()
	mux.Handle("/mcp", e.guard(h))
	e.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = e.srv.Serve(ln) }()
	return e, nil
}

// toolText is a tool's description for clients that read no system prompt: its summary and, when
// it has one, its guidance.
func toolText(t tools.Tool) string {
	if t.Guidance == "" {
		return t.Description
	}
	return t.Description + "\n\n" + t.Guidance
}

// CallIDMeta is the key of the _meta field of a tools/call request in which Claude Code gives
// the id of the model's call (its tool_use id).
const CallIDMeta = "claudecode/toolUseId"

// serveTool runs calls of the named tool through reg; a failed call is an error result. A call's
// ID (tools.CallFrom in the handler) is the model's id of the call when the client gives it
// (CallIDMeta), else empty: a handler keys what it does by it.
func serveTool(reg *tools.Registry, name string) sdk.ToolHandler {
	return func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		args := req.Params.Arguments
		if len(args) == 0 || string(args) == "null" {
			args = json.RawMessage("{}")
		}
		id, _ := req.Params.Meta[CallIDMeta].(string)
		res := reg.Run(ctx, []tools.Call{{ID: id, Name: name, Args: args}})[0]
		out := &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: res.Content}}, IsError: res.IsError}
		if a := res.Attachment; a != nil {
			out.Content = append(out.Content, attachment(*a))
		}
		return out, nil
	}
}

// attachment is the content of a file a call attached: an image, or an embedded resource of
// the file's bytes (a PDF); or, when the file cannot be read, a text that says why.
func attachment(a tools.Attachment) sdk.Content {
	data, err := a.Read()
	switch {
	case err != nil:
		return &sdk.TextContent{Text: fmt.Sprintf("The attached file cannot be shown: %v.", err)}
	case strings.HasPrefix(a.MediaType, "image/"):
		return &sdk.ImageContent{Data: data, MIMEType: a.MediaType}
	}
	return &sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "file://" + a.Path, MIMEType: a.MediaType, Blob: data}}
}

// guard refuses requests without the token, and requests whose Host is not the loopback
// address the endpoint listens on (a web page that rebinds its name to 127.0.0.1).
func (e *Endpoint) guard(next http.Handler) http.Handler {
	host := e.ln.Addr().String()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Host != host && !strings.HasPrefix(r.Host, "localhost:") {
			http.Error(w, "mcp: wrong host", http.StatusForbidden)
			return
		}
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || subtle.ConstantTimeCompare([]byte(tok), []byte(e.Token)) != 1 {
			http.Error(w, "mcp: missing or wrong token", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// Config returns an MCP client configuration that names the endpoint as server name, in the
// format Claude Code's --mcp-config reads: {"mcpServers": {name: {"type": "http", "url": ...,
// "headers": {"Authorization": ...}}}}.
func (e *Endpoint) Config(name string) []byte {
	b, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{name: map[string]any{
		"type": "http", "url": e.URL, "headers": map[string]string{"Authorization": "Bearer " + e.Token},
	}}})
	return b
}

// Close stops the endpoint; calls in progress are cancelled.
func (e *Endpoint) Close() error {
	for ss := range e.mcp.Sessions() {
		_ = ss.Close()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := e.srv.Shutdown(ctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return e.srv.Close()
}
