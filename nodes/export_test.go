package nodes

// AssignmentEnded reports whether assignment id of the run in progress ended in this process,
// its outcome saved and waiting to be applied.
func AssignmentEnded(s *Squad, id string) bool {
	r, err := s.current()
	return err == nil && r.pool.hasEnded(id)
}

// HoldStartLock holds the lock a run's start and end, and a trigger's firing, hold while they
// work on the run's files, until the func it returns is called.
func HoldStartLock(s *Squad) (release func()) {
	s.mu.Lock()
	return s.mu.Unlock
}
