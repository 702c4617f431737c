package nodes_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/models"
	"github.com/agiraph/agiraph/nodes"
	"github.com/agiraph/agiraph/nodes/bus"
	"github.com/agiraph/agiraph/nodes/demo"
	"github.com/agiraph/agiraph/nodes/eventlog"
	"github.com/agiraph/agiraph/providers/scripted"
	"github.com/agiraph/agiraph/tools"
)

// twoNodeSquad returns a squad playing the two-node team in home, whose block tool waits for
// release.
func twoNodeSquad(t testing.TB, home string, fx *effects, release <-chan struct{}) *nodes.Squad {
	s, _ := twoNodeSquadWith(t, home, fx, release)
	return s
}

// twoNodeSquadWith is twoNodeSquad that also returns the coordinator's model.
func twoNodeSquadWith(t testing.TB, home string, fx *effects, release <-chan struct{}) (*nodes.Squad, *scripted.Model) {
	t.Helper()
	coord := twoNodeCoordinator().KeepRequests()
	s, err := nodes.New(
		nodes.WithHome(home),
		nodes.WithModel("scripted/worker"), nodes.WithCoordinatorModel("scripted/coord"),
		nodes.WithModelOptions(models.WithModels(coord, twoNodeWorker()), models.WithoutRetry()),
		nodes.WithTick(20*time.Millisecond),
		nodes.WithWorkerTools(func(nodes.Worker, nodes.Node) []tools.Tool { return []tools.Tool{fx.note(), blocker(fx, release)} }),
	)
	if err != nil {
		t.Fatal(err)
	}
	return s, coord
}

// waitFor reads events until one matches, or fails the test after a generous deadline.
func waitFor(t *testing.T, events <-chan eventlog.Event, what string, match func(eventlog.Event) bool) eventlog.Event {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case e, ok := <-events:
			if !ok {
				t.Fatalf("events ended before %s", what)
			}
			if match(e) {
				return e
			}
		case <-deadline:
			t.Fatalf("no %s", what)
		}
	}
}

// A slow worker must not stop the coordinator from reacting to another worker's result, or to
// the human: both get through while the slow node is still running.
func TestSlowWorkerDoesNotDelayTheCoordinator(t *testing.T) {
	fx := &effects{path: filepath.Join(t.TempDir(), "effects")}
	release := make(chan struct{})
	s := twoNodeSquad(t, t.TempDir(), fx, release)
	defer s.Close()
	events, stop := s.Subscribe(0)
	defer stop()
	r := start(t, s, "two nodes")

	// The two come in either order: the coordinator may react to n2 before n1's worker calls block.
	var blocked, reacted bool
	waitFor(t, events, "the slow node blocking and the coordinator reacting to n2", func(e eventlog.Event) bool {
		blocked = blocked || e.Type == eventlog.ToolCalled && e.Node == "n1" && strings.HasPrefix(e.Text, "block")
		reacted = reacted || e.Type == eventlog.MessageSent && e.Worker == bus.Coordinator && e.Text == "n2 is done"
		return blocked && reacted
	})
	if err := r.Send("", "how is it going?"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, events, "the coordinator's reply to the human", func(e eventlog.Event) bool {
		return e.Type == eventlog.MessageSent && e.Worker == bus.Coordinator && strings.HasPrefix(e.Text, "Status:")
	})
	inbox, err := r.Inbox()
	if err != nil || len(inbox) != 2 || inbox[0].Body != "n2 is done" || !strings.HasPrefix(inbox[1].Body, "Status:") {
		t.Fatalf("the human's inbox: %+v, %v", inbox, err)
	}
	if again, _ := r.Inbox(); len(again) != 0 {
		t.Fatalf("the inbox gave %d messages twice", len(again))
	}
	board, err := r.Board()
	if err != nil {
		t.Fatal(err)
	}
	if n1, _ := board.Node("n1"); n1.Status != nodes.NodeRunning {
		t.Fatalf("n1 is %s while its worker blocks; the coordinator should have reacted meanwhile", n1.Status)
	}
	close(release)
	if _, err := r.Wait(); err != nil {
		t.Fatal(err)
	}
	// The human's message and the reply are in the agent's conversation.
	conv, _ := os.ReadFile(s.Home().Conversation())
	if !strings.Contains(string(conv), "how is it going?") || !strings.Contains(string(conv), "Status: the fast node") {
		t.Fatalf("conversation.jsonl lacks the exchange:\n%s", conv)
	}
}

// Stop cancels the workers; the coordinator keeps its conversation; the human's next message
// sets the run going again, and the stopped worker continues its conversation.
func TestStopAndResumeByMessage(t *testing.T) {
	fx := &effects{path: filepath.Join(t.TempDir(), "effects")}
	release := make(chan struct{})
	s, coord := twoNodeSquadWith(t, t.TempDir(), fx, release)
	defer s.Close()
	events, unsubscribe := s.Subscribe(0)
	defer unsubscribe()
	r := start(t, s, "two nodes")

	// The block tool has started (its call event comes before it runs).
	for deadline := time.Now().Add(30 * time.Second); fx.count("block") == 0; time.Sleep(2 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the slow node never blocked")
		}
	}
	if err := r.Stop(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, events, "agent.paused", func(e eventlog.Event) bool { return e.Type == eventlog.AgentPaused })
	// The worker busy at the stop is said to be stopped, even though it turns idle at once.
	waitFor(t, events, "worker.stopped", func(e eventlog.Event) bool { return e.Type == eventlog.WorkerStopped })
	// The stopped node goes back on the board, keeping its assignment.
	deadline := time.Now().Add(30 * time.Second)
	for {
		b, _ := r.Board()
		if n1, _ := b.Node("n1"); n1.Status == nodes.NodePending {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("n1 did not go back to pending after Stop")
		}
		time.Sleep(5 * time.Millisecond)
	}
	close(release)
	if err := r.Send("", "carry on"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, events, "agent.resumed", func(e eventlog.Event) bool { return e.Type == eventlog.AgentResumed })
	if _, err := r.Wait(); err != nil {
		dump(t, s)
		t.Fatal(err)
	}
	if n := fx.count("n1 wrote"); n != 1 {
		t.Fatalf("n1's first step ran %d times; the resumed worker should continue, not start over", n)
	}
	// The coordinator kept its conversation through the stop: its last turn still holds the goal,
	// the note of the stop and the human's message.
	reqs := coord.Requests()
	last := reqs[len(reqs)-1]
	all := teamAllText(last)
	if last.Messages[0].Text() != "GOAL: two nodes" || !strings.Contains(all, "stopped all workers") || !strings.Contains(all, "carry on") {
		t.Fatalf("the coordinator lost its conversation across the stop:\n%s", all)
	}
	if n := fx.count("block"); n != 2 {
		t.Fatalf("block ran %d times, want 2 (the stopped call, then again)", n)
	}
}

const childEnv = "NODES_TEST_CHILD_HOME"

// TestMain runs the child process of the kill test, or of the crash campaign, when asked to.
func TestMain(m *testing.M) {
	if home := os.Getenv(childEnv); home != "" {
		os.Exit(runChild(home))
	}
	if os.Getenv(crashHomeEnv) != "" {
		os.Exit(crashChild())
	}
	os.Exit(m.Run())
}

// runChild runs the two-node team until it is killed: its slow node never gets released.
func runChild(home string) int {
	fx := &effects{path: filepath.Join(home, "effects")}
	s := twoNodeSquad(fakeTB{}, home, fx, make(chan struct{}))
	_, err := s.Run(context.Background(), "two nodes", nodes.WithRunID("killed"))
	if err != nil {
		os.Stderr.WriteString(err.Error() + "\n")
		return 1
	}
	return 0
}

// fakeTB lets the child use the test helpers outside a test.
type fakeTB struct{ testing.TB }

func (fakeTB) Helper()                   {}
func (fakeTB) Fatal(args ...any)         { panic(args) }
func (fakeTB) Fatalf(f string, a ...any) { panic(f) }

// startChild starts this test binary as a process that runs the two-node team on home, and
// returns once n2 has completed and n1 blocks; the process is killed when the test ends.
func startChild(t *testing.T, home string, fx *effects) *exec.Cmd {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	child := exec.Command(exe, "-test.run=^$")
	child.Env = append(os.Environ(), childEnv+"="+home)
	child.Stderr = os.Stderr
	require.NoError(t, child.Start())
	t.Cleanup(func() {
		_ = child.Process.Kill()
		_ = child.Wait()
	})
	deadline := time.Now().Add(30 * time.Second)
	for !(fx.count("block") == 1 && completed(t, home, "n2")) {
		if time.Now().After(deadline) {
			t.Fatal("the child never reached the point to kill it at")
		}
		time.Sleep(5 * time.Millisecond)
	}
	return child
}

// While a process runs an agent, a second process cannot open a squad on its home: it is
// refused at once, naming the holder's PID. Once the holder is gone (killed: it released
// nothing itself), the home opens.
func TestHomeHeldByAnotherProcess(t *testing.T) {
	home := t.TempDir()
	fx := &effects{path: filepath.Join(home, "effects")}
	child := startChild(t, home, fx)

	opts := append(demo.Team(), nodes.WithHome(home))
	_, err := nodes.New(opts...)
	require.ErrorIs(t, err, nodes.ErrHomeInUse)
	assert.Contains(t, err.Error(), fmt.Sprintf("%s is in use by process %d since ", home, child.Process.Pid))

	require.NoError(t, child.Process.Kill())
	require.Error(t, child.Wait())
	s, err := nodes.New(opts...)
	require.NoError(t, err, "the home of a killed process stays locked")
	require.NoError(t, s.Close())
}

// A run killed with SIGKILL in the middle of a tick resumes in a new process: finished nodes
// are not done again, the interrupted one continues, and no message is lost or sent twice.
func TestKillAndResume(t *testing.T) {
	home := t.TempDir()
	fx := &effects{path: filepath.Join(home, "effects")}
	child := startChild(t, home, fx)
	if err := child.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	child.Wait()

	release := make(chan struct{})
	close(release)
	s := twoNodeSquad(t, home, fx, release)
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := resume(ctx, s, "killed")
	if err != nil {
		t.Fatal(err)
	}
	if res.Output != "both nodes are done" {
		t.Fatalf("output %q", res.Output)
	}
	for _, step := range []string{"n1 wrote", "n2 wrote"} {
		if n := fx.count(step); n != 1 {
			t.Errorf("%q happened %d times, want once", step, n)
		}
	}
	if n := fx.count("block"); n != 2 {
		t.Errorf("block ran %d times, want 2 (killed, then resumed)", n)
	}
	b, done, err := nodes.RunBus(home, "killed")
	if err != nil {
		t.Fatal(err)
	}
	defer done()
	msgs, _ := b.Messages()
	seen := map[string]int{}
	for _, m := range msgs {
		seen[m.From+"→"+m.To+": "+m.Body]++
	}
	for text, n := range seen {
		if n > 1 {
			t.Errorf("message sent %d times: %s", n, text)
		}
	}
	for _, want := range []string{"Node n1 (", "Node n2 (", "Stage 1 is complete"} {
		found := false
		for text := range seen {
			if strings.Contains(text, want) {
				found = true
			}
		}
		if !found {
			t.Errorf("no message %q reached the coordinator", want)
		}
	}
	evs, _ := s.Events(0, 0)
	resumed := 0
	for _, e := range evs {
		if e.Type == eventlog.AgentResumed {
			resumed++
		}
	}
	if resumed != 1 {
		t.Errorf("%d agent.resumed events, want 1", resumed)
	}
	if b.Pending(bus.Coordinator) != 0 {
		t.Errorf("%d messages for the coordinator were never delivered", b.Pending(bus.Coordinator))
	}
}

// completed reports whether node is completed on the board of the killed run, read from disk.
func completed(t *testing.T, home, node string) bool {
	b, err := nodes.ReadFiles(nodes.WithHome(home)).Board("killed")
	n, ok := b.Node(node)
	return err == nil && ok && n.Status == nodes.NodeCompleted
}
