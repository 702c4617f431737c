package nodes

// AssignmentEnded reports whether assignment id of the run in progress ended in this process,
// its outcome saved and waiting to be applied.
func AssignmentEnded(s *Squad, id string) bool {
	r, err := s.current()
	return err == nil && r.pool.hasEnded(id)
}
