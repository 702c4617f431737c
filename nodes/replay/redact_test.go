package replay

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// The values of the variables that hold keys and tokens are removed, whatever their program:
// the providers', the CLI agents' (CLAUDE_CODE_OAUTH_TOKEN, CODEX_API_KEY), the server's.
func TestRedactorRemovesKeyVariables(t *testing.T) {
	r := newRedactor([]string{
		"ANTHROPIC_API_KEY=ak-one", "CLAUDE_CODE_OAUTH_TOKEN=oauth-two", "ANTHROPIC_AUTH_TOKEN=auth-three",
		"CODEX_API_KEY=codex-four", "DEEPSEEK_API_KEY=ds-five", "AGIRAPH_TOKEN=agi-six",
		"AWS_SECRET_ACCESS_KEY=aws-seven", "PGPASSWORD=pg-eight",
		"HOME=/root", "PATH=/usr/bin", "KEYBOARD=us-layout", "TOKENIZER=words", "SHORT_TOKEN=abc",
	})
	text := "ak-one oauth-two auth-three codex-four ds-five agi-six aws-seven pg-eight /root /usr/bin us-layout words abc"
	assert.Equal(t, "[REDACTED] [REDACTED] [REDACTED] [REDACTED] [REDACTED] [REDACTED] [REDACTED] [REDACTED] /root /usr/bin us-layout words abc", r.clean(text))
}
