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
	"time"

	"github.com/agiraph/agiraph/internal/osfile"
)

// Entry is one message of the agent's conversation with its human, in conversation.jsonl: the
// one thread that goes on across runs.
type Entry struct {
	Seq     int       `json:"seq"`
	Time    time.Time `json:"time"`
	Run     string    `json:"run,omitempty"`
	From    string    `json:"from"`
	To      string    `json:"to"`
	Content string    `json:"content"`
	// Key, when set, makes the entry idempotent: a second add with the same key adds nothing.
	Key string `json:"key,omitempty"`
}

// conversation appends to and pages through conversation.jsonl. Each entry is written with a
// single write call, so a crash can leave at most the last line torn: open drops such a line
// (and truncates it away, so that the next entry starts on a line of its own), as
// runtime/eventlog does with events.jsonl. Any other line that is not an entry is damage that
// open reports by its line number.
type conversation struct {
	path string
	now  func() time.Time

	mu     sync.Mutex
	last   int                 // the last entry's Seq
	keys   map[string]struct{} // the keys of the entries that have one
	size   int64               // bytes of complete lines in the file
	broken error               // set when a failed write could not be undone; add then fails
}

func openConversation(path string, now func() time.Time) (*conversation, error) {
	c := &conversation{path: path, now: now, keys: map[string]struct{}{}}
	size, err := c.scan(func(e Entry) bool {
		c.last = max(c.last, e.Seq)
		if e.Key != "" {
			c.keys[e.Key] = struct{}{}
		}
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

// add appends an entry; a non-empty key adds it once, ever (a step run again after a crash
// adds nothing twice).
func (c *conversation) add(key, run, from, to, content string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.keys[key]; ok && key != "" {
		return nil
	}
	if c.broken != nil {
		return c.broken
	}
	e := Entry{Seq: c.last + 1, Time: c.now().UTC(), Run: run, From: from, To: to, Content: content, Key: key}
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
	if key != "" {
		c.keys[key] = struct{}{}
	}
	return nil
}

// write appends line to the file in a single write call. Should the write fail, what it wrote
// is truncated away; should that fail too, the conversation is broken. c.mu must be held.
func (c *conversation) write(line []byte) error {
	f, err := osfile.OpenFile(c.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
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
	c.mu.Lock()
	total := c.last
	c.mu.Unlock()
	var out []Entry
	_, err := c.scan(func(e Entry) bool {
		if e.Seq > after && e.Seq <= total {
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
	defer f.Close()
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
			e.Seq = n
		}
		if !fn(e) {
			return size, nil
		}
	}
}

// Conversation returns a page of the agent's conversation with its human, across runs: up to
// limit entries after seq (limit <= 0: all of them), oldest first, and how many there are.
func (s *Squad) Conversation(after, limit int) ([]Entry, int, error) {
	return s.conv.page(after, limit)
}
