package sandbox_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/sandbox"
)

func TestEnvDropsSecretsUnlessKept(t *testing.T) {
	env := []string{"PATH=/bin", "HOME=/root", "ANTHROPIC_API_KEY=k1", "OPENAI_API_KEY=k2", "GITHUB_TOKEN=t", "AWS_REGION=eu", "DB_PASSWORD=p", "LANG=C"}
	assert.Equal(t, []string{"PATH=/bin", "HOME=/root", "ANTHROPIC_API_KEY=k1", "LANG=C"},
		sandbox.Policy{KeepEnv: []string{"ANTHROPIC_API_KEY"}}.Env(env))
	assert.Equal(t, env, sandbox.Policy{Off: true}.Env(env))
	assert.True(t, sandbox.Secret("gemini_api_key"))
	assert.False(t, sandbox.Secret("PATH"))
}

// A known CLI gets its working directory and configuration folder (created) and its keys; the
// variables it is given are kept; the assignment's policy is kept and not changed in place.
func TestCLIPolicyAddsWhatTheAgentNeeds(t *testing.T) {
	home, work, codexHome := t.TempDir(), t.TempDir(), filepath.Join(t.TempDir(), "codex")
	base := sandbox.Policy{Writable: make([]string, 1, 4), Readable: []string{"/run"}}
	base.Writable[0] = "/notes"

	p, err := sandbox.CLI{Program: "/usr/local/bin/gemini", Dir: work, Env: []string{"HOME=/elsewhere", "HOME=" + home},
		Given: []string{"GOOGLE_GEMINI_BASE_URL=http://x", "MY_TOKEN=t"}}.Policy(base, nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"/notes", work, filepath.Join(home, ".gemini")}, p.Writable)
	assert.Equal(t, []string{"/run"}, p.Readable)
	assert.Equal(t, []string{"GOOGLE_GEMINI_BASE_URL", "MY_TOKEN", "GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_APPLICATION_CREDENTIALS"}, p.KeepEnv)
	assert.DirExists(t, filepath.Join(home, ".gemini"))
	assert.Equal(t, []string{"/notes"}, base.Writable, "the assignment's policy is not changed")

	p, err = sandbox.CLI{Program: "codex", Dir: work, Env: []string{"HOME=" + home, "CODEX_HOME=" + codexHome}}.Policy(sandbox.Policy{}, nil)
	require.NoError(t, err)
	assert.Equal(t, []string{work, codexHome}, p.Writable)
	assert.DirExists(t, codexHome)

	p, err = sandbox.CLI{Program: "./my-agent", Dir: work, Given: []string{"A=1"}}.Policy(sandbox.Policy{}, nil)
	require.NoError(t, err)
	assert.Equal(t, []string{work}, p.Writable, "an unknown program gets its working directory only")
	assert.Equal(t, []string{"A"}, p.KeepEnv)
}

// The change function has the last word; a policy off stays as it is; no network is an error.
func TestCLIPolicyChangeOffAndNetwork(t *testing.T) {
	work := t.TempDir()
	extra := filepath.Join(t.TempDir(), "extra")
	require.NoError(t, os.Mkdir(extra, 0o755))
	p, err := sandbox.CLI{Program: "x", Dir: work}.Policy(sandbox.Policy{}, func(p sandbox.Policy) sandbox.Policy {
		p.Writable = append(p.Writable, extra)
		return p
	})
	require.NoError(t, err)
	assert.Equal(t, []string{work, extra}, p.Writable)

	p, err = sandbox.CLI{Program: "claude", Dir: "/nonexistent/never/created"}.Policy(sandbox.Policy{Off: true}, nil)
	require.NoError(t, err)
	assert.Equal(t, sandbox.Policy{Off: true}, p)

	_, err = sandbox.CLI{Program: "x", Dir: work}.Policy(sandbox.Policy{NoNetwork: true}, nil)
	assert.True(t, errors.Is(err, sandbox.ErrNoNetwork), "%v", err)
	_, err = sandbox.CLI{Program: "x", Dir: work}.Policy(sandbox.Policy{}, func(p sandbox.Policy) sandbox.Policy {
		p.NoNetwork = true
		return p
	})
	assert.ErrorIs(t, err, sandbox.ErrNoNetwork)
}

func TestString(t *testing.T) {
	assert.Equal(t, "no sandbox", sandbox.Policy{Off: true}.String())
	assert.Equal(t, "sandbox: writes only /a, /tmp (its own); no network; secrets kept in its environment: K",
		sandbox.Policy{Writable: []string{"/a"}, NoNetwork: true, KeepEnv: []string{"K"}}.String())
}
