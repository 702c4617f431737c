package workspace

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/agiraph/agiraph/tools/files"
)

// WriteFile writes data to path atomically: it writes a temporary file in the same
// directory, syncs it, and renames it over path, then syncs the directory. Readers see the
// old content or the new, never a mix, and a crash leaves one or the other. A file that
// already exists keeps its permissions; a new one gets 0644. The directory must exist. On
// failure no temporary file is left behind.
func WriteFile(path string, data []byte) error { return write(path, data, true) }

// WriteView writes data to path as WriteFile does, but without syncing: for a file derived from
// others, which a later change rewrites (a node's _status.md, from its _node.json). Readers see
// the old content or the new, never a mix; a crash of the process loses nothing, while a crash
// of the system may leave it older, or empty, until its next change.
func WriteView(path string, data []byte) error { return write(path, data, false) }

// write writes data to path atomically, durably when sync is set (see WriteFile).
func write(path string, data []byte, sync bool) (err error) {
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
	tmp := f.Name()
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = os.Remove(tmp)
			err = fmt.Errorf("workspace: write %s: %w", path, files.Cause(err))
		}
	}()
	if _, err = f.Write(data); err != nil {
		return err
	}
	if err = f.Chmod(perm); err != nil {
		return err
	}
	if sync {
		if err = f.Sync(); err != nil {
			return err
		}
	}
	if err = f.Close(); err != nil {
		return err
	}
	if err = os.Rename(tmp, path); err != nil {
		return err
	}
	if sync {
		syncDir(dir)
	}
	return nil
}

// syncDir makes a rename in dir durable, where the system supports it.
func syncDir(dir string) {
	d, err := os.Open(dir)
	if err != nil {
		return
	}
	_ = d.Sync() // not supported everywhere; the rename itself has happened
	_ = d.Close()
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
	data, err := os.ReadFile(path)
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
	data, err := json.Marshal(v) // compact, and newlines in strings are escaped: one line
	if err != nil {
		return fmt.Errorf("workspace: append to %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, defaultPerm)
	if err != nil {
		return fmt.Errorf("workspace: append to %s: %w", path, files.Cause(err))
	}
	_, err = f.Write(append(data, '\n'))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("workspace: append to %s: %w", path, files.Cause(err))
	}
	return nil
}
