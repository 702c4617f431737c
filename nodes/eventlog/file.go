package eventlog

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strconv"

	"github.com/agiraph/agiraph/internal/osfile"
)

// Scan reads the log file at path without opening it as a [Log] — to show the events of an
// agent whose squad is not open, or to follow a file a Log appends to, without holding the file
// open. From byte offset off (0: the start) it calls fn for each event, in order, until fn
// returns false, and returns the offset just after the last line it read: where a later call
// goes on. It reads complete lines only: a last line without its newline (a write under way, or
// one a crash cut short) is left for a later call. A missing file has no events. A line that is
// not an event, or whose seq does not follow the one before, is an error naming the file and
// the line (by number when off is 0, else by offset).
func Scan(path string, off int64, fn func(Event) bool) (int64, error) {
	return scan(path, off, 0, fn)
}

// ReadFile returns up to limit events of the log file at path with Seq > after, in order
// (limit <= 0: all of them), as [Log.Read] does, reading the file as [Scan] does. A Log's Read
// is quicker — it keeps an index of the file — but ReadFile holds nothing open.
func ReadFile(path string, after int64, limit int) ([]Event, error) {
	var out []Event
	_, err := scan(path, 0, after, func(e Event) bool {
		out = append(out, e)
		return limit <= 0 || len(out) < limit
	})
	return out, err
}

// scan is Scan for the events with Seq > after; the lines of the others are checked for their
// seq only.
func scan(path string, off, after int64, fn func(Event) bool) (int64, error) {
	f, err := osfile.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return off, nil
	}
	if err != nil {
		return off, fmt.Errorf("eventlog: %w", err)
	}
	defer func() { _ = f.Close() }() // read only
	if _, err := f.Seek(off, io.SeekStart); err != nil {
		return off, fmt.Errorf("eventlog: %s: %w", path, err)
	}
	start := off
	where := func(n int, at int64) string {
		if start == 0 {
			return fmt.Sprintf("line %d", n)
		}
		return fmt.Sprintf("the line at byte %d", at)
	}
	r := bufio.NewReaderSize(f, 64<<10)
	var last int64
	for n := 1; ; n++ {
		line, err := osfile.ReadLine(r)
		if err == io.EOF {
			return off, nil // a last line without its newline is not read yet
		}
		if err != nil {
			return off, fmt.Errorf("eventlog: %s: %s: %w", path, where(n, off), err)
		}
		at := off
		off += int64(len(line))
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		seq, ok := leadingSeq(line)
		var e Event
		if !ok || seq > after {
			if err := json.Unmarshal(line, &e); err != nil {
				return at, fmt.Errorf("eventlog: %s: %s: corrupt event: %w", path, where(n, at), err)
			}
			seq = e.Seq
		}
		if seq <= last {
			return at, fmt.Errorf("eventlog: %s: %s: seq %d does not follow %d", path, where(n, at), seq, last)
		}
		last = seq
		if seq > after && !fn(e) {
			return off, nil
		}
	}
}

// leadingSeq reads the seq of a line as Append writes it, {"seq":N,...}, without decoding the
// rest; false for a line written otherwise.
func leadingSeq(line []byte) (int64, bool) {
	rest, ok := bytes.CutPrefix(line, []byte(`{"seq":`))
	if !ok {
		return 0, false
	}
	i := 0
	for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
		i++
	}
	if i == 0 || i >= len(rest) || rest[i] != ',' {
		return 0, false
	}
	n, err := strconv.ParseInt(string(rest[:i]), 10, 64)
	return n, err == nil
}

// Last returns the last event of the log file at path, reading the file from its end: false
// when it has none. As with [Scan], a last line without its newline is not an event yet.
func Last(path string) (Event, bool, error) {
	f, err := osfile.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return Event{}, false, nil
	}
	if err != nil {
		return Event{}, false, fmt.Errorf("eventlog: %w", err)
	}
	defer func() { _ = f.Close() }() // read only
	st, err := f.Stat()
	if err != nil {
		return Event{}, false, fmt.Errorf("eventlog: %w", err)
	}
	end := st.Size()
	for chunk := int64(16 << 10); ; chunk *= 4 {
		if chunk > osfile.MaxSize {
			return Event{}, false, fmt.Errorf("eventlog: %s: the last line: %w", path, osfile.ErrTooLarge)
		}
		from := max(end-chunk, 0)
		buf := make([]byte, end-from)
		if _, err := f.ReadAt(buf, from); err != nil && err != io.EOF {
			return Event{}, false, fmt.Errorf("eventlog: %s: %w", path, err)
		}
		if i := bytes.LastIndexByte(buf, '\n'); i >= 0 {
			buf = buf[:i] // drop what follows the last newline: a line not complete yet
		} else if from == 0 {
			return Event{}, false, nil
		} else {
			continue
		}
		for len(buf) > 0 {
			i := bytes.LastIndexByte(buf, '\n')
			if i < 0 && from > 0 {
				break // the line may begin before the chunk
			}
			line := buf[i+1:]
			buf = buf[:max(i, 0)]
			if len(bytes.TrimSpace(line)) == 0 {
				continue
			}
			var e Event
			if err := json.Unmarshal(line, &e); err != nil {
				return Event{}, false, fmt.Errorf("eventlog: %s: last line: corrupt event: %w", path, err)
			}
			return e, true, nil
		}
		if from == 0 {
			return Event{}, false, nil
		}
	}
}
