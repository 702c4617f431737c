// Package lease is the lease protocol of the rows of a PostgreSQL table: a process takes a row's
// lease when no process holds it or its holder let it expire, which raises the row's generation;
// it renews the lease while it works, and its writes check that the row is still its own under
// that generation (a fence), so that a process that lost the lease, and whose work goes on for a
// moment, writes nothing after another took the row over. A [Table] makes these statements on
// the columns owner, generation and expires_at of a table and its key column; each user keeps
// its own table and rows, and adds its own conditions and columns to the statements ([Extra]).
// [Keep] is the heartbeat that renews a lease and says when it is lost; [Owner] names this
// process in the leases it holds. Package runner holds a lease per thread (agiraph_runs),
// package server one per agent of a fleet (agiraph_server_agents).
//
// It is a module of its own, as internal/pgtest is: it needs pgx, which the root module must not
// require, and the one module that runner and server both require already, checkpoint/postgres,
// would either publish it beside the saver or, under its internal/, hide it from them. As a module
// it keeps its import path, at the cost of a require and a replace line in each user's go.mod. It
// imports checkpoint/postgres (its fences are that saver's) and never its users.
package lease
