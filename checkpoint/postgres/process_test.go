package postgres_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/checkpoint"
	"github.com/agiraph/agiraph/checkpoint/postgres"
	"github.com/agiraph/agiraph/graph"
	"github.com/agiraph/agiraph/internal/pgtest"
	"github.com/agiraph/agiraph/internal/workload"
)

// The tests here run savers in child processes: this test binary started again with roleEnv set
// (see TestMain), on the database urlEnv names.
const (
	roleEnv = "AGIRAPH_PG_CHILD_ROLE"
	urlEnv  = "AGIRAPH_PG_CHILD_URL"
)

const (
	crashSteps  = 3000 // more than the loop does before the kill
	sharedSteps = 40
)

// child plays one process of a test.
func child(role, url string) error {
	ctx := context.Background()
	s, err := postgres.Open(ctx, url)
	if err != nil {
		return err
	}
	defer s.Close()
	switch role {
	case "loop":
		g, _ := workload.Loop(crashSteps)
		c, err := g.Compile(graph.WithCheckpointer(s), graph.WithRecursionLimit(crashSteps+1))
		if err != nil {
			return err
		}
		_, err = c.Invoke(ctx, workload.LoopState{}, graph.WithThread("crash"))
		return err
	case "writer":
		fmt.Println("ready")
		if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
			return err
		}
		return writeShared(ctx, s, "child")
	}
	return fmt.Errorf("unknown role %q", role)
}

func childCommand(role, url string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), roleEnv+"="+role, urlEnv+"="+url)
	cmd.Stderr = os.Stderr
	return cmd
}

// writeShared writes to the thread "shared": checkpoints of its own (own-<who>-NNN) with two
// writes each, and the checkpoints common-NNN, which the other process puts too, with two writes
// of the same keys and its own values, in one call.
func writeShared(ctx context.Context, s checkpoint.Saver, who string) error {
	cfg := checkpoint.Config{ThreadID: "shared"}
	for i := range sharedSteps {
		for _, id := range []string{fmt.Sprintf("own-%s-%03d", who, i), fmt.Sprintf("common-%03d", i)} {
			at, err := s.Put(ctx, cfg, cp(id, i))
			if err != nil {
				return err
			}
			value := id
			if strings.HasPrefix(id, "common") {
				value = who
			}
			if err := s.PutWrites(ctx, at, []checkpoint.Write{upd("0", value), upd("1", value)}); err != nil {
				return err
			}
			if _, err := s.Get(ctx, at); err != nil {
				return err
			}
		}
	}
	return nil
}

// TestTwoProcesses: this process and a child write to one thread at once, each its own
// checkpoints and the same ones; no call fails, every checkpoint is there once, and each
// checkpoint both wrote to has the writes of one call of one process, never a mix.
func TestTwoProcesses(t *testing.T) {
	ctx := context.Background()
	url := pgtest.Start(t)
	s := open(t, url)
	cmd := childCommand("writer", url)
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	waited := false
	t.Cleanup(func() {
		if !waited {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "ready\n", line)
	_, err = stdin.Write([]byte("go\n"))
	require.NoError(t, err)

	require.NoError(t, writeShared(ctx, s, "parent"))
	waited = true
	require.NoError(t, cmd.Wait(), "the child process failed")

	l, err := s.List(ctx, checkpoint.Config{ThreadID: "shared"}, checkpoint.ListOptions{})
	require.NoError(t, err)
	require.Len(t, l, 3*sharedSteps)
	for _, tu := range l {
		id := tu.Checkpoint.ID
		require.Len(t, tu.Writes, 2, id)
		assert.Equal(t, []string{"0", "1"}, []string{tu.Writes[0].TaskID, tu.Writes[1].TaskID}, id)
		v0, v1 := string(tu.Writes[0].Value), string(tu.Writes[1].Value)
		assert.Equal(t, v0, v1, "%s has writes of two calls", id)
		if strings.HasPrefix(id, "common") {
			assert.Contains(t, []string{"parent", "child"}, v0, id)
		} else {
			assert.Equal(t, id, v0)
		}
	}
}

// TestKillMidRunAndResume: a process running a long loop, checkpointing every step, is killed with
// SIGKILL while it writes; the database it leaves reads back whole, and this process resumes the
// thread to the end, with the state of an uninterrupted run.
func TestKillMidRunAndResume(t *testing.T) {
	ctx := context.Background()
	url := pgtest.Start(t)
	s := open(t, url)
	cmd := childCommand("loop", url)
	require.NoError(t, cmd.Start())
	defer cmd.Process.Kill()

	thread := checkpoint.Config{ThreadID: "crash"}
	deadline := time.Now().Add(2 * time.Minute) // a bound on waiting for the child, not a measure
	for {
		tu, err := s.Get(ctx, thread)
		if err == nil && tu.Checkpoint.Step >= 100 {
			break
		}
		require.True(t, time.Now().Before(deadline), "the child did not reach step 100: %v", err)
		time.Sleep(10 * time.Millisecond)
	}
	require.NoError(t, cmd.Process.Kill())
	err := cmd.Wait()
	require.Error(t, err)
	require.Contains(t, err.Error(), "killed")

	// Every checkpoint reads back, each the child of the one before.
	l, err := s.List(ctx, thread, checkpoint.ListOptions{})
	require.NoError(t, err)
	require.Greater(t, len(l), 100)
	require.Less(t, len(l), crashSteps, "the child finished before it was killed")
	for i := 0; i+1 < len(l); i++ {
		assert.Equal(t, l[i+1].Checkpoint.ID, l[i].Checkpoint.ParentID)
	}

	g, check := workload.Loop(crashSteps)
	c, err := g.Compile(graph.WithCheckpointer(s), graph.WithRecursionLimit(crashSteps+1))
	require.NoError(t, err)
	out, err := c.Resume(ctx, nil, graph.WithThread("crash"), graph.WithDurability(graph.DurabilityAsync))
	require.NoError(t, err)
	require.NoError(t, check(out))
}
