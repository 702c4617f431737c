package host

import "errors"

// The errors of a host's methods, which a caller tells apart with errors.Is (an HTTP layer maps
// them to statuses). Each comes wrapped in one that names the agent and says what to do.
var (
	// ErrClosed: the host is closed.
	ErrClosed = errors.New("the host is closed")
	// ErrNotFound: no such agent, or no such run of it.
	ErrNotFound = errors.New("not found")
	// ErrInvalid: an argument is not one the method takes (the error says which, and why).
	ErrInvalid = errors.New("invalid")
	// ErrExists: an agent of that id exists already.
	ErrExists = errors.New("already exists")
	// ErrBusy: the agent's run is in progress, and another cannot start.
	ErrBusy = errors.New("a run is already in progress")
	// ErrElsewhere: another replica of the fleet holds the agent (see [Host.Holder]).
	ErrElsewhere = errors.New("another replica holds the agent")
	// ErrDamaged: the agent's files could not be opened; only its summary is served.
	ErrDamaged = errors.New("the agent is damaged")
	// ErrLinked: a folder of the agent is a symbolic link, which the host does not follow:
	// served, it could show files outside the agent's home.
	ErrLinked = errors.New("the folder is a symbolic link, which the host does not follow")
	// ErrUnavailable: the fleet's database, or the disk, failed; nothing was done, and the
	// same call may succeed once it is back.
	ErrUnavailable = errors.New("unavailable")
)

// kindError is err, which errors.Is also takes for kind, with err's message only.
type kindError struct{ err, kind error }

func (e kindError) Error() string   { return e.err.Error() }
func (e kindError) Unwrap() []error { return []error{e.err, e.kind} }

// mark returns err, which errors.Is takes for kind too.
func mark(kind, err error) error { return kindError{err: err, kind: kind} }
