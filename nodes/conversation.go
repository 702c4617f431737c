package nodes

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"
	"time"

	"github.com/agiraph/agiraph/runtime/workspace"
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

// conversation appends to and pages through conversation.jsonl.
type conversation struct {
	path string
	now  func() time.Time

	mu   sync.Mutex
	last int                 // the last entry's Seq
	keys map[string]struct{} // the keys of the entries that have one
}

func openConversation(path string, now func() time.Time) (*conversation, error) {
	c := &conversation{path: path, now: now, keys: map[string]struct{}{}}
	err := c.scan(func(e Entry) bool {
		c.last = max(c.last, e.Seq)
		if e.Key != "" {
			c.keys[e.Key] = struct{}{}
		}
		return true
	})
	return c, err
}

// add appends an entry; a non-empty key adds it once, ever (a step run again after a crash
// adds nothing twice).
func (c *conversation) add(key, run, from, to, content string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.keys[key]; ok && key != "" {
		return nil
	}
	e := Entry{Seq: c.last + 1, Time: c.now().UTC(), Run: run, From: from, To: to, Content: content, Key: key}
	if err := workspace.AppendJSONL(c.path, e); err != nil {
		return fmt.Errorf("nodes: conversation: %w", err)
	}
	c.last = e.Seq
	if key != "" {
		c.keys[key] = struct{}{}
	}
	return nil
}

// page returns up to limit entries after seq (limit <= 0: all), and the number of entries.
func (c *conversation) page(after, limit int) ([]Entry, int, error) {
	c.mu.Lock()
	total := c.last
	c.mu.Unlock()
	var out []Entry
	err := c.scan(func(e Entry) bool {
		if e.Seq > after && e.Seq <= total {
			out = append(out, e)
		}
		return limit <= 0 || len(out) < limit
	})
	return out, total, err
}

// scan calls fn for each entry in order until it returns false.
func (c *conversation) scan(fn func(Entry) bool) error {
	f, err := os.Open(c.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("nodes: conversation: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for line := 1; sc.Scan(); line++ {
		if len(sc.Bytes()) == 0 {
			continue
		}
		var e Entry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return fmt.Errorf("nodes: conversation %s line %d: %w", c.path, line, err)
		}
		if e.Seq == 0 { // written without a number: count it in order
			e.Seq = line
		}
		if !fn(e) {
			return nil
		}
	}
	return sc.Err()
}

// Conversation returns a page of the agent's conversation with its human, across runs: up to
// limit entries after seq (limit <= 0: all of them), oldest first, and how many there are.
func (s *Squad) Conversation(after, limit int) ([]Entry, int, error) {
	return s.conv.page(after, limit)
}
