package sqlite

import (
	"fmt"
	"slices"
	"strings"

	"github.com/google/uuid"
)

// How the columns that hold IDs and names store them, in fewer bytes than their text, each value
// read back as the string that was put: SQLite types each value, not its column, and these
// columns have no type that would convert one.

// idArg is id as it is stored in an ID column (id, parent_id, run_id) and looked up there: a UUID
// in its canonical text (lowercase, 8-4-4-4-12 hexadecimal digits, as uuid.UUID.String gives)
// as its 16 bytes, any other ID as text. The order of UUIDs is kept (their bytes compare as their
// texts do), and that of other IDs; an ID that is not a UUID orders before every UUID.
func idArg(id string) any {
	if u, err := uuid.Parse(id); err == nil && u.String() == id {
		return u[:]
	}
	return id
}

// uuidGlob matches the canonical text of a UUID in SQL (GLOB is case-sensitive).
var uuidGlob = func() string {
	var parts []string
	for _, n := range []int{8, 4, 4, 4, 12} {
		parts = append(parts, strings.Repeat("[0-9a-f]", n))
	}
	return strings.Join(parts, "-")
}()

// idSQL is the SQL of idArg applied to the text column column.
func idSQL(column string) string {
	return fmt.Sprintf("CASE WHEN %[1]s GLOB '%[2]s' THEN unhex(replace(%[1]s, '-', '')) ELSE %[1]s END", column, uuidGlob)
}

// A code stores the names a column mostly holds as small integers — 0 and 1 take no byte of a
// row, the others one — and any other name as text. A code only grows: a name added at its end is
// one a database of an older version of the package cannot read, so it comes with a new schema
// version.
type code []string

var (
	sources = code{"loop", "input", "update", "fork"}                           // checkpoints.source
	kinds   = code{"update", "effect", "input", "error", "interrupt", "resume"} // writes.kind
)

// arg is name as it is stored.
func (c code) arg(name string) any {
	if i := slices.Index(c, name); i >= 0 {
		return i
	}
	return name
}

// name is the name a stored value v stands for, and false for a value that is neither text nor
// one of c's integers.
func (c code) name(v any) (string, bool) {
	switch v := v.(type) {
	case string:
		return v, true
	case int64:
		if 0 <= v && v < int64(len(c)) {
			return c[v], true
		}
	}
	return "", false
}

// sql is the SQL of arg applied to the text column column.
func (c code) sql(column string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "CASE %s", column)
	for i, name := range c {
		fmt.Fprintf(&b, " WHEN '%s' THEN %d", name, i)
	}
	fmt.Fprintf(&b, " ELSE %s END", column)
	return b.String()
}
