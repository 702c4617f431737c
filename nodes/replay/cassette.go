// Package replay records a squad's run into a cassette and plays the cassette back, offline and
// deterministically, as a test: the same board, messages, published files and output, with no
// key and no network.
//
// A Recorder, given to the squad with nodes.WithRecorder, writes every model request and answer,
// the calls of the tools that reach outside the run (bash, the web tools, MCP servers), the
// human's answers and the clock's reading the run's id and prompts are made of; secrets are
// removed as lines are written. As a nodes.Sequencer it also writes what decides the run beside
// the timing of what runs at once: each point of a tick where the run took the ends of its
// workers' assignments, in which order, and what it did; the workers their mail woke; the
// messages each participant's mailbox gave it at each look; the point each answer came after.
//
// Run (in a test) and Play replay a cassette: the squad runs again, its models and outside tools
// answered from the cassette; each end, message, waking and answer is held until the point
// the recording took it, so that the run is the same whatever the scheduler does. The first call
// the cassette does not have ends the replay with a *Divergence naming it, and a run that ends
// otherwise than recorded with a *Mismatch.
//
// A cassette is JSON lines: a header (the format's version and the run: goal, models, options),
// then one line per call, point, look at a mailbox or answer, then the run's facts.
// docs/replay.md describes the format.
package replay

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agiraph/agiraph/nodes"
	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/runtime"
)

// Version is the cassette format's version, in its header. Load reads versions 1 and 2 too: a
// cassette of version 2 has no points at route_frontier (see nodes.PointRoute), and a replay of
// it wakes a worker when its mail comes; one of version 1 has no points at all (see KindTake)
// and no mail, and a replay of it gives the answers when the run has gone quiet.
const Version = 3

// Header is a cassette's first line.
type Header struct {
	Format  string        `json:"format"` // "agiraph-cassette"
	Version int           `json:"version"`
	Run     nodes.RunInfo `json:"run"`
}

const format = "agiraph-cassette"

// The kinds of a cassette's lines after the header.
const (
	KindModel = "model" // a model request and its answer
	KindTool  = "tool"  // a call of a tool that reaches outside the run, and its result
	// KindStream is an assignment of a worker that is not a model loop of the squad's (a CLI
	// agent's: claude-code, autonomous): its task, the events it reported, its outcome and the
	// files it published. Its tool calls, all of them, are KindTool lines.
	KindStream = "stream"
	// KindAnswer is the human's answer to a question (ask_human) of the participant: a worker, by
	// its id, or the coordinator, given after the run's After-th point (see KindTake).
	KindAnswer = "answer"
	// KindTake is a point of a tick where the run took what happened beside it (a
	// nodes.Sequencer's Take): the ends of the assignments it took, in order, and what it did.
	KindTake = "take"
	// KindMail is the messages a participant's mailbox gave it at its Seq-th look (those that
	// gave none are not written): a replay gives it the same ones then.
	KindMail  = "mail"
	KindFacts = "facts" // how the run ended: the last line
)

// Line is one line of a cassette after the header. Who names the participant that made the call
// (see who) and Seq counts that participant's calls of the line's kind, from 1.
type Line struct {
	Kind string `json:"kind"`
	Who  string `json:"who,omitempty"`
	Seq  int    `json:"seq,omitempty"`
	// A model call: the model's name, the request (kept short: see Request) and the answer, or
	// the error the model returned.
	Model    string              `json:"model,omitempty"`
	Request  *Request            `json:"request,omitempty"`
	Response *providers.Response `json:"response,omitempty"`
	// At is when the model's answer came, by the squad's clock: a replay's clock reads it from
	// then on, so that what the run writes with the time (its memory's daily log, read into
	// later prompts) says the recorded minute.
	At *time.Time `json:"at,omitempty"`
	// A tool call: the tool's name, its arguments and its result, or its error.
	Tool   string          `json:"tool,omitempty"`
	Args   json.RawMessage `json:"args,omitempty"`
	Result string          `json:"result,omitempty"`
	Error  string          `json:"error,omitempty"`
	// A stream: the task, the events, the outcome, the published files, by path in published/,
	// and the messages sent.
	Task    string            `json:"task,omitempty"`
	Events  []runtime.Event   `json:"events,omitempty"`
	Outcome *runtime.Outcome  `json:"outcome,omitempty"`
	Files   map[string]string `json:"files,omitempty"`
	Sent    []Sent            `json:"sent,omitempty"` // the messages it sent, in order
	// An answer: the human's text, and how many points of the run's ticks came before it.
	Answer string `json:"answer,omitempty"`
	After  int    `json:"after,omitempty"`
	// A point of a tick: which, the ends taken there, by assignment, or at route_frontier the
	// workers whose mail had come (Woken), and what the run did.
	Point *nodes.Point `json:"point,omitempty"`
	Ended []string     `json:"ended,omitempty"`
	Woken []string     `json:"woken,omitempty"`
	Move  nodes.Move   `json:"move,omitempty"`
	Mail  []Mail       `json:"mail,omitempty"` // the messages a participant received
	Facts *Facts       `json:"facts,omitempty"`
}

// Mail is a message a participant received: its sender and text.
type Mail struct {
	From string `json:"from"`
	Body string `json:"body"`
}

// Sent is a message a CLI agent sent through its mailbox: the send's key, the recipient and the
// text.
type Sent struct {
	Key  string `json:"key,omitempty"`
	To   string `json:"to"`
	Body string `json:"body"`
}

// Request is a model request as a cassette keeps it: what a participant's request has in common
// with its previous one is left out — Kept leading messages, and the system prompt and tools when
// SameSystem and SameTools say so.
type Request struct {
	Kept        int                  `json:"kept,omitempty"`
	SameSystem  bool                 `json:"same_system,omitempty"`
	SameTools   bool                 `json:"same_tools,omitempty"`
	System      string               `json:"system,omitempty"`
	Tools       []providers.ToolSpec `json:"tools,omitempty"`
	Messages    []providers.Message  `json:"messages,omitempty"`
	Choice      providers.ToolChoice `json:"choice,omitzero"`
	MaxTokens   int                  `json:"max_tokens,omitempty"`
	Temperature *float64             `json:"temperature,omitempty"`
	Stop        []string             `json:"stop,omitempty"`
	Output      *providers.Output    `json:"output,omitempty"`
}

// request is the whole of req as a cassette compares it.
func request(req providers.Request) Request {
	return Request{System: req.System, Tools: req.Tools, Messages: req.Messages, Choice: req.Choice, MaxTokens: req.MaxTokens,
		Temperature: req.Temperature, Stop: req.Stop, Output: req.Output}
}

// shorten returns whole, a participant's request, with what it shares with prev, its previous
// one, left out.
func shorten(whole, prev Request) Request {
	short := whole
	if whole.System == prev.System {
		short.System, short.SameSystem = "", true
	}
	if sameJSON(whole.Tools, prev.Tools) {
		short.Tools, short.SameTools = nil, true
	}
	for short.Kept < min(len(whole.Messages), len(prev.Messages)) && sameJSON(whole.Messages[short.Kept], prev.Messages[short.Kept]) {
		short.Kept++
	}
	short.Messages = whole.Messages[short.Kept:]
	return short
}

// lengthen undoes shorten.
func lengthen(short, prev Request) (Request, error) {
	whole := short
	if short.Kept > len(prev.Messages) {
		return Request{}, fmt.Errorf("keeps %d messages of a request of %d", short.Kept, len(prev.Messages))
	}
	whole.Messages = append(append([]providers.Message(nil), prev.Messages[:short.Kept]...), short.Messages...)
	if short.SameSystem {
		whole.System = prev.System
	}
	if short.SameTools {
		whole.Tools = prev.Tools
	}
	whole.Kept, whole.SameSystem, whole.SameTools = 0, false, false
	return whole, nil
}

func sameJSON(a, b any) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(x, y)
}

// Cassette is a recorded run, read by Load: its header, its calls with their requests whole, and
// its facts.
type Cassette struct {
	Header Header
	Lines  []Line
	Facts  Facts
}

// Load reads the cassette at path.
func Load(path string) (*Cassette, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("replay: %w", err)
	}
	defer func() { _ = f.Close() }() // read only
	c := &Cassette{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	prev := map[string]Request{}
	facts := false
	for n := 1; sc.Scan(); n++ {
		if n == 1 {
			if err := json.Unmarshal(sc.Bytes(), &c.Header); err != nil || c.Header.Format != format {
				return nil, fmt.Errorf("replay: %s is not a cassette: its first line is not a %s header", path, format)
			}
			if c.Header.Version < 1 || c.Header.Version > Version {
				return nil, fmt.Errorf("replay: %s: cassette format version %d; this package reads versions 1 to %d", path, c.Header.Version, Version)
			}
			continue
		}
		var l Line
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			return nil, fmt.Errorf("replay: %s:%d: %w", path, n, err)
		}
		switch l.Kind {
		case KindModel:
			if l.Request == nil {
				return nil, fmt.Errorf("replay: %s:%d: a model call without its request", path, n)
			}
			whole, err := lengthen(*l.Request, prev[l.Who])
			if err != nil {
				return nil, fmt.Errorf("replay: %s:%d: %s's request %d %w", path, n, l.Who, l.Seq, err)
			}
			prev[l.Who], l.Request = whole, &whole
		case KindTool, KindAnswer, KindStream, KindMail:
		case KindTake:
			if l.Point == nil {
				return nil, fmt.Errorf("replay: %s:%d: a take without its point", path, n)
			}
		case KindFacts:
			if l.Facts == nil {
				return nil, fmt.Errorf("replay: %s:%d: a facts line without facts", path, n)
			}
			c.Facts, facts = *l.Facts, true
			continue
		default:
			return nil, fmt.Errorf("replay: %s:%d: unknown kind %q", path, n, l.Kind)
		}
		c.Lines = append(c.Lines, l)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("replay: %s: %w", path, err)
	}
	if c.Header.Format == "" {
		return nil, fmt.Errorf("replay: %s is empty", path)
	}
	if !facts {
		return nil, fmt.Errorf("replay: %s has no facts line: the recording did not finish (was Recorder.Finish called?)", path)
	}
	return c, nil
}

// describe is a call's name in errors: its participant, kind and sequence number.
func describe(kind, who string, seq int) string {
	if kind == KindTake {
		return fmt.Sprintf("point %d of the run's ticks", seq)
	}
	return fmt.Sprintf("%s call %d of %s", kind, seq, who)
}

// diff shows the lines of want and got that differ, with two lines around them.
func diff(want, got string) string {
	a, b := strings.Split(want, "\n"), strings.Split(got, "\n")
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	del, add := a[pre:len(a)-suf], b[pre:len(b)-suf]
	if len(del) == 1 && len(add) == 1 { // one long line changed, the system prompt say: show where
		del, add = window(del[0], add[0])
	}
	var out strings.Builder
	for _, l := range a[max(0, pre-2):pre] {
		out.WriteString("  " + l + "\n")
	}
	for _, l := range del {
		out.WriteString("- " + l + "\n")
	}
	for _, l := range add {
		out.WriteString("+ " + l + "\n")
	}
	for _, l := range a[len(a)-suf : min(len(a), len(a)-suf+2)] {
		out.WriteString("  " + l + "\n")
	}
	return out.String()
}

// window returns the parts of lines a and b around where they first differ, when they are long.
func window(a, b string) ([]string, []string) {
	const around = 60
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	cut := func(s string) string {
		from, to := max(0, i-around), min(len(s), i+around)
		for from > 0 && !utf8.RuneStart(s[from]) {
			from--
		}
		for to < len(s) && !utf8.RuneStart(s[to]) {
			to++
		}
		out := s[from:to]
		if from > 0 {
			out = "…" + out
		}
		if to < len(s) {
			out += "…"
		}
		return out
	}
	return []string{cut(a)}, []string{cut(b)}
}

// indent is v as indented JSON, for diff.
func indent(v any) string {
	b, _ := json.MarshalIndent(v, "", "  ")
	return string(b)
}
