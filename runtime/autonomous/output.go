package autonomous

import (
	"bytes"
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"
)

// maxLine bounds the text of one Output event; a longer line is cut, and a line that never
// ends is reported in pieces of this size.
const maxLine = 4 << 10

// maxErrors is how many of the agent's last errors a failure names; maxError bounds each.
// maxErrorLine bounds what of a line is read for an error: a JSON line longer than that is
// not read.
const (
	maxErrors    = 3
	maxError     = 500
	maxErrorLine = 64 << 10
)

// output receives the agent's stdout and stderr (one pipe, so their order is kept): it keeps
// the last bytes and the last lines that say something went wrong, and reports each line. It
// is used from one goroutine.
type output struct {
	tail    []byte
	limit   int
	partial []byte
	line    func(string)
	errs    []string // the last errors (see errorText), a repeated one kept once
	// cur is the line being read, whole, for its error (see ended); over says it was longer
	// than maxErrorLine, of which cur holds the beginning.
	cur  []byte
	over bool
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
			o.keep(rest)
			o.partial = append(o.partial, rest...)
			for len(o.partial) >= maxLine {
				o.emit(o.partial[:maxLine])
				o.partial = append(o.partial[:0], o.partial[maxLine:]...)
			}
			break
		}
		o.keep(rest[:i])
		o.partial = append(o.partial, rest[:i]...)
		o.emit(o.partial)
		o.partial = o.partial[:0]
		o.ended()
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
	o.ended()
}

// keep adds b, a part of the line being read, to cur, up to maxErrorLine bytes.
func (o *output) keep(b []byte) {
	if n := maxErrorLine - len(o.cur); len(b) > n {
		b, o.over = b[:n], true
	}
	o.cur = append(o.cur, b...)
}

// ended keeps what the line just read says went wrong, read whole, not in the pieces its
// Output events have: a piece of a long JSON line is no JSON. A JSON line too long to read
// whole says nothing.
func (o *output) ended() {
	s := strings.ToValidUTF8(strings.TrimSpace(string(o.cur)), "�")
	over := o.over
	o.cur, o.over = o.cur[:0], false
	if over && strings.HasPrefix(s, "{") {
		return
	}
	e := errorText(s)
	if e == "" {
		return
	}
	if len(e) > maxError {
		n := maxError
		for n > 0 && !utf8.RuneStart(e[n]) { // cut at a whole character
			n--
		}
		e = e[:n] + "…"
	}
	o.errs = slices.DeleteFunc(o.errs, func(x string) bool { return x == e })
	o.errs = append(o.errs, e)
	if len(o.errs) > maxErrors {
		o.errs = o.errs[1:]
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

// errorWords are the words of a line of text that says something went wrong.
var errorWords = regexp.MustCompile(`(?i)\b(error|errors|failed|failure|fatal|exception|panic|refused|unauthorized|forbidden|denied)\b`)

// errorText returns what a line of the agent's output says went wrong, or "" when it does not
// look like an error: a JSON object whose type names an error or a failure (Codex's --json
// events: {"type":"error","message":...}, {"type":"turn.failed","error":{"message":...}}), as
// its message; another JSON object never (its text may quote anything); a line of text with a
// word such as error, failed or refused, as it is.
func errorText(line string) string {
	line = strings.TrimSpace(line)
	if !strings.HasPrefix(line, "{") {
		if errorWords.MatchString(line) {
			return line
		}
		return ""
	}
	var v struct {
		Type, Message, Error json.RawMessage // any JSON: another CLI's events give them other shapes
	}
	if json.Unmarshal([]byte(line), &v) != nil {
		if errorWords.MatchString(line) {
			return line
		}
		return ""
	}
	if !errorWords.MatchString(strings.NewReplacer(".", " ", "_", " ").Replace(jsonString(v.Type))) {
		return ""
	}
	if m := jsonString(v.Message); m != "" {
		return m
	}
	if m := jsonString(v.Error); m != "" {
		return m
	}
	var e struct {
		Message json.RawMessage `json:"message"`
	}
	if json.Unmarshal(v.Error, &e) == nil {
		if m := jsonString(e.Message); m != "" {
			return m
		}
	}
	return line
}

// jsonString returns the JSON value raw if it is a string, else "".
func jsonString(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
}

// lastErrors says what the agent's last errors were, for a failure: "" when it printed none.
func (o *output) lastErrors() string {
	switch len(o.errs) {
	case 0:
		return ""
	case 1:
		return "; the agent's last error: " + o.errs[0]
	}
	return "; the agent's last errors: " + strings.Join(o.errs, " | ")
}

// last returns the kept tail of the output, starting at a whole character.
func (o *output) last() string {
	t := o.tail
	for len(t) > 0 && !utf8.RuneStart(t[0]) {
		t = t[1:]
	}
	return strings.ToValidUTF8(string(t), "�")
}
