package replay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agiraph/agiraph/nodes"
	"github.com/agiraph/agiraph/nodes/eventlog"
	"github.com/agiraph/agiraph/nodes/workspace"
	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/runtime"
	"github.com/agiraph/agiraph/tools"
)

// Divergence is the error of a replay whose run made a call the cassette does not have: the
// first such call, by its participant, kind and sequence number, with the difference between
// its request and the recorded one (lines with "-" recorded, "+" made now).
type Divergence struct {
	Kind string // KindModel, KindTool, KindStream, KindAnswer, KindMail, or KindTake: a point of a tick
	Who  string
	Seq  int
	Diff string
}

func (d *Divergence) Error() string {
	return fmt.Sprintf("replay: the run diverged at %s: it differs from the recorded call:\n%s", describe(d.Kind, d.Who, d.Seq), d.Diff)
}

// Mismatch is the error of a replay that made only recorded calls but ended otherwise than the
// recorded run: the difference between the recorded facts and the replay's.
type Mismatch struct {
	Diff string
}

func (m *Mismatch) Error() string {
	return "replay: the run ended otherwise than recorded (- recorded, + replayed):\n" + m.Diff
}

// Play replays the cassette at path in the agent's home home (a new folder), with no key and no
// network: the squad runs the recorded goal with the recorded models and options, opts after
// them (the options of the code under test: tools, contract, prompts), its models and outside
// tools answered from the cassette, its clock reading the recorded run's start (a microsecond
// later at each reading), its tick short. It returns
// the run's result, and an error: a *Divergence at the first call the cassette does not have, a
// *Mismatch when the run's facts (output, board, messages, published files) are not the
// recorded ones, or the run's own.
func Play(ctx context.Context, path, home string, opts ...nodes.Option) (nodes.Result, error) {
	c, err := Load(path)
	if err != nil {
		return nodes.Result{}, err
	}
	p := newPlayer(c)
	p.red = p.red.at(home)
	info := c.Header.Run
	var ticks atomic.Int64
	all := []nodes.Option{nodes.WithModel(info.Model), nodes.WithCoordinatorModel(info.CoordinatorModel),
		nodes.WithMaxConcurrent(info.MaxConcurrent), nodes.WithMode(info.Mode), nodes.WithTick(replayTick)}
	for role, model := range info.RoleModels {
		all = append(all, nodes.WithRoleModel(role, model))
	}
	all = append(all, opts...)
	all = append(all, nodes.WithHome(home), nodes.WithRecorder(p), nodes.WithModelResolver(p.model),
		nodes.WithClock(func() time.Time { return p.readClock(info.Started).Add(time.Duration(ticks.Add(1)) * time.Microsecond) }))
	s, err := nodes.New(all...)
	if err != nil {
		return nodes.Result{}, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	p.stop = cancel
	events, unsubscribe := s.Subscribe(0)
	h, err := s.Start(ctx, info.Goal, nodes.WithRunID(info.ID))
	var res nodes.Result
	if err == nil {
		go p.answer(h, events)
		res, err = h.Wait()
	}
	unsubscribe()
	err = errors.Join(err, s.Close())
	if d := p.divergence(); d != nil {
		return res, d
	}
	if err != nil {
		return res, err
	}
	facts, err := factsOf(workspace.Home(home), res)
	if err != nil {
		return res, err
	}
	if want, got := indent(c.Facts), indent(facts); want != got {
		return res, &Mismatch{Diff: diff(want, got)}
	}
	return res, nil
}

// replayTick is a replay's tick: short, since no model is waited for.
const replayTick = 10 * time.Millisecond

// Run replays the cassette at path in a test (see Play), in a temporary home, and fails the test
// with Play's error. It returns the run's result.
func Run(t testing.TB, path string, opts ...nodes.Option) nodes.Result {
	t.Helper()
	res, err := Play(t.Context(), path, t.TempDir(), opts...)
	if err != nil {
		t.Fatalf("replay %s: %v", path, err)
	}
	return res
}

// player answers a replayed run's calls from a cassette (a nodes.Recorder), and holds what
// happens beside the run's ticks until the point the recording took it (a nodes.Sequencer).
type player struct {
	models map[string][]Line // by participant, in order
	at     atomic.Int64      // the clock's reading (Unix ns) of the last model answer played that has one
	count  counter
	red    redactor
	stop   func() // cancels the run, at a divergence

	streams map[string][]Line         // by participant, in order
	paced   bool                      // the cassette has the points of the run's ticks, and its mail (version 2)
	routed  bool                      // and its points at route_frontier (version 3)
	takes   []Line                    // the points of the run's ticks, in order
	mail    map[string]map[int][]Mail // what each participant received, by its look's number
	moved   chan struct{}             // a point passed, or waits for an answer

	mu      sync.Mutex
	answers []Line                       // in the order they were given
	given   int                          // how many of them were given
	taken   int                          // the points passed
	tools   map[string][]Line            // by participant, those not yet played
	inboxes map[string][]runtime.Message // the messages a mailbox's owner has not been given yet
	waits   map[string]*Divergence       // what the run waits for, by who waits: the divergence if it never comes
	// agentCalls are the tool calls of CLI agents to make again, by participant and assignment
	// (see stream).
	agentCalls map[string][][]Line
	diverge    *Divergence // the first
}

func newPlayer(c *Cassette) *player {
	p := &player{models: map[string][]Line{}, tools: map[string][]Line{}, streams: map[string][]Line{}, agentCalls: map[string][][]Line{},
		paced: c.Header.Version >= 2, routed: c.Header.Version >= 3, mail: map[string]map[int][]Mail{}, moved: make(chan struct{}, 1), inboxes: map[string][]runtime.Message{}, waits: map[string]*Divergence{},
		stop: func() {}}
	pending := map[string][]Line{} // a CLI agent's calls, before its assignment's line
	for _, l := range c.Lines {
		switch l.Kind {
		case KindModel:
			p.models[l.Who] = append(p.models[l.Who], l)
		case KindTool:
			if !outside(tools.Tool{Name: l.Tool}) { // only CLI agents' are recorded
				pending[l.Who] = append(pending[l.Who], l)
				continue
			}
			p.tools[l.Who] = append(p.tools[l.Who], l)
		case KindStream:
			p.streams[l.Who] = append(p.streams[l.Who], l)
			p.agentCalls[l.Who] = append(p.agentCalls[l.Who], pending[l.Who])
			pending[l.Who] = nil
		case KindAnswer:
			p.answers = append(p.answers, l)
		case KindTake:
			p.takes = append(p.takes, l)
		case KindMail:
			if p.mail[l.Who] == nil {
				p.mail[l.Who] = map[int][]Mail{}
			}
			p.mail[l.Who][l.Seq] = l.Mail
		}
	}
	return p
}

func (p *player) Begin(nodes.RunInfo) {}

// Answered does nothing: the answers a replay gives are the recorded ones (nodes.Sequencer).
func (p *player) Answered(string, string) {}

// Take gives the run, at its next point, what the recording took there (nodes.Sequencer): once
// the answers given before that point are given, and the assignments whose ends it took have
// ended, those ends, in the recorded order, and what the run did; until then it has the run
// wait. At route_frontier it gives the workers whose mail woke them, once their mail has come.
// A point that is not the recorded one is a divergence. A cassette of version 1 has no points,
// one of version 2 none at route_frontier: there the run takes what it would.
func (p *player) Take(at nodes.Point, ended []string, would nodes.Move) ([]string, nodes.Move) {
	if !p.paced || !p.routed && at.At == nodes.PointRoute {
		return ended, would
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.diverge != nil {
		return nil, nodes.MoveWait
	}
	k := p.taken + 1
	if k > len(p.takes) || *p.takes[k-1].Point != at {
		want := fmt.Sprintf("(the cassette has %d points)", len(p.takes))
		if k <= len(p.takes) {
			want = indent(p.takes[k-1].Point)
		}
		p.diverge = &Divergence{Kind: KindTake, Who: "squad", Seq: k, Diff: diff(want, indent(at))}
		p.stop()
		return nil, nodes.MoveWait
	}
	l := p.takes[k-1]
	wait := &Divergence{Kind: KindTake, Who: "squad", Seq: k}
	if p.given < len(p.answers) && p.answers[p.given].After < k {
		a := p.answers[p.given]
		p.waits["squad"], wait.Diff = wait, diff(fmt.Sprintf("the answer to %s's question %d", a.Who, a.Seq), "(not given: the question was not asked)")
		p.nudge()
		return nil, nodes.MoveWait
	}
	took, what := l.Ended, "the end of "
	came := func(id string) bool { return slices.Contains(ended, id) }
	if at.At == nodes.PointRoute {
		// A worker's mail came when the squad has it, or a look of the worker's took it early
		// (see heldMail): it waits in the worker's inbox.
		took, what = l.Woken, "mail for "
		came = func(id string) bool { return slices.Contains(ended, id) || len(p.inboxes[id]) > 0 }
	}
	for _, id := range took {
		if !came(id) {
			p.waits["squad"], wait.Diff = wait, diff(what+id, "(it did not come)")
			return nil, nodes.MoveWait
		}
	}
	delete(p.waits, "squad")
	p.taken = k
	p.nudge()
	return took, l.Move
}

// nudge wakes answer.
func (p *player) nudge() {
	select {
	case p.moved <- struct{}{}:
	default:
	}
}

// answer gives the recorded answers to the questions run h asks, as its events tell them, in
// the recorded order: each once its question is asked and the run has passed the point after
// which it was given (see Take), or, from a cassette of version 1, once the run is quiet (no
// event for a while): a person answers after the squad has done what it does while a question
// waits. A question the cassette has no answer to, when the run is quiet, is a divergence, and
// the run is cancelled.
func (p *player) answer(h *nodes.Run, events <-chan eventlog.Event) {
	const quietFor = 5 * replayTick
	asked := map[string]int{} // the questions asked, by who asked
	timer := time.NewTimer(quietFor)
	defer timer.Stop()
	last := time.Now() // the last event's
	for {
		quiet := false
		select {
		case e, ok := <-events:
			if !ok {
				return
			}
			if e.Run == h.ID() && e.Type == eventlog.HumanQuestion {
				asked[e.Worker]++
			}
			last = time.Now()
			timer.Reset(quietFor)
		case <-timer.C:
			quiet = true
			timer.Reset(quietFor)
		case <-p.moved:
		}
		if d := p.stuck(); d != nil && time.Since(last) >= stuckAfter {
			_ = p.diverged(d)
			return
		}
		for {
			p.mu.Lock()
			due := p.given < len(p.answers) && (quiet || p.paced && p.taken >= p.answers[p.given].After)
			var a Line
			if due {
				a = p.answers[p.given]
				due = asked[a.Who] >= a.Seq
			}
			p.mu.Unlock()
			if !due {
				break
			}
			if err := h.Answer(a.Who, a.Answer); err != nil {
				_ = p.diverged(&Divergence{Kind: KindAnswer, Who: a.Who, Seq: a.Seq, Diff: diff(a.Answer, "(not taken: "+err.Error()+")")})
				return
			}
			p.mu.Lock()
			p.given++
			p.mu.Unlock()
		}
		if !quiet {
			continue
		}
		for who, n := range asked {
			if n > p.answered(who) {
				_ = p.diverged(&Divergence{Kind: KindAnswer, Who: who, Seq: n,
					Diff: diff("", "the question, which the cassette has no answer to")})
				return
			}
		}
	}
}

// stuckAfter is how long a replay waits, with no event, for what the recording says comes next
// before it fails with a divergence naming it.
var stuckAfter = time.Minute

// stuck returns what the run waits for, as the divergence it is if it never comes; nil when it
// waits for nothing the cassette says comes.
func (p *player) stuck() *Divergence {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, who := range slices.Sorted(maps.Keys(p.waits)) {
		return p.waits[who]
	}
	return nil
}

// answered returns how many answers to who's questions the cassette has.
func (p *player) answered(who string) int {
	n := 0
	for _, a := range p.answers {
		if a.Who == who {
			n++
		}
	}
	return n
}

// mailbox returns the mailbox of who's assignment a: each of its looks gives the messages the
// recorded look gave, once they have come, and no others: those wait for the look that took
// them. The look waits for them as long as a's context lasts.
func (p *player) mailbox(ctx context.Context, who string, a runtime.Assignment) runtime.Mailbox {
	return heldMail{a.Mailbox, ctx, p, who, a.Worker}
}

type heldMail struct {
	runtime.Mailbox
	ctx       context.Context
	p         *player
	who, name string // the participant, and the mailbox's owner
}

func (m heldMail) Receive(string) []runtime.Message {
	seq := m.p.count.next(KindMail, m.who)
	want := m.p.mail[m.who][seq]
	for {
		came := m.Mailbox.Receive("")
		m.p.mu.Lock()
		m.p.inboxes[m.name] = append(m.p.inboxes[m.name], came...)
		got, ok := m.p.pick(m.name, want)
		if ok {
			delete(m.p.waits, m.who)
		} else {
			m.p.waits[m.who] = &Divergence{Kind: KindMail, Who: m.who, Seq: seq, Diff: diff(indent(want), "(they did not come)")}
		}
		m.p.mu.Unlock()
		if ok || m.ctx.Err() != nil {
			return got
		}
		time.Sleep(time.Millisecond)
	}
}

// pick takes out of name's inbox the messages want, in its order, if all have come; p.mu is
// held.
func (p *player) pick(name string, want []Mail) ([]runtime.Message, bool) {
	inbox := slices.Clone(p.inboxes[name])
	var got []runtime.Message
	for _, w := range want {
		i := slices.IndexFunc(inbox, func(m runtime.Message) bool { return m.From == w.From && p.red.clean(m.Body) == w.Body })
		if i < 0 {
			return nil, false
		}
		got = append(got, inbox[i])
		inbox = slices.Delete(inbox, i, i+1)
	}
	p.inboxes[name] = inbox
	return got, true
}

// Model leaves m, one of the player's own (see model), as it is.
func (p *player) Model(m providers.Model) providers.Model { return m }

func (p *player) Runtime(kind string, rt runtime.Runtime) runtime.Runtime {
	ps := participants{tool: p.tool}
	if kind != nodes.Harnessed {
		rt = runtimeFunc(p.stream)
	} else if p.paced {
		ps.mail = p.mailbox
	}
	// Only the outside tools are answered from the cassette: a CLI agent's other calls are made
	// again, with the squad's own tools.
	return ps.wrap(nodes.Harnessed, rt)
}

// stream plays a CLI agent's recorded assignment, without the agent: its tool calls made again
// (with the squad's tools; the outside ones answered from the cassette), its messages sent
// again, its events reported,
// its published files written, its outcome returned. An assignment whose task is not the
// recorded one is a divergence.
func (p *player) stream(ctx context.Context, a runtime.Assignment, sink runtime.Sink) (runtime.Outcome, error) {
	w := whoOf(ctx)
	seq := p.count.next(KindStream, w)
	recorded := p.streams[w]
	got := p.red.clean(a.Task)
	if seq > len(recorded) || recorded[seq-1].Task != got {
		want := ""
		if seq <= len(recorded) {
			want = recorded[seq-1].Task
		}
		return runtime.Outcome{Status: runtime.Failed}, p.diverged(&Divergence{Kind: KindStream, Who: w, Seq: seq, Diff: diff(want, got)})
	}
	l := recorded[seq-1]
	for _, c := range p.agentCalls[w][seq-1] {
		i := slices.IndexFunc(a.Tools, func(t tools.Tool) bool { return t.Name == c.Tool })
		if i < 0 {
			return runtime.Outcome{Status: runtime.Failed}, p.diverged(&Divergence{Kind: KindTool, Who: w, Seq: c.Seq,
				Diff: diff(c.Tool, "(no such tool now)")})
		}
		_, _ = a.Tools[i].Handler(ctx, json.RawMessage(p.red.restore(string(c.Args))))
	}
	for _, m := range l.Sent {
		if a.Mailbox == nil {
			break
		}
		if err := a.Mailbox.Send(ctx, m.Key, m.To, p.red.restore(m.Body)); err != nil {
			return runtime.Outcome{Status: runtime.Failed}, err
		}
	}
	for _, e := range l.Events {
		if sink != nil {
			sink(e)
		}
	}
	for path, content := range l.Files {
		full := filepath.Join(a.Dir.Published(), filepath.FromSlash(path))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return runtime.Outcome{Status: runtime.Failed}, err
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			return runtime.Outcome{Status: runtime.Failed}, err
		}
	}
	o := *l.Outcome
	if string(o.Result) == "null" { // none, which JSON wrote as null
		o.Result = nil
	}
	return o, errFromLine(l)
}

// model is the squad's resolver: a model of that name answered from the cassette.
func (p *player) model(name string) (providers.Model, error) { return playedModel{name, p}, nil }

func (p *player) divergence() *Divergence {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.diverge
}

// diverged notes d, if it is the first, and cancels the run; it returns d.
func (p *player) diverged(d *Divergence) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.diverge == nil {
		p.diverge = d
		p.stop()
	}
	return d
}

// clockAt moves the clock on to t, the time a played model answer came in the recording.
func (p *player) clockAt(t time.Time) {
	for {
		old := p.at.Load()
		if t.UnixNano() <= old || p.at.CompareAndSwap(old, t.UnixNano()) {
			return
		}
	}
}

// readClock returns the clock's base: the time of the last model answer played, or the run's
// start before one.
func (p *player) readClock(started time.Time) time.Time {
	if at := p.at.Load(); at > started.UnixNano() {
		return time.Unix(0, at).In(started.Location())
	}
	return started
}

type playedModel struct {
	name string
	p    *player
}

func (m playedModel) Name() string { return m.name }

// call is what a model call is compared by: the model and the request.
type call struct {
	Model   string  `json:"model"`
	Request Request `json:"request"`
}

func (m playedModel) Generate(ctx context.Context, req providers.Request) (providers.Response, error) {
	w := whoOf(ctx)
	seq := m.p.count.next(KindModel, w)
	got := m.p.red.clean(indent(call{m.name, request(req)}))
	recorded := m.p.models[w]
	if seq > len(recorded) {
		return providers.Response{}, m.p.diverged(&Divergence{Kind: KindModel, Who: w, Seq: seq,
			Diff: fmt.Sprintf("(the cassette has %d such calls)\n%s", len(recorded), diff("", got))})
	}
	l := recorded[seq-1]
	if want := indent(call{l.Model, *l.Request}); want != got {
		return providers.Response{}, m.p.diverged(&Divergence{Kind: KindModel, Who: w, Seq: seq, Diff: diff(want, got)})
	}
	if err := errFromLine(l); err != nil {
		return providers.Response{}, err
	}
	if l.At != nil {
		m.p.clockAt(*l.At)
	}
	resp := *l.Response
	if text := resp.Message.Text(); req.OnText != nil && text != "" {
		req.OnText(text)
	}
	return resp, nil
}

// tool returns t answered from the cassette: a call of who's with the same tool and arguments
// not yet played, whichever its place among who's calls (calls of one answer may run at once).
func (p *player) tool(who string, t tools.Tool) tools.Tool {
	t.Handler = func(ctx context.Context, args json.RawMessage) (string, error) {
		seq := p.count.next(KindTool, who)
		got := Line{Kind: KindTool, Who: who, Seq: seq, Tool: t.Name, Args: compact(args)}
		p.mu.Lock()
		left := p.tools[who]
		for i, l := range left {
			if l.Tool == t.Name && string(compact(l.Args)) == p.red.clean(string(got.Args)) {
				p.tools[who] = append(left[:i:i], left[i+1:]...)
				p.mu.Unlock()
				return l.Result, errFromLine(l)
			}
		}
		want := ""
		if len(left) > 0 {
			want = indent(Line{Kind: KindTool, Who: who, Seq: left[0].Seq, Tool: left[0].Tool, Args: compact(left[0].Args)})
		}
		p.mu.Unlock()
		return "", p.diverged(&Divergence{Kind: KindTool, Who: who, Seq: seq, Diff: diff(want, indent(got))})
	}
	return t
}

// compact is raw without insignificant space, or raw as it is if it is not JSON.
func compact(raw json.RawMessage) json.RawMessage {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return raw
	}
	b, _ := json.Marshal(v)
	return b
}
