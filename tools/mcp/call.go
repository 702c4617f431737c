package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

var (
	// errCallTimeout is the cause of a call that ran out of time.
	errCallTimeout = errors.New("call timed out")
	// errClosed is the cause of a call stopped by Set.Close.
	errClosed = errors.New("the connection to the server was closed")
)

// call calls the server's tool named tool with args, within the server's Timeout.
func (c *conn) call(ctx context.Context, tool string, args json.RawMessage) (string, error) {
	if len(args) == 0 {
		args = json.RawMessage(`{}`)
	}
	if c.closing.Err() != nil {
		return "", fmt.Errorf("tool %q of MCP server %q cannot run: %w", tool, c.srv.Name, errClosed)
	}
	if how := c.exited(0); how != "" {
		return "", fmt.Errorf("tool %q of MCP server %q cannot run%s", tool, c.srv.Name, how)
	}
	callCtx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	defer context.AfterFunc(c.closing, func() { stop(errClosed) })()
	callCtx, cancel := context.WithTimeoutCause(callCtx, c.srv.Timeout, errCallTimeout)
	defer cancel()
	res, err := c.session.CallTool(callCtx, &sdk.CallToolParams{Name: tool, Arguments: args})
	switch {
	case err == nil && res.IsError:
		return "", &wrapped{fmt.Sprintf("tool %q of MCP server %q reported an error: %s", tool, c.srv.Name, render(res)), ErrToolError}
	case err == nil:
		return render(res), nil
	case ctx.Err() != nil:
		return "", fmt.Errorf("tool %q of MCP server %q was stopped: %w", tool, c.srv.Name, context.Cause(ctx))
	case errors.Is(context.Cause(callCtx), errClosed):
		return "", fmt.Errorf("tool %q of MCP server %q was stopped: %w", tool, c.srv.Name, errClosed)
	case errors.Is(context.Cause(callCtx), errCallTimeout):
		return "", &wrapped{fmt.Sprintf("tool %q of MCP server %q did not answer within %s; the call was cancelled", tool, c.srv.Name, c.srv.Timeout), ErrTimeout}
	}
	var how string
	if rpc := (*jsonrpc.Error)(nil); !errors.As(err, &rpc) { // not the server's answer: is it gone?
		how = c.exited(time.Second)
	}
	return "", fmt.Errorf("tool %q of MCP server %q failed: %w%s", tool, c.srv.Name, err, how)
}

// wrapped is an error whose message is msg alone, wrapping err: the model reads the message,
// a program tells the errors apart with errors.Is.
type wrapped struct {
	msg string
	err error
}

func (w *wrapped) Error() string { return w.msg }
func (w *wrapped) Unwrap() error { return w.err }

// render returns what the model reads of a result: its text content, joined by newlines, with
// other content described; its structured content as JSON when it has no other.
func render(res *sdk.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		switch c := c.(type) {
		case *sdk.TextContent:
			parts = append(parts, c.Text)
		case *sdk.ImageContent:
			parts = append(parts, fmt.Sprintf("[image: %s, %d bytes]", c.MIMEType, len(c.Data)))
		case *sdk.AudioContent:
			parts = append(parts, fmt.Sprintf("[audio: %s, %d bytes]", c.MIMEType, len(c.Data)))
		case *sdk.ResourceLink:
			parts = append(parts, "[resource link: "+describe(c.URI, c.Name, c.MIMEType, c.Description)+"]")
		case *sdk.EmbeddedResource:
			parts = append(parts, resource(c.Resource))
		default:
			b, _ := c.MarshalJSON()
			var kind struct{ Type string }
			_ = json.Unmarshal(b, &kind)
			parts = append(parts, fmt.Sprintf("[%s content]", kind.Type))
		}
	}
	if len(parts) == 0 && res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			parts = append(parts, string(b))
		}
	}
	if len(parts) == 0 {
		return "(no output)"
	}
	return strings.Join(parts, "\n")
}

// resource renders an embedded resource: its text under a header naming it, or a description
// of its binary contents.
func resource(r *sdk.ResourceContents) string {
	switch {
	case r == nil:
		return "[resource: empty]"
	case r.Blob == nil:
		return "[resource: " + describe(r.URI, "", r.MIMEType, "") + "]\n" + r.Text
	}
	return fmt.Sprintf("[resource: %s, %d bytes]", describe(r.URI, "", r.MIMEType, ""), len(r.Blob))
}

// describe joins the parts of a resource's description that are set.
func describe(uri, name, mime, desc string) string {
	var s []string
	for _, p := range []string{name, uri, mime, desc} {
		if p != "" {
			s = append(s, p)
		}
	}
	return strings.Join(s, ", ")
}
