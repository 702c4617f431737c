package nodes

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/providers"
)

// A budget's limits are reached in dollars or in tokens, every kind of token counting; a zero
// limit is none; the soft limit is a fraction of each.
func TestBudgetReached(t *testing.T) {
	spent := providers.Usage{InputTokens: 500, OutputTokens: 100, CacheReadTokens: 300, CacheWriteTokens: 100, CostUSD: 0.42}
	assert.Equal(t, "1000 tokens of 1000", Budget{Tokens: 1000}.reached(spent, 1))
	assert.Equal(t, "", Budget{Tokens: 1001}.reached(spent, 1))
	assert.Equal(t, "$0.4200 of $0.4000", Budget{USD: 0.40}.reached(spent, 1))
	assert.Equal(t, "", Budget{USD: 0.50}.reached(spent, 1))
	assert.Equal(t, "$0.4200 of $0.5000", Budget{USD: 0.50}.reached(spent, Budget{}.soft()), "the soft limit is 80% by default")
	assert.Equal(t, "1000 tokens of 900, $0.4200 of $0.4000", Budget{USD: 0.40, Tokens: 900}.reached(spent, 1))
	assert.Equal(t, "", Budget{}.reached(spent, 1))
	assert.Error(t, Budget{Soft: 1}.Check())
	assert.Error(t, Budget{USD: -1}.Check())
	assert.NoError(t, Budget{USD: 1, Tokens: 10, Soft: 0.5}.Check())
}

// A node written with a count of nothing spent (as nodes were before such a count was left
// out) counts what its assignment spends next as a node without one does.
func TestNodeCountsOnlyWhatWasSpent(t *testing.T) {
	var old Node
	require.NoError(t, json.Unmarshal([]byte(`{"id":"n1","task":"Write note 1.","stage":1,"status":"completed","worker":"w1",`+
		`"assignment":"r.n1.1","attempts":1,"applied":"r.n1.1","counted":{"assignment":"r.n1.1","usage":{"input_tokens":0,"output_tokens":0}},`+
		`"created_by":"coordinator","created":"2026-11-28T04:09:41Z","updated":"2026-11-28T04:09:41Z"}`), &old))
	now := old
	now.Counted = Spend{}
	u := providers.Usage{InputTokens: 10, OutputTokens: 2}
	assert.Equal(t, u, old.newSpend("r.n1.1", u))
	assert.Equal(t, u, now.newSpend("r.n1.1", u))

}
