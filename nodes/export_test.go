package nodes

import (
	"path/filepath"

	"github.com/agiraph/agiraph/nodes/bus"
	"github.com/agiraph/agiraph/nodes/store/sqlitestore"
	"github.com/agiraph/agiraph/nodes/workspace"
)

// AssignmentEnded reports whether assignment id of the run in progress ended in this process,
// its outcome saved and waiting to be applied.
func AssignmentEnded(s *Squad, id string) bool {
	r := s.cur.Load()
	return r != nil && r.pool.hasEnded(id)
}

// HoldStartLock holds the lock a run's start and end, and a trigger's firing, hold while they
// work on the run's files, until the func it returns is called.
func HoldStartLock(s *Squad) (release func()) {
	s.mu.Lock()
	return s.mu.Unlock
}

// RunBus opens the bus of run runID of the agent at home, as its squad keeps it, for reading;
// call done when done.
func RunBus(home, runID string) (b *bus.Bus, done func(), err error) {
	st, err := sqlitestore.Open(filepath.Join(home, "state.db"))
	if err != nil {
		return nil, nil, err
	}
	b, err = bus.Open(workspace.Home(home).Run(runID).Messages(), bus.WithJournal(&busJournal{st: st, run: runID}))
	if err != nil {
		st.Close()
		return nil, nil, err
	}
	return b, func() { b.Close(); st.Close() }, nil
}

// FileToolsSynced reports whether the squad's agents' file tools sync the files they write.
func FileToolsSynced(s *Squad) bool { return len(s.fileOptions()) > 0 }
