// Package runner runs compiled graphs for applications spread over processes or machines, on a
// PostgreSQL database: any process enqueues an Invoke or a Resume of a registered graph for a
// thread, any number of processes with a started Runner execute them, and any process reads or
// waits for the outcome. A process that dies mid-run has its threads taken over by another, which
// resumes them from their last checkpoint (checkpoint/postgres, on the same database) without
// running the finished tasks again.
//
//	r, err := runner.Open(ctx, "postgres://agiraph:secret@db.internal:5432/agiraph")
//	if err != nil {
//		return err
//	}
//	defer r.Close()
//	g, err := runner.Register(r, "review", compiled) // in every process, under the same name
//	if err != nil {
//		return err
//	}
//	if err := r.Start(ctx); err != nil { // this process executes runs too
//		return err
//	}
//	err = g.Invoke(ctx, "pr-1234", input)  // enqueued; returns at once
//	final, err := g.Wait(ctx, "pr-1234")   // as Invoke would return; *graph.Interrupted when paused
//	err = g.Resume(ctx, "pr-1234", "approve") // answers the interrupt, in whichever process
//
// # Design
//
// Dispatch is River's (github.com/riverqueue/river): a run is a River job, so River brings
// fetching through LISTEN/NOTIFY, retries with backoff of a job that fails (only when the
// database fails: a graph's failure is an outcome, not a job error), leader election for its
// maintenance and unique jobs. River alone cannot take a dead process's runs over in bounded
// time: its rescuer only looks at a job's state and start time, every 30 seconds, and has no
// heartbeat, so it would either wait an hour (its default) or rescue runs that are alive but long
// (two processes running one thread). So the jobs of runs have no River timeout (-1: River never
// cancels nor rescues them), and liveness is a lease of this package's:
//
//   - Each thread has a row in agiraph_runs: its graph, status (queued, running, done, failed,
//     interrupted), latest operation, lease (owner, generation, expires_at) and outcome (error
//     text, interrupts and final state as JSON). Enqueueing writes the row and inserts the job in
//     one transaction; the row refuses a second operation while the thread is queued or running.
//   - A job takes the lease when its generation is the row's and the thread is queued, in a
//     transaction that locks the row; otherwise it is stale and ends without running.
//   - The process renews the lease every heartbeat (WithLease; default every 2 s, TTL 10 s). When a
//     renewal finds the lease taken, or none succeeds before the lease may have expired (by the
//     local clock, counted from before the renewal was sent), the run's context is cancelled: the
//     run stops before another process may take it over.
//   - The outcome is written by one statement that also ends the lease, fenced by the owner and the
//     generation: a process that lost its lease records nothing.
//   - Every started Runner has a watchdog (every WithWatchInterval, default 1 s) that finds running
//     threads whose lease expired and, in one transaction, raises their generation, queues them
//     and inserts a job for the new generation (unique by thread and generation, and the row lock
//     with SKIP LOCKED makes one watchdog do it), and cancels the dead process's River job, which
//     River's rescuer then finalizes in its own time. It does the same for a queued thread whose
//     job River shows running for longer than a TTL: the process that fetched it died before
//     taking the lease (its first act). A thread is thus taken over within the TTL,
//     plus the watch interval, plus the moment River takes to start a job: about 11 s by default.
//   - Stop cancels the runs in progress once its context is done, and queues their threads again
//     at once for the other processes (a handover, no TTL to wait for).
//
// A run labels its checkpoints with its operation's ID (graph.WithRunID), which tells a process
// that takes a thread over whether the operation was applied before its process died: an Invoke
// whose input checkpoint is missing is invoked again; a Resume is resumed again with its value
// while the interrupts it answers are still pending; otherwise the thread continues from its
// latest checkpoint (graph's Resume without a value), or its outcome is read from it when the run
// had already ended. Only tasks whose output was not saved run again, as with Resume after a
// crash in one process. Should the process die after a step's interrupt was saved but before the
// step's other tasks finished, the takeover reports the thread interrupted, and those tasks run on
// its next Resume.
//
// Lease and outcome live in one row, so that ending a run is one statement and the watchdog's
// query reads one index. Wait polls that row (WithPollInterval, default 100 ms) rather than
// LISTEN, which would hold a connection per waiter.
//
// A run's checkpoints are written through a saver fenced by its lease (postgres.Saver.Fenced):
// each write checks, in its statement, that the thread's row still names this process and
// generation, and locks it, so a takeover waits for the write in progress and refuses the ones
// after. A node that ignores its context may still be running in a process that lost its lease:
// its side effects may happen twice, but nothing it returns is saved. Nodes that honour their
// context stop when the lease is lost.
package runner
