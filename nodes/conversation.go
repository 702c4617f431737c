package nodes

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sync"

	"github.com/agiraph/agiraph/internal/osfile"
	"github.com/agiraph/agiraph/nodes/store"
)

// Entry is one message of the agent's conversation with its human: the one thread that goes on
// across runs. The squad's store holds it (see package nodes/store); conversation.jsonl in the
// agent's home is a view of it, for people and for Files.
type Entry = store.Line

// conversation writes conversation.jsonl, the view of the store's conversation, and pages
// through it. Each entry is written with a single write call, so a crash can leave at most the
// last line torn: open drops such a line (and truncates it away, so that the next entry starts
// on a line of its own), as nodes/eventlog does with events.jsonl. Any other line that is not
// an entry is damage that open reports by its line number.
type conversation struct {
	path string

	mu     sync.Mutex
	last   int64 // the last entry's Seq
	size   int64 // bytes of complete lines in the file
	broken error // set when a failed write could not be undone; put then fails
}

func openConversation(path string) (*conversation, error) {
	c := &conversation{path: path}
	size, err := c.scan(func(e Entry) bool {
		c.last = max(c.last, e.Seq)
		return true
	})
	if err != nil {
		return nil, err
	}
	if st, err := os.Stat(path); err == nil && st.Size() > size { // a torn last line: drop it
		if err := os.Truncate(path, size); err != nil {
			return nil, fmt.Errorf("nodes: conversation %s: dropping a torn last line: %w", path, err)
		}
	}
	c.size = size
	return c, nil
}

// put appends e, numbered by the store, to the view.
func (c *conversation) put(e Entry) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.broken != nil {
		return c.broken
	}
	if e.Seq <= c.last {
		return fmt.Errorf("nodes: conversation %s: entry %d does not follow %d", c.path, e.Seq, c.last)
	}
	line, err := json.Marshal(e) // compact, and newlines in strings are escaped: one line
	if err != nil {
		return fmt.Errorf("nodes: conversation: %w", err)
	}
	line = append(line, '\n')
	if err := c.write(line); err != nil {
		return fmt.Errorf("nodes: conversation %s: %w", c.path, err)
	}
	c.size += int64(len(line))
	c.last = e.Seq
	return nil
}

// lastSeq returns the Seq of the view's last entry.
func (c *conversation) lastSeq() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.last
}

// write appends line to the file in a single write call. Should the write fail, what it wrote
// is truncated away; should that fail too, the conversation is broken. c.mu must be held.
func (c *conversation) write(line []byte) error {
	f, err := os.OpenFile(c.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	n, err := f.Write(line)
	if err != nil && n > 0 {
		if terr := f.Truncate(c.size); terr != nil {
			c.broken = fmt.Errorf("nodes: conversation %s: a failed write left a partial line: %w", c.path, terr)
		}
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// page returns up to limit entries after seq (limit <= 0: all), and the number of entries.
func (c *conversation) page(after, limit int) ([]Entry, int, error) {
	total := int(c.lastSeq())
	var out []Entry
	_, err := c.scan(func(e Entry) bool {
		if e.Seq > int64(after) && e.Seq <= int64(total) {
			out = append(out, e)
		}
		return limit <= 0 || len(out) < limit
	})
	return out, total, err
}

// scan calls fn for each entry in order until it returns false, and returns the size in bytes
// of the complete lines it read. A last line without its newline is not an entry: a write cut
// short by a crash, or one under way. Any other line that is not an entry is an error naming
// the file and the line.
func (c *conversation) scan(fn func(Entry) bool) (int64, error) {
	f, err := osfile.Open(c.path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("nodes: conversation: %w", err)
	}
	defer func() { _ = f.Close() }() // read only
	r := bufio.NewReaderSize(f, 64<<10)
	var size int64
	for n := 1; ; n++ {
		line, err := osfile.ReadLine(r)
		if err == io.EOF {
			return size, nil
		}
		if err != nil {
			return size, fmt.Errorf("nodes: conversation %s: line %d: %w", c.path, n, err)
		}
		size += int64(len(line))
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var e Entry
		if err := json.Unmarshal(line, &e); err != nil {
			return size, fmt.Errorf("nodes: conversation %s: line %d is damaged (%w): remove or fix line %d", c.path, n, err, n)
		}
		if e.Seq == 0 { // written without a number: count it in order
			e.Seq = int64(n)
		}
		if !fn(e) {
			return size, nil
		}
	}
}

// Conversation returns a page of the agent's conversation with its human, across runs: up to
// limit entries after seq (limit <= 0: all of them), oldest first, and how many there are.
func (s *Squad) Conversation(after, limit int) ([]Entry, int, error) {
	s.settle()
	return s.conv.page(after, limit)
}
