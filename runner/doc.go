// Package runner runs compiled graphs for applications spread over processes or machines, on a
// PostgreSQL database: any process enqueues an Invoke or a Resume of a registered graph for a
// thread, any number of processes with a started Runner execute them, and any process reads or
// waits for the outcome. A process that dies mid-run has its threads taken over by another, which
// resumes them from their last checkpoint without running the finished tasks again.
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
// How runs are dispatched, leased, taken over and fenced is in docs/fleet.md.
package runner
