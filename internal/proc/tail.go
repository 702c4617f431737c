package proc

import (
	"sync"
	"unicode/utf8"
)

// Tail is an io.Writer that keeps the last bytes written to it: a process's stderr, kept for
// the error that reports how it ended. It is safe for concurrent use.
type Tail struct {
	limit int
	mu    sync.Mutex
	buf   []byte
}

// NewTail returns a Tail keeping the last n bytes.
func NewTail(n int) *Tail { return &Tail{limit: n} }

// Write keeps the end of p; it never fails.
func (t *Tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.limit {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-t.limit:]...)
	}
	return len(p), nil
}

// String returns what is kept, starting at a whole character.
func (t *Tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.buf
	for len(b) > 0 && !utf8.RuneStart(b[0]) {
		b = b[1:]
	}
	return string(b)
}
