package sqlite

import (
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
)

// How the columns that hold IDs and names store them, in fewer bytes than their text, each value
// read back as the string that was put: SQLite types each value, not its column, and these
// columns have no type that would convert one.

// idArg is id as it is stored in an ID column (id, parent_id, run_id) and looked up there: a UUID
// in its canonical text (lowercase, 8-4-4-4-12 hexadecimal digits, as uuid.UUID.String gives)
// as its 16 bytes, any other ID as text. The order of UUIDs is kept (their bytes compare as their
// texts do), and that of other IDs; an ID that is not a UUID orders before every UUID.
func idArg(id string) any {
	if b, ok := uuidBytes(id); ok {
		return b
	}
	return id
}

// uuidBytes returns the 16 bytes of s when s is a UUID in its canonical text.
func uuidBytes(s string) ([]byte, bool) {
	if len(s) != 36 {
		return nil, false
	}
	b := make([]byte, 0, 16)
	for i := 0; i < len(s); i += 2 {
		if i == 8 || i == 13 || i == 18 || i == 23 {
			if s[i] != '-' {
				return nil, false
			}
			i++
		}
		hi, ok1 := lowerHex(s[i])
		lo, ok2 := lowerHex(s[i+1])
		if !ok1 || !ok2 {
			return nil, false
		}
		b = append(b, hi<<4|lo)
	}
	return b, true
}

func lowerHex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false
}

// uuidText is the canonical text of the UUID of 16 bytes b.
func uuidText(b []byte) string {
	var s [36]byte
	hex.Encode(s[0:8], b[0:4])
	hex.Encode(s[9:13], b[4:6])
	hex.Encode(s[14:18], b[6:8])
	hex.Encode(s[19:23], b[8:10])
	hex.Encode(s[24:36], b[10:16])
	s[8], s[13], s[18], s[23] = '-', '-', '-', '-'
	return string(s[:])
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
