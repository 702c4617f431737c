// Package files provides file tools for agents — read_file, write_file, edit_file, list_files
// and view_file — confined to a workspace root and to what a [Policy] allows.
//
// Every path a model sends goes through one resolution step before any file is touched:
//
//  1. the path must be relative; it is cleaned, and a path that climbs above the root with
//     ".." is refused;
//  2. symbolic links are resolved (on the longest prefix of the path that exists) and the path
//     is refused if its real location is outside the real root — a symlink inside the
//     workspace that points elsewhere cannot be read, written, or written through;
//  3. the [Policy] is asked about the path as given and, when a symlink makes them differ,
//     about its real location too; both must be allowed.
//
// The file operations themselves then go through an [os.Root] opened on the real root, so a
// symlink swapped in between the check and the operation still cannot lead outside the root.
//
// Refusals and failures are returned as tool errors phrased for the model: what was refused,
// why, and what is allowed. [Scope] is a ready policy built from path prefixes.
//
// write_file and edit_file write a temporary file and rename it over the target: readers, and a
// process killed meanwhile, see the old file or the new one. They sync nothing unless told to
// ([Synced]), for an application that records their results in a store whose commits survive a
// power failure.
package files

import (
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"strings"

	"github.com/agiraph/agiraph/tools"
)

// ErrDenied is wrapped by the errors [Scope] returns and by the refusals of path resolution
// (absolute paths, ".." escapes, symlinks leading outside the root).
var ErrDenied = errors.New("access denied")

// deniedError is a refusal whose message is written for the model; it matches [ErrDenied].
type deniedError struct{ msg string }

func (e *deniedError) Error() string        { return e.msg }
func (e *deniedError) Is(target error) bool { return target == ErrDenied }

func denied(format string, args ...any) error {
	return &deniedError{msg: fmt.Sprintf(format, args...)}
}

// Policy decides which paths the tools may read and write. rel is a cleaned, slash-separated
// path relative to the workspace root ("." for the root itself). A non-nil error refuses the
// access; its message goes to the model, so it should name the path and say what is allowed.
//
// read_file and view_file need CanRead, write_file needs CanWrite, edit_file needs both. list_files needs
// CanRead on the directory (or CanList, see [Lister]) and shows only entries that pass the
// same check. A Policy must be safe for concurrent use.
type Policy interface {
	CanRead(rel string) error
	CanWrite(rel string) error
}

// Lister is an optional interface of a [Policy]. list_files uses CanList, when the policy has
// it, for directories: a directory that cannot be read but can be listed is shown and can be
// entered, so a model can find its way down to the parts of the tree it may read.
type Lister interface {
	CanList(rel string) error
}

// Scope is a [Policy] built from path prefixes. A prefix is a path relative to the root and
// matches itself and everything below it, component-wise ("nodes/n1" matches "nodes/n1" and
// "nodes/n1/a.txt", not "nodes/n10"); "" or "." matches everything. With no prefixes nothing
// is allowed.
//
// Read and Write are independent: a path under a Write prefix only is writable but not
// readable (so edit_file, which needs both, cannot change it). Scope also implements [Lister]:
// the directories leading down to a Read prefix may be listed, showing only the entries on
// the way to what is readable.
type Scope struct {
	// Root is the workspace directory; only [Scope.Tools] uses it.
	Root string
	// Read lists the prefixes that may be read.
	Read []string
	// Write lists the prefixes that may be written.
	Write []string
}

// Tools returns the file tools for s.Root confined by s; see [Tools].
func (s Scope) Tools(opts ...Option) []tools.Tool { return Tools(s.Root, s, opts...) }

// CanRead allows rel if it is under one of s.Read.
func (s Scope) CanRead(rel string) error {
	rel = cleanRel(rel)
	if under(rel, s.Read) {
		return nil
	}
	if len(s.Read) == 0 {
		return denied("reading %q is not allowed: no files may be read in this workspace", rel)
	}
	return denied("reading %q is not allowed: you may read only inside %s", rel, listPrefixes(s.Read))
}

// CanWrite allows rel if it is under one of s.Write.
func (s Scope) CanWrite(rel string) error {
	rel = cleanRel(rel)
	if under(rel, s.Write) {
		return nil
	}
	if len(s.Write) == 0 {
		return denied("writing %q is not allowed: no files may be written in this workspace", rel)
	}
	return denied("writing %q is not allowed: you may write only inside %s", rel, listPrefixes(s.Write))
}

// CanList allows rel if it may be read or if it is a directory on the way to a Read prefix.
func (s Scope) CanList(rel string) error {
	rel = cleanRel(rel)
	if under(rel, s.Read) {
		return nil
	}
	if rel != ".." && !strings.HasPrefix(rel, "../") {
		for _, p := range s.Read {
			p = cleanPrefix(p)
			if rel == "." || strings.HasPrefix(p, rel+"/") {
				return nil
			}
		}
	}
	if len(s.Read) == 0 {
		return denied("listing %q is not allowed: no files may be read in this workspace", rel)
	}
	return denied("listing %q is not allowed: you may list only inside %s and the directories leading to them",
		rel, listPrefixes(s.Read))
}

func cleanRel(rel string) string { return path.Clean(filepath.ToSlash(rel)) }

func cleanPrefix(p string) string {
	return path.Clean(strings.Trim(filepath.ToSlash(p), "/"))
}

// under reports whether rel is one of prefixes or below one.
func under(rel string, prefixes []string) bool {
	if rel == ".." || strings.HasPrefix(rel, "../") || path.IsAbs(rel) {
		return false
	}
	for _, p := range prefixes {
		p = cleanPrefix(p)
		if p == "." || rel == p || strings.HasPrefix(rel, p+"/") {
			return true
		}
	}
	return false
}

func listPrefixes(prefixes []string) string {
	q := make([]string, len(prefixes))
	for i, p := range prefixes {
		q[i] = fmt.Sprintf("%q", cleanPrefix(p))
	}
	return strings.Join(q, ", ")
}
