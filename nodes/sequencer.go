package nodes

import (
	"context"
	"slices"
	"time"
)

// Sequencer fixes when what happens beside a run's tick reaches it: the ends of the assignments
// that run at once, whether the coordinator has news, the human's answers. What the coordinator
// is asked depends on them, and their timing is the scheduler's. A Recorder that is also a
// Sequencer sees each point of a tick where the run takes them (package nodes/replay records
// them); a replay's gives the recorded ones back, holding each end until the point that took
// it. Under a Sequencer an assignment that ended counts as running until a point takes its end.
type Sequencer interface {
	// Take is asked at each point of a tick where the run takes what happened: ended are the
	// assignments (by id) that ended and were not taken before, in the order they ended (none at
	// PointDecide; at PointRoute, the workers whose mail has come), would what the run would do. It returns the ones to take now, in order —
	// the others are offered again at the next point — and what to do: MoveWait has the run wait
	// for something to happen and ask again.
	Take(at Point, ended []string, would Move) ([]string, Move)
	// Answered is told of each answer the human gives to a question of worker (a worker's id,
	// or the coordinator), before the run can see it.
	Answered(worker, answer string)
}

// Point is a point of a tick where the run takes what happened beside it (see Sequencer).
type Point struct {
	Tick int    `json:"tick"`
	At   string `json:"at"` // PointCollect, PointDecide or PointDecided
}

// The points of a tick.
const (
	PointCollect = "collect" // collect: the ends to reconcile, and whether the tick goes on
	PointDecide  = "decide"  // decide_next, before the coordinator's turn: whether it has one
	PointDecided = "decided" // decide_next, after it: the ends the next route_frontier applies
	// PointRoute is route_frontier's, when an idle worker's node waits for its mail (it
	// checkpointed): offered are the workers (by id) whose mail has come, and the run wakes
	// those it takes, as many as it has room for, in order.
	PointRoute = "route"
)

// Move is what the run does at a Point.
type Move string

// The moves.
const (
	MoveWait  Move = "wait"  // wait for something to happen, and ask again
	MoveGo    Move = "go"    // go on; at PointDecide, the coordinator has news and takes a turn
	MoveNudge Move = "nudge" // at PointCollect: tell the coordinator the board is idle, and go on
	MoveSkip  Move = "skip"  // at PointDecide: the coordinator has no news and no turn
)

// RunSequencer is a Recorder of many runs that sequences only some of them, as package
// nodes/replay's Runs does: SequencerOf returns the Sequencer of run id, or nil for a run that
// then runs as under a Recorder that is not a Sequencer.
type RunSequencer interface {
	SequencerOf(id string) Sequencer
}

// sequencer returns the Sequencer of run id: the squad's recorder if it is one, or the one it
// gives for the run; nil when there is none.
func (c config) sequencer(id string) Sequencer {
	switch rec := c.recorder.(type) {
	case RunSequencer:
		return rec.SequencerOf(id)
	case Sequencer:
		return rec
	}
	return nil
}

// answered tells the run's Sequencer, if it has one, of the human's answer to worker's
// question: before the answer is saved, so that no point of a tick sees it first.
func (r *run) answered(worker, answer string) {
	if r.seq != nil {
		r.seq.Answered(worker, answer)
	}
}

// take takes at point at the ends of the assignments that ended, and says what it does, would
// telling what it would do: all of them and would, unless a Sequencer decides.
func (r *run) take(at Point, would func() Move) ([]string, Move) {
	if at.At != PointDecide {
		r.untaken = append(r.untaken, r.pool.drain()...)
	}
	move := would()
	if r.seq == nil {
		took := r.untaken
		r.untaken = nil
		return took, move
	}
	took, move := r.seq.Take(at, slices.Clone(r.untaken), move)
	r.untaken = slices.DeleteFunc(r.untaken, func(id string) bool { return slices.Contains(took, id) })
	r.pool.release(took)
	return took, move
}

// choose returns, of what offer gives, what the run takes at point at: all of it, unless a
// Sequencer decides; it waits while the Sequencer says so, offering again.
func (r *run) choose(ctx context.Context, at Point, offer func() []string) ([]string, error) {
	for {
		offered := offer()
		if r.seq == nil {
			return offered, nil
		}
		if took, move := r.seq.Take(at, offered, MoveGo); move != MoveWait {
			return took, nil
		}
		if err := r.pause(ctx); err != nil {
			return nil, err
		}
	}
}

// await is take at a point outside collect's loop: it waits while the Sequencer says so.
func (r *run) await(ctx context.Context, at Point, would func() Move) ([]string, Move, error) {
	for {
		took, move := r.take(at, would)
		if move != MoveWait {
			return took, move, nil
		}
		if err := r.pause(ctx); err != nil {
			return nil, move, err
		}
	}
}

// pause waits a tick, or less when an assignment ends, a message comes or the human acts.
func (r *run) pause(ctx context.Context) error {
	timer := time.NewTimer(r.cfg.tick)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-r.pool.wake:
	case <-r.bus.Notify():
	case <-r.wake:
	case <-timer.C:
	}
	return nil
}
