package sandbox_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/agiraph/agiraph/runtime/sandbox"
)

func TestEnvDropsSecretsUnlessKept(t *testing.T) {
	env := []string{"PATH=/bin", "HOME=/root", "ANTHROPIC_API_KEY=k1", "OPENAI_API_KEY=k2", "GITHUB_TOKEN=t", "AWS_REGION=eu", "DB_PASSWORD=p", "LANG=C"}
	assert.Equal(t, []string{"PATH=/bin", "HOME=/root", "ANTHROPIC_API_KEY=k1", "LANG=C"},
		sandbox.Policy{KeepEnv: []string{"ANTHROPIC_API_KEY"}}.Env(env))
	assert.Equal(t, env, sandbox.Policy{Off: true}.Env(env))
	assert.True(t, sandbox.Secret("gemini_api_key"))
	assert.False(t, sandbox.Secret("PATH"))
}
