// Package host keeps agents and runs them: each is a [nodes.Squad] whose home is
// <root>/agents/<id>/. It is what package server serves over HTTP, and a Go program can use it
// alone.
//
// [New] makes a [Host] over the agents found under its root, and resumes the runs that were in
// progress when it last stopped ([WithoutResume] leaves them); [Host.Close] pauses them. An agent
// at rest costs no open file and no goroutine. [Host.Create], [Host.List], [Host.Summary],
// [Host.Agent] and [Host.Delete] manage the agents; an [Agent] runs, resumes, pauses and talks to
// its run. At most [WithMaxRuns] runs are in progress at once; the others are "queued". A trigger
// coming due wakes its agent. With [WithPostgres] the host is one replica of a fleet over one
// database: agents are leased to one replica at a time, and a run whose replica died is taken
// over by another.
//
// Errors are told apart with errors.Is against [ErrNotFound], [ErrBusy], [ErrElsewhere] and the
// others. The package speaks no HTTP: it must not import net/http, nor package server.
package host
