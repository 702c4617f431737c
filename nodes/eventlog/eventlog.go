// Package eventlog is the event log of an agent: everything a squad run does is an Event — typed,
// numbered, appended as one JSON line to a file (events.jsonl) or kept by another record (a
// squad's store, which a view shows), readable by page and subscribable in process.
//
// A Log numbers events 1, 2, 3... in the order they are appended; the numbering continues when
// the file is opened again. The order of the lines in the file, the order of the sequence
// numbers and the order in which subscribers receive events are one and the same. Each event is
// written with a single write call before Append returns, so a crash can leave at most the last
// line torn; Open drops such a line (and truncates it away) instead of failing. Live events
// (TextDelta, through Broadcast) go to the subscribers listening at the time, among the others,
// and nowhere else: they are not numbered and not written.
//
// Event types are the squad's fixed set (see Types). Custom types are accepted when they are
// prefixed "x." (for example "x.build.finished"); any other unknown type is rejected, so that
// typos do not make their way into the log.
//
// A view (NewView) is a Log without a file, over events another record keeps and numbers (a
// database): Put hands them to the subscribers, and Read and Subscribe read the past ones back
// from that record.
//
// A Log assumes it is the only writer of its file: open a file once per process, and not from
// several processes at a time. [ReadFile], [Scan] and [Last] read a log file without opening it
// as a Log — with no file held open between calls — whether a Log appends to it or not.
package eventlog

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agiraph/agiraph/internal/osfile"
)

// Type names an event: "node.completed".
type Type string

// The event types: the agent, nodes, workers, messages, tools, the human, stages, memory.
const (
	AgentCreated   Type = "agent.created"   // an agent was created; Text: its name
	AgentStarted   Type = "agent.started"   // an agent started working
	AgentPaused    Type = "agent.paused"    // an agent was paused
	AgentResumed   Type = "agent.resumed"   // a paused agent resumed
	AgentCompleted Type = "agent.completed" // an agent finished its goal
	// AgentFailed says that a run stopped on an error, which Text gives; it may be resumed once
	// the cause is mended.
	AgentFailed Type = "agent.failed"
	// AgentWaiting says that nothing moved in a run for its stall window; Text says what it
	// waits on (a node, a worker, the human).
	AgentWaiting Type = "agent.waiting"

	NodeCreated   Type = "node.created"   // a work node was added to the graph
	NodeAssigned  Type = "node.assigned"  // a work node was assigned to a worker
	NodeStarted   Type = "node.started"   // work on a node began
	NodeCompleted Type = "node.completed" // a node's work was published
	NodeFailed    Type = "node.failed"    // a node's work failed

	WorkerSpawned Type = "worker.spawned" // a worker was created
	WorkerIdle    Type = "worker.idle"    // a worker has nothing to do
	WorkerBusy    Type = "worker.busy"    // a worker took up work
	WorkerStopped Type = "worker.stopped" // a worker was stopped

	MessageSent     Type = "message.sent"     // a message was sent
	MessageReceived Type = "message.received" // a message was delivered

	ToolCalled Type = "tool.called" // a tool was called; Text: ToolText of its name and arguments
	ToolResult Type = "tool.result" // a tool answered; Text: ToolText of its name and result

	HumanQuestion Type = "human.question" // a question was put to the human; Data: the tool call to approve (hooks.Approval), when it asks for an approval
	HumanResponse Type = "human.response" // the human answered
	HumanNudge    Type = "human.nudge"    // the human intervened unasked

	StageStarted    Type = "stage.started"    // a stage of the run began
	StageReconvened Type = "stage.reconvened" // the coordinator reconvened after a stage
	StageCompleted  Type = "stage.completed"  // a stage of the run ended

	MemoryWritten   Type = "memory.written"   // something was written to memory
	MemoryCompacted Type = "memory.compacted" // memory or a conversation was compacted
)

// The squad's own event types, custom by their "x." prefix (so not among Types): what a
// worker's model and process did, and what the run did besides its nodes.
const (
	RuntimeStarted Type = "x.runtime_started" // a worker's runtime took up its assignment; Text: how (its model, or its process with its pid and sandbox)
	ModelTurn      Type = "x.model_turn"      // a model answered; Text: the answer (clipped to 500 bytes); Data: the turn's usage
	Retrying       Type = "x.retrying"        // a failed model call is tried again; Text: why, and when
	Output         Type = "x.output"          // a CLI agent wrote output; Text: it (clipped to 500 bytes)
	Error          Type = "x.error"           // something failed beside a node's work (an answer not handed over, an outcome not saved); Text: what
	TriggerFired   Type = "x.trigger_fired"   // a trigger fired; Text: its id, what fired it, its action
	CycleCompleted Type = "x.cycle_completed" // a cycle of an infinite agent ended; Text: its number and output
	NodeRetried    Type = "x.node_retried"    // the human put a failed node back on the board for a new attempt
	NodeSkipped    Type = "x.node_skipped"    // the human skipped a node; Text: the human's note
	Hooked         Type = "x.hooked"          // a hook, or the human approving a tool call, refused or changed a model or tool call; Text: what
	Budget         Type = "x.budget"          // a run's spending reached the soft limit of its budget; Text: how far; Data: the spending (usage)
)

// TextDelta is a piece of a model's answer as it is generated: Text is the piece, Node and
// Worker say whose answer it is (the coordinator's has no Node). It is a live event: a squad
// hands it to the subscribers of its log with Broadcast, it is never appended (Append refuses
// it), has no Seq (0) and is not in the file, so a subscriber sees only the pieces generated
// while it listens. The pieces of a turn add up to its text, which the logged ModelTurn event that
// follows them carries whole (clipped to 500 bytes).
const TextDelta Type = "text.delta"

// customTypePrefix marks the custom types Append accepts besides Types.
const customTypePrefix = "x."

var types = []Type{
	AgentCreated, AgentStarted, AgentPaused, AgentResumed, AgentCompleted, AgentWaiting, AgentFailed,
	NodeCreated, NodeAssigned, NodeStarted, NodeCompleted, NodeFailed,
	WorkerSpawned, WorkerIdle, WorkerBusy, WorkerStopped,
	MessageSent, MessageReceived,
	ToolCalled, ToolResult,
	HumanQuestion, HumanResponse, HumanNudge,
	StageStarted, StageReconvened, StageCompleted,
	MemoryWritten, MemoryCompacted,
}

var known = func() map[Type]bool {
	m := make(map[Type]bool, len(types))
	for _, t := range types {
		m[t] = true
	}
	return m
}()

// Types returns all the event types, in a fixed order. Custom
// "x."-prefixed types are not among them.
func Types() []Type {
	return append([]Type(nil), types...)
}

// Valid reports whether Append accepts t: one of Types, or a custom type prefixed "x." with
// something after the prefix.
func (t Type) Valid() bool {
	return known[t] || (strings.HasPrefix(string(t), customTypePrefix) && len(t) > len(customTypePrefix))
}

// ErrUnknownType is wrapped by the error Append returns for an empty or unknown type.
var ErrUnknownType = errors.New("unknown event type")

// ErrClosed is returned by the methods of a closed Log.
var ErrClosed = errors.New("eventlog: log is closed")

// Event is one thing that happened. It is stored as one line of JSON.
type Event struct {
	Seq    int64           `json:"seq"`              // 1, 2, 3... in append order, continuing across reopen
	Time   time.Time       `json:"time"`             // when it happened (Append sets it if zero)
	Type   Type            `json:"type"`             // what happened
	Agent  string          `json:"agent,omitempty"`  // the agent it concerns
	Run    string          `json:"run,omitempty"`    // the squad run it belongs to
	Node   string          `json:"node,omitempty"`   // the work node it concerns
	Worker string          `json:"worker,omitempty"` // the worker it concerns
	Text   string          `json:"text,omitempty"`   // a human-readable line: the summary, the message, the question
	Data   json.RawMessage `json:"data,omitempty"`   // type-specific details, any JSON value
	// Key, when set, names the event uniquely: a record of events that keeps one per key (the
	// squad's store) does not add it twice. The log itself writes what it is given.
	Key string `json:"key,omitempty"`
}

// New returns an event of type t with text and data marshalled to JSON. A nil data (or one
// that marshals to null) leaves Data nil. New never panics: if data cannot be marshalled, Data
// is {"error": "..."} with the reason, so that the event can still be logged.
func New(t Type, text string, data any) Event {
	e := Event{Type: t, Text: text}
	if data == nil {
		return e
	}
	b, err := json.Marshal(data)
	if err != nil {
		b, _ = json.Marshal(map[string]string{"error": "eventlog: cannot marshal data: " + err.Error()})
	}
	if string(b) != "null" {
		e.Data = b
	}
	return e
}

// ToolText returns the text of a tool event of type t: for ToolCalled the tool's name and its
// arguments, for ToolResult its name and result, the detail clipped to 200 bytes. A store may
// keep such an event without its text and make it again from the event's data with ToolText:
// the format is part of what it stored, and does not change.
func ToolText(t Type, name, detail string) string {
	if t == ToolResult {
		return name + ": " + Clip(detail, 200)
	}
	return name + " " + Clip(detail, 200)
}

// Clip returns s cut to its first n bytes, followed by "…" when it was longer: an event's text
// holds the start of what may be long.
func Clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// Decode unmarshals e.Data into v. An event without data leaves v unchanged and returns nil.
func (e Event) Decode(v any) error {
	if len(e.Data) == 0 {
		return nil
	}
	return json.Unmarshal(e.Data, v)
}

type config struct {
	now func() time.Time
}

// Option configures Open.
type Option func(*config)

// WithClock makes Append take the time of events whose Time is zero from now instead of
// time.Now. A nil now is ignored.
func WithClock(now func() time.Time) Option {
	return func(c *config) {
		if now != nil {
			c.now = now
		}
	}
}

// entry locates one event in the file.
type entry struct {
	seq int64
	off int64 // offset of its line
}

// Log is an append-only event log backed by a JSONL file, or a view of another record's events
// (NewView). Its methods are safe for concurrent use.
type Log struct {
	path   string
	source Source // a view's record; nil for a file's log
	now    func() time.Time

	mu     sync.Mutex
	f      *os.File // nil for a view
	size   int64    // bytes of complete lines in the file
	index  []entry  // one per event, in Seq order; only ever appended to
	last   int64
	subs   map[*subscriber]struct{}
	closed bool
	broken error // set when a failed write could not be undone; Append then fails
}

// Open opens the log file at path, creating it (but not its directory) if it does not exist.
// Sequence numbers continue after the last event in the file. A last line without its final
// newline — what a crash in the middle of a write leaves — is dropped and truncated away; any
// other line that is not a JSON event, or whose seq is not greater than the one before, makes
// Open fail with an error naming the line number. Blank lines are ignored.
func Open(path string, opts ...Option) (*Log, error) {
	c := config{now: time.Now}
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	f, err := osfile.OpenRegular(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("eventlog: %w", err)
	}
	l := &Log{path: path, now: c.now, f: f, subs: make(map[*subscriber]struct{})}
	if err := l.load(); err != nil {
		_ = f.Close() // nothing written yet; the load's error is the one to report
		return nil, err
	}
	return l, nil
}

// Source reads up to limit events (0: all) with Seq greater than after, in order, from the
// record a view shows.
type Source func(after int64, limit int) ([]Event, error)

// NewView returns a Log without a file: a view of the events source reads, the last of which
// is numbered last. Put hands an event the record added to the subscribers; Read, and Subscribe
// for the events before it, read them from source. Append refuses: the record numbers them.
func NewView(source Source, last int64, opts ...Option) *Log {
	c := config{now: time.Now}
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	return &Log{source: source, now: c.now, last: last, subs: make(map[*subscriber]struct{})}
}

// load reads the file, builds the index and drops a torn last line.
func (l *Log) load() error {
	if _, err := l.f.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("eventlog: %s: %w", l.path, err)
	}
	r := bufio.NewReaderSize(l.f, 64<<10)
	var off int64
	for n := 1; ; n++ {
		line, err := osfile.ReadLine(r)
		if err == io.EOF {
			if len(line) > 0 { // torn last line: drop it
				if terr := l.f.Truncate(off); terr != nil {
					return fmt.Errorf("eventlog: %s: dropping torn line %d: %w", l.path, n, terr)
				}
			}
			break
		}
		if err != nil {
			return fmt.Errorf("eventlog: %s: line %d: %w", l.path, n, err)
		}
		if len(bytes.TrimSpace(line)) > 0 {
			var e Event
			if err := json.Unmarshal(line, &e); err != nil {
				return fmt.Errorf("eventlog: %s: line %d: corrupt event: %w", l.path, n, err)
			}
			if e.Seq <= l.last {
				return fmt.Errorf("eventlog: %s: line %d: seq %d does not follow %d", l.path, n, e.Seq, l.last)
			}
			l.index = append(l.index, entry{seq: e.Seq, off: off})
			l.last = e.Seq
		}
		off += int64(len(line))
	}
	l.size = off
	return nil
}

// Append validates e, sets its Seq to the next number and its Time (if zero) from the clock,
// writes it to the file as one line with a single write call, hands it to the subscribers, and
// returns it as written. A Seq already set in e is overwritten. The Type must be one of Types or
// prefixed "x."; an empty or unknown type is an error wrapping ErrUnknownType. Data, if any,
// must be valid JSON (it is stored compacted). If the write fails, what it wrote is truncated
// away and the Seq is not used.
func (l *Log) Append(e Event) (Event, error) {
	e, err := Check(e)
	if err != nil {
		return Event{}, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.source != nil {
		return Event{}, errors.New("eventlog: a view's events are numbered by its record: Put them")
	}
	e.Seq = l.last + 1
	return l.write(e)
}

// Put writes e, whose Seq another record of the events gave it (a database the log is a view
// of), as Append does, without giving it a new Seq. Its Seq must be greater than Last's.
func (l *Log) Put(e Event) (Event, error) {
	e, err := Check(e)
	if err != nil {
		return Event{}, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if e.Seq <= l.last {
		return Event{}, fmt.Errorf("eventlog: %s: event %d does not follow %d", l.path, e.Seq, l.last)
	}
	return l.write(e)
}

// Check returns e as the log writes it — its Data compacted — or why it cannot be logged: an
// empty or unknown type (an error wrapping ErrUnknownType), a live-only type, Data that is not
// JSON.
func Check(e Event) (Event, error) {
	if e.Type == "" {
		return Event{}, fmt.Errorf("eventlog: event has no type: %w", ErrUnknownType)
	}
	if e.Type == TextDelta {
		return Event{}, fmt.Errorf("eventlog: %s events are live only: Broadcast them", e.Type)
	}
	if !e.Type.Valid() {
		return Event{}, fmt.Errorf("eventlog: %w %q (custom types must be prefixed %q)", ErrUnknownType, e.Type, customTypePrefix)
	}
	if len(e.Data) > 0 {
		var c bytes.Buffer
		if err := json.Compact(&c, e.Data); err != nil {
			return Event{}, fmt.Errorf("eventlog: %s event: data is not valid JSON: %w", e.Type, err)
		}
		e.Data = c.Bytes()
	}
	return e, nil
}

// write writes e, with its Seq set, and hands it to the subscribers; l.mu is held.
func (l *Log) write(e Event) (Event, error) {
	if l.closed {
		return Event{}, ErrClosed
	}
	if l.broken != nil {
		return Event{}, l.broken
	}
	if e.Time.IsZero() {
		e.Time = l.now()
	}
	e.Time = e.Time.Round(0) // no monotonic reading: the event equals what is read back
	if l.f != nil {
		if err := l.writeLine(e); err != nil {
			return Event{}, err
		}
	}
	l.last = e.Seq
	for s := range l.subs {
		s.push(e)
	}
	return e, nil
}

// writeLine appends e to the file as a line; l.mu is held.
func (l *Log) writeLine(e Event) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(e); err != nil { // one line, newline-terminated
		return fmt.Errorf("eventlog: %s event: %w", e.Type, err)
	}
	if n, err := l.f.Write(buf.Bytes()); err != nil {
		err = fmt.Errorf("eventlog: %s: writing event %d: %w", l.path, e.Seq, err)
		if n > 0 {
			if terr := l.f.Truncate(l.size); terr != nil {
				l.broken = fmt.Errorf("eventlog: %s: a failed write left a partial line: %w", l.path, terr)
			}
		}
		return err
	}
	l.index = append(l.index, entry{seq: e.Seq, off: l.size})
	l.size += int64(buf.Len())
	return nil
}

// liveBacklog is how many events a subscriber may have waiting before live events are no longer
// queued for it (see Broadcast).
const liveBacklog = 4096

// Broadcast hands e to the subscribers as it is now, without writing it: a live event, such as
// a TextDelta, that a later Read or Subscribe never sees. Its Seq is 0 whatever e had, its Time
// is set from the clock if zero, and it takes its place among the appended events in the order
// the calls were made. A subscriber that has liveBacklog (4,096) events or more waiting misses
// it: a subscriber that does not read costs the log memory for logged events only. On a closed
// log Broadcast does nothing.
func (l *Log) Broadcast(e Event) {
	e.Seq = 0
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return
	}
	if e.Time.IsZero() {
		e.Time = l.now()
	}
	for s := range l.subs {
		s.pushLive(e)
	}
}

// Read returns a page: up to limit events with Seq > after, in order (limit <= 0: all of them).
// An after at or beyond Last gives an empty page.
func (l *Log) Read(after int64, limit int) ([]Event, error) {
	return l.read(after, -1, limit)
}

// read returns up to limit events with after < Seq <= upto (upto < 0: no upper bound).
func (l *Log) read(after, upto int64, limit int) ([]Event, error) {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil, ErrClosed
	}
	idx, size, f := l.index, l.size, l.f
	l.mu.Unlock()
	if l.source != nil {
		return l.readSource(after, upto, limit)
	}

	start := sort.Search(len(idx), func(i int) bool { return idx[i].seq > after })
	end := len(idx)
	if upto >= 0 {
		end = sort.Search(len(idx), func(i int) bool { return idx[i].seq > upto })
	}
	if limit > 0 && end-start > limit {
		end = start + limit
	}
	if start >= end {
		return nil, nil
	}
	from, to := idx[start].off, size
	if end < len(idx) {
		to = idx[end].off
	}
	buf := make([]byte, to-from)
	if _, err := f.ReadAt(buf, from); err != nil {
		if errors.Is(err, os.ErrClosed) {
			return nil, ErrClosed
		}
		return nil, fmt.Errorf("eventlog: %s: %w", l.path, err)
	}
	out := make([]Event, 0, end-start)
	for len(buf) > 0 {
		line := buf
		if i := bytes.IndexByte(buf, '\n'); i >= 0 {
			line, buf = buf[:i], buf[i+1:]
		} else {
			buf = nil
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var e Event
		if err := json.Unmarshal(line, &e); err != nil {
			return nil, fmt.Errorf("eventlog: %s: event after %d: %w", l.path, after, err)
		}
		out = append(out, e)
	}
	return out, nil
}

// Advance moves a view's Last to last, unless it is not greater, without reading the events
// up to it: when no one subscribes, there is no one to hand them to. It reports whether it did:
// false on a log with a file or with subscribers, which are to be given the events with Put.
func (l *Log) Advance(last int64) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.source == nil || len(l.subs) > 0 || l.closed {
		return false
	}
	l.last = max(l.last, last)
	return true
}

// readSource reads a view's events from its record, as read does.
func (l *Log) readSource(after, upto int64, limit int) ([]Event, error) {
	evs, err := l.source(after, limit)
	if err != nil {
		return nil, fmt.Errorf("eventlog: %w", err)
	}
	if upto >= 0 {
		for i, e := range evs {
			if e.Seq > upto {
				return evs[:i], nil
			}
		}
	}
	return evs, nil
}

// Last returns the Seq of the last event appended (0 for an empty log).
func (l *Log) Last() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.last
}

// Path returns the path of the log's file ("" for a view).
func (l *Log) Path() string { return l.path }

// Close ends all subscriptions and closes the file: each subscriber still gets the events
// appended or broadcast while it was subscribed, then its channel closes (see Subscribe). Later
// calls to Append and Read return ErrClosed; Close itself may be called again and returns nil.
func (l *Log) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	subs := l.subs
	l.subs = nil
	l.mu.Unlock()
	for s := range subs {
		close(s.ended)
	}
	if l.f == nil {
		return nil
	}
	if err := l.f.Close(); err != nil {
		return fmt.Errorf("eventlog: %w", err)
	}
	return nil
}

// catchUpPage is how many past events a subscriber reads from the file at a time.
const catchUpPage = 256

// Subscribe returns a channel that receives, in order and each exactly once, every event with
// Seq > after: first those already in the log (read from the file, a page at a time), then the
// ones appended from now on, with the live events broadcast from now on (Seq 0; see Broadcast)
// in their places among them. Events appended while the subscriber catches up are queued, not
// lost. The queue is unbounded, so a subscriber that does not read never blocks Append (it only
// costs memory). The returned func unsubscribes and closes the channel; it may be called more
// than once, and from any goroutine. Close ends all subscriptions: a subscriber gets the events
// appended or broadcast while it was subscribed — live ones are nowhere else — and then its
// channel closes; one still reading the events already in the log from the file stops there, as
// it does should the file fail to be read. On a closed log, the channel is closed at once.
func (l *Log) Subscribe(after int64) (<-chan Event, func()) {
	s := &subscriber{
		out:    make(chan Event),
		wake:   make(chan struct{}, 1),
		done:   make(chan struct{}),
		ended:  make(chan struct{}),
		exited: make(chan struct{}),
	}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		close(s.out)
		return s.out, func() {}
	}
	upto := l.last // history from the file; everything after it arrives through the queue
	l.subs[s] = struct{}{}
	l.mu.Unlock()

	go s.run(l, after, upto)
	return s.out, func() {
		l.mu.Lock()
		if l.subs != nil {
			delete(l.subs, s)
		}
		l.mu.Unlock()
		s.stop()
	}
}

// subscriber forwards events to out from its own goroutine.
type subscriber struct {
	mu      sync.Mutex
	queue   []Event      // events appended or broadcast since the subscription, not yet taken to send
	waiting atomic.Int64 // events pushed and not yet sent or skipped, taken or not

	out      chan Event
	wake     chan struct{} // signalled when the queue grows
	done     chan struct{} // closed to stop
	ended    chan struct{} // closed when the log closes: nothing more is pushed
	exited   chan struct{} // closed when run returned
	stopOnce sync.Once
}

func (s *subscriber) push(e Event) {
	s.waiting.Add(1)
	s.mu.Lock()
	s.queue = append(s.queue, e)
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// pushLive queues a live event, unless the subscriber has liveBacklog events waiting.
func (s *subscriber) pushLive(e Event) {
	if s.waiting.Load() < liveBacklog {
		s.push(e)
	}
}

// stop ends the subscriber's goroutine and waits for it; the channel is then closed.
func (s *subscriber) stop() {
	s.stopOnce.Do(func() { close(s.done) })
	<-s.exited
}

// send sends e, unless the subscriber is stopped first, or ended is closed first (or is closed
// already, though the receiver is ready too).
func (s *subscriber) send(e Event, ended <-chan struct{}) bool {
	select {
	case <-ended:
		return false
	default:
	}
	select {
	case s.out <- e:
		return true
	case <-s.done:
		return false
	case <-ended:
		return false
	}
}

func (s *subscriber) run(l *Log, after, upto int64) {
	defer close(s.exited)
	defer close(s.out)
	for cur := after; cur < upto; {
		select {
		case <-s.done:
			return
		case <-s.ended: // the file is closed
			return
		default:
		}
		page, err := l.read(cur, upto, catchUpPage)
		if err != nil || len(page) == 0 {
			return
		}
		for _, e := range page {
			if !s.send(e, s.ended) {
				return
			}
			cur = e.Seq
		}
	}
	for {
		s.mu.Lock()
		q := s.queue
		s.queue = nil
		s.mu.Unlock()
		if len(q) == 0 {
			select {
			case <-s.ended: // the log closed, and the last of the queue is sent
				return
			default:
			}
			select {
			case <-s.wake:
			case <-s.ended: // what was pushed before is in the queue now
			case <-s.done:
				return
			}
			continue
		}
		for _, e := range q {
			if e.Seq == 0 || e.Seq > after { // a live event (Seq 0) is sent as it comes
				if !s.send(e, nil) {
					return
				}
			}
			s.waiting.Add(-1)
		}
	}
}
