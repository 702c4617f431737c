// Package runtimetest helps test adapters of the runtime.Runtime port: Run is the conformance
// suite every adapter must pass, and Mailbox a fake runtime.Mailbox for their tests.
//
// An adapter's test implements Behaviors, which makes runtimes whose agent does one thing
// (publishes, checkpoints, sends a message, hangs), and calls Run:
//
//	func TestConformance(t *testing.T) {
//		runtimetest.Run(t, behaviors{})
//	}
//
// The suite makes the assignments (NewAssignment: a fresh node folder and a Mailbox; then
// Behaviors.Prepare adds what the adapter's workers need, such as tools) and checks what any
// caller of a Runtime relies on. Each property is a subtest; the contract as the suite checks
// it:
//
//   - An agent that publishes ends Run without error, with status Published and its summary; its
//     files are moved from scratch/ to published/ with their content, and Outcome.Published
//     lists them, relative to published/, sorted.
//   - An agent that checkpoints ends Run without error, with status Checkpointed and its summary;
//     its files stay in scratch/ and nothing is published.
//   - A message the agent sends goes out once through the assignment's Mailbox, with its
//     recipient and body, and is reported as a MessageSent event from the worker. Agents that
//     send nothing send nothing.
//   - Events: the first is Started (a Run that ends before its agent starts may report none);
//     exactly one is Ended, the last, with the outcome's status
//     (and, when Run returned no error, the summary as its text); every event carries the
//     assignment's ID, node and worker, and a time. The sink is never called concurrently, nor
//     after Run returned.
//   - Cancelling the context while the agent runs ends Run within Promptly, with status
//     Cancelled and an error wrapping context.Canceled; passing its deadline, with TimedOut and
//     an error wrapping context.DeadlineExceeded.
//   - Run with a context already cancelled starts nothing: it reports Cancelled with an error
//     wrapping context.Canceled, its events are Ended alone or Started then Ended, the agent
//     writes, sends and publishes nothing; and it uses nothing up: a later Run of the same
//     assignment does the whole work.
//   - One runtime runs several assignments at once.
package runtimetest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/runtime"
)

// Promptly is how soon after its context is cancelled, or its deadline passes, Run must return.
const Promptly = 5 * time.Second

// runLimit bounds every Run of the suite, so that an adapter that never returns fails the test
// instead of hanging it.
const runLimit = time.Minute

// Behaviors makes runtimes whose agent does one thing, for the suite to run. A runtime it
// returns must not depend on the assignment it will run: the suite may run it on several at
// once. t is the subtest's, for temporary files and cleanups.
type Behaviors interface {
	// Prepare adds to an assignment the suite made what the adapter's agents need to behave as
	// asked, such as the tools of a runtime that calls tools itself (harnessed: tools to write
	// files in a.Dir.Scratch()). It must not change the fields the suite set: ID, Run, Node,
	// Worker, Task, Dir and Mailbox. CLI agents bring their own tools and need nothing.
	Prepare(t *testing.T, a *runtime.Assignment)
	// Publishes returns a runtime whose agent writes content to the file named file in its
	// scratch directory, then finishes by publishing, with summary as its summary.
	Publishes(t *testing.T, file, content, summary string) runtime.Runtime
	// Checkpoints returns a runtime whose agent writes content to the file named file in its
	// scratch directory, then ends the stage without publishing, with summary as its summary.
	Checkpoints(t *testing.T, file, content, summary string) runtime.Runtime
	// SendsThenPublishes returns a runtime whose agent sends body to the recipient to through
	// its runtime's protocol, then publishes (writing no file), with summary as its summary.
	SendsThenPublishes(t *testing.T, to, body, summary string) runtime.Runtime
	// Hangs returns a runtime whose agent starts (Run reports Started), then works until its
	// context ends.
	Hangs(t *testing.T) runtime.Runtime
}

// What the agents of the suite write, send and say. The report and the message span lines and
// hold a quote, as real ones do.
const (
	reportFile    = "report.md"
	reportText    = "# Findings\n\nThe answer is 42; it's final.\n"
	reportSummary = "Wrote report.md with the answer."
	draftFile     = "draft.md"
	draftText     = "Outline only.\n"
	draftSummary  = "Drafted the outline; section 2 remains."
	recipient     = "coordinator"
	message       = "Halfway there.\nThe data is in."
	sendSummary   = "Told the coordinator."
)

// Run checks that the runtimes b makes follow the contract of runtime.Runtime (see the package
// documentation), each property in a subtest.
func Run(t *testing.T, b Behaviors) {
	t.Helper()
	for _, p := range []struct {
		name string
		test func(t *testing.T, b Behaviors)
	}{
		{"Publishes", testPublishes},
		{"Checkpoints", testCheckpoints},
		{"SendsThenPublishes", testSendsThenPublishes},
		{"Cancel", testCancel},
		{"Deadline", testDeadline},
		{"AlreadyCancelled", testAlreadyCancelled},
		{"Concurrent", testConcurrent},
	} {
		t.Run(p.name, func(t *testing.T) { p.test(t, b) })
	}
}

var assignments atomic.Int64

// NewAssignment returns an assignment of a node folder of its own, created under t.TempDir(),
// with mb as its mailbox (none when mb is nil). Its ID and node are new to this process; its
// worker is "ada", of run "r1".
func NewAssignment(t *testing.T, mb *Mailbox) runtime.Assignment {
	t.Helper()
	n := assignments.Add(1)
	dir := runtime.NodeDir(filepath.Join(t.TempDir(), fmt.Sprint("rt-n", n)))
	require.NoError(t, dir.Create())
	a := runtime.Assignment{
		ID: fmt.Sprint("rt-a", n), Run: "r1", Node: fmt.Sprint("rt-n", n), Worker: "ada",
		Task:   "Do the work described in your instructions.",
		System: "You are Ada, a careful analyst.",
		Dir:    dir,
	}
	if mb != nil { // a nil *Mailbox in the interface would not be a nil Mailbox
		a.Mailbox = mb
	}
	return a
}

// prepare returns a new assignment with a mailbox, prepared by b.
func prepare(t *testing.T, b Behaviors) (runtime.Assignment, *Mailbox) {
	t.Helper()
	mb := &Mailbox{}
	a := NewAssignment(t, mb)
	prepared := a
	b.Prepare(t, &prepared)
	require.Equal(t, []any{a.ID, a.Run, a.Node, a.Worker, a.Task, a.Dir, a.Mailbox},
		[]any{prepared.ID, prepared.Run, prepared.Node, prepared.Worker, prepared.Task, prepared.Dir, prepared.Mailbox},
		"Prepare changed a field the suite set")
	return prepared, mb
}

// recorder is a sink that keeps the events of one Run and notes when it is called concurrently
// or after Run returned.
type recorder struct {
	inside  atomic.Int32
	mu      sync.Mutex
	events  []runtime.Event
	over    bool            // Run returned
	late    []runtime.Event // events reported after that
	overlap []runtime.Kind  // events reported while another was
	started chan struct{}   // closed at the first Started event
	once    sync.Once
}

func newRecorder() *recorder { return &recorder{started: make(chan struct{})} }

func (r *recorder) sink(e runtime.Event) {
	if r.inside.Add(1) != 1 {
		r.mu.Lock()
		r.overlap = append(r.overlap, e.Kind)
		r.mu.Unlock()
	}
	defer r.inside.Add(-1)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.over {
		r.late = append(r.late, e)
		return
	}
	r.events = append(r.events, e)
	if e.Kind == runtime.Started {
		r.once.Do(func() { close(r.started) })
	}
}

// returned notes that Run returned and gives the events it reported.
func (r *recorder) returned() []runtime.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.over = true
	return append([]runtime.Event(nil), r.events...)
}

// checkAfter fails t if the sink was called concurrently or after Run returned; it runs when
// the subtest ends, to catch late events too.
func (r *recorder) checkAfter(t *testing.T) {
	t.Cleanup(func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		assert.Empty(t, r.overlap, "events reported while another event was being reported")
		assert.Empty(t, kinds(r.late), "events reported after Run returned")
	})
}

// result is what one Run gave.
type result struct {
	o      runtime.Outcome
	err    error
	events []runtime.Event
	at     time.Time // when Run returned
}

// start runs a with rt in a goroutine of its own; the channel gives its result.
func start(ctx context.Context, t *testing.T, rt runtime.Runtime, a runtime.Assignment) (*recorder, <-chan result) {
	t.Helper()
	require.NotNil(t, rt, "Behaviors returned a nil runtime")
	rec := newRecorder()
	rec.checkAfter(t)
	ctx, cancel := context.WithTimeout(ctx, runLimit)
	done := make(chan result, 1)
	go func() {
		defer cancel()
		o, err := rt.Run(ctx, a, rec.sink)
		done <- result{o: o, err: err, events: rec.returned(), at: time.Now()}
	}()
	return rec, done
}

// run runs a with rt to its end and checks its events.
func run(ctx context.Context, t *testing.T, rt runtime.Runtime, a runtime.Assignment) result {
	t.Helper()
	_, done := start(ctx, t, rt, a)
	res := <-done
	checkEvents(t, a, res, true)
	return res
}

// checkEvents checks the events of a Run of a: Started first (when started), one Ended, last,
// with the outcome's status, every event stamped with a's identity.
func checkEvents(t *testing.T, a runtime.Assignment, res result, started bool) {
	t.Helper()
	ev := res.events
	require.NotEmpty(t, ev, "Run reported no event")
	ks := kinds(ev)
	if started {
		assert.Equal(t, runtime.Started, ks[0], "the first event (events %v)", ks)
	}
	last := ev[len(ev)-1]
	if assert.Equal(t, runtime.Ended, last.Kind, "the last event (events %v)", ks) {
		assert.Equal(t, res.o.Status, last.Status, "the Ended event's status")
		if res.err == nil {
			assert.Equal(t, res.o.Summary, last.Text, "the Ended event's text")
		}
	}
	assert.Equal(t, 1, count(ks, runtime.Ended), "Ended events (events %v)", ks)
	for i, e := range ev {
		assert.Equal(t, []string{a.ID, a.Node, a.Worker}, []string{e.Assignment, e.Node, e.Worker},
			"event %d (%s): its assignment, node and worker", i, e.Kind)
		assert.False(t, e.Time.IsZero(), "event %d (%s) has no time", i, e.Kind)
	}
}

func kinds(ev []runtime.Event) []runtime.Kind {
	ks := make([]runtime.Kind, len(ev))
	for i, e := range ev {
		ks[i] = e.Kind
	}
	return ks
}

func count[T comparable](s []T, v T) int {
	n := 0
	for _, x := range s {
		if x == v {
			n++
		}
	}
	return n
}

// ofKind returns the events of kind k.
func ofKind(ev []runtime.Event, k runtime.Kind) []runtime.Event {
	var out []runtime.Event
	for _, e := range ev {
		if e.Kind == k {
			out = append(out, e)
		}
	}
	return out
}

// checkPublished checks that a's scratch file name moved to published/ with its content.
func checkPublished(t *testing.T, a runtime.Assignment, name, content string) {
	t.Helper()
	got, err := os.ReadFile(filepath.Join(a.Dir.Published(), name))
	if assert.NoError(t, err, "%s in published/", name) {
		assert.Equal(t, content, string(got), "the content of published/%s", name)
	}
	assert.NoFileExists(t, filepath.Join(a.Dir.Scratch(), name), "%s was published but is still in scratch/", name)
}

// checkNothingPublished checks that published/ is empty.
func checkNothingPublished(t *testing.T, a runtime.Assignment) {
	t.Helper()
	files, err := a.Dir.PublishedFiles()
	require.NoError(t, err)
	assert.Empty(t, files, "files in published/")
}

// checkPublishes checks the Run of a Publishes agent.
func checkPublishes(t *testing.T, a runtime.Assignment, mb *Mailbox, res result) {
	t.Helper()
	require.NoError(t, res.err)
	assert.Equal(t, runtime.Published, res.o.Status)
	assert.Equal(t, reportSummary, res.o.Summary)
	assert.Equal(t, []string{reportFile}, res.o.Published, "Outcome.Published")
	checkPublished(t, a, reportFile, reportText)
	assert.Empty(t, mb.Sent(), "messages sent by an agent that sends none")
}

// checkSendsThenPublishes checks the Run of a SendsThenPublishes agent.
func checkSendsThenPublishes(t *testing.T, a runtime.Assignment, mb *Mailbox, res result) {
	t.Helper()
	require.NoError(t, res.err)
	assert.Equal(t, runtime.Published, res.o.Status)
	assert.Equal(t, sendSummary, res.o.Summary)
	assert.Empty(t, res.o.Published, "Outcome.Published of an agent that wrote no file")
	assert.Equal(t, []runtime.Message{{To: recipient, Body: message}}, mb.Sent(), "the messages sent through the mailbox")
	sent := ofKind(res.events, runtime.MessageSent)
	if assert.Len(t, sent, 1, "MessageSent events") && assert.NotNil(t, sent[0].Message, "the MessageSent event's message") {
		m := sent[0].Message
		assert.Equal(t, []string{a.Worker, recipient, message}, []string{m.From, m.To, m.Body}, "the MessageSent event's from, to and body")
	}
}

func testPublishes(t *testing.T, b Behaviors) {
	a, mb := prepare(t, b)
	checkPublishes(t, a, mb, run(context.Background(), t, b.Publishes(t, reportFile, reportText, reportSummary), a))
}

func testCheckpoints(t *testing.T, b Behaviors) {
	a, mb := prepare(t, b)
	res := run(context.Background(), t, b.Checkpoints(t, draftFile, draftText, draftSummary), a)
	require.NoError(t, res.err)
	assert.Equal(t, runtime.Checkpointed, res.o.Status)
	assert.Equal(t, draftSummary, res.o.Summary)
	assert.Empty(t, res.o.Published, "Outcome.Published of a checkpoint")
	checkNothingPublished(t, a)
	got, err := os.ReadFile(filepath.Join(a.Dir.Scratch(), draftFile))
	if assert.NoError(t, err, "the draft in scratch/") {
		assert.Equal(t, draftText, string(got), "the draft in scratch/")
	}
	assert.Empty(t, mb.Sent(), "messages sent by an agent that sends none")
}

func testSendsThenPublishes(t *testing.T, b Behaviors) {
	a, mb := prepare(t, b)
	checkSendsThenPublishes(t, a, mb, run(context.Background(), t, b.SendsThenPublishes(t, recipient, message, sendSummary), a))
}

func testCancel(t *testing.T, b Behaviors) {
	a, mb := prepare(t, b)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rec, done := start(ctx, t, b.Hangs(t), a)
	select {
	case <-rec.started:
	case <-time.After(runLimit):
		t.Fatal("no Started event from the hanging agent")
	}
	cancel()
	res := returnsPromptly(t, done, time.Now())
	checkEvents(t, a, res, true)
	assert.Equal(t, runtime.Cancelled, res.o.Status)
	assert.ErrorIs(t, res.err, context.Canceled)
	checkNothingPublished(t, a)
	assert.Empty(t, mb.Sent(), "messages sent by an agent that sends none")
}

func testDeadline(t *testing.T, b Behaviors) {
	a, _ := prepare(t, b)
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	deadline, _ := ctx.Deadline()
	_, done := start(ctx, t, b.Hangs(t), a)
	res := returnsPromptly(t, done, deadline)
	checkEvents(t, a, res, false) // the deadline may pass before the agent started
	assert.Equal(t, runtime.TimedOut, res.o.Status)
	assert.ErrorIs(t, res.err, context.DeadlineExceeded)
	checkNothingPublished(t, a)
}

// returnsPromptly returns the result of a Run whose context ended at since, failing t unless
// it comes within Promptly.
func returnsPromptly(t *testing.T, done <-chan result, since time.Time) result {
	t.Helper()
	select {
	case res := <-done:
		if took := res.at.Sub(since); took > Promptly {
			t.Errorf("Run returned %v after the end of its context, more than %v", took.Round(time.Millisecond), Promptly)
		}
		return res
	case <-time.After(runLimit):
		t.Fatalf("Run did not return within %v of the end of its context", runLimit)
		return result{}
	}
}

// A Run whose context is already cancelled starts nothing, and uses nothing up: the same
// assignment runs in full afterwards.
func testAlreadyCancelled(t *testing.T, b Behaviors) {
	for _, tc := range []struct {
		name  string
		rt    runtime.Runtime
		check func(t *testing.T, a runtime.Assignment, mb *Mailbox, res result)
	}{
		{"Publishes", b.Publishes(t, reportFile, reportText, reportSummary), checkPublishes},
		{"SendsThenPublishes", b.SendsThenPublishes(t, recipient, message, sendSummary), checkSendsThenPublishes},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, mb := prepare(t, b)
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			_, done := start(ctx, t, tc.rt, a)
			res := <-done
			checkEvents(t, a, res, false)
			assert.Equal(t, runtime.Cancelled, res.o.Status, "the status of a Run whose context was cancelled before it (err %v)", res.err)
			assert.ErrorIs(t, res.err, context.Canceled)
			if ks := kinds(res.events); len(ks) > 1 {
				assert.Equal(t, []runtime.Kind{runtime.Started, runtime.Ended}, ks, "the events of a Run that starts nothing")
			}
			assert.NoFileExists(t, filepath.Join(a.Dir.Scratch(), reportFile), "a file written by a Run that starts nothing")
			checkNothingPublished(t, a)
			assert.Empty(t, mb.Sent(), "messages sent by a Run that starts nothing")

			tc.check(t, a, mb, run(context.Background(), t, tc.rt, a))
		})
	}
}

// One runtime runs several assignments at once.
func testConcurrent(t *testing.T, b Behaviors) {
	const n = 4
	rt := b.Publishes(t, reportFile, reportText, reportSummary)
	as := make([]runtime.Assignment, n)
	mbs := make([]*Mailbox, n)
	dones := make([]<-chan result, n)
	for i := range as {
		as[i], mbs[i] = prepare(t, b)
	}
	for i, a := range as {
		_, dones[i] = start(context.Background(), t, rt, a)
	}
	for i, a := range as {
		res := <-dones[i]
		checkEvents(t, a, res, true)
		checkPublishes(t, a, mbs[i], res)
	}
}
