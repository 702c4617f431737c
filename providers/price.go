package providers

import "strings"

// Price is what a model charges, in US dollars per million tokens.
type Price struct {
	Input      float64 // uncached input
	Output     float64
	CacheRead  float64 // input read from the prompt cache
	CacheWrite float64 // input written to the prompt cache
}

// Cost returns what u cost at price p.
func (p Price) Cost(u Usage) float64 {
	return (float64(u.InputTokens)*p.Input +
		float64(u.OutputTokens)*p.Output +
		float64(u.CacheReadTokens)*p.CacheRead +
		float64(u.CacheWriteTokens)*p.CacheWrite) / 1e6
}

// Prices maps model names, or prefixes of them, to their prices.
type Prices map[string]Price

// Lookup returns the price of model: the entry with the longest key that model starts with
// ("claude-sonnet-4-5" matches "claude-sonnet-4-5-20250929"). ok is false when no key matches.
func (ps Prices) Lookup(model string) (p Price, ok bool) {
	best := -1
	for k, v := range ps {
		if strings.HasPrefix(model, k) && len(k) > best {
			p, best = v, len(k)
		}
	}
	return p, best >= 0
}

// Priced returns u with CostUSD set from ps for model, or u unchanged when the price is unknown.
func (ps Prices) Priced(model string, u Usage) Usage {
	if p, ok := ps.Lookup(model); ok {
		u.CostUSD = p.Cost(u)
	}
	return u
}
