package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func noEnv(string) string { return "" }

// The example runs on a fresh machine: no key, the offline team, a report in _output.md; and
// the same command with -run answers with the finished run.
func TestResearchOffline(t *testing.T) {
	home := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var out bytes.Buffer
	if err := run(ctx, []string{"-home", home, "the state of AI chips"}, nil, &out, noEnv); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	for _, want := range []string{"offline team", "node.created", "message", "stage.reconvened", "agent.completed", "# Report"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	m := regexp.MustCompile(`Run (\S+) finished: (\S+)`).FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("no result line:\n%s", out.String())
	}
	report, err := os.ReadFile(m[2])
	if err != nil || !strings.Contains(string(report), "current state") {
		t.Fatalf("_output.md = %q, %v", report, err)
	}
	if m[2] != filepath.Join(home, "runs", m[1], "_output.md") {
		t.Errorf("output at %s", m[2])
	}

	out.Reset()
	if err := run(ctx, []string{"-home", home, "-quiet", "-run", m[1]}, nil, &out, noEnv); err != nil {
		t.Fatalf("resume a finished run: %v", err)
	}
	if !strings.Contains(out.String(), "Run "+m[1]+" finished") {
		t.Fatalf("resume output:\n%s", out.String())
	}
}

func TestFlags(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), []string{"-help"}, nil, &out, noEnv); err != nil {
		t.Fatal(err)
	}
	for _, flag := range []string{"-home", "-model", "-coordinator-model", "-run", "-workers", "-offline", "-timeout"} {
		if !strings.Contains(out.String(), flag) {
			t.Errorf("-help does not explain %s", flag)
		}
	}
	if err := run(context.Background(), nil, nil, &out, noEnv); err == nil {
		t.Error("no goal and no -run was accepted")
	}
}

// The offline team takes its time only where a person watches: -pace's, else demo.Pace when
// stdin and stdout are a terminal (demo's TestPaceAt opens one), else none.
func TestPace(t *testing.T) {
	null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	require.NoError(t, err)
	defer null.Close()
	o, _, err := parse([]string{"a goal"}, io.Discard)
	require.NoError(t, err)
	assert.Zero(t, o.paced(nil, &bytes.Buffer{}), "a test or a script gets its result at once")
	assert.Zero(t, o.paced(null, null), "a script run with </dev/null >/dev/null")
	o, _, err = parse([]string{"-pace", "0", "a goal"}, io.Discard)
	require.NoError(t, err)
	assert.Zero(t, o.paced(null, null))
	o, _, err = parse([]string{"-pace", "3s", "a goal"}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, 3*time.Second, o.paced(nil, io.Discard))
}

// A paced run stopped while the coordinator thinks stops at once, and the command says how to
// resume it; resumed, it finishes. (Unpaced, the offline team would finish within the timeout.)
func TestPacedRunStops(t *testing.T) {
	home := t.TempDir()
	var out bytes.Buffer
	require.NoError(t, run(context.Background(), []string{"-home", home, "-pace", "1h", "-timeout", "1s", "a goal"}, nil, &out, noEnv))
	m := regexp.MustCompile(`Stopped\. Resume with: .* -run (\S+)\n`).FindStringSubmatch(out.String())
	require.NotNil(t, m, out.String())
	assert.NotContains(t, out.String(), "node.created", "the coordinator answered before its pace was up")

	out.Reset()
	require.NoError(t, run(context.Background(), []string{"-home", home, "-run", m[1]}, nil, &out, noEnv))
	assert.Contains(t, out.String(), "Run "+m[1]+" finished")
}

// Flags count wherever they are among the goal's words; after "--" everything is the goal.
func TestFlagsAfterTheGoal(t *testing.T) {
	for _, c := range []struct {
		args  []string
		goal  string
		home  string
		quiet bool
	}{
		{[]string{"my goal", "-home", "X", "-quiet"}, "my goal", "X", true},
		{[]string{"my", "-quiet", "goal", "-home=X"}, "my goal", "X", true},
		{[]string{"-home", "X", "my", "goal"}, "my goal", "X", false},
		{[]string{"-home", "X", "--", "my", "-quiet", "goal"}, "my -quiet goal", "X", false},
		{[]string{"my", "--", "-home", "X"}, "my -home X", ".agiraph/research", false},
	} {
		o, goal, err := parse(c.args, io.Discard)
		require.NoError(t, err, "%q", c.args)
		assert.Equal(t, c.goal, goal, "%q", c.args)
		assert.Equal(t, c.home, o.home, "%q", c.args)
		assert.Equal(t, c.quiet, o.quiet, "%q", c.args)
	}
	_, _, err := parse([]string{"my goal", "-hoem", "X"}, io.Discard)
	require.ErrorContains(t, err, "hoem", "a mistyped flag after the goal is refused, not taken as a word")
}
