package files

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
)

// access is what a tool wants to do with a path.
type access int

const (
	accessNone  access = iota // resolve only, no policy check
	accessRead                // CanRead
	accessWrite               // CanWrite
	accessEdit                // CanRead and CanWrite
	accessList                // CanRead, or CanList if the policy is a Lister
)

// workspace is the root and policy the tools share.
type workspace struct {
	root   string // absolute, possibly through symlinks
	policy Policy
	synced bool // Synced

	mu     sync.Mutex
	real   string      // the root's real path, when it was last resolved
	rootFI fs.FileInfo // the folder the root was then
}

// target is a resolved path.
type target struct {
	rel    string // the path as given, cleaned and slash-separated
	real   string // its real location relative to the real root, slash-separated ("." for the root)
	exists bool   // whether the whole path exists
}

// resolve is the single gate every tool passes a path through: it cleans the path, refuses
// absolute paths and ".." escapes, resolves symlinks on the longest existing prefix, refuses a
// real location outside the real root, and asks the policy (for a). realRoot is the root's real
// path, to open an [os.Root] on.
func (w *workspace) resolve(p string, a access) (t target, realRoot string, err error) {
	shown := p
	if p == "" {
		p = "."
	}
	if strings.ContainsRune(p, 0) {
		return target{}, "", denied("path %q contains a NUL byte", shown)
	}
	if filepath.IsAbs(p) || strings.HasPrefix(p, "/") || strings.HasPrefix(p, `\`) || filepath.VolumeName(p) != "" {
		return target{}, "", denied("path %q is absolute: give paths relative to the workspace root, like \"notes/todo.md\"", shown)
	}
	rel := path.Clean(filepath.ToSlash(p))
	if rel == ".." || strings.HasPrefix(rel, "../") {
		return target{}, "", denied("path %q leads outside the workspace: paths are relative to the workspace root and may not climb above it with \"..\"", shown)
	}
	realRoot, err = w.realRoot()
	if err != nil {
		return target{}, "", fmt.Errorf("the workspace root is not available: %v", Cause(err))
	}

	var parts []string
	if rel != "." {
		parts = strings.Split(rel, "/")
	}
	realPrefix, i, linked, err := plainPrefix(realRoot, rel, parts)
	if linked {
		realPrefix, i, err = linkedPrefix(realRoot, rel, parts)
	}
	if err != nil {
		return target{}, "", err
	}
	full := filepath.Join(append([]string{realPrefix}, parts[i:]...)...)
	realRel, err := filepath.Rel(realRoot, full)
	if err != nil || realRel == ".." || strings.HasPrefix(realRel, ".."+string(filepath.Separator)) || filepath.IsAbs(realRel) {
		return target{}, "", denied("path %q is a symbolic link (or goes through one) that leads outside the workspace; only files inside the workspace can be used", rel)
	}
	t = target{rel: rel, real: filepath.ToSlash(realRel), exists: i == len(parts)}
	if err := w.allow(t.rel, t.real, a); err != nil {
		return target{}, "", err
	}
	return t, realRoot, nil
}

// realRoot returns the root's real path: resolved again only when the root is no longer the
// folder it was (a Stat, rather than a Lstat of each folder on the way).
func (w *workspace) realRoot() (string, error) {
	fi, err := os.Stat(w.root)
	if err != nil {
		return "", err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.rootFI == nil || !os.SameFile(fi, w.rootFI) {
		real, err := filepath.EvalSymlinks(w.root)
		if err != nil {
			return "", err
		}
		w.real, w.rootFI = real, fi
	}
	return w.real, nil
}

// plainPrefix finds the longest existing prefix of parts under realRoot, a real path, with a
// Lstat of each: it returns the prefix's path and length, or linked when a symbolic link is on
// the way (linkedPrefix then resolves it).
func plainPrefix(realRoot, rel string, parts []string) (prefix string, n int, linked bool, err error) {
	prefix = realRoot
	for k, part := range parts {
		next := filepath.Join(prefix, part)
		fi, err := os.Lstat(next)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return prefix, k, false, nil
		case err != nil:
			return "", 0, false, fmt.Errorf("cannot resolve path %q: %v", rel, Cause(err))
		case fi.Mode()&fs.ModeSymlink != 0:
			return "", 0, true, nil
		case !fi.IsDir() && k < len(parts)-1:
			return "", 0, false, throughFile(rel)
		}
		prefix = next
	}
	return prefix, len(parts), false, nil
}

// throughFile is the error of a path that goes on past a file.
func throughFile(rel string) error {
	return fmt.Errorf("path %q goes through a file as if it were a directory", rel)
}

// linkedPrefix resolves the longest existing prefix of parts under realRoot through the symbolic
// links on the way, and returns its real path and length.
func linkedPrefix(realRoot, rel string, parts []string) (string, int, error) {
	for i := len(parts); i >= 0; i-- {
		cand := filepath.Join(realRoot, filepath.FromSlash(strings.Join(parts[:i], "/")))
		r, err := filepath.EvalSymlinks(cand)
		if err == nil {
			return r, i, nil
		}
		switch {
		case errors.Is(err, syscall.ENOTDIR):
			return "", 0, throughFile(rel)
		case !errors.Is(err, fs.ErrNotExist):
			return "", 0, fmt.Errorf("cannot resolve path %q: %v", rel, Cause(err))
		}
		if _, lerr := os.Lstat(cand); lerr == nil {
			// It exists but cannot be resolved: a symlink whose target is missing.
			return "", 0, denied("path %q goes through a broken symbolic link (%q); it cannot be used",
				rel, strings.Join(parts[:i], "/"))
		}
	}
	return "", 0, fmt.Errorf("cannot resolve path %q", rel) // cannot happen: the real root itself exists
}

// allow asks the policy about rel and, if a symlink makes it differ, about real.
func (w *workspace) allow(rel, real string, a access) error {
	if a == accessNone {
		return nil
	}
	if err := w.check(rel, a); err != nil {
		return err
	}
	if real != rel {
		if err := w.check(real, a); err != nil {
			return fmt.Errorf("%q is a symbolic link to %q, and %w", rel, real, err)
		}
	}
	return nil
}

func (w *workspace) check(rel string, a access) error {
	switch a {
	case accessRead:
		return w.policy.CanRead(rel)
	case accessWrite:
		return w.policy.CanWrite(rel)
	case accessEdit:
		if err := w.policy.CanRead(rel); err != nil {
			return err
		}
		return w.policy.CanWrite(rel)
	case accessList:
		err := w.policy.CanRead(rel)
		if err == nil {
			return nil
		}
		if l, ok := w.policy.(Lister); ok {
			return l.CanList(rel)
		}
		return err
	}
	return nil
}

// Cause drops the host path from a *fs.PathError or *os.LinkError, leaving the cause, so that
// messages to a model do not reveal where the workspace lives, and messages that name the path
// themselves do not name it twice.
func Cause(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Err
	}
	return err
}
