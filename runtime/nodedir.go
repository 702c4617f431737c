package runtime

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// NodeDir is a work node's folder of truth:
//
//	_spec.md      the task
//	_refs.json    pointers to other nodes' published outputs
//	_status.md    the node's status and summary
//	scratch/      the worker's work in progress (and, for CLI agents, the protocol files)
//	published/    the node's outputs, immutable once published
type NodeDir string

// Path returns the path of name inside the folder.
func (d NodeDir) Path(name string) string { return filepath.Join(string(d), name) }

// Scratch returns the scratch directory, where the worker works.
func (d NodeDir) Scratch() string { return d.Path("scratch") }

// Published returns the published directory.
func (d NodeDir) Published() string { return d.Path("published") }

// Create makes the folder, scratch/ and published/ if they do not exist.
func (d NodeDir) Create() error {
	for _, p := range []string{d.Scratch(), d.Published()} {
		if err := os.MkdirAll(p, 0o755); err != nil {
			return fmt.Errorf("runtime: node folder %s: %w", d, err)
		}
	}
	return nil
}

// Publish moves the worker's outputs from scratch/ to published/ and makes them read-only: every
// entry of scratch/ except those whose names start with "_" or "." (protocol and hidden files,
// which stay). It returns every file in published/ afterwards, relative to it, sorted — so
// publishing again after a crash that came between the move and its record gives the same
// answer. A file that is already published is not replaced: Publish fails naming it, before
// moving anything.
func (d NodeDir) Publish() ([]string, error) {
	if err := d.Create(); err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(d.Scratch())
	if err != nil {
		return nil, fmt.Errorf("runtime: publish %s: %w", d, err)
	}
	var names []string
	for _, e := range entries {
		if n := e.Name(); !strings.HasPrefix(n, "_") && !strings.HasPrefix(n, ".") {
			names = append(names, n)
		}
	}
	for _, n := range names {
		if _, err := os.Lstat(filepath.Join(d.Published(), n)); err == nil {
			return nil, fmt.Errorf("runtime: publish %s: %s is already published and cannot be replaced", d, n)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("runtime: publish %s: %w", d, err)
		}
	}
	for _, n := range names {
		if err := os.Rename(filepath.Join(d.Scratch(), n), filepath.Join(d.Published(), n)); err != nil {
			return nil, fmt.Errorf("runtime: publish %s: %w", d, err)
		}
	}
	files, err := d.published(func(p string, e fs.DirEntry) error {
		if e.Type().IsRegular() {
			return os.Chmod(p, 0o444)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("runtime: publish %s: %w", d, err)
	}
	return files, nil
}

// PublishedFiles returns every file in published/, relative to it, sorted.
func (d NodeDir) PublishedFiles() ([]string, error) {
	return d.published(nil)
}

// published lists published/, calling fn (if not nil) on each file.
func (d NodeDir) published(fn func(path string, e fs.DirEntry) error) ([]string, error) {
	var files []string
	err := filepath.WalkDir(d.Published(), func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(d.Published(), p)
		files = append(files, filepath.ToSlash(rel))
		if fn != nil {
			return fn(p, e)
		}
		return nil
	})
	slices.Sort(files)
	return files, err
}
