// Package mcp gives an agent the tools of MCP (Model Context Protocol) servers: [Connect]
// starts or reaches each [Server], initializes a session with it and lists its tools, and the
// returned [Set] holds them as [tools.Tool] values, ready for a [tools.Registry] or an
// assignment's tools (harnessed.WithMCP does it for every assignment of a runtime).
//
//	set, err := mcp.Connect(ctx,
//		mcp.Server{Name: "fs", Command: []string{"node", "server.js", "/data"}, Dir: "/data"},
//		mcp.Server{Name: "search", URL: "https://mcp.example.com/mcp", Headers: map[string]string{"Authorization": "Bearer " + key}},
//	)
//	if err != nil { ... } // names the server that failed, and why
//	defer set.Close()
//	reg, err := tools.NewRegistry(append(myTools, set.Tools()...))
//
// # Servers
//
// A server is a command speaking MCP over its stdin and stdout, or the URL of a streamable
// HTTP endpoint. A command starts the way every agent process starts (internal/proc): in a
// PID namespace of its own where bubblewrap runs, else in a process group, so that [Set.Close]
// ends it and everything it started; and within a sandbox policy ([Server.Sandbox]; by default
// it writes only its working directory and a /tmp of its own, and its environment keeps no
// secrets but those [Server.Env] gives it). Its stderr is kept, and its last lines are quoted
// when it fails.
//
// Connect gives up on a server that does not start, exits, or has not initialized and listed
// its tools within [Server.InitTimeout]; the error names the server (and, for a command, how
// it exited and the end of its stderr), and nothing is left running.
//
// # Tools
//
// The tool "read_file" of the server named "fs" becomes the tool "fs__read_file", with the
// server's own description and input schema (which a registry checks a call's arguments
// against before the server sees them). Names keep to what every model provider
// accepts (1 to 64 characters of A-Z a-z 0-9 _ -): a name with other characters has them
// replaced by "_", and a name that was changed or is too long is shortened and ends with "_"
// and 8 hexadecimal digits of a hash of the full name, the same at every run. A schema that
// is not a JSON Schema object this repository can validate is an error of Connect naming the
// server and the tool. A tool the server marks read-only (annotations.readOnlyHint) is
// [tools.Tool.Safe]: its calls may run alongside others of the same turn.
//
// # Calls
//
// A call sends the model's arguments as they are and returns the result's text content,
// joined by newlines; other content is described ("[image: image/png, 1234 bytes]"), and a
// result with no content but structured content returns it as JSON. Every failure is an
// error, which a [tools.Registry] turns into an error result the model reads, naming the
// server and the tool: a result the server marks as an error ([ErrToolError]), a call that
// outlives [Server.Timeout] ([ErrTimeout]; the server is told to cancel it), a broken
// connection or a server that exited (with its exit status and stderr). The registry caps
// the output as it caps every tool's ([tools.WithMaxOutput]).
//
// [Set.Close] stops the calls still running, ends the sessions, and ends each command and
// what it started (after two seconds to exit once its stdin is closed). The tools are listed
// once, at Connect: a server's later changes to its tools are not followed, and a server that
// exits is not restarted.
//
// # Serving tools
//
// The other way round, [Serve] offers tools to MCP clients: an [Endpoint] on a loopback port,
// over streamable HTTP, that answers only requests with its token (and its own Host), runs
// calls through a [tools.Registry] (arguments checked, output capped) and reports a failed
// call as an error result. [Endpoint.Config] is the client configuration Claude Code's
// --mcp-config reads. It is how a CLI agent reaches the tools of its assignment.
package mcp
