package files

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"sort"
	"strings"

	"github.com/agiraph/agiraph/tools"
)

// MaxFileSize is the largest file read_file and edit_file accept, in bytes.
const MaxFileSize = 1 << 20

// DefaultReadLimit is how many lines read_file shows when no limit is given.
const DefaultReadLimit = 2000

// DefaultMaxEntries is how many entries list_files shows when no max_entries is given.
const DefaultMaxEntries = 500

// DefaultMaxDepth is how deep a recursive list_files goes when no max_depth is given.
const DefaultMaxDepth = 3

// ReadArgs are the arguments of read_file.
type ReadArgs struct {
	Path   string `json:"path" jsonschema_description:"File to read, relative to the workspace root"`
	Offset int    `json:"offset,omitempty" jsonschema:"minimum=1" jsonschema_description:"First line to show, counting from 1 (default 1)"`
	Limit  int    `json:"limit,omitempty" jsonschema:"minimum=1" jsonschema_description:"Maximum number of lines to show (default 2000)"`
}

// WriteArgs are the arguments of write_file.
type WriteArgs struct {
	Path    string `json:"path" jsonschema_description:"File to write, relative to the workspace root; missing parent directories are created"`
	Content string `json:"content" jsonschema_description:"The complete new content of the file"`
}

// EditArgs are the arguments of edit_file.
type EditArgs struct {
	Path      string `json:"path" jsonschema_description:"File to edit, relative to the workspace root"`
	OldString string `json:"old_string" jsonschema:"minLength=1" jsonschema_description:"Exact text to replace; it must occur exactly once in the file"`
	NewString string `json:"new_string" jsonschema_description:"Text to put in its place"`
}

// ListArgs are the arguments of list_files.
type ListArgs struct {
	Path       string `json:"path,omitempty" jsonschema_description:"Directory to list, relative to the workspace root (default: the root)"`
	Recursive  bool   `json:"recursive,omitempty" jsonschema_description:"Also list the contents of subdirectories"`
	MaxDepth   int    `json:"max_depth,omitempty" jsonschema:"minimum=1,maximum=20" jsonschema_description:"How many levels to go down when recursive (default 3)"`
	MaxEntries int    `json:"max_entries,omitempty" jsonschema:"minimum=1,maximum=5000" jsonschema_description:"Maximum number of entries to show (default 500)"`
}

// An Option changes what Tools returns.
type Option func(*workspace)

// Synced has write_file and edit_file sync each file they write to the disk before they return,
// with the folders that name it: a write they reported survives a power failure. An application
// that records what its tools did in a store whose commits survive one (checkpoint/sqlite's
// SyncFull, PostgreSQL) needs it, so that no record it keeps names a file the failure lost.
// Without it a write is atomic (readers see the old file or the new one) and the system writes it
// out in its own time, as it does most programs' writes.
func Synced() Option { return func(w *workspace) { w.synced = true } }

// Tools returns read_file, write_file, edit_file, list_files and view_file working on the
// directory root and confined by p (see the package documentation). read_file, list_files and
// view_file are marked safe to run concurrently; write_file and edit_file are not. view_file
// attaches the file to its result (see tools.Attach), for a registry built with
// tools.WithAttachments; elsewhere it says the runtime shows text only. A relative root is made absolute
// now. Tools panics if p is nil.
func Tools(root string, p Policy, opts ...Option) []tools.Tool {
	if p == nil {
		panic("files.Tools: nil Policy")
	}
	if abs, err := absPath(root); err == nil {
		root = abs
	}
	w := &workspace{root: root, policy: p}
	for _, o := range opts {
		o(w)
	}
	return []tools.Tool{
		tools.Func("read_file", "Read a text file from the workspace, with line numbers.", w.readFile,
			tools.Safe(), tools.WithGuidance(readGuidance)),
		tools.Func("write_file", "Create or overwrite a file in the workspace with the given content.", w.writeFile,
			tools.WithGuidance(writeGuidance)),
		tools.Func("edit_file", "Replace one exact, unique piece of text in a workspace file.", w.editFile,
			tools.WithGuidance(editGuidance)),
		tools.Func("list_files", "List the files and directories in a workspace directory.", w.listFiles,
			tools.Safe(), tools.WithGuidance(listGuidance)),
		tools.Func("view_file", "Look at an image or a PDF from the workspace: it is attached to the result.", w.viewFile,
			tools.Safe(), tools.WithGuidance(viewGuidance)),
	}
}

const readGuidance = `Paths are relative to the workspace root; absolute paths and ".." above the root are refused.
Each output line starts with its line number and a tab; that prefix is not part of the file.
Long files are shown 2000 lines at a time: when the output ends with a note about more lines, call again with the offset it gives. Use offset and limit to read just the part you need.
Files over 1 MiB and binary files cannot be read. Read a file before you edit or overwrite it.`

const writeGuidance = `Writes the complete content of the file, replacing what was there; missing parent directories are created. The write is atomic: readers see the old file or the new one, never a mix.
To change part of an existing file, prefer edit_file, which cannot lose the rest of the file.
Only some parts of the workspace are writable; a refusal says which.`

const editGuidance = `Replaces old_string with new_string. old_string must match the file exactly — whitespace, indentation and line breaks included, without read_file's line-number prefixes — and must occur exactly once: if it is not found, read the file again and copy the text; if it occurs several times, include more surrounding lines to make it unique.
To make several changes, call edit_file once per change. To replace the whole file, use write_file.`

const listGuidance = `Lists a directory (default: the workspace root). Paths in the output are relative to the workspace root and can be passed to the other tools as they are; directories end with "/".
Set recursive to see subdirectories too (max_depth levels, default 3). Entries you may not read are not shown. Symbolic links to directories are shown but not entered.`

func absPath(p string) (string, error) {
	if p == "" {
		p = "."
	}
	return filepath.Abs(p)
}

// readFile implements read_file.
func (w *workspace) readFile(ctx context.Context, a ReadArgs) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	if a.Path == "" {
		return "", errors.New(`read_file needs a "path": the file to read, relative to the workspace root`)
	}
	t, realRoot, err := w.resolve(a.Path, accessRead)
	if err != nil {
		return "", err
	}
	text, _, err := readText(realRoot, t)
	if err != nil {
		return "", err
	}
	if text == "" {
		return fmt.Sprintf("(file %q is empty)", t.rel), nil
	}
	lines := splitLines(text)
	start := max(a.Offset, 1) - 1
	if start >= len(lines) {
		return "", fmt.Errorf("offset %d is past the end of %q, which has %d lines", a.Offset, t.rel, len(lines))
	}
	limit := a.Limit
	if limit <= 0 {
		limit = DefaultReadLimit
	}
	end := min(start+limit, len(lines))
	var b strings.Builder
	for i := start; i < end; i++ {
		fmt.Fprintf(&b, "%6d\t%s\n", i+1, lines[i])
	}
	if end < len(lines) {
		fmt.Fprintf(&b, "(showing lines %d-%d of %d; call read_file with offset=%d to read more)\n", start+1, end, len(lines), end+1)
	}
	return b.String(), nil
}

// splitLines splits text into lines, without their "\n"; a final newline does not start an
// extra empty line.
func splitLines(text string) []string {
	lines := strings.Split(text, "\n")
	if len(lines) > 1 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// readText reads an existing text file no larger than MaxFileSize, returning its content
// and permissions.
func readText(realRoot string, t target) (string, fs.FileMode, error) {
	data, perm, err := readBytes(realRoot, t, MaxFileSize)
	if err != nil {
		return "", 0, err
	}
	if bytes.IndexByte(data, 0) >= 0 {
		return "", 0, fmt.Errorf("file %q looks binary (it contains NUL bytes); these tools handle text files only", t.rel)
	}
	return string(data), perm, nil
}

// readBytes reads an existing regular file no larger than limit bytes, returning its content
// and permissions.
func readBytes(realRoot string, t target, limit int64) ([]byte, fs.FileMode, error) {
	if !t.exists {
		return nil, 0, fmt.Errorf("file %q does not exist; use list_files to see what there is", t.rel)
	}
	root, err := os.OpenRoot(realRoot)
	if err != nil {
		return nil, 0, fmt.Errorf("the workspace root is not available: %v", Cause(err))
	}
	defer root.Close()
	f, err := root.Open(t.real)
	if err != nil {
		return nil, 0, ioError("open", t.rel, err)
	}
	defer func() { _ = f.Close() }() // read only
	st, err := f.Stat()
	if err != nil {
		return nil, 0, ioError("stat", t.rel, err)
	}
	if st.IsDir() {
		return nil, 0, fmt.Errorf("%q is a directory, not a file; use list_files to see its contents", t.rel)
	}
	if !st.Mode().IsRegular() {
		return nil, 0, fmt.Errorf("%q is not a regular file", t.rel)
	}
	if st.Size() > limit {
		return nil, 0, fmt.Errorf("file %q is too large to read: %d bytes, and the limit is %d bytes (%d MiB)", t.rel, st.Size(), limit, limit>>20)
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, 0, ioError("read", t.rel, err)
	}
	if int64(len(data)) > limit {
		return nil, 0, fmt.Errorf("file %q is too large to read: over the limit of %d bytes (%d MiB)", t.rel, limit, limit>>20)
	}
	return data, st.Mode().Perm(), nil
}

// writeFile implements write_file.
func (w *workspace) writeFile(ctx context.Context, a WriteArgs) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	if a.Path == "" {
		return "", errors.New(`write_file needs a "path": the file to write, relative to the workspace root`)
	}
	t, realRoot, err := w.resolve(a.Path, accessWrite)
	if err != nil {
		return "", err
	}
	if t.real == "." {
		return "", fmt.Errorf("%q is the workspace root, a directory; give a file path", a.Path)
	}
	root, err := os.OpenRoot(realRoot)
	if err != nil {
		return "", fmt.Errorf("the workspace root is not available: %v", Cause(err))
	}
	defer root.Close()
	dir, err := root.OpenRoot(path.Dir(t.real))
	var made []string
	if err != nil && !t.exists {
		if made, err = w.makeParents(root, path.Dir(t.real)); err != nil {
			return "", err
		}
		dir, err = root.OpenRoot(path.Dir(t.real))
	}
	if err != nil {
		return "", ioError("open the folder of", t.rel, err)
	}
	defer dir.Close()

	perm := fs.FileMode(0o644)
	prev := int64(-1)
	if t.exists {
		st, err := dir.Stat(path.Base(t.real))
		if err != nil {
			return "", ioError("stat", t.rel, err)
		}
		if st.IsDir() {
			return "", fmt.Errorf("%q is a directory; write_file writes files", t.rel)
		}
		if !st.Mode().IsRegular() {
			return "", fmt.Errorf("%q is not a regular file and cannot be written", t.rel)
		}
		perm, prev = st.Mode().Perm(), st.Size()
	}
	if err := w.writeAtomic(dir, t, []byte(a.Content), perm); err != nil {
		return "", err
	}
	if w.synced {
		// The folders made for the file are named by their parents, which a sync of them writes.
		for _, d := range made {
			if err := syncFolder(root, path.Dir(d)); err != nil {
				return "", ioError("sync the folder of", d, err)
			}
		}
	}
	if prev < 0 {
		return fmt.Sprintf("wrote %d bytes to %q (new file)", len(a.Content), t.rel), nil
	}
	return fmt.Sprintf("wrote %d bytes to %q (replaced %d bytes)", len(a.Content), t.rel, prev), nil
}

// makeParents creates the missing directories of dir (a real, slash-separated path relative
// to the root), each of which the policy must allow writing, and returns those it made.
func (w *workspace) makeParents(root *os.Root, dir string) (made []string, err error) {
	if dir == "." {
		return nil, nil
	}
	parts := strings.Split(dir, "/")
	for i := range parts {
		d := strings.Join(parts[:i+1], "/")
		st, err := root.Stat(d)
		if err == nil {
			if !st.IsDir() {
				return made, fmt.Errorf("cannot create %q: %q is a file, not a directory", dir, d)
			}
			continue
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return made, ioError("stat", d, err)
		}
		if err := w.policy.CanWrite(d); err != nil {
			return made, fmt.Errorf("cannot create directory %q: %w", d, err)
		}
		if err := root.Mkdir(d, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return made, ioError("create directory", d, err)
		}
		made = append(made, d)
	}
	return made, nil
}

// tmpInfix marks the names of temporary files: ".{name}.tmp-{random}" (see Temporary).
const tmpInfix = ".tmp-"

// Temporary reports whether a file name is one of a write's temporary files — write_file's and
// edit_file's, named ".{name}.tmp-{random}", and those of writers that name theirs alike — which
// list_files leaves out.
func Temporary(name string) bool {
	return strings.HasPrefix(name, ".") && strings.Contains(name, tmpInfix)
}

// writeAtomic writes data to a temporary file in dir, the target's folder, and renames it over
// the target, so readers never see a partial file, nor a crash of the process an empty one; when
// synced (Synced), the file is synced before the rename and the folder after it, so that a
// crash of the system keeps what was written too. It works in the folder by names alone: an
// os.Root given a longer path opens every folder on the way again, at each call.
func (w *workspace) writeAtomic(dir *os.Root, t target, data []byte, perm fs.FileMode) (err error) {
	base := path.Base(t.real)
	tmp := "." + base + tmpInfix + rand.Text()[:12]
	f, err := dir.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return ioError("create a temporary file for", t.rel, err)
	}
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = dir.Remove(tmp)
		}
	}()
	if _, err = f.Write(data); err != nil {
		return ioError("write", t.rel, err)
	}
	if err = f.Chmod(perm); err != nil {
		return ioError("set permissions of", t.rel, err)
	}
	if w.synced {
		if err = syncFile(f); err != nil {
			return ioError("sync", t.rel, err)
		}
	}
	if err = f.Close(); err != nil {
		return ioError("write", t.rel, err)
	}
	if err = dir.Rename(tmp, base); err != nil {
		return ioError("replace", t.rel, err)
	}
	if w.synced {
		if err := syncFolder(dir, "."); err != nil {
			return ioError("sync the folder of", t.rel, err)
		}
	}
	return nil
}

// syncFile syncs f to the disk (a variable, for tests to count the syncs).
var syncFile = (*os.File).Sync

// syncFolder syncs the folder name in root, so that the names it holds survive a power failure.
// A system that cannot sync a folder (Windows) needs nothing more.
func syncFolder(root *os.Root, name string) error {
	d, err := root.Open(name)
	if err != nil {
		return err
	}
	err = syncFile(d)
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil && (errors.Is(err, errors.ErrUnsupported) || runtime.GOOS == "windows") {
		return nil
	}
	return err
}

// editFile implements edit_file.
func (w *workspace) editFile(ctx context.Context, a EditArgs) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	if a.Path == "" {
		return "", errors.New(`edit_file needs a "path": the file to edit, relative to the workspace root`)
	}
	if a.OldString == "" {
		return "", errors.New(`edit_file needs a non-empty "old_string"; to write a whole file, use write_file`)
	}
	t, realRoot, err := w.resolve(a.Path, accessEdit)
	if err != nil {
		return "", err
	}
	text, perm, err := readText(realRoot, t)
	if err != nil {
		return "", err
	}
	switch n := strings.Count(text, a.OldString); {
	case n == 0:
		return "", fmt.Errorf("old_string was not found in %q; read the file again and copy the exact text, including whitespace and indentation, without the line-number prefixes", t.rel)
	case n > 1:
		return "", fmt.Errorf("old_string occurs %d times in %q (at lines %s); include more of the surrounding text so that it matches exactly once",
			n, t.rel, occurrenceLines(text, a.OldString))
	}
	if a.OldString == a.NewString {
		return "", errors.New("old_string and new_string are the same; nothing to change")
	}
	at := strings.Index(text, a.OldString)
	line := strings.Count(text[:at], "\n") + 1
	updated := text[:at] + a.NewString + text[at+len(a.OldString):]
	root, err := os.OpenRoot(realRoot)
	if err != nil {
		return "", fmt.Errorf("the workspace root is not available: %v", Cause(err))
	}
	defer root.Close()
	dir, err := root.OpenRoot(path.Dir(t.real))
	if err != nil {
		return "", ioError("open the folder of", t.rel, err)
	}
	defer dir.Close()
	if err := w.writeAtomic(dir, t, []byte(updated), perm); err != nil {
		return "", err
	}
	return fmt.Sprintf("edited %q: replaced 1 occurrence starting at line %d (file is now %d bytes)", t.rel, line, len(updated)), nil
}

// occurrenceLines lists the line numbers where sub starts in text, up to 10.
func occurrenceLines(text, sub string) string {
	var nums []string
	for off := 0; len(nums) < 10; {
		i := strings.Index(text[off:], sub)
		if i < 0 {
			break
		}
		nums = append(nums, fmt.Sprint(strings.Count(text[:off+i], "\n")+1))
		off += i + len(sub)
	}
	return strings.Join(nums, ", ")
}

// listFiles implements list_files.
func (w *workspace) listFiles(ctx context.Context, a ListArgs) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	t, realRoot, err := w.resolve(a.Path, accessList)
	if err != nil {
		return "", err
	}
	if !t.exists {
		return "", fmt.Errorf("directory %q does not exist", t.rel)
	}
	root, err := os.OpenRoot(realRoot)
	if err != nil {
		return "", fmt.Errorf("the workspace root is not available: %v", Cause(err))
	}
	defer root.Close()
	st, err := root.Stat(t.real)
	if err != nil {
		return "", ioError("stat", t.rel, err)
	}
	if !st.IsDir() {
		return "", fmt.Errorf("%q is a file, not a directory; use read_file to read it", t.rel)
	}
	l := lister{ctx: ctx, w: w, root: root, maxEntries: DefaultMaxEntries, maxDepth: 1}
	if a.MaxEntries > 0 {
		l.maxEntries = a.MaxEntries
	}
	if a.Recursive {
		l.maxDepth = DefaultMaxDepth
		if a.MaxDepth > 0 {
			l.maxDepth = a.MaxDepth
		}
	}
	if err := l.walk(t.rel, t.real, 1); err != nil && !errors.Is(err, errFull) {
		return "", err
	}
	var b strings.Builder
	for _, e := range l.out {
		b.WriteString(e + "\n")
	}
	switch {
	case l.full:
		fmt.Fprintf(&b, "(listing stopped at %d entries; list a subdirectory, or raise max_entries)\n", l.maxEntries)
	case len(l.out) == 0:
		fmt.Fprintf(&b, "(directory %q has no entries you can see)\n", t.rel)
	}
	return b.String(), nil
}

var errFull = errors.New("entry limit reached")

type lister struct {
	ctx        context.Context
	w          *workspace
	root       *os.Root
	maxEntries int
	maxDepth   int
	out        []string
	full       bool
}

// walk lists the directory whose path as given is rel and whose real path is real.
func (l *lister) walk(rel, real string, depth int) error {
	if err := l.ctx.Err(); err != nil {
		return err
	}
	f, err := l.root.Open(real)
	if err != nil {
		return ioError("open", rel, err)
	}
	entries, err := f.ReadDir(-1)
	_ = f.Close() // read only
	if err != nil {
		return ioError("list", rel, err)
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Name() < entries[j].Name() })
	for _, e := range entries {
		if Temporary(e.Name()) {
			continue // a write in progress, not a file of the workspace yet
		}
		erel, ereal := join(rel, e.Name()), join(real, e.Name())
		isDir, isLink := e.IsDir(), e.Type()&fs.ModeSymlink != 0
		if isLink {
			t, _, err := l.w.resolve(erel, accessNone)
			if err != nil || !t.exists {
				continue // leads outside the workspace, or broken: not shown
			}
			st, err := l.root.Stat(t.real)
			if err != nil {
				continue
			}
			ereal, isDir = t.real, st.IsDir()
		}
		a := accessRead
		if isDir {
			a = accessList
		}
		if l.w.allow(erel, ereal, a) != nil {
			continue
		}
		if len(l.out) >= l.maxEntries {
			l.full = true
			return errFull
		}
		if isDir {
			l.out = append(l.out, erel+"/")
			if !isLink && depth < l.maxDepth {
				if err := l.walk(erel, ereal, depth+1); err != nil {
					return err
				}
			}
		} else {
			l.out = append(l.out, erel)
		}
	}
	return nil
}

func join(dir, name string) string {
	if dir == "." {
		return name
	}
	return dir + "/" + name
}

// ioError describes a failed file operation on rel without revealing host paths.
func ioError(op, rel string, err error) error {
	err = Cause(err)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("cannot %s %q: it does not exist", op, rel)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("cannot %s %q: the operating system denied permission", op, rel)
	}
	return fmt.Errorf("cannot %s %q: %v", op, rel, err)
}
