package main

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/nodes"
	"github.com/agiraph/agiraph/nodes/replay"
	"github.com/agiraph/agiraph/nodes/workspace"
	"github.com/agiraph/agiraph/providers/providertest"
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

// A changed prompt — here the coordinator's, from the agent's SOUL.md — fails the replay at the
// first call that asks otherwise than recorded, named, with the difference.
func TestReplayDiverges(t *testing.T) {
	home := t.TempDir()
	require.NoError(t, os.WriteFile(workspace.Home(home).Soul(), []byte("You are a careful coordinator."), 0o644))
	_, err := replay.Play(t.Context(), cassette, home)
	var d *replay.Divergence
	require.ErrorAs(t, err, &d)
	assert.Equal(t, replay.KindModel, d.Kind)
	assert.Equal(t, "coordinator", d.Who)
	assert.Equal(t, 1, d.Seq)
	assert.Contains(t, d.Diff, `-     "system": "You are the coordinator of a team`)
	assert.Contains(t, d.Diff, `+     "system": "You are a careful coordinator.`)
	assert.Contains(t, err.Error(), "diverged at model call 1 of coordinator")
}
