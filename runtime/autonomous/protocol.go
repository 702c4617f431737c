package autonomous

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/agiraph/agiraph/internal/osfile"
	"github.com/agiraph/agiraph/runtime"
	"github.com/agiraph/agiraph/runtime/filebridge"
	"github.com/agiraph/agiraph/runtime/internal/workmcp"
)

// The protocol files, in the agent's working directory (the node's scratch directory). Their
// names start with "_", so publishing leaves them behind.
const (
	TaskFile       = "_task.md"                // written by the runtime: the task and this protocol
	ContextFile    = "_context.json"           // written by the runtime: ids and paths, as JSON
	InboxFile      = filebridge.InboxFile      // appended to by the runtime: messages for the agent
	OutboxFile     = filebridge.OutboxFile     // appended to by the agent: messages to send
	ResultFile     = "_result.md"              // written by the agent: done, publish (its summary)
	CheckpointFile = filebridge.CheckpointFile // written by the agent: stage done, do not publish
)

// The agent's environment variables of the MCP server of its work tools, set when the
// command template uses it ({{.MCPURL}}, {{.MCPConfig}}): the token is in MCPTokenEnv only.
const (
	MCPURLEnv   = "AGIRAPH_MCP_URL"
	MCPTokenEnv = "AGIRAPH_MCP_TOKEN"
)

// writeMCPConfig writes the MCP client configuration {{.MCPConfig}} names, for the server at
// url, in a new folder of its own under the user's cache folder (Gemini CLI refuses settings
// under a folder others may write, as /tmp), or else the temporary one; it returns the file's
// path. The file holds no token: its header refers to MCPTokenEnv.
func writeMCPConfig(url string) (string, error) {
	data, err := json.Marshal(map[string]any{"mcpServers": map[string]any{workmcp.Name: map[string]any{
		"type": "http", "url": url, "headers": map[string]string{"Authorization": "Bearer ${" + MCPTokenEnv + "}"},
	}}})
	if err != nil {
		return "", err
	}
	parent := os.TempDir()
	if cache, err := os.UserCacheDir(); err == nil {
		parent = filepath.Join(cache, "agiraph", "mcp")
		if err := os.MkdirAll(parent, 0o700); err != nil {
			return "", err
		}
	}
	dir, err := os.MkdirTemp(parent, "run-")
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "mcp.json")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		_ = os.RemoveAll(dir) // the write's error is the one to report
		return "", err
	}
	return path, nil
}

// Prompt is what {{.Prompt}} renders to: it points the agent at _task.md, which holds
// everything else.
const Prompt = "Your assignment is in the file _task.md in your current working directory. " +
	"Read it now and follow it exactly, including its protocol for finishing " +
	"(_result.md or _checkpoint.md) and for messages (_outbox.md, _inbox.md)."

// taskText renders _task.md: the task, the worker's instructions, the human's answer, where
// the previous stage ended, the file protocol, and the work tools when the agent has them
// over MCP (withTools).
func taskText(a runtime.Assignment, scratch, previous string, withTools bool) string {
	var b strings.Builder
	b.WriteString("# Task\n\n")
	b.WriteString(strings.TrimSpace(a.Task))
	b.WriteString("\n")
	if s := strings.TrimSpace(a.System); s != "" {
		b.WriteString("\n# Instructions\n\n")
		b.WriteString(s)
		b.WriteString("\n")
	}
	if s := strings.TrimSpace(previous); s != "" {
		b.WriteString("\n# Where the previous stage ended\n\n")
		b.WriteString(s)
		b.WriteString("\n")
	}
	if s := strings.TrimSpace(a.Answer); s != "" {
		b.WriteString("\n# The human's answer to your question\n\n")
		b.WriteString(s)
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, `
# How to work here

You work in the directory %s. The runtime watches it.

- Write your outputs as files in this directory. When you finish they are published: moved to
  the node's published/ folder, where others read them. Files whose names start with "_" or
  "." are never published: use them for notes and temporary files.
- When the work is complete, write a summary of what you produced to %s. Write it last, in
  one go (best: write %s.tmp, then rename it to %s). As soon as it appears you are
  stopped and your outputs are published.
- To end a stage without publishing (for example to wait for other work), write what this
  stage achieved and what remains to %s instead. You are stopped; the node stays open.
- Exiting without writing either file is a failure.
- %s describes this assignment (ids and paths) as JSON.
`, scratch, ResultFile, ResultFile, ResultFile, CheckpointFile, ContextFile)
	if a.Mailbox != nil {
		fmt.Fprintf(&b, `
# Messages

- To send a message, append a block to %s: a line "TO: <name>" (a worker's name or role,
  coordinator, human, or * for everyone), the message on the lines after it, and a line
  "---" that ends the block. Each block is sent once, when its "---" line is written.
  Example:

  TO: coordinator
  I need the dataset's location.
  ---

- Messages for you are appended to %s as they arrive, each as
  "[Message from NAME]: text". Read it from time to time; when you wait for a reply, poll it.
`, OutboxFile, InboxFile)
	}
	if withTools {
		b.WriteString(workmcp.Prompt)
	}
	return b.String()
}

// contextJSON renders _context.json.
func contextJSON(a runtime.Assignment, v Vars) ([]byte, error) {
	c := struct {
		Assignment string            `json:"assignment"`
		Run        string            `json:"run,omitempty"`
		Node       string            `json:"node,omitempty"`
		Worker     string            `json:"worker,omitempty"`
		Dir        string            `json:"dir"`
		Scratch    string            `json:"scratch"`
		Published  string            `json:"published"`
		Files      map[string]string `json:"files"`
		Refs       json.RawMessage   `json:"refs,omitempty"`
		Messaging  bool              `json:"messaging"`
	}{
		Assignment: a.ID, Run: a.Run, Node: a.Node, Worker: a.Worker,
		Dir: v.Dir, Scratch: v.Scratch, Published: v.Published,
		Files: map[string]string{
			"task": TaskFile, "context": ContextFile, "inbox": InboxFile, "outbox": OutboxFile,
			"result": ResultFile, "checkpoint": CheckpointFile,
		},
		Messaging: a.Mailbox != nil,
	}
	if refs, err := osfile.ReadFile(a.Dir.Path("_refs.json")); err == nil && json.Valid(refs) {
		var compact bytes.Buffer
		if json.Compact(&compact, refs) == nil {
			c.Refs = compact.Bytes()
		}
	}
	out, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(out, '\n'), nil
}

// writeFile writes a protocol file in dir.
func writeFile(dir, name string, data []byte) error {
	return os.WriteFile(filepath.Join(dir, name), data, 0o644)
}
