// Package bus is the message bus of a squad run: workers, the coordinator and the human send
// each other messages through it.
//
// Every participant has a name (unique, compared case-insensitively) and a role. A message is
// addressed to a participant's name, to a role (every participant with that role but the
// sender), to Everyone ("*": every participant but the sender and the human), to Human or to
// Coordinator; the coordinator and the human are always members. Each recipient gets its own
// copy, a runtime.Message with its own sequence-based ID ("m0007"), queued until the recipient
// receives it. A Receive drains the recipient's queue, oldest first, so each copy is delivered
// once.
//
// A bus lives in a directory (a run's _messages folder). Its truth is a journal of records
// (see Journal): by default an append-only JSON Lines log in the directory, log.jsonl, or what
// WithJournal gives (a squad's store). The records are of three kinds:
//
//	{"type":"join","name":"alice","role":"researcher"}
//	{"type":"send","n":3,"to":"researcher","messages":[{"id":"m0004","from":"bob","to":"alice",...}]}
//	{"type":"received","name":"alice","upto":"m0004"}
//
// Each record is kept before the Send, Join or Receive that made it returns, and Open replays the
// journal, so after a restart the participants, the history and the queues of undelivered
// messages are as they were, and nothing received before is delivered again.
//
// For people, each Send also leaves a markdown file in the directory, named after a counter,
// the sender and the addressee — 0001_alice_to_bob.md, 0002_coordinator_to_all.md,
// 0003_bob_to_researcher.md — with From, To and Time header lines and the body. The counter
// continues across restarts; no file name is used twice.
//
// A Bus is safe for concurrent use. One process at a time may open a directory.
package bus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/agiraph/agiraph/nodes/workspace"
	"github.com/agiraph/agiraph/runtime"
)

// Participant is someone who can send and receive: a worker, the coordinator, the human.
type Participant struct {
	// Name addresses the participant; unique among a bus's participants, case-insensitively.
	Name string `json:"name"`
	// Role addresses the participant together with everyone else who has it; may be empty.
	Role string `json:"role,omitempty"`
}

// Names with a meaning of their own. Coordinator and Human are always participants, each with
// its name as its role.
const (
	Coordinator = "coordinator" // the run's coordinator
	Human       = "human"       // the person the run works for
	Everyone    = "*"           // every participant but the sender and the human
)

// LogFile is the name of the bus's log in its directory.
const LogFile = "log.jsonl"

// Errors returned by the bus; the errors it returns wrap them, with details.
var (
	ErrClosed           = errors.New("bus: closed")
	ErrInvalidName      = errors.New("bus: invalid participant")
	ErrUnknownSender    = errors.New("bus: unknown sender")
	ErrUnknownRecipient = errors.New("bus: unknown recipient")
	ErrNoRecipient      = errors.New("bus: no recipient")
	ErrSelf             = errors.New("bus: sending to oneself")
	ErrEmptyBody        = errors.New("bus: empty message body")
)

// Event kinds.
const (
	Sent     = "sent"     // a message copy was stored and queued for its recipient
	Received = "received" // a message copy was delivered to its recipient
)

// Event is something that happened to one message copy, reported to the observer (see
// WithObserver).
type Event struct {
	Kind    string // Sent or Received
	Message runtime.Message
}

type config struct {
	now      func() time.Time
	observer func(Event)
	journal  Journal
}

// Option configures Open.
type Option func(*config)

// WithClock makes the bus take messages' times from now instead of time.Now.
func WithClock(now func() time.Time) Option {
	return func(c *config) {
		if now != nil {
			c.now = now
		}
	}
}

// WithObserver makes the bus call fn after each message copy is stored (a Sent event, once per
// recipient copy) and after each delivery (a Received event per message a Receive returns).
// fn is called outside the bus's lock, one call at a time, in the order the events happened,
// either from the goroutine whose Send or Receive made the event or from another one that is
// reporting events at that moment; fn may call the bus (even Send) but should return promptly.
func WithObserver(fn func(Event)) Option {
	return func(c *config) { c.observer = fn }
}

// member is a participant and its queue of undelivered messages.
type member struct {
	Participant
	queue []runtime.Message
}

// Bus is a run's message bus. Create it with Open; it is safe for concurrent use.
type Bus struct {
	dir    string
	cfg    config
	notify chan struct{}

	mu      sync.Mutex
	journal Journal
	closed  bool
	members []*member          // in order of joining; the coordinator and the human first
	byKey   map[string]*member // by lower-case name
	seq     int                // the last message copy's number
	sends   int                // the last Send's number (markdown counter)
	history []runtime.Message
	// delivered are the copies received, in the order they were.
	delivered []runtime.Message
	events    []Event                      // not yet reported to the observer
	keys      map[string][]runtime.Message // the copies of each keyed send
	taken     map[string][]runtime.Message // the copies each keyed receive returned

	obsMu sync.Mutex // held by whoever is reporting events
}

// record is a line of the log.
type record struct {
	Type     string            `json:"type"` // "join", "send" or "received"
	Name     string            `json:"name,omitempty"`
	Role     string            `json:"role,omitempty"`
	N        int               `json:"n,omitempty"`
	To       string            `json:"to,omitempty"`
	Messages []runtime.Message `json:"messages,omitempty"`
	Upto     string            `json:"upto,omitempty"`
	Key      string            `json:"key,omitempty"` // the idempotency key of a send or receive (SendOnce, ReceiveOnce)
}

// Open opens the bus whose log lives in dir, creating dir and the log if needed, and replays
// the log: participants, history, queued and delivered messages are as they were when the
// bus was last used. A torn last line of the log is ignored (and cut off); any other line that
// cannot be read is an error.
func Open(dir string, opts ...Option) (*Bus, error) {
	b := &Bus{
		dir:    dir,
		cfg:    config{now: time.Now},
		notify: make(chan struct{}, 1),
		byKey:  map[string]*member{},
		keys:   map[string][]runtime.Message{},
		taken:  map[string][]runtime.Message{},
	}
	for _, o := range opts {
		if o != nil {
			o(&b.cfg)
		}
	}
	b.addMember(Participant{Name: Coordinator, Role: Coordinator})
	b.addMember(Participant{Name: Human, Role: Human})

	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("bus: %w", err)
	}
	b.journal = b.cfg.journal
	if b.journal == nil {
		j, err := OpenFileJournal(dir)
		if err != nil {
			return nil, err
		}
		b.journal = j
	}
	recs, err := b.journal.Records()
	if err == nil {
		err = b.replay(recs)
	}
	if err != nil {
		_ = b.journal.Close() // the error before is the one to report
		return nil, err
	}
	if n := lastMarkdownNumber(dir); n > b.sends {
		b.sends = n
	}
	return b, nil
}

// replay applies the journal's records.
func (b *Bus) replay(recs [][]byte) error {
	for i, line := range recs {
		var r record
		if err := json.Unmarshal(line, &r); err != nil {
			return fmt.Errorf("bus: record %d: %w", i+1, err)
		}
		if err := b.apply(r); err != nil {
			return fmt.Errorf("bus: record %d: %w", i+1, err)
		}
	}
	return nil
}

// apply applies one replayed record.
func (b *Bus) apply(r record) error {
	switch r.Type {
	case "join":
		if b.byKey[key(r.Name)] == nil {
			b.addMember(Participant{Name: r.Name, Role: r.Role})
		}
	case "send":
		b.sends = max(b.sends, r.N)
		if r.Key != "" {
			b.keys[r.Key] = r.Messages
		}
		for _, m := range r.Messages {
			n, ok := idNumber(m.ID)
			if !ok {
				return fmt.Errorf("message id %q", m.ID)
			}
			b.seq = max(b.seq, n)
			b.history = append(b.history, m)
			if mb := b.byKey[key(m.To)]; mb != nil {
				mb.queue = append(mb.queue, m)
			}
		}
	case "received":
		upto, ok := idNumber(r.Upto)
		if !ok {
			return fmt.Errorf("message id %q", r.Upto)
		}
		if mb := b.byKey[key(r.Name)]; mb != nil {
			i := 0
			for i < len(mb.queue) {
				if n, _ := idNumber(mb.queue[i].ID); n > upto {
					break
				}
				i++
			}
			b.delivered = append(b.delivered, mb.queue[:i]...)
			if r.Key != "" {
				b.taken[r.Key] = slices.Clone(mb.queue[:i])
			}
			mb.queue = append([]runtime.Message(nil), mb.queue[i:]...)
		}
	default:
		return fmt.Errorf("unknown record type %q", r.Type)
	}
	return nil
}

func (b *Bus) addMember(p Participant) *member {
	m := &member{Participant: p}
	b.members = append(b.members, m)
	b.byKey[key(p.Name)] = m
	return m
}

// Join adds p to the bus's participants. Names are unique, compared case-insensitively; joining
// again with a name already there (in this process or before a restart, and always for the
// coordinator and the human) changes nothing, the first role stays, and is not an error. A name
// or role must not be empty (a role may be), "*", or hold control characters; surrounding
// spaces are trimmed.
func (b *Bus) Join(p Participant) error {
	p.Name = strings.TrimSpace(p.Name)
	p.Role = strings.TrimSpace(p.Role)
	if p.Name == "" || p.Name == Everyone || hasControl(p.Name) {
		return fmt.Errorf("%w: name %q", ErrInvalidName, p.Name)
	}
	if p.Role == Everyone || hasControl(p.Role) {
		return fmt.Errorf("%w: role %q", ErrInvalidName, p.Role)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return ErrClosed
	}
	if b.byKey[key(p.Name)] != nil {
		return nil
	}
	if err := b.appendRecord(record{Type: "join", Name: p.Name, Role: p.Role}); err != nil {
		return err
	}
	b.addMember(p)
	return nil
}

// Participants returns the participants in the order they joined, the coordinator and the human
// first.
func (b *Bus) Participants() []Participant {
	b.mu.Lock()
	defer b.mu.Unlock()
	ps := make([]Participant, len(b.members))
	for i, m := range b.members {
		ps[i] = m.Participant
	}
	return ps
}

// Send sends body from the participant from to to, which is a participant's name (compared
// case-insensitively), a role (every participant with that role but the sender), Everyone
// (every participant but the sender and the human), Human or Coordinator. A name takes
// precedence over a role spelled the same. It returns the copies it queued, one per
// recipient, in the order of the participants. When Send returns without an error the copies
// are in the log and will be delivered, once each, even after a restart; when it returns an
// error nothing was sent. Sending to oneself (by name, or to a role no one else has), an
// empty body, an unknown sender or an unknown recipient is an error; the latter names the
// recipient and lists the known names and roles.
func (b *Bus) Send(ctx context.Context, from, to, body string) ([]runtime.Message, error) {
	return b.send(ctx, "", from, to, body)
}

// SendOnce is Send with an idempotency key: the first call with a key sends, and every later
// call with the same key — in this process or after a restart — returns the copies the first
// one sent, without sending again. A step that sends and may be run again after a crash sends
// with a key derived from what it is doing.
func (b *Bus) SendOnce(ctx context.Context, key, from, to, body string) ([]runtime.Message, error) {
	if key == "" {
		return nil, fmt.Errorf("bus: SendOnce from %q to %q: empty key", from, to)
	}
	return b.send(ctx, key, from, to, body)
}

func (b *Bus) send(ctx context.Context, idem, from, to, body string) ([]runtime.Message, error) {
	sent, err := b.sendAll(ctx, []Message{{Key: idem, From: from, To: to, Body: body}})
	if err != nil {
		return nil, err
	}
	return sent[0], nil
}

// Message is one message of SendAll: its body from a participant to a name, role or group,
// with an idempotency key as SendOnce takes (none: sent every time).
type Message struct {
	Key, From, To, Body string
}

// SendAll sends each message as Send (or, with a key, SendOnce) does, in order, and makes them
// durable together: one sync of the log for all. It returns the copies of each. When it
// returns an error nothing was sent: a message refused (an empty body, an unknown sender or
// recipient) refuses them all, naming it.
func (b *Bus) SendAll(ctx context.Context, msgs []Message) ([][]runtime.Message, error) {
	return b.sendAll(ctx, msgs)
}

// sendAll is SendAll.
func (b *Bus) sendAll(ctx context.Context, batch []Message) ([][]runtime.Message, error) {
	if ctx != nil {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
	for _, m := range batch {
		if strings.TrimSpace(m.Body) == "" {
			return nil, fmt.Errorf("%w (from %q to %q)", ErrEmptyBody, m.From, m.To)
		}
	}
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil, ErrClosed
	}
	// Each message's copies and recipients, in order; nothing changes until all are durable.
	type pending struct {
		copies     []runtime.Message
		recipients []*member
		old        bool // sent before, under its key
	}
	out := make([][]runtime.Message, len(batch))
	todo := make([]pending, len(batch))
	batchKeys := map[string]int{} // a key sent earlier in this batch → its index
	seq, sends := b.seq, b.sends
	var written []string // the markdown files written, removed if the batch fails
	var recs [][]byte    // the batch's records, kept together
	fail := func(err error) ([][]runtime.Message, error) {
		for _, p := range written {
			_ = os.Remove(p) // best effort: the log, not the markdown, is the record
		}
		b.mu.Unlock()
		return nil, err
	}
	now := b.cfg.now().Round(0)
	for i, m := range batch {
		if m.Key != "" {
			if sent, ok := b.keys[m.Key]; ok {
				out[i], todo[i].old = append([]runtime.Message(nil), sent...), true
				continue
			}
			if j, ok := batchKeys[m.Key]; ok {
				out[i], todo[i].old = append([]runtime.Message(nil), out[j]...), true
				continue
			}
		}
		sender := b.byKey[key(m.From)]
		if sender == nil {
			return fail(fmt.Errorf("%w %q; %s", ErrUnknownSender, m.From, b.known()))
		}
		recipients, label, err := b.route(sender, strings.TrimSpace(m.To))
		if err != nil {
			return fail(err)
		}
		copies := make([]runtime.Message, len(recipients))
		for k, r := range recipients {
			copies[k] = runtime.Message{ID: formatID(seq + 1 + k), From: sender.Name, To: r.Name, Body: m.Body, Time: now}
		}
		n, mdPath, err := b.writeMarkdown(sends, sender.Name, label, recipients, now, m.Body)
		if err != nil {
			return fail(err)
		}
		written = append(written, mdPath)
		rec, err := json.Marshal(record{Type: "send", N: n, To: strings.TrimSpace(m.To), Messages: copies, Key: m.Key})
		if err != nil {
			return fail(fmt.Errorf("bus: %w", err))
		}
		recs = append(recs, rec)
		sends, seq = n, seq+len(copies)
		out[i], todo[i] = copies, pending{copies: copies, recipients: recipients}
		if m.Key != "" {
			batchKeys[m.Key] = i
		}
	}
	if len(recs) > 0 {
		if err := b.journal.Append(recs); err != nil {
			return fail(err)
		}
	}
	b.sends, b.seq = sends, seq
	for i, p := range todo {
		if p.old {
			continue
		}
		if batch[i].Key != "" {
			b.keys[batch[i].Key] = p.copies
		}
		for k, r := range p.recipients {
			r.queue = append(r.queue, p.copies[k])
			b.history = append(b.history, p.copies[k])
			if b.cfg.observer != nil {
				b.events = append(b.events, Event{Kind: Sent, Message: p.copies[k]})
			}
		}
	}
	select {
	case b.notify <- struct{}{}:
	default:
	}
	b.mu.Unlock()
	b.report()
	for i := range out {
		out[i] = append([]runtime.Message(nil), out[i]...)
	}
	return out, nil
}

// route resolves to for sender: the recipients and the addressee's label for file names.
func (b *Bus) route(sender *member, to string) ([]*member, string, error) {
	if to == Everyone {
		var rs []*member
		for _, m := range b.members {
			if m != sender && key(m.Name) != Human {
				rs = append(rs, m)
			}
		}
		if len(rs) == 0 {
			return nil, "", fmt.Errorf("%w: no one but %s to send to %q", ErrNoRecipient, sender.Name, to)
		}
		return rs, "all", nil
	}
	if m := b.byKey[key(to)]; m != nil {
		if m == sender {
			return nil, "", fmt.Errorf("%w: %s sends to %q; %s", ErrSelf, sender.Name, to, b.known())
		}
		return []*member{m}, m.Name, nil
	}
	var rs []*member
	role := false
	for _, m := range b.members {
		if m.Role != "" && strings.EqualFold(m.Role, to) {
			role = true
			if m != sender {
				rs = append(rs, m)
			}
		}
	}
	if !role {
		return nil, "", fmt.Errorf("%w %q; %s", ErrUnknownRecipient, to, b.known())
	}
	if len(rs) == 0 {
		return nil, "", fmt.Errorf("%w: %s is the only %q; %s", ErrSelf, sender.Name, to, b.known())
	}
	return rs, rs[0].Role, nil
}

// known describes the names and roles messages can be sent to.
func (b *Bus) known() string {
	var names, roles []string
	seen := map[string]bool{}
	for _, m := range b.members {
		names = append(names, m.Name)
		if k := key(m.Role); m.Role != "" && !seen[k] {
			seen[k] = true
			roles = append(roles, m.Role)
		}
	}
	return fmt.Sprintf("known names: %s; roles: %s; or %q for everyone",
		strings.Join(names, ", "), strings.Join(roles, ", "), Everyone)
}

// Receive returns and removes the messages queued for the participant name (compared
// case-insensitively), oldest first; nil when there are none or name is no participant. The
// delivery is in the log before Receive returns, so the messages are never delivered again;
// when it cannot be logged, Receive returns the error and the messages stay queued.
func (b *Bus) Receive(name string) ([]runtime.Message, error) {
	return b.receive(name, "")
}

// ReceiveOnce is Receive with an idempotency key: the first call with a key that finds
// messages receives them, and every later call with the same key — in this process or after a
// restart — returns those messages again without receiving more. A step that receives and may
// be run again after a crash, before what it received was saved, receives with a key derived
// from the step, so the messages are neither lost nor taken twice.
func (b *Bus) ReceiveOnce(name, idem string) ([]runtime.Message, error) {
	if idem == "" {
		return nil, fmt.Errorf("bus: ReceiveOnce for %q: empty key", name)
	}
	return b.receive(name, idem)
}

func (b *Bus) receive(name, idem string) ([]runtime.Message, error) {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil, ErrClosed
	}
	if got, ok := b.taken[idem]; ok && idem != "" {
		b.mu.Unlock()
		return append([]runtime.Message(nil), got...), nil
	}
	m := b.byKey[key(name)]
	if m == nil || len(m.queue) == 0 {
		b.mu.Unlock()
		return nil, nil
	}
	msgs := m.queue
	if err := b.appendRecord(record{Type: "received", Name: m.Name, Upto: msgs[len(msgs)-1].ID, Key: idem}); err != nil {
		b.mu.Unlock()
		return nil, err
	}
	m.queue = nil
	b.delivered = append(b.delivered, msgs...)
	if idem != "" {
		b.taken[idem] = msgs
	}
	if b.cfg.observer != nil {
		for _, msg := range msgs {
			b.events = append(b.events, Event{Kind: Received, Message: msg})
		}
	}
	b.mu.Unlock()
	b.report()
	return msgs, nil
}

// Mailbox returns the participant name's connection to the bus: Receive drains name's queue
// (see Bus.Receive, and Bus.ReceiveOnce for a keyed one; an error there reads as no messages,
// which stay queued) and Send sends from name (see Bus.Send, and Bus.SendOnce for a keyed one).
func (b *Bus) Mailbox(name string) runtime.Mailbox {
	return mailbox{b: b, name: name}
}

type mailbox struct {
	b    *Bus
	name string
}

func (m mailbox) Receive(key string) []runtime.Message {
	msgs, _ := m.b.receive(m.name, key)
	return msgs
}

func (m mailbox) Send(ctx context.Context, key, to, body string) error {
	_, err := m.b.send(ctx, key, m.name, to, body)
	return err
}

// Pending returns how many messages are queued for the participant name, not yet received.
func (b *Bus) Pending(name string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	if m := b.byKey[key(name)]; m != nil {
		return len(m.queue)
	}
	return 0
}

// Notify returns a channel that receives whenever a message is queued for anyone. Signals
// coalesce (the channel's buffer holds one), so a receiver woken by it should look at every
// queue it cares about. The channel is never closed.
func (b *Bus) Notify() <-chan struct{} {
	return b.notify
}

// Messages returns every message copy ever sent, in the order they were sent, delivered or
// not, including those sent before a restart.
func (b *Bus) Messages() ([]runtime.Message, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]runtime.Message(nil), b.history...), nil
}

// Events returns what happened to every message copy, sent before a restart or since: a Sent
// event for each copy in the order they were sent, then a Received event for each copy
// delivered, in the order they were. An observer that may have missed events in a crash can
// be given them again from here.
func (b *Bus) Events() []Event {
	b.mu.Lock()
	defer b.mu.Unlock()
	evs := make([]Event, 0, len(b.history)+len(b.delivered))
	for _, m := range b.history {
		evs = append(evs, Event{Kind: Sent, Message: m})
	}
	for _, m := range b.delivered {
		evs = append(evs, Event{Kind: Received, Message: m})
	}
	return evs
}

// Close closes the bus's log. Afterwards Join, Send and Receive return ErrClosed; the other
// methods still answer from memory. Closing again does nothing.
func (b *Bus) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil
	}
	b.closed = true
	return b.journal.Close()
}

// report passes pending events to the observer, one call at a time and in order. Whoever
// holds obsMu reports; a goroutine that finds it held leaves its events to the holder, which
// looks for more after letting go.
func (b *Bus) report() {
	if b.cfg.observer == nil {
		return
	}
	for {
		if !b.obsMu.TryLock() {
			return
		}
		for {
			b.mu.Lock()
			evs := b.events
			b.events = nil
			b.mu.Unlock()
			if len(evs) == 0 {
				break
			}
			for _, e := range evs {
				b.cfg.observer(e)
			}
		}
		b.obsMu.Unlock()
		b.mu.Lock()
		more := len(b.events) > 0
		b.mu.Unlock()
		if !more {
			return
		}
	}
}

// appendRecord keeps r in the journal. The caller holds mu.
func (b *Bus) appendRecord(r record) error {
	rec, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("bus: %w", err)
	}
	return b.journal.Append([][]byte{rec})
}

// writeMarkdown writes a message's markdown file, numbered after after (the first number free),
// and returns its number and path. The caller holds mu.
func (b *Bus) writeMarkdown(after int, from, label string, rs []*member, t time.Time, body string) (int, string, error) {
	header := label
	if len(rs) > 1 || label != rs[0].Name {
		names := make([]string, len(rs))
		for i, r := range rs {
			names[i] = r.Name
		}
		header = fmt.Sprintf("%s (%s)", label, strings.Join(names, ", "))
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "From: %s\nTo: %s\nTime: %s\n\n%s", from, header, t.Format(time.RFC3339), body)
	if !strings.HasSuffix(body, "\n") {
		sb.WriteByte('\n')
	}
	for n := after + 1; ; n++ {
		path := filepath.Join(b.dir, fmt.Sprintf("%04d_%s_to_%s.md", n, fileName(from), fileName(label)))
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if errors.Is(err, os.ErrExist) {
			continue
		}
		if err != nil {
			return 0, "", fmt.Errorf("bus: %w", err)
		}
		_, err = f.WriteString(sb.String())
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			_ = os.Remove(path) // as in the batch's fail
			return 0, "", fmt.Errorf("bus: %w", err)
		}
		return n, path, nil
	}
}

// lastMarkdownNumber returns the highest counter among the markdown files in dir.
func lastMarkdownNumber(dir string) int {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	last := 0
	for _, e := range entries {
		name := e.Name()
		i := strings.IndexByte(name, '_')
		if i < 4 || !strings.HasSuffix(name, ".md") {
			continue
		}
		if n, err := strconv.Atoi(name[:i]); err == nil && n > last {
			last = n
		}
	}
	return last
}

// fileName makes s safe for a part of a file name: letters, digits, '-' and '.' stay, runs of
// anything else become one '-'.
func fileName(s string) string {
	var sb strings.Builder
	dash := false
	for _, r := range s {
		if unicode.IsLetter(r) || unicode.IsDigit(r) || r == '.' || r == '-' {
			sb.WriteRune(r)
			dash = false
		} else if !dash {
			sb.WriteByte('-')
			dash = true
		}
	}
	out := strings.Trim(sb.String(), "-.")
	if r := []rune(out); len(r) > 40 {
		out = string(r[:40])
	}
	if out == "" {
		out = "x"
	}
	return out
}

func key(name string) string { return strings.ToLower(strings.TrimSpace(name)) }

func formatID(n int) string { return fmt.Sprintf("m%04d", n) }

func idNumber(id string) (int, bool) { return workspace.Number(id, "m") }

func hasControl(s string) bool {
	return strings.IndexFunc(s, unicode.IsControl) >= 0
}

// syncDir syncs dir so a newly created log survives a crash; best effort.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
}
