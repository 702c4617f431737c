package main

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/nodes"
	"github.com/agiraph/agiraph/nodes/replay"
	"github.com/agiraph/agiraph/providers/providertest"
	"github.com/agiraph/agiraph/tools"
)

var update = flag.Bool("update", false, "record testdata/hello.cassette again")

const cassette = "testdata/hello.cassette"

// recordHello runs the command with -record against a fake Anthropic server over HTTP, which
// plays a one-node squad, and returns the cassette's path.
func recordHello(t *testing.T, path string) string {
	t.Helper()
	srv := providertest.NewAnthropicFunc(t, providertest.SquadScript)
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-api03-recorded-key-must-not-leak")
	t.Setenv("ANTHROPIC_BASE_URL", srv.URL())
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var out bytes.Buffer
	require.NoError(t, run(ctx, []string{"-home", t.TempDir(), "-model", "anthropic/claude-sonnet-4-5", "-record", path,
		"-quiet", "Say hello in a file."}, nil, &out, noEnv), out.String())
	assert.Contains(t, out.String(), "Recorded the run in "+path)
	return path
}

// A run recorded with -record replays offline — no key, no server — with the same board,
// messages, published file and output, a hundred times over.
func TestRecordAndReplay(t *testing.T) {
	if *update {
		recordHello(t, cassette)
	}
	fresh := recordHello(t, filepath.Join(t.TempDir(), "run.cassette"))
	b, err := os.ReadFile(fresh)
	require.NoError(t, err)
	assert.NotContains(t, string(b), "recorded-key", "the key is not in the cassette")
	replay.Run(t, fresh)

	t.Setenv("ANTHROPIC_API_KEY", "")
	t.Setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:1") // nothing listens: a call would fail
	first := replay.Run(t, cassette)
	assert.Equal(t, "hello.md is published", first.Output)
	n1, ok := first.Board.Node("n1")
	require.True(t, ok)
	assert.Equal(t, nodes.NodeCompleted, n1.Status)
	for range 99 {
		res := replay.Run(t, cassette)
		assert.Equal(t, first.Output, res.Output)
		assert.Equal(t, first.RunID, res.RunID)
	}
}

// Code that changed what it asks a model — here a worker's extra tool, which changes the tools
// its requests list — fails the replay at the first such call, named, with the difference.
func TestReplayDiverges(t *testing.T) {
	extra := tools.Func("note", "Take a note.", func(context.Context, struct{}) (string, error) { return "", nil })
	_, err := replay.Play(t.Context(), cassette, t.TempDir(), nodes.WithWorkerTools(func(nodes.Worker, nodes.Node) []tools.Tool {
		return []tools.Tool{extra}
	}))
	var d *replay.Divergence
	require.ErrorAs(t, err, &d)
	assert.Equal(t, replay.KindModel, d.Kind)
	assert.True(t, strings.HasSuffix(d.Who, " n1#1"), "a worker's call on n1's first attempt: %s", d.Who)
	assert.Equal(t, 1, d.Seq)
	assert.Contains(t, d.Diff, `+       "name": "note"`)
	assert.Contains(t, err.Error(), "model call 1 of "+d.Who)
}
