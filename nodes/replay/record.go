package replay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/agiraph/agiraph/nodes"
	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/runtime"
	"github.com/agiraph/agiraph/tools"
)

// Recorder records one run of a squad into a cassette: give it to the squad with
// nodes.WithRecorder, start the run, and call Finish with the run's result. It records the
// first run the squad starts; a later one is refused with an error from Finish. Its methods are
// safe for concurrent use.
type Recorder struct {
	path  string
	red   redactor
	count counter

	mu    sync.Mutex
	f     *os.File
	begun bool
	clock func() time.Time   // the squad's, once the run has begun
	prev  map[string]Request // each participant's last request, whole
	takes int                // the points of the run's ticks so far
	err   error              // the first write's that failed, or a second run's
}

// Record returns a Recorder that writes the cassette at path (its folder is made, a file there
// replaced). Secrets are removed from what it writes: the values of the providers' and search
// backends' key variables in the environment, and whatever looks like one of their keys or a
// bearer token.
func Record(path string) (*Recorder, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("replay: %w", err)
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("replay: %w", err)
	}
	return &Recorder{path: path, red: newRedactor(os.Environ()), f: f, prev: map[string]Request{}}, nil
}

// Begin writes the cassette's header (nodes.Recorder).
func (r *Recorder) Begin(info nodes.RunInfo) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.begun {
		r.fail(fmt.Errorf("replay: %s records one run; run %s started after the first", r.path, info.ID))
		return
	}
	r.begun = true
	r.red = r.red.at(info.Home)
	r.clock = info.Clock
	r.write(Header{Format: format, Version: Version, Run: info})
}

// Model wraps m so that its calls are recorded (nodes.Recorder).
func (r *Recorder) Model(m providers.Model) providers.Model { return recordedModel{m, r} }

// now reads the squad's clock, once the run has begun.
func (r *Recorder) now() time.Time {
	r.mu.Lock()
	clock := r.clock
	r.mu.Unlock()
	if clock == nil {
		return time.Now()
	}
	return clock()
}

// Runtime wraps rt so that its calls know their participant and its outside tools are recorded;
// a CLI agent's (a kind but harnessed) has its tool calls, events, outcome and published files
// recorded (nodes.Recorder).
func (r *Recorder) Runtime(kind string, rt runtime.Runtime) runtime.Runtime {
	if kind == nodes.Harnessed {
		return participants{tool: r.tool, mail: r.mail}.wrap(kind, rt)
	}
	rt = participants{tool: r.tool}.wrap(kind, rt)
	return runtimeFunc(func(ctx context.Context, a runtime.Assignment, sink runtime.Sink) (runtime.Outcome, error) {
		w := who(a)
		seq := r.count.next(KindStream, w)
		var events []runtime.Event
		mb := &sendsOf{Mailbox: a.Mailbox}
		if a.Mailbox != nil {
			a.Mailbox = mb
		}
		o, err := rt.Run(ctx, a, func(e runtime.Event) {
			events = append(events, e)
			if sink != nil {
				sink(e)
			}
		})
		l := Line{Kind: KindStream, Who: w, Seq: seq, Task: a.Task, Events: events, Outcome: &o, Files: map[string]string{}, Sent: mb.sent()}
		if err != nil {
			l.Error = err.Error()
		}
		for _, p := range o.Published {
			b, rerr := os.ReadFile(filepath.Join(a.Dir.Published(), p))
			if rerr != nil {
				r.mu.Lock()
				r.fail(fmt.Errorf("replay: %s's published file: %w", w, rerr))
				r.mu.Unlock()
				continue
			}
			l.Files[p] = string(b)
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		r.write(l)
		return o, err
	})
}

// Take records a point of the run's tick where it took what happened beside it
// (nodes.Sequencer): the ends it took, all of them (at route_frontier, the workers whose mail
// had come), and what it did.
func (r *Recorder) Take(at nodes.Point, ended []string, would nodes.Move) ([]string, nodes.Move) {
	if would == nodes.MoveWait {
		return nil, would
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.takes++
	l := Line{Kind: KindTake, Seq: r.takes, Point: &at, Ended: ended, Move: would}
	if at.At == nodes.PointRoute {
		l.Ended, l.Woken = nil, ended
	}
	r.write(l)
	return ended, would
}

// Answered records the human's answer to worker's question, after the points so far
// (nodes.Sequencer).
func (r *Recorder) Answered(worker, answer string) {
	seq := r.count.next(KindAnswer, worker)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.write(Line{Kind: KindAnswer, Who: worker, Seq: seq, Answer: answer, After: r.takes})
}

// mail returns the mailbox of who's assignment a, whose receipts are recorded.
func (r *Recorder) mail(_ context.Context, who string, a runtime.Assignment) runtime.Mailbox {
	return recordedMail{a.Mailbox, r, who}
}

type recordedMail struct {
	runtime.Mailbox
	r   *Recorder
	who string
}

func (m recordedMail) Receive(key string) []runtime.Message {
	msgs := m.Mailbox.Receive(key)
	seq := m.r.count.next(KindMail, m.who)
	if len(msgs) == 0 {
		return msgs
	}
	l := Line{Kind: KindMail, Who: m.who, Seq: seq}
	for _, msg := range msgs {
		l.Mail = append(l.Mail, Mail{From: msg.From, Body: msg.Body})
	}
	m.r.mu.Lock()
	defer m.r.mu.Unlock()
	m.r.write(l)
	return msgs
}

// Finish writes the facts of the run res ended in squad s, and closes the cassette; call it
// before s.Close. It returns the first error recording met.
func (r *Recorder) Finish(s *nodes.Squad, res nodes.Result) error {
	facts, err := factsOf(s.Home(), res)
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case err != nil:
		r.fail(err)
	case !r.begun:
		r.fail(fmt.Errorf("replay: %s: no run started with the recorder (is nodes.WithRecorder set?)", r.path))
	default:
		r.write(Line{Kind: KindFacts, Facts: &facts})
	}
	return r.close()
}

// Close closes the cassette without its facts, which Load then refuses: for a recording that
// failed. After Finish it does nothing.
func (r *Recorder) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.close()
}

func (r *Recorder) close() error {
	if r.f == nil {
		return r.err
	}
	r.fail(r.f.Close())
	r.f = nil
	return r.err
}

func (r *Recorder) fail(err error) {
	if r.err == nil && err != nil {
		r.err = err
	}
}

// write writes v as a line, its secrets removed; r.mu is held.
func (r *Recorder) write(v any) {
	if r.f == nil {
		r.fail(fmt.Errorf("replay: %s is closed", r.path))
		return
	}
	b, err := json.Marshal(v)
	if err != nil {
		r.fail(fmt.Errorf("replay: %s: %w", r.path, err))
		return
	}
	_, err = r.f.WriteString(r.red.clean(string(b)) + "\n")
	r.fail(err)
}

type recordedModel struct {
	providers.Model
	r *Recorder
}

func (m recordedModel) Generate(ctx context.Context, req providers.Request) (providers.Response, error) {
	w := whoOf(ctx)
	seq := m.r.count.next(KindModel, w)
	resp, err := m.Model.Generate(ctx, req)
	at := m.r.now()
	l := Line{Kind: KindModel, Who: w, Seq: seq, Model: m.Name(), At: &at}
	if err != nil {
		l.Error = err.Error()
	} else {
		l.Response = &resp
	}
	m.r.mu.Lock()
	defer m.r.mu.Unlock()
	whole := request(req)
	short := shorten(whole, m.r.prev[w])
	m.r.prev[w], l.Request = whole, &short
	m.r.write(l)
	return resp, err
}

// tool returns t with its calls recorded as who's.
func (r *Recorder) tool(who string, t tools.Tool) tools.Tool {
	h := t.Handler
	t.Handler = func(ctx context.Context, args json.RawMessage) (string, error) {
		seq := r.count.next(KindTool, who)
		out, err := h(ctx, args)
		l := Line{Kind: KindTool, Who: who, Seq: seq, Tool: t.Name, Args: args, Result: out}
		if err != nil {
			l.Error = err.Error()
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		r.write(l)
		return out, err
	}
	return t
}

var (
	_ nodes.Recorder  = (*Recorder)(nil)
	_ nodes.Sequencer = (*Recorder)(nil)
)

// sendsOf is a mailbox that keeps what is sent through it.
type sendsOf struct {
	runtime.Mailbox
	mu   sync.Mutex
	list []Sent
}

func (m *sendsOf) Send(ctx context.Context, key, to, body string) error {
	err := m.Mailbox.Send(ctx, key, to, body)
	if err == nil {
		m.mu.Lock()
		m.list = append(m.list, Sent{Key: key, To: to, Body: body})
		m.mu.Unlock()
	}
	return err
}

func (m *sendsOf) sent() []Sent {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.list
}

// errFromLine is the error a recorded call returned.
func errFromLine(l Line) error {
	if l.Error == "" {
		return nil
	}
	return errors.New(l.Error)
}
