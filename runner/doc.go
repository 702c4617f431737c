// Package runner runs compiled graphs on a PostgreSQL database for applications spread over
// processes or machines: any process enqueues a run of a registered graph for a thread, any
// started Runner executes it, and a process that dies mid-run has its threads taken over by
// another, from their last checkpoint.
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
//	err = g.Invoke(ctx, "pr-1234", input)     // enqueued; returns at once
//	final, err := g.Wait(ctx, "pr-1234")      // as Invoke would return
//	err = g.Resume(ctx, "pr-1234", "approve") // answers an interrupt, from any process
//
// How runs are dispatched, leased, taken over and fenced is in docs/fleet.md.
package runner
