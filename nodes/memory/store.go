package memory

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/agiraph/agiraph/internal/osfile"
	"github.com/agiraph/agiraph/nodes/workspace"
	"github.com/agiraph/agiraph/tools/files"
)

// DefaultBudget is the default load-all threshold of [Store.Search], in bytes.
const DefaultBudget = 20 << 10

// CuratedFile is the path that names MEMORY.md, the curated long-term memory, in the
// methods of [Store] and the memory tools.
const CuratedFile = "MEMORY.md"

// IndexFile is the path of the index, relative to memory/.
const IndexFile = "index.md"

// Topic folders Open creates in memory/.
var topicDirs = []string{"knowledge", "experiences", "preferences"}

const indexTemplate = `# Memory index

What is stored where in memory/. A line is added here for every new file; keep the lines
short and correct them when a file changes. Daily logs (YYYY-MM-DD.md) are not listed.

`

var dailyLogName = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}\.md$`)

const (
	dirPerm  = 0o755
	filePerm = 0o644
)

// config is what the options set.
type config struct {
	budget   int
	now      func() time.Time
	observer func(Write)
	index    Index // WithIndex
}

// Option configures a [Store].
type Option func(*config)

// WithBudget sets the load-all threshold of [Store.Search] in bytes (default
// [DefaultBudget]): when all memory is no larger, Search returns all of it; otherwise it
// returns matching sections, at most this many bytes of them. n <= 0 keeps the default.
func WithBudget(bytes int) Option {
	return func(c *config) {
		if bytes > 0 {
			c.budget = bytes
		}
	}
}

// WithClock sets the clock [Store.Log], [Store.Recent] and [Store.Prompt] read the date and
// time from (default time.Now). A nil now keeps the default.
func WithClock(now func() time.Time) Option {
	return func(c *config) {
		if now != nil {
			c.now = now
		}
	}
}

// WithObserver sets a function told of every write the store makes, after it has been made:
// [Store.Write], [Store.Log] and the lines added to index.md. It is called without the
// store's lock held, so it may use the store.
func WithObserver(fn func(Write)) Option {
	return func(c *config) { c.observer = fn }
}

// Write describes one write to memory, for the observer (see [WithObserver]).
type Write struct {
	// Path is the file written: relative to memory/ ("knowledge/go.md", "2026-02-11.md",
	// "index.md"), or "MEMORY.md" for the curated file.
	Path string
	// Bytes is the number of bytes written.
	Bytes int
	// Append says the bytes were appended; otherwise they replaced the file's content.
	Append bool
	// By is who wrote (an agent or worker id, as given to the store).
	By string
	// Text is, for an append, the text appended (Bytes of it, with the newlines added).
	Text string `json:",omitempty"`
	// Before is, for a replacement, the content replaced; nil when the file was new. With
	// Text and Created, it lets [Store.Rewind] undo the write.
	Before *string `json:",omitempty"`
	// Created says the write made the file.
	Created bool `json:",omitempty"`
}

// Store is an agent's memory: MEMORY.md (curated long-term memory) and memory/ (daily logs
// YYYY-MM-DD.md, knowledge/, experiences/, preferences/, index.md). See the package
// documentation for the layout and the path rules. Safe for concurrent use.
type Store struct {
	home workspace.Home
	cfg  config
	mu   sync.RWMutex
}

// Open opens the memory of home, creating memory/, memory/knowledge/, memory/experiences/,
// memory/preferences/ and memory/index.md if they are missing (and the home folder itself).
// It does not create MEMORY.md. A memory/ or a MEMORY.md that is a symbolic link is refused:
// memory is kept in the home, and a link could lead anywhere.
func Open(home workspace.Home, opts ...Option) (*Store, error) {
	cfg := config{budget: DefaultBudget, now: time.Now}
	for _, o := range opts {
		o(&cfg)
	}
	if home == "" {
		return nil, errors.New("memory: open: no home folder given")
	}
	s := &Store{home: home, cfg: cfg}
	if err := s.checkLinks(); err != nil {
		return nil, fmt.Errorf("memory: open: %w", err)
	}
	dir := home.MemoryDir()
	if err := os.MkdirAll(dir, dirPerm); err != nil {
		return nil, fmt.Errorf("memory: open: create %s: %w", dir, files.Cause(err))
	}
	root, err := s.openDir()
	if err != nil {
		return nil, fmt.Errorf("memory: open: %w", err)
	}
	defer root.Close()
	for _, d := range topicDirs {
		if err := root.MkdirAll(d, dirPerm); err != nil {
			return nil, fmt.Errorf("memory: open: create %s: %w", filepath.Join(dir, d), files.Cause(err))
		}
	}
	idx := filepath.Join(dir, IndexFile)
	f, err := root.OpenFile(IndexFile, os.O_WRONLY|os.O_CREATE|os.O_EXCL, filePerm)
	switch {
	case err == nil:
		_, err = f.WriteString(indexTemplate)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return nil, fmt.Errorf("memory: open: create %s: %w", idx, files.Cause(err))
		}
	case !errors.Is(err, fs.ErrExist):
		return nil, fmt.Errorf("memory: open: create %s: %w", idx, files.Cause(err))
	}
	return s, nil
}

// checkLinks returns an error if memory/ or MEMORY.md is a symbolic link (see checkLink).
func (s *Store) checkLinks() error {
	return errors.Join(s.checkLink(false), s.checkLink(true))
}

// checkLink returns an error naming memory/ (curated: MEMORY.md) if it is a symbolic link. The
// store works only on the folder and the file of the home itself: through a link it would
// read and write wherever the link leads, outside the home.
func (s *Store) checkLink(curated bool) error {
	p, what, kind := s.home.MemoryDir(), "the memory folder", "folder"
	if curated {
		p, what, kind = s.home.Memory(), CuratedFile, "file"
	}
	if st, err := os.Lstat(p); err == nil && st.Mode()&fs.ModeSymlink != 0 {
		return fmt.Errorf("%s is a symbolic link, and %s may not be one (it could lead outside the agent's home): replace the link with a real %s", p, what, kind)
	}
	return nil
}

// openHome opens the home folder as a root; MEMORY.md is read and written through it.
func (s *Store) openHome() (*os.Root, error) {
	root, err := os.OpenRoot(string(s.home))
	if err != nil {
		return nil, fmt.Errorf("the home folder %s is not available: %v", s.home, files.Cause(err))
	}
	return root, nil
}

// openDir opens memory/ as a root, refusing a memory/ that is a symbolic link (see
// checkLinks). It opens memory/ from within the home, so that a link put in its place after
// the check cannot lead outside the home either.
func (s *Store) openDir() (*os.Root, error) {
	if err := s.checkLink(false); err != nil {
		return nil, err
	}
	dir := s.home.MemoryDir()
	home, err := s.openHome()
	if err != nil {
		return nil, err
	}
	defer home.Close()
	root, err := home.OpenRoot(filepath.Base(dir))
	if err != nil {
		return nil, fmt.Errorf("the memory folder %s is not available: %v", dir, files.Cause(err))
	}
	return root, nil
}

// openRoot opens the folder t is in: the home for MEMORY.md, memory/ for the others.
func (s *Store) openRoot(t target) (*os.Root, error) {
	if t.curated {
		return s.openHome()
	}
	return s.openDir()
}

// Home returns the home folder the store was opened on.
func (s *Store) Home() workspace.Home { return s.home }

// Write writes content to the memory file path, as by. path is relative to memory/
// ("knowledge/go.md"), or "MEMORY.md" for the curated file; only .md files may be written,
// and paths leading outside memory/ are refused. Missing parent folders are created.
//
// With append false the file's content is replaced atomically by content. With append true
// content is added at the end of the file (created if missing) in a single O_APPEND write,
// starting on a new line and ending with a newline; appending nothing is an error.
//
// After a write to a file index.md does not mention (other than MEMORY.md, index.md and the
// daily logs), a line naming the file and its first header is appended to index.md.
func (s *Store) Write(by, path, content string, append bool) error {
	_, err := s.write(by, path, content, append)
	return err
}

// write is [Store.Write]; it returns the writes made (the file's, then index.md's if any).
func (s *Store) write(by, path, content string, append bool) ([]Write, error) {
	var writes []Write
	err := func() error {
		s.mu.Lock()
		defer s.mu.Unlock()
		t, err := s.resolve(path)
		if err != nil {
			return err
		}
		root, err := s.openRoot(t)
		if err != nil {
			return fmt.Errorf("memory: write %s: %w", t.rel, err)
		}
		defer root.Close()
		if dir := filepath.Dir(t.real); dir != "." {
			if err := root.MkdirAll(dir, dirPerm); err != nil {
				return fmt.Errorf("memory: write %s: create its folder: %v", t.rel, files.Cause(err))
			}
		}
		var w Write
		if append {
			if strings.TrimSpace(content) == "" {
				return fmt.Errorf("memory: write %s: nothing to append: content is empty", t.rel)
			}
			w, err = appendFile(root, t.real, content)
		} else {
			w, err = replaceFile(root, t.real, content)
		}
		if err != nil {
			return fmt.Errorf("memory: write %s: %v", t.rel, files.Cause(err))
		}
		w.Path, w.By = t.rel, by
		writes = []Write{w}
		if w, ok, err := s.indexLocked(root, t, content, by); err != nil {
			return err
		} else if ok {
			writes = slices.Concat(writes, []Write{w})
		}
		return nil
	}()
	s.notify(writes)
	return writes, err
}

// Read returns the content of the memory file path (same path rules as [Store.Write]). A
// missing file is an error naming it and listing the files memory holds.
func (s *Store) Read(path string) (string, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	t, err := s.resolve(path)
	if err != nil {
		return "", err
	}
	if !t.exists {
		return "", fmt.Errorf("memory: %q does not exist; %s", t.rel, s.describeFiles())
	}
	root, err := s.openRoot(t)
	if err != nil {
		return "", fmt.Errorf("memory: read %s: %w", t.rel, err)
	}
	defer root.Close()
	st, err := root.Stat(t.real)
	if err == nil && !st.Mode().IsRegular() {
		return "", fmt.Errorf("memory: %q is not a file; %s", t.rel, s.describeFiles())
	}
	data, err := osfile.ReadIn(root, t.real)
	if err != nil {
		return "", fmt.Errorf("memory: read %s: %v", t.rel, files.Cause(err))
	}
	return string(data), nil
}

// notify tells the index and the observer of writes made, without the store's lock held.
func (s *Store) notify(writes []Write) {
	for _, w := range writes {
		s.reindex(w.Path)
		if s.cfg.observer != nil {
			s.cfg.observer(w)
		}
	}
}

// appendFile appends content to name in one write, on a new line and ending with one, and
// returns the write made (but its path and writer).
func appendFile(root *os.Root, name, content string) (Write, error) {
	if !strings.HasSuffix(content, "\n") {
		content += "\n"
	}
	st, err := root.Stat(name)
	created := err != nil
	if err == nil && st.Size() > 0 {
		if !st.Mode().IsRegular() {
			return Write{}, errors.New("not a regular file")
		}
		f, err := root.Open(name)
		if err != nil {
			return Write{}, err
		}
		last := make([]byte, 1)
		_, err = f.ReadAt(last, st.Size()-1)
		_ = f.Close() // read only
		if err != nil {
			return Write{}, err
		}
		if last[0] != '\n' {
			content = "\n" + content
		}
	}
	f, err := root.OpenFile(name, os.O_WRONLY|os.O_APPEND|os.O_CREATE, filePerm)
	if err != nil {
		return Write{}, err
	}
	n, err := f.WriteString(content)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return Write{Bytes: n, Append: true, Text: content[:n], Created: created}, err
}

// replaceFile replaces name's content atomically: a temporary file in the same folder,
// synced and renamed over name. It returns the write made (but its path and writer).
func replaceFile(root *os.Root, name, content string) (w Write, err error) {
	perm := fs.FileMode(filePerm)
	if st, err := root.Stat(name); err == nil {
		if !st.Mode().IsRegular() {
			return Write{}, errors.New("not a regular file")
		}
		perm = st.Mode().Perm()
		before, err := osfile.ReadIn(root, name)
		if err != nil {
			return Write{}, err
		}
		w.Before = new(string(before))
	} else {
		w.Created = true
	}
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	dir, base := path.Split(filepath.ToSlash(name))
	tmp := filepath.FromSlash(dir + "." + base + ".tmp-" + hex.EncodeToString(rnd[:]))
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return Write{}, err
	}
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = root.Remove(tmp)
		}
	}()
	if w.Bytes, err = f.WriteString(content); err != nil {
		return Write{}, err
	}
	if err = f.Sync(); err != nil {
		return Write{}, err
	}
	if err = f.Close(); err != nil {
		return Write{}, err
	}
	if err = root.Rename(tmp, name); err != nil {
		return Write{}, err
	}
	return w, nil
}

// indexLocked appends a line for t to index.md if t is a file the index should list and
// does not mention. s.mu must be held for writing.
func (s *Store) indexLocked(root *os.Root, t target, content, by string) (Write, bool, error) {
	if t.curated || t.rel == IndexFile || dailyLogName.MatchString(t.rel) {
		return Write{}, false, nil
	}
	data, err := osfile.ReadIn(root, IndexFile)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return Write{}, false, fmt.Errorf("memory: wrote %s but could not read %s to index it: %v", t.rel, IndexFile, files.Cause(err))
	}
	if mentions(string(data), t.rel) {
		return Write{}, false, nil
	}
	line := "- " + t.rel
	if title := firstTitle(content); title != "" {
		line += ": " + title
	}
	w, err := appendFile(root, IndexFile, line)
	if err != nil {
		return Write{}, false, fmt.Errorf("memory: wrote %s but could not add it to %s: %v", t.rel, IndexFile, files.Cause(err))
	}
	w.Path, w.By = IndexFile, by
	return w, true, nil
}

// mentions reports whether text contains p as a whole path: not as part of a longer one.
func mentions(text, p string) bool {
	for i := 0; ; {
		j := strings.Index(text[i:], p)
		if j < 0 {
			return false
		}
		start, end := i+j, i+j+len(p)
		if (start == 0 || !pathChar(text[start-1])) && (end == len(text) || !pathChar(text[end])) {
			return true
		}
		i = start + 1
	}
}

func pathChar(c byte) bool {
	return c == '/' || c == '.' || c == '-' || c == '_' || c >= '0' && c <= '9' ||
		c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
}

// firstTitle returns the text of content's first markdown header, or "".
func firstTitle(content string) string {
	for line := range strings.SplitSeq(content, "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "#") {
			t := strings.TrimSpace(strings.TrimLeft(line, "#"))
			if t != "" {
				if len(t) > 80 {
					t = t[:80] + "…"
				}
				return t
			}
		}
	}
	return ""
}

// target is a resolved memory path.
type target struct {
	rel     string // the path as shown: relative to memory/, or "MEMORY.md"
	curated bool   // MEMORY.md
	real    string // the file's real location relative to root, OS-separated
	exists  bool
}

// resolve checks p against the path rules and finds where it really is.
func (s *Store) resolve(p string) (target, error) {
	shown := p
	p = strings.TrimSpace(p)
	switch {
	case p == "":
		return target{}, errors.New(`memory: no path given: give a path relative to memory/, like "knowledge/go.md", or "MEMORY.md"`)
	case strings.ContainsRune(p, 0):
		return target{}, fmt.Errorf("memory: path %q contains a NUL byte", shown)
	case filepath.IsAbs(p) || strings.HasPrefix(p, "/") || strings.HasPrefix(p, `\`) || filepath.VolumeName(p) != "":
		return target{}, fmt.Errorf(`memory: path %q is absolute: give a path relative to memory/, like "knowledge/go.md", or "MEMORY.md"`, shown)
	}
	rel := path.Clean(filepath.ToSlash(p))
	if rel == ".." || strings.HasPrefix(rel, "../") {
		return target{}, fmt.Errorf(`memory: path %q leads outside memory/: paths are relative to memory/ and may not climb above it with ".."`, shown)
	}
	if r, ok := strings.CutPrefix(rel, "memory/"); ok {
		rel = r
	}
	for _, part := range strings.Split(rel, "/") {
		if strings.HasPrefix(part, ".") {
			return target{}, fmt.Errorf("memory: path %q has a hidden name (%q): memory file and folder names may not start with a dot", shown, part)
		}
	}
	if !strings.EqualFold(path.Ext(rel), ".md") {
		return target{}, fmt.Errorf("memory: path %q is not a markdown file: memory holds only .md files, like \"knowledge/go.md\"", shown)
	}
	t := target{rel: rel}
	root := s.home.MemoryDir()
	if rel == CuratedFile {
		t.curated = true
		root = string(s.home)
	}
	if err := s.checkLink(t.curated); err != nil {
		return target{}, fmt.Errorf("memory: path %q cannot be used: %w", shown, err)
	}
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return target{}, fmt.Errorf("memory: the memory folder is not available: %v", files.Cause(err))
	}
	parts := strings.Split(rel, "/")
	i := len(parts)
	realPrefix := ""
	for ; i >= 0; i-- {
		cand := filepath.Join(realRoot, filepath.FromSlash(strings.Join(parts[:i], "/")))
		r, err := filepath.EvalSymlinks(cand)
		if err == nil {
			realPrefix = r
			break
		}
		switch {
		case errors.Is(err, syscall.ENOTDIR):
			return target{}, fmt.Errorf("memory: path %q goes through a file as if it were a folder", rel)
		case !errors.Is(err, fs.ErrNotExist):
			return target{}, fmt.Errorf("memory: cannot resolve path %q: %v", rel, files.Cause(err))
		}
		if _, lerr := os.Lstat(cand); lerr == nil {
			return target{}, fmt.Errorf("memory: path %q goes through a broken symbolic link (%q); it cannot be used", rel, strings.Join(parts[:i], "/"))
		}
	}
	if i < 0 {
		return target{}, fmt.Errorf("memory: cannot resolve path %q", rel)
	}
	full := filepath.Join(append([]string{realPrefix}, parts[i:]...)...)
	realRel, err := filepath.Rel(realRoot, full)
	if err != nil || realRel == ".." || strings.HasPrefix(realRel, ".."+string(filepath.Separator)) || filepath.IsAbs(realRel) ||
		(t.curated && realRel != CuratedFile) {
		return target{}, fmt.Errorf("memory: path %q is a symbolic link (or goes through one) that leads outside memory/; only files inside memory/ and MEMORY.md can be used", rel)
	}
	if !strings.EqualFold(filepath.Ext(realRel), ".md") {
		return target{}, fmt.Errorf("memory: path %q is a symbolic link to a file that is not a .md file", rel)
	}
	t.real = realRel
	t.exists = i == len(parts)
	return t, nil
}

// memFile is one memory file found by files.
type memFile struct {
	rel     string // as shown: "MEMORY.md" or relative to memory/
	size    int64
	mod     time.Time
	content string // read only when asked for; "" if it could not be read
}

// files lists the memory files: MEMORY.md (if it is a regular file) and the regular .md
// files under memory/, in path order; symbolic links and hidden names are skipped. With read
// it reads their content too. A memory/ or a MEMORY.md that is a symbolic link is an error
// (see checkLinks): nothing is listed or read through it.
func (s *Store) files(read bool) ([]memFile, error) {
	if err := s.checkLinks(); err != nil {
		return nil, err
	}
	home, err := s.openHome()
	if err != nil {
		return nil, err
	}
	defer home.Close()
	dir, err := s.openDir()
	if err != nil {
		return nil, err
	}
	defer dir.Close()
	var out []memFile
	add := func(root *os.Root, name, rel string, st fs.FileInfo) {
		f := memFile{rel: rel, size: st.Size(), mod: st.ModTime()}
		if read {
			if data, err := osfile.ReadIn(root, name); err == nil {
				f.content = string(data)
			}
		}
		out = append(out, f)
	}
	if st, err := home.Lstat(CuratedFile); err == nil && st.Mode().IsRegular() {
		add(home, CuratedFile, CuratedFile, st)
	}
	_ = fs.WalkDir(dir.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // unreadable parts are skipped
		}
		if p != "." && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || !strings.EqualFold(path.Ext(p), ".md") {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		add(dir, filepath.FromSlash(p), p, info)
		return nil
	})
	return out, nil
}

// List returns the paths of the memory files as [Store.Read] takes them: "MEMORY.md" if it
// exists, then the .md files under memory/ ("index.md", "knowledge/go.md"), in path order.
// Symbolic links and hidden names are left out. A memory/ or a MEMORY.md that is a symbolic
// link is an error naming it.
func (s *Store) List() ([]string, error) {
	s.mu.RLock()
	list, err := s.files(false)
	s.mu.RUnlock()
	if err != nil {
		return nil, fmt.Errorf("memory: list: %w", err)
	}
	names := make([]string, len(list))
	for i, f := range list {
		names[i] = f.rel
	}
	return names, nil
}

// describeFiles says briefly which files memory holds, for errors.
func (s *Store) describeFiles() string {
	list, err := s.files(false)
	if err != nil {
		return "memory cannot be listed: " + err.Error()
	}
	if len(list) == 0 {
		return "memory holds no files yet"
	}
	const show = 20
	names := make([]string, 0, min(len(list), show))
	for _, f := range list[:min(len(list), show)] {
		names = append(names, f.rel)
	}
	msg := "memory holds: " + strings.Join(names, ", ")
	if len(list) > show {
		msg += fmt.Sprintf(" (and %d more; use memory_search)", len(list)-show)
	}
	return msg
}
