// Package server serves an agent host ([host.Host]) over HTTP, so that a web UI, a CLI or another
// program can create agents, talk to them and watch them work: a JSON API, the same operations
// as MCP tools at /mcp, and a web page (package ui).
//
// [New] makes a [Server], an [http.Handler] to serve or mount in a program of your own, over a
// host made of the options of [WithHost]; [Server.Host] is that host, for a program that also
// uses it in Go. Every request carries the server's token ([WithToken], [Server.LoginURL]), and
// passes the guard's checks of its Host, Origin and content type. In a fleet (host.WithPostgres),
// a request on a run another replica holds is forwarded to it.
//
// What manages the agents is package host; this package only speaks HTTP, and holds no agent
// state of its own. The routes, statuses and errors are in docs/server.md; what the server lets
// in, and what its agents can do, in docs/security.md; replicas in docs/fleet.md.
package server
