package workspace

import (
	"fmt"
	"strconv"
	"strings"
)

// MaxIDLen is the longest node or worker id [ValidID] accepts, in bytes.
const MaxIDLen = 64

// ValidID checks that id can name a node or a worker: a single, safe path component of 1 to
// [MaxIDLen] ASCII letters, digits, '-', '_' and '.', not starting with '.' (so not "." or
// "..", and never hidden). The error names the id and says what is allowed.
func ValidID(id string) error {
	const rule = "ids are 1 to 64 ASCII letters, digits, '-', '_' and '.', not starting with '.'"
	switch {
	case id == "":
		return fmt.Errorf("workspace: invalid id %q: it is empty; %s", id, rule)
	case len(id) > MaxIDLen:
		shown := strconv.Quote(id)
		if len(id) > 4*MaxIDLen { // not echoed whole
			shown = strconv.Quote(strings.ToValidUTF8(id[:MaxIDLen], "")) + "…"
		}
		return fmt.Errorf("workspace: invalid id %s: it is %d bytes long; %s", shown, len(id), rule)
	case id[0] == '.':
		return fmt.Errorf("workspace: invalid id %q: it starts with '.'; %s", id, rule)
	}
	for _, c := range id {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.') {
			return fmt.Errorf("workspace: invalid id %q: it contains %q; %s", id, c, rule)
		}
	}
	return nil
}

// Number returns n of a numbered id — prefix followed by the decimal number n, such as "n12"
// (a node), "t3" (a trigger) or "m0040" (a message) — and whether id is one with n ≥ 1 (0 and false when not).
func Number(id, prefix string) (int, bool) {
	rest, ok := strings.CutPrefix(id, prefix)
	if !ok || rest == "" || rest[0] < '0' || rest[0] > '9' {
		return 0, false
	}
	n, err := strconv.Atoi(rest)
	if err != nil || n < 1 {
		return 0, false
	}
	return n, true
}
