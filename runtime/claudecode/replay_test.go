package claudecode_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/runtime"
	"github.com/agiraph/agiraph/runtime/claudecode"
)

// TestReplayCorpus runs each recorded transcript of testdata/ through a Run, with a fake CLI
// that prints it: 2.1.197's fractional retry delays included, every run ends as the real one
// did, with no Output event but one per tool call the CLI denied (2.1.330's
// system/permission_denied, whose message is a string).
func TestReplayCorpus(t *testing.T) {
	want := map[string]struct {
		status  runtime.Status
		summary string   // a part of it
		outputs []string // the Output events
	}{
		"tools":   {runtime.Published, "Wrote report.md and out.txt.", nil},
		"retry":   {runtime.Published, "Hello.", nil},
		"api400":  {runtime.Failed, "failed: API Error: 400 Invalid request (API status 400)", nil},
		"auth401": {runtime.Failed, "authentication failed: the API answered status 401 authentication_failed", nil},
		"auth403": {runtime.Failed, "Failed to authenticate. API Error: 403", nil},
		"denied": {runtime.Published, "Bash was denied.\n\nPermission denied for: Bash", []string{
			"Claude Code denied Bash (toolu_bash) by mode: Permission to use Bash has been denied because Claude Code is running in don't ask mode.",
		}},
	}
	files, err := filepath.Glob("testdata/*/*.jsonl")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		scenario := strings.TrimSuffix(filepath.Base(f), ".jsonl")
		t.Run(filepath.Base(filepath.Dir(f))+"/"+scenario, func(t *testing.T) {
			w, ok := want[scenario]
			require.True(t, ok, "no expectations for the scenario %s", scenario)
			o, err, rec := run(t, claudecode.New(claudecode.WithBinary(fakeCLI(t, "cat '"+beside(t, f)+"'\n"))), assignment(t, "x"))
			assert.Equal(t, w.status, o.Status)
			assert.Contains(t, o.Summary, w.summary)
			if w.status == runtime.Failed {
				require.Error(t, err)
				assert.NotErrorIs(t, err, runtime.ErrNoResult)
			} else {
				require.NoError(t, err)
			}
			var outputs []string
			for _, e := range rec.of(runtime.Output) {
				outputs = append(outputs, e.Text)
			}
			require.Len(t, outputs, len(w.outputs), "Output events %q", outputs)
			for i, o := range w.outputs {
				assert.True(t, strings.HasPrefix(outputs[i], o), "Output event %q does not start with %q", outputs[i], o)
			}
		})
	}
}

// TestUnreadableLine: a line cut short is reported as Output and the run goes on.
func TestUnreadableLine(t *testing.T) {
	bin := fakeCLI(t, echo(initLine,
		`{"type":"assistant","message":{"id":"msg_1","content":[{"type":"te`,
		`{"type":"system","subtype":"api_retry","attempt":1,"max_retries":10,"retry_delay_ms":619.6007536683462,"error_status":529,"error":"overloaded","session_id":"sess-1"}`,
		resultLine))
	o, err, rec := run(t, claudecode.New(claudecode.WithBinary(bin)), assignment(t, "x"))
	require.NoError(t, err)
	assert.Equal(t, runtime.Published, o.Status)
	assert.Equal(t, "All done.", o.Summary)
	assert.Equal(t, "started output retrying ended", rec.kinds())
	assert.Contains(t, rec.all()[1].Text, `could not read a line of Claude Code's output (it is not valid JSON): {"type":"assistant"`)
	assert.Contains(t, rec.all()[2].Text, "attempt 1 of 10 in 620ms")
}

// TestAuthFailureStopsRun: the CLI would retry a 401 for about three minutes (2.1.330 does, ten
// times); the run fails at the first retry, with the authentication error, and the CLI is killed.
func TestAuthFailureStopsRun(t *testing.T) {
	transcript := beside(t, "testdata/2.1.330/auth401.jsonl")
	pidDir := t.TempDir()
	bin := fakeCLI(t, `echo $$ > "$PIDDIR/pid"
head -n 2 '`+transcript+`'
sleep 600
`)
	start := time.Now()
	o, err, rec := run(t, claudecode.New(claudecode.WithBinary(bin), claudecode.WithEnv([]string{"PIDDIR=" + pidDir}), writable(pidDir)), assignment(t, "x"))
	require.Error(t, err)
	t.Log(err)
	assert.Less(t, time.Since(start), 30*time.Second)
	assert.Equal(t, runtime.Failed, o.Status)
	assert.Contains(t, err.Error(), "authentication failed: the API answered status 401 authentication_failed; stopped Claude Code instead of letting it retry")
	assert.False(t, errors.Is(err, runtime.ErrNoResult) || errors.Is(err, context.DeadlineExceeded), "err = %v", err)
	assert.Equal(t, o.Summary, err.Error())
	assert.NotEmpty(t, o.Session)
	assert.Equal(t, "started ended", rec.kinds())
	assertGone(t, filepath.Join(pidDir, "pid"))
}
