package workspace

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/agiraph/agiraph/internal/fsync"
	"github.com/agiraph/agiraph/internal/osfile"
	"github.com/agiraph/agiraph/tools/files"
)

// WriteFile writes data to path atomically: it writes the new content beside path — into the
// folder's spare file when path exists (see spare_linux.go), else a temporary file — syncs it,
// puts it in place of path (an exchange, or a rename), then syncs the folder. Readers see the
// old content or the new, never a mix, and a crash leaves one or the other. A file that
// already exists keeps its permissions; a new one gets 0644. The directory must exist. On
// failure no temporary file is left behind.
func WriteFile(path string, data []byte) error {
	var b Batch
	if err := b.Add(path, data); err != nil {
		return err
	}
	return b.Commit()
}

// WriteView writes data to path as WriteFile does, but without syncing: for a file derived from
// others, which a later change rewrites (a node's _status.md, from its _node.json). Readers see
// the old content or the new, never a mix. A rewrite reuses the view's own spare (see
// spare_linux.go): a crash of the process loses nothing, while a crash of the system may leave
// the view empty, or holding an earlier version of itself cut short or padded with zero bytes,
// until it is written again — its writer rewrites it from what it derives from, when it opens
// them again (as the board does its nodes' _status.md).
func WriteView(path string, data []byte) error {
	s, err := stage(path, data, viewSpare(path))
	if err != nil {
		return err
	}
	if err := s.close(); err != nil {
		s.discard()
		return fmt.Errorf("workspace: write %s: %w", path, files.Cause(err))
	}
	return s.place()
}

// Batch writes several files as WriteFile writes one, syncing them together: Add records each,
// and Commit writes them beside their paths, makes them durable, puts each in place of its path
// and makes that durable, with one sync of each kind (on Linux; elsewhere one per file). A crash leaves each file old or new, never a mix; a batch is not a transaction: it
// may leave some of its files new and others old. A Batch is not safe for concurrent use.
//
// A batch may also append lines to files (Append): Commit appends them before it syncs, so they
// are as durable as the files written. A crash may leave them appended and the files old: make
// the lines such that the next attempt can tell it made them.
type Batch struct {
	files   []staged
	appends []appended
	dirs    []string // the folders of files the lines created
	synced  bool     // the files are synced and closed: Place may place them
}

type appended struct {
	path string
	data []byte
}

// Add adds data, to be written beside path when the batch is synced (Sync, Commit) and renamed
// over it by Commit (see WriteFile): batches made one after the other and synced together
// (from several goroutines) write their files together too. The directory must exist then.
func (b *Batch) Add(path string, data []byte) error {
	b.files = append(b.files, staged{path: path, data: data})
	return nil
}

// AddJSON adds v as indented JSON with a final newline (see WriteJSON).
func (b *Batch) AddJSON(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("workspace: write %s: %w", path, err)
	}
	return b.Add(path, append(data, '\n'))
}

// Append adds v as one line of compact JSON, to be appended to path (created if need be) by
// Commit.
func (b *Batch) Append(path string, v any) error {
	data, err := jsonLine(path, v)
	if err != nil {
		return err
	}
	b.appends = append(b.appends, appended{path, data})
	return nil
}

// jsonLine returns v as one line of compact JSON (newlines in strings are escaped), for path.
func jsonLine(path string, v any) ([]byte, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("workspace: append to %s: %w", path, err)
	}
	return append(data, '\n'), nil
}

// Appender appends JSON lines, as AppendJSONL does, to files it keeps open until Close: for one
// that appends many lines to a few files (an assignment's log and conversation), one open per
// file rather than per line. Its methods are safe for concurrent use.
type Appender struct {
	mu     sync.Mutex
	files  map[string]*os.File
	closed bool
}

// AppendJSONL appends v's JSON and a newline to path in a single write, opening path (created
// 0644 if need be) on its first line. After Close it appends as the function AppendJSONL does,
// keeping nothing open.
func (a *Appender) AppendJSONL(path string, v any) error {
	data, err := jsonLine(path, v)
	if err != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return AppendJSONL(path, v)
	}
	if f, ok := a.files[path]; ok {
		if _, err := f.Write(data); err != nil {
			return fmt.Errorf("workspace: append to %s: %w", path, files.Cause(err))
		}
		return nil
	}
	f, err := appendTo(path, data)
	if err != nil {
		return err
	}
	if a.files == nil {
		a.files = map[string]*os.File{}
	}
	a.files[path] = f
	return nil
}

// Close closes the files.
func (a *Appender) Close() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.closed = true
	var err error
	for path, f := range a.files {
		if cerr := f.Close(); cerr != nil {
			err = errors.Join(err, fmt.Errorf("workspace: append to %s: %w", path, files.Cause(cerr)))
		}
	}
	clear(a.files)
	return err
}

// appendTo appends data to path (created 0644 if need be) in a single write to a file opened
// with O_APPEND, and returns the file, open.
func appendTo(path string, data []byte) (*os.File, error) {
	f, err := osfile.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, defaultPerm)
	if err != nil {
		return nil, fmt.Errorf("workspace: append to %s: %w", path, files.Cause(err))
	}
	if _, err := f.Write(data); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("workspace: append to %s: %w", path, files.Cause(err))
	}
	return f, nil
}

// Commit appends the lines, syncs them and the files added, renames each file over its path and
// syncs the renames: Sync, Place and SyncPlaced. On error the files not yet renamed are
// discarded. The batch is empty afterwards.
func (b *Batch) Commit() error { return b.commit(b.SyncPlaced) }

// CommitSoon is Commit without waiting for the renames to be durable (see SyncPlacedSoon): the
// files are whole once it returns, and in place; a crash of the system may leave them old, up
// to the next sync of their file system.
func (b *Batch) CommitSoon() error { return b.commit(b.SyncPlacedSoon) }

// commit is Sync, Place, then syncPlaced for the renames.
func (b *Batch) commit(syncPlaced func()) error {
	if err := b.Sync(); err != nil {
		return err
	}
	err := b.Place()
	syncPlaced()
	return err
}

// Sync appends the lines and makes them and the files added durable, without placing the files:
// a caller that must place several batches in order syncs them at once, then places them one
// after the other (Place). On error the files are discarded and the batch is empty.
func (b *Batch) Sync() error {
	for i, s := range b.files {
		if s.f != nil {
			continue
		}
		st, err := stage(s.path, s.data, filepath.Join(filepath.Dir(s.path), SpareName))
		if err != nil {
			b.Discard()
			return err
		}
		b.files[i] = st
	}
	batch, appends := b.files, b.appends
	b.appends = nil
	open := make([]*os.File, 0, len(batch)+len(appends))
	for _, s := range batch {
		open = append(open, s.f)
	}
	var appendErr error
	for _, a := range appends {
		f, err := appendTo(a.path, a.data)
		if err != nil {
			appendErr = err
			break
		}
		open = append(open, f)
		if dir := filepath.Dir(a.path); !slices.Contains(b.dirs, dir) { // a file the line created
			b.dirs = append(b.dirs, dir)
		}
	}
	var err error
	if appendErr == nil && len(open) > 0 {
		err = fsync.Files(open)
	}
	for _, s := range batch {
		err = errors.Join(err, s.close())
	}
	for _, f := range open[len(batch):] {
		err = errors.Join(err, f.Close())
	}
	b.synced = true
	if appendErr == nil && err == nil {
		return nil
	}
	for _, s := range batch {
		s.discard()
	}
	b.files, b.dirs, b.synced = nil, nil, false
	if appendErr != nil {
		return appendErr
	}
	name := appends[0].path // there is one or the other
	if len(batch) > 0 {
		name = batch[0].path
	}
	return fmt.Errorf("workspace: write %s: %w", name, files.Cause(err))
}

// Place renames each file, synced (Sync), over its path, then SyncPlaced makes the renames
// durable: a caller that places batches in order, under a lock, syncs their renames after it. On
// error the files not yet renamed are discarded; the batch is empty afterwards, but for the
// folders SyncPlaced syncs.
func (b *Batch) Place() error {
	batch := b.files
	b.files = nil
	if !b.synced && len(batch) > 0 {
		b.files = batch
		return errors.New("workspace: a batch placed before it was synced")
	}
	b.synced = false
	for i, s := range batch {
		if err := s.place(); err != nil {
			for _, rest := range batch[i+1:] {
				rest.discard()
			}
			return err
		}
		if dir := filepath.Dir(s.path); !slices.Contains(b.dirs, dir) {
			b.dirs = append(b.dirs, dir)
		}
	}
	return nil
}

// SyncPlaced makes the renames of Place, and the files the lines created, durable.
func (b *Batch) SyncPlaced() {
	fsync.Dirs(b.dirs)
	b.dirs = nil
}

// SyncPlacedSoon is SyncPlaced without waiting: the renames become durable with the next sync
// of their file system, whoever starts it — the next batch's Sync, say — and at the latest a
// second later. For a writer whose batches must be durable in order, not each at once: a crash
// of the system keeps the batches up to some point, each file whole.
func (b *Batch) SyncPlacedSoon() {
	fsync.DirsSoon(b.dirs)
	b.dirs = nil
}

// Discard removes the files added and forgets the lines, not committed.
func (b *Batch) Discard() {
	for _, s := range b.files {
		if s.f != nil {
			_ = s.f.Close()
			s.discard()
		}
	}
	b.files, b.appends, b.dirs, b.synced = nil, nil, nil, false
}

// staged is a file's new content, to be written beside it (f nil), or written there, open, not
// synced.
type staged struct {
	f         *os.File // nil until it is written
	tmp, path string
	data      []byte // its content, until it is written
	spare     bool   // tmp is the folder's spare, held open until it is placed (spare_linux.go)
}

// SpareName is the name of the file each folder written atomically keeps for its next write
// (where the system can exchange two files; see spare_linux.go). It holds an earlier content of
// one of the folder's files. A view's spare is named after it: SpareName, a dash and the view's
// name.
const SpareName = ".agiraph.spare"

// viewSpare returns the path of the spare of the view at path.
func viewSpare(path string) string {
	dir, base := filepath.Split(path)
	return filepath.Join(dir, SpareName+"-"+base)
}

// Internal reports whether a file name is one of the workspace's own working files — a
// folder's or a view's spare, or a write's temporary file — which listings of a folder leave
// out.
func Internal(name string) bool {
	return name == SpareName || strings.HasPrefix(name, SpareName+"-") ||
		strings.HasPrefix(name, ".") && strings.Contains(name, ".tmp-")
}

// stage writes data beside path, with path's permissions (0644 for a new file), into the spare
// at spare (when path exists and the spare can be taken; none when spare is "") or a temporary
// file, and leaves it open. The caller syncs a folder's spare before placing it: its old bytes
// are another file's.
func stage(path string, data []byte, spare string) (staged, error) {
	perm := fs.FileMode(defaultPerm)
	st, err := os.Stat(path)
	if err == nil {
		if !st.Mode().IsRegular() {
			return staged{}, fmt.Errorf("workspace: write %s: not a regular file", path)
		}
		perm = st.Mode().Perm()
	}
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	if spare != "" && err == nil { // a rewrite: the old content becomes the spare (a new file would take it)
		if f, ok := takeSpare(spare, data, perm); ok {
			return staged{f: f, tmp: spare, path: path, spare: true}, nil
		}
	}
	f, err := osfile.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return staged{}, fmt.Errorf("workspace: write %s: %w", path, files.Cause(err))
	}
	s := staged{f: f, tmp: f.Name(), path: path}
	if _, err = f.Write(data); err == nil {
		err = f.Chmod(perm)
	}
	if err != nil {
		_ = f.Close()
		s.discard()
		return staged{}, fmt.Errorf("workspace: write %s: %w", path, files.Cause(err))
	}
	return s, nil
}

// close closes a temporary file once it is written; a spare stays open, held, until placed.
func (s staged) close() error {
	if s.spare {
		return nil
	}
	return s.f.Close()
}

// place renames the staged file over its path (a spare is exchanged with it); on error it is
// removed.
func (s staged) place() error {
	if s.spare {
		if err := exchange(s.f, s.tmp, s.path); err != nil {
			return fmt.Errorf("workspace: write %s: %w", s.path, files.Cause(err))
		}
		return nil
	}
	if err := osfile.Rename(s.tmp, s.path); err != nil {
		s.discard()
		return fmt.Errorf("workspace: write %s: %w", s.path, files.Cause(err))
	}
	return nil
}

// discard removes the staged file; a spare is let go, for the folder's next write.
func (s staged) discard() {
	if s.spare {
		_ = s.f.Close()
		return
	}
	_ = os.Remove(s.tmp)
}

// WriteJSON writes v to path as indented JSON with a final newline, atomically (see
// [WriteFile]).
func WriteJSON(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("workspace: write %s: %w", path, err)
	}
	return WriteFile(path, append(data, '\n'))
}

// ReadTail returns the last n bytes of the file at path, or all of it when it is shorter.
func ReadTail(path string, n int64) ([]byte, error) {
	f, err := osfile.Open(path)
	if err != nil {
		return nil, fmt.Errorf("workspace: read %s: %w", path, files.Cause(err))
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("workspace: read %s: %w", path, files.Cause(err))
	}
	off := max(st.Size()-n, 0)
	b := make([]byte, st.Size()-off)
	if _, err := f.ReadAt(b, off); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("workspace: read %s: %w", path, files.Cause(err))
	}
	return b, nil
}

// ReadJSON reads the JSON in path into v. Errors name the file; a missing file's error
// matches [fs.ErrNotExist].
func ReadJSON(path string, v any) error {
	data, err := osfile.ReadFile(path)
	if err != nil {
		return fmt.Errorf("workspace: read %s: %w", path, files.Cause(err))
	}
	if err := json.Unmarshal(data, v); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return fmt.Errorf("workspace: read %s: invalid JSON at byte %d: %w", path, se.Offset, err)
		}
		return fmt.Errorf("workspace: read %s: %w", path, err)
	}
	return nil
}

// AppendJSONL appends v to path as one line of compact JSON, creating the file (0644) if it
// does not exist. The line goes out in a single write to a file opened with O_APPEND, so
// concurrent appenders, in this process or others, do not interleave their lines. The file
// is not synced.
func AppendJSONL(path string, v any) error {
	data, err := jsonLine(path, v)
	if err != nil {
		return err
	}
	f, err := appendTo(path, data)
	if err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("workspace: append to %s: %w", path, files.Cause(err))
	}
	return nil
}
