package bus

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/agiraph/agiraph/internal/osfile"
)

// A Journal keeps a bus's records — its truth — in order: each is kept before the Send, Join or
// Receive that made it returns, and Open replays them. The default is a log file in the bus's
// directory (LogFile), synced at each write; WithJournal gives another, such as a squad's store.
// A bus calls one method at a time.
type Journal interface {
	// Records returns the records kept, oldest first.
	Records() ([][]byte, error)
	// Append keeps records after those kept before: all of them, or none when it fails.
	Append(records [][]byte) error
	// Close releases the journal.
	Close() error
}

// WithJournal makes the bus keep its records in j instead of its log file; Close closes j.
func WithJournal(j Journal) Option { return func(c *config) { c.journal = j } }

// fileJournal is the default Journal: an append-only JSON Lines file, each record a line,
// synced at each Append. A torn last line (a crash in the middle of an append) is dropped and
// cut off when the file is read.
type fileJournal struct {
	dir, path string
	f         *os.File
	size      int64 // bytes of whole records
	readOnly  bool  // ReadFileJournal's: nothing is cut off or appended
}

// ReadFileJournal opens the log file of the bus in dir (LogFile), which must exist, to read it
// only: a torn last line is left out, not cut off, and Append fails.
func ReadFileJournal(dir string) (Journal, error) {
	path := filepath.Join(dir, LogFile)
	f, err := osfile.OpenRegular(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, fmt.Errorf("bus: %w", err)
	}
	return &fileJournal{dir: dir, path: path, f: f, readOnly: true}, nil
}

// OpenFileJournal opens the log file of the bus in dir (LogFile), creating dir and the file if
// need be; Records reads what it holds.
func OpenFileJournal(dir string) (Journal, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("bus: %w", err)
	}
	j := &fileJournal{dir: dir, path: filepath.Join(dir, LogFile)}
	if _, err := os.Lstat(j.path); errors.Is(err, os.ErrNotExist) {
		defer syncDir(dir) // a new log survives a crash
	}
	f, err := osfile.OpenRegular(j.path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("bus: %w", err)
	}
	j.f = f
	return j, nil
}

// Records reads the file's records, and cuts off a torn last line.
func (j *fileJournal) Records() ([][]byte, error) {
	if _, err := j.f.Seek(0, io.SeekStart); err != nil {
		return nil, fmt.Errorf("bus: %s: %w", j.path, err)
	}
	data, err := io.ReadAll(j.f)
	if err != nil {
		return nil, fmt.Errorf("bus: %s: %w", j.path, err)
	}
	var recs [][]byte
	var off int64
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			break // a torn last line: the append never finished
		}
		line, rest := bytes.TrimSpace(data[:i]), data[i+1:]
		if len(line) > 0 && !json.Valid(line) {
			if len(bytes.TrimSpace(rest)) == 0 {
				break // a torn last line, its newline written
			}
			return nil, fmt.Errorf("bus: %s: the line at byte %d is not a record", j.path, off)
		}
		if len(line) > 0 {
			recs = append(recs, line)
		}
		off += int64(i + 1)
		data = rest
	}
	if len(data) > 0 && !j.readOnly {
		if err := j.f.Truncate(off); err != nil {
			return nil, fmt.Errorf("bus: cutting the torn end of %s: %w", j.path, err)
		}
		if err := j.f.Sync(); err != nil {
			return nil, fmt.Errorf("bus: %w", err)
		}
	}
	j.size = off
	return recs, nil
}

// Append writes the records as lines with one write and syncs the file; on failure it cuts
// off what it wrote, and its error says so too when that fails.
func (j *fileJournal) Append(records [][]byte) error {
	if j.readOnly {
		return fmt.Errorf("bus: %s is open to read only", j.path)
	}
	var buf bytes.Buffer
	for _, r := range records {
		buf.Write(r)
		buf.WriteByte('\n')
	}
	if _, err := j.f.Write(buf.Bytes()); err != nil {
		return errors.Join(fmt.Errorf("bus: writing the log: %w", err), j.cut())
	}
	if err := j.f.Sync(); err != nil {
		return errors.Join(fmt.Errorf("bus: syncing the log: %w", err), j.cut())
	}
	j.size += int64(buf.Len())
	return nil
}

// cut cuts off what a failed Append wrote.
func (j *fileJournal) cut() error {
	if err := j.f.Truncate(j.size); err != nil {
		return fmt.Errorf("bus: cutting off the failed write of %s: %w", j.path, err)
	}
	return nil
}

// Close closes the file.
func (j *fileJournal) Close() error { return j.f.Close() }
