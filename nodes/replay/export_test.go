package replay

import "time"

// StuckAfter has a replay wait d for what its cassette says comes next, until undo is called.
func StuckAfter(d time.Duration) (undo func()) {
	was := stuckAfter
	stuckAfter = d
	return func() { stuckAfter = was }
}
