package graph

import (
	"sync/atomic"

	"github.com/agiraph/agiraph/checkpoint"
)

// snapshotRatio is how many times the size of the last snapshot must be saved (checkpoints, task
// writes, inputs) before the next checkpoint stores the full state again, by default; and
// snapshotFloor how many bytes at least, so that a small state — a checkpoint's own record
// is counted as about 300 bytes — is not stored whole every other step.
const (
	snapshotRatio = 2
	snapshotFloor = 4 << 10
)

// snapshots decides which checkpoints of a run store the full state.
//
// By default a checkpoint does once the bytes saved since the last snapshot reach snapshotRatio
// times that snapshot's size, and snapshotFloor. Every snapshot is then paid for by twice its
// size in other records, so the snapshots of a thread take at most half of what the rest takes
// (plus the latest state), however large its state grows; and rebuilding a state reads one
// snapshot and records worth at most twice its size or snapshotFloor, each record counted with
// its overhead, which bounds how many it reads.
// WithSnapshotEvery makes it every n supersteps instead.
type snapshots struct {
	every int // WithSnapshotEvery; 0 places snapshots by size
	steps int // checkpoints since the last snapshot
	size  int // bytes of the last snapshot
	// since counts the bytes saved since the last snapshot; tasks add to it as they save.
	since atomic.Int64
}

// due reports whether the next checkpoint should store the full state.
func (s *snapshots) due() bool {
	if s.every > 0 {
		return s.steps >= s.every
	}
	return s.since.Load() >= max(snapshotRatio*int64(s.size), snapshotFloor)
}

// saved counts n bytes saved.
func (s *snapshots) saved(n int) { s.since.Add(int64(n)) }

// checkpoint counts a checkpoint (its record, not its state) about to be saved.
func (s *snapshots) checkpoint(cp *checkpoint.Checkpoint) {
	s.steps++
	s.saved(recordSize(cp))
}

// snapshot records that a snapshot of n bytes was saved.
func (s *snapshots) snapshot(n int) {
	s.steps, s.size = 0, n
	s.since.Store(0)
}

// snapshotCount is what snapshots counted when a checkpoint was saved, its tasks' writes aside.
type snapshotCount struct {
	steps, size int
	since       int64
}

// count returns the counts, to restore for a run that goes on from the checkpoint just saved.
func (s *snapshots) count() snapshotCount {
	return snapshotCount{steps: s.steps, size: s.size, since: s.since.Load()}
}

// restore sets the counts from those of the checkpoint t, and its tasks' writes.
func (s *snapshots) restore(c snapshotCount, t *checkpoint.Tuple) {
	s.steps, s.size = c.steps, c.size
	s.since.Store(c.since)
	for _, w := range t.Writes {
		s.saved(writeSize(w))
	}
}

// resume sets the counts from a chain loaded to rebuild a state: newest first, ending with the
// snapshot it was rebuilt from.
func (s *snapshots) resume(chain []*checkpoint.Tuple) {
	s.snapshot(len(chain[len(chain)-1].Checkpoint.State))
	s.steps = len(chain) - 1
	for i, t := range chain {
		if i < len(chain)-1 {
			s.saved(recordSize(&t.Checkpoint))
		}
		for _, w := range t.Writes {
			s.saved(writeSize(w))
		}
	}
}

// What a saver stores for a checkpoint and for a write besides their fields (keys, index entries,
// row headers: about 100 bytes a row in SQLite), rounded up so that they also stand for the cost
// of reading a record: they bound how many checkpoints rebuilding a state of a given size reads.
const (
	recordOverhead = 256
	writeOverhead  = 64
)

// recordSize estimates the bytes a saver stores for cp, its state aside.
func recordSize(cp *checkpoint.Checkpoint) int {
	n := recordOverhead + len(cp.ID) + len(cp.ParentID) + len(cp.Source) + len(cp.RunID)
	for _, t := range cp.Next {
		n += len(t.ID) + len(t.Node) + len(t.Arg) + 2
	}
	for k, sources := range cp.Joins {
		n += len(k)
		for _, s := range sources {
			n += len(s)
		}
	}
	for k, v := range cp.Meta {
		n += len(k) + len(v)
	}
	return n
}

// writeSize estimates the bytes a saver stores for w.
func writeSize(w checkpoint.Write) int {
	return writeOverhead + len(w.TaskID) + len(w.Node) + len(w.Kind) + len(w.Value)
}
