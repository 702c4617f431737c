package workspace

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"github.com/agiraph/agiraph/internal/osfile"
	"github.com/agiraph/agiraph/tools/files"
)

// WriteFile writes data to path atomically and durably: it writes a temporary file beside
// path, syncs it, renames it over path, then syncs the folder (where the system can). Readers
// see the old content or the new, never a mix, and a crash leaves one or the other. A file that
// already exists keeps its permissions; a new one gets 0644. The directory must exist. On
// failure no temporary file is left behind.
func WriteFile(path string, data []byte) error { return write(path, data, true) }

// WriteView writes data to path as WriteFile does, but without syncing: for a file derived from
// others, which its writer rewrites from them (as the board does its nodes' _status.md when a
// run opens). Readers see the old content or the new, never a mix, and a crash of the process
// loses nothing; a crash of the system may leave the view empty or stale until it is written
// again.
func WriteView(path string, data []byte) error { return write(path, data, false) }

// write writes data to a temporary file beside path, with path's permissions (0644 for a new
// file), and renames it over path; when durable, it syncs the file before and the folder after.
func write(path string, data []byte, durable bool) error {
	perm := fs.FileMode(defaultPerm)
	if st, err := os.Stat(path); err == nil {
		if !st.Mode().IsRegular() {
			return fmt.Errorf("workspace: write %s: not a regular file", path)
		}
		perm = st.Mode().Perm()
	}
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return fmt.Errorf("workspace: write %s: %w", path, files.Cause(err))
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(perm)
	}
	if err == nil && durable {
		err = f.Sync()
	}
	err = errors.Join(err, f.Close())
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		_ = os.Remove(f.Name())
		return fmt.Errorf("workspace: write %s: %w", path, files.Cause(err))
	}
	if durable {
		syncDir(dir)
	}
	return nil
}

// syncDir makes the renames in dir durable, where the system can sync a folder; the renames
// themselves have happened.
func syncDir(dir string) {
	d, err := os.Open(dir)
	if err != nil {
		return
	}
	_ = d.Sync()
	_ = d.Close()
}

// Internal reports whether a file name is one of a write's temporary files (see WriteFile) or
// a run's spare view (see Views), which listings of a folder leave out (see files.Temporary).
func Internal(name string) bool { return files.Temporary(name) }

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
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, defaultPerm)
	if err != nil {
		return nil, fmt.Errorf("workspace: append to %s: %w", path, files.Cause(err))
	}
	if _, err := f.Write(data); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("workspace: append to %s: %w", path, files.Cause(err))
	}
	return f, nil
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
