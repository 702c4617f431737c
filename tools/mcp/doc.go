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
// The other way round, [Serve] offers tools to MCP clients on a loopback port behind a token.
// How servers start, how their tools are named and how calls fail are in docs/tools.md.
package mcp
