package sqlite

import (
	"errors"
	"fmt"

	"github.com/agiraph/agiraph/checkpoint/internal/codec"
)

// ErrNotDatabase is wrapped by the error of Open when the file is not a SQLite database.
var ErrNotDatabase = errors.New("checkpoint/sqlite: not a SQLite database")

// ErrForeignDatabase is wrapped by the error of Open when the file is a SQLite database that this
// package did not make: it belongs to another application, or it has tables but no checkpoint
// schema. Open never adds its tables to such a database.
var ErrForeignDatabase = errors.New("checkpoint/sqlite: not a checkpoint database")

// ErrSchemaTooNew is wrapped by a SchemaVersionError: the database was written by a newer version
// of this package than the running one.
var ErrSchemaTooNew = errors.New("checkpoint/sqlite: database schema is newer than this program")

// SchemaVersionError is the error of Open for a database whose schema version is newer than the
// newest this package knows. Such a database is left untouched: it is not downgraded and not
// used, since an older program could misread it. errors.Is(err, ErrSchemaTooNew) reports it too.
type SchemaVersionError struct {
	Path      string // the database file
	Version   int    // the schema version of the database (its PRAGMA user_version)
	Supported int    // the newest schema version this package knows
}

func (e *SchemaVersionError) Error() string {
	return fmt.Sprintf("checkpoint/sqlite: %s has schema version %d, but this program knows versions up to %d; open it with a newer version of the program",
		e.Path, e.Version, e.Supported)
}

// Unwrap returns ErrSchemaTooNew.
func (e *SchemaVersionError) Unwrap() error { return ErrSchemaTooNew }

// CorruptError is the error of Get or List for a stored checkpoint or write that cannot be read
// back: a column holds a value of the wrong type or an encoding that does not decode. It names the
// thread, the namespace, the checkpoint and the column, so that the row can be found and repaired
// or deleted; errors.Unwrap gives what was wrong.
type CorruptError = codec.CorruptError

// fileError is an error of Open about what the file is: it matches kind (ErrNotDatabase or
// ErrForeignDatabase) and err, the error that revealed it, if any.
type fileError struct {
	msg  string
	kind error
	err  error
}

func (e *fileError) Error() string { return e.msg }

func (e *fileError) Unwrap() []error {
	if e.err == nil {
		return []error{e.kind}
	}
	return []error{e.kind, e.err}
}
