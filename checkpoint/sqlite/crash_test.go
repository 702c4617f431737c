package sqlite_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agiraph/agiraph/checkpoint"
	"github.com/agiraph/agiraph/checkpoint/sqlite"
	"github.com/agiraph/agiraph/graph"
)

// The tests here run graphs in child processes (this test binary, started again with
// crashRoleEnv set; see TestMain) that are killed or exit, and continue them in other processes.

const (
	crashRoleEnv = "AGIRAPH_CRASH_ROLE" // which child to be
	crashDirEnv  = "AGIRAPH_CRASH_DIR"  // where the database and the side-effect logs are
	crashThread  = "crash"
)

// crashState is the state of the crash graph: prepare, then four parallel workers, then collect.
type crashState struct {
	Worker  string
	Results []string `graph:"append"`
	Summary string
}

var crashWorkers = []string{"fast-1", "slow-1", "fast-2", "slow-2"}

// crashGraph records every node's start and completion in dir/<task>.log. In the first process
// (blockSlow) the slow workers never finish: that process is killed while they run.
func crashGraph(dir string, blockSlow bool) *graph.StateGraph[crashState] {
	effect := func(task, what string) error {
		f, err := os.OpenFile(filepath.Join(dir, task+".log"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = fmt.Fprintf(f, "%s %d\n", what, os.Getpid())
		return err
	}
	g := graph.New[crashState]()
	g.AddNode("prepare", func(context.Context, crashState) (crashState, error) {
		return crashState{}, errors.Join(effect("prepare", "started"), effect("prepare", "done"))
	})
	g.AddRouter("prepare", func(context.Context, crashState) graph.Next[crashState] {
		var next graph.Next[crashState]
		for _, w := range crashWorkers {
			next.Sends = append(next.Sends, graph.Send[crashState]{Node: "work", Arg: crashState{Worker: w}})
		}
		return next
	}, "work")
	g.AddNode("work", func(ctx context.Context, s crashState) (crashState, error) {
		if err := effect(s.Worker, "started"); err != nil {
			return crashState{}, err
		}
		if blockSlow && strings.HasPrefix(s.Worker, "slow") {
			<-ctx.Done() // killed before this ends
			return crashState{}, ctx.Err()
		}
		return crashState{Results: []string{"result of " + s.Worker}}, effect(s.Worker, "done")
	})
	g.AddNode("collect", func(_ context.Context, s crashState) (crashState, error) {
		return crashState{Summary: strings.Join(s.Results, ", ")}, errors.Join(effect("collect", "started"), effect("collect", "done"))
	})
	g.AddEdge(graph.START, "prepare")
	g.AddEdge("work", "collect")
	g.AddEdge("collect", graph.END)
	return g
}

// askGraph asks a human for approval and records the answer.
func askGraph() *graph.StateGraph[crashState] {
	g := graph.New[crashState]()
	g.AddNode("draft", func(context.Context, crashState) (crashState, error) {
		return crashState{Results: []string{"draft by " + fmt.Sprint(os.Getpid())}}, nil
	})
	g.AddNode("approve", func(ctx context.Context, s crashState) (crashState, error) {
		answer, err := graph.Interrupt[string](ctx, "approve "+s.Results[0]+"?")
		if err != nil {
			return crashState{}, err
		}
		return crashState{Summary: answer + " in " + fmt.Sprint(os.Getpid())}, nil
	})
	g.AddEdge(graph.START, "draft")
	g.AddEdge("draft", "approve")
	g.AddEdge("approve", graph.END)
	return g
}

// TestMain runs this binary as one of the child processes of the tests when the environment says
// so, and as the tests otherwise.
func TestMain(m *testing.M) {
	if path := os.Getenv(helperEnv); path != "" {
		os.Exit(writerChild(path))
	}
	if role := os.Getenv(crashRoleEnv); role != "" {
		if err := crashChild(role, os.Getenv(crashDirEnv)); err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			os.Exit(3)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// crashChild plays one process of a test and prints the final state as JSON when there is one.
func crashChild(role, dir string) error {
	saver, err := sqlite.Open(filepath.Join(dir, "runs.db"))
	if err != nil {
		return err
	}
	defer saver.Close()
	ctx := context.Background()
	if role == "writers" {
		return writeUntilKilled(ctx, saver, dir)
	}
	thread := graph.WithThread(crashThread)
	var g *graph.StateGraph[crashState]
	switch role {
	case "run", "resume":
		g = crashGraph(dir, role == "run")
	case "ask", "answer":
		g = askGraph()
	default:
		return fmt.Errorf("unknown role %q", role)
	}
	c, err := g.Compile(graph.WithCheckpointer(saver))
	if err != nil {
		return err
	}
	var out crashState
	switch role {
	case "run", "ask":
		out, err = c.Invoke(ctx, crashState{}, thread)
		var ir *graph.Interrupted
		if role == "ask" && errors.As(err, &ir) {
			return nil // the question is saved; this process is done
		}
	case "resume":
		out, err = c.Resume(ctx, nil, thread)
	case "answer":
		out, err = c.Resume(ctx, "approved", thread)
	}
	if err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(out)
}

func crashCommand(t *testing.T, role, dir string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashRoleEnv+"="+role, crashDirEnv+"="+dir)
	cmd.Stderr = os.Stderr
	return cmd
}

func runChild(t *testing.T, role, dir string) crashState {
	t.Helper()
	out, err := crashCommand(t, role, dir).Output()
	if err != nil {
		t.Fatalf("child %s: %v", role, err)
	}
	var s crashState
	if len(out) > 0 {
		if err := json.Unmarshal(out, &s); err != nil {
			t.Fatalf("child %s printed %q: %v", role, out, err)
		}
	}
	return s
}

// effects returns the lines of dir/<task>.log.
func effects(t *testing.T, dir, task string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, task+".log"))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	} else if err != nil {
		t.Fatal(err)
	}
	return strings.Fields(strings.ReplaceAll(string(b), "\n", " "))
}

func countWord(lines []string, word string) int {
	n := 0
	for _, l := range lines {
		if l == word {
			n++
		}
	}
	return n
}

// A process is killed with SIGKILL in the middle of a superstep of four parallel tasks, two of
// which have finished and saved their output; a new process resumes the thread. Every task runs to
// completion exactly once, and the final state is the state of an uninterrupted run.
func TestKillMidSuperstepAndResume(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cmd := crashCommand(t, "run", dir)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()

	// Wait until the fast workers' outputs are in the database and the slow ones are running.
	saver, err := sqlite.Open(filepath.Join(dir, "runs.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer saver.Close()
	deadline := time.Now().Add(60 * time.Second)
	for {
		saved := 0
		if tp, err := saver.Get(context.Background(), checkpoint.Config{ThreadID: crashThread}); err == nil {
			for _, w := range tp.Writes {
				if w.Kind == checkpoint.WriteUpdate && w.Node == "work" {
					saved++
				}
			}
		}
		running := countWord(effects(t, dir, "slow-1"), "started") + countWord(effects(t, dir, "slow-2"), "started")
		if saved == 2 && running == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the first process did not reach the middle of the superstep (%d outputs saved, %d slow tasks running)", saved, running)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("first process ended with %v, want it killed", err)
	}
	if countWord(effects(t, dir, "collect"), "started") != 0 {
		t.Fatal("collect ran before the kill")
	}

	final := runChild(t, "resume", dir)

	for _, task := range append([]string{"prepare", "collect"}, crashWorkers...) {
		lines := effects(t, dir, task)
		if n := countWord(lines, "done"); n != 1 {
			t.Errorf("%s completed %d times, want exactly once (log %q)", task, n, lines)
		}
	}
	for _, w := range []string{"slow-1", "slow-2"} {
		if n := countWord(effects(t, dir, w), "started"); n != 2 {
			t.Errorf("%s started %d times, want twice (once in each process)", w, n)
		}
	}
	for _, w := range []string{"fast-1", "fast-2"} {
		if n := countWord(effects(t, dir, w), "started"); n != 1 {
			t.Errorf("%s started %d times, want once: its saved output should have been reused", w, n)
		}
	}

	// The same graph, uninterrupted, in this process.
	want, err := crashGraph(t.TempDir(), false).Compile()
	if err != nil {
		t.Fatal(err)
	}
	wantState, err := want.Invoke(context.Background(), crashState{})
	if err != nil {
		t.Fatal(err)
	}
	if final.Summary != wantState.Summary || !slices.Equal(final.Results, wantState.Results) {
		t.Errorf("resumed run ended with %+v, want %+v", final, wantState)
	}
}

// A process asks a human and exits; another process, started later, answers and finishes the run.
func TestInterruptInOneProcessAnswerInAnother(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if s := runChild(t, "ask", dir); s.Summary != "" {
		t.Fatalf("the asking process finished the run: %+v", s)
	}
	saver, err := sqlite.Open(filepath.Join(dir, "runs.db"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := askGraph().Compile(graph.WithCheckpointer(saver))
	if err != nil {
		t.Fatal(err)
	}
	snap, err := c.State(context.Background(), graph.WithThread(crashThread))
	if err != nil {
		t.Fatal(err)
	}
	saver.Close()
	if len(snap.Interrupts) != 1 || !strings.HasPrefix(fmt.Sprint(snap.Interrupts[0].Value), "approve draft by ") {
		t.Fatalf("saved state %+v, want one pending question", snap)
	}
	asker := strings.TrimSuffix(strings.TrimPrefix(fmt.Sprint(snap.Interrupts[0].Value), "approve draft by "), "?")

	final := runChild(t, "answer", dir)
	answerer := strings.TrimPrefix(final.Summary, "approved in ")
	if !strings.HasPrefix(final.Summary, "approved in ") || answerer == asker {
		t.Errorf("final state %+v: want it approved in a process other than %s", final, asker)
	}
	if want := []string{"draft by " + asker}; !slices.Equal(final.Results, want) {
		t.Errorf("results %q, want %q: the draft must not be redone", final.Results, want)
	}
}

// writerThreads is how many threads writeUntilKilled writes at once.
const writerThreads = 16

// writeUntilKilled steps writerThreads threads at once, each step a PutStep (a write of the
// step before, then the step's checkpoint, whose ID is its number), and appends the number of
// each step the saver acknowledged to dir/<thread>.acks, until the process is killed.
func writeUntilKilled(ctx context.Context, saver *sqlite.Saver, dir string) error {
	errs := make(chan error, writerThreads)
	for i := range writerThreads {
		go func() {
			thread := fmt.Sprintf("w%02d", i)
			acks, err := os.OpenFile(filepath.Join(dir, thread+".acks"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
			if err != nil {
				errs <- err
				return
			}
			cfg := checkpoint.Config{ThreadID: thread}
			var parent checkpoint.Config
			for step := 0; ; step++ {
				cp := checkpoint.Checkpoint{ID: fmt.Sprintf("%06d", step), ParentID: parent.CheckpointID, Step: step, Source: checkpoint.SourceLoop, Format: 1}
				if step == 0 {
					parent, err = saver.Put(ctx, cfg, cp)
				} else {
					w := checkpoint.Write{TaskID: "t", Node: "n", Kind: checkpoint.WriteUpdate, Value: []byte(fmt.Sprintf("%s:%d", thread, step))}
					parent, err = saver.PutStep(ctx, parent, []checkpoint.Write{w}, cfg, cp)
				}
				if err == nil {
					_, err = fmt.Fprintln(acks, step)
				}
				if err != nil {
					errs <- fmt.Errorf("%s step %d: %w", thread, step, err)
					return
				}
			}
		}()
	}
	return <-errs
}

// Many threads write through one Saver, their writes grouped into shared commits, and the process
// is killed at a moment of the test's choosing: every step the saver acknowledged is in the
// database, each whole (its checkpoint, and its write on the step before), and each thread's
// steps are a prefix of what it wrote — a group is committed all or nothing, and never ahead of
// an earlier one.
func TestKillConcurrentWriters(t *testing.T) {
	t.Parallel()
	for _, after := range []int{1, 30, 200, 1000} { // acknowledged steps of the first thread
		t.Run(fmt.Sprint(after), func(t *testing.T) {
			dir := t.TempDir()
			cmd := crashCommand(t, "writers", dir)
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			ended := make(chan error, 1)
			go func() { ended <- cmd.Wait() }()
			for deadline := time.Now().Add(time.Minute); acked(t, dir, "w00") < after; time.Sleep(time.Millisecond) {
				select {
				case err := <-ended:
					t.Fatalf("the writers' process ended by itself: %v", err)
				default:
				}
				if time.Now().After(deadline) {
					cmd.Process.Kill()
					t.Fatalf("the writers acknowledged fewer than %d steps in a minute", after)
				}
			}
			if err := cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			if err := <-ended; err == nil || !strings.Contains(err.Error(), "killed") {
				t.Fatalf("the writers' process ended by itself: %v", err)
			}

			s, err := sqlite.Open(filepath.Join(dir, "runs.db"))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			ctx := context.Background()
			total := 0
			for i := range writerThreads {
				thread := fmt.Sprintf("w%02d", i)
				n := acked(t, dir, thread) // steps 0 .. n-1
				got, err := s.List(ctx, checkpoint.Config{ThreadID: thread}, checkpoint.ListOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if len(got) < n {
					t.Fatalf("%s: %d steps acknowledged, %d in the database", thread, n, len(got))
				}
				for k, tu := range got { // newest first
					step := len(got) - 1 - k
					if tu.Checkpoint.ID != fmt.Sprintf("%06d", step) {
						t.Fatalf("%s: checkpoint %d of %d is %q: the steps are not a prefix", thread, k, len(got), tu.Checkpoint.ID)
					}
					if step < len(got)-1 && (len(tu.Writes) != 1 || string(tu.Writes[0].Value) != fmt.Sprintf("%s:%d", thread, step+1)) {
						t.Fatalf("%s: step %d holds writes %v, not the next step's", thread, step, tu.Writes)
					}
				}
				total += len(got)
			}
			t.Logf("killed after %d steps of w00: %d steps in all", after, total)
		})
	}
}

// acked returns how many steps writeUntilKilled wrote to dir/<thread>.acks, whole lines only.
func acked(t *testing.T, dir, thread string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, thread+".acks"))
	if errors.Is(err, os.ErrNotExist) {
		return 0
	} else if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "\n")
}
