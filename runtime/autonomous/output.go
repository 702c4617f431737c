package autonomous

import (
	"bytes"
	"strings"
	"unicode/utf8"
)

// maxLine bounds the text of one Output event; a longer line is cut, and a line that never
// ends is reported in pieces of this size.
const maxLine = 4 << 10

// output receives the agent's stdout and stderr (one pipe, so their order is kept): it keeps
// the last bytes and reports each line. It is used from one goroutine.
type output struct {
	tail    []byte
	limit   int
	partial []byte
	line    func(string)
}

func (o *output) Write(p []byte) (int, error) {
	o.tail = append(o.tail, p...)
	if len(o.tail) > o.limit {
		o.tail = append(o.tail[:0], o.tail[len(o.tail)-o.limit:]...)
	}
	rest := p
	for len(rest) > 0 {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			o.partial = append(o.partial, rest...)
			for len(o.partial) >= maxLine {
				o.emit(o.partial[:maxLine])
				o.partial = append(o.partial[:0], o.partial[maxLine:]...)
			}
			break
		}
		o.partial = append(o.partial, rest[:i]...)
		o.emit(o.partial)
		o.partial = o.partial[:0]
		rest = rest[i+1:]
	}
	return len(p), nil
}

// flush reports a last line that did not end with a newline.
func (o *output) flush() {
	if len(o.partial) > 0 {
		o.emit(o.partial)
		o.partial = nil
	}
}

func (o *output) emit(b []byte) {
	s := strings.TrimRight(string(b), "\r")
	if len(s) > maxLine {
		s = s[:maxLine] + "…"
	}
	s = strings.ToValidUTF8(s, "�")
	if strings.TrimSpace(s) != "" && o.line != nil {
		o.line(s)
	}
}

// last returns the kept tail of the output, starting at a whole character.
func (o *output) last() string {
	t := o.tail
	for len(t) > 0 && !utf8.RuneStart(t[0]) {
		t = t[1:]
	}
	return strings.ToValidUTF8(string(t), "�")
}
