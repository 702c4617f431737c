// Package server serves agents over HTTP, so that a web UI, a CLI or another program can create
// agents, talk to them and watch them work: a JSON API, the same operations as MCP tools at /mcp,
// and a web page (package ui). Each agent is a [nodes.Squad] whose home is <root>/agents/<id>/.
//
// [New] makes a [Server], an [http.Handler] to serve or mount in a program of your own. It keeps
// the agents under its root, runs them in the background, and resumes the runs that were in
// progress when it last stopped; [Server.Close] pauses them. Every request carries the server's
// token ([WithToken], [Server.LoginURL]). With [WithPostgres] the server is one replica of a
// fleet over one database.
//
// The routes, statuses and errors are in docs/server.md; what the server lets in, and what its
// agents can do, in docs/security.md; replicas in docs/fleet.md.
package server
