package postgres

import (
	"errors"
	"fmt"

	"github.com/agiraph/agiraph/checkpoint/internal/codec"
)

// ErrSchemaTooNew is wrapped by a SchemaVersionError: the database was written by a newer version
// of this package than the running one.
var ErrSchemaTooNew = errors.New("checkpoint/postgres: database schema is newer than this program")

// SchemaVersionError is the error of Open and New for a database whose schema version is newer
// than the newest this package knows. Such a database is left untouched: it is not downgraded and
// not used, since an older program could misread it. errors.Is(err, ErrSchemaTooNew) reports it
// too.
type SchemaVersionError struct {
	Database  string // the database, as user@host:port/name
	Version   int    // the schema version of the database (the greatest in its schema table)
	Supported int    // the newest schema version this package knows
}

func (e *SchemaVersionError) Error() string {
	return fmt.Sprintf("checkpoint/postgres: %s has schema version %d, but this program knows versions up to %d; use it with a newer version of the program",
		e.Database, e.Version, e.Supported)
}

// Unwrap returns ErrSchemaTooNew.
func (e *SchemaVersionError) Unwrap() error { return ErrSchemaTooNew }

// CorruptError is the error of Get or List for a stored checkpoint whose frontier, joins or
// metadata do not decode. It names the thread, the namespace, the checkpoint and the column, so
// that the row can be found and repaired or deleted; errors.Unwrap gives what was wrong.
type CorruptError = codec.CorruptError
