package anthropic

import (
	"encoding/json"

	sdk "github.com/anthropics/anthropic-sdk-go"

	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/tools"
)

// Prices are the Claude models' prices in US dollars per million tokens, by model-id prefix. A
// cache write costs 1.25 times the input price (5-minute cache), a cache read a tenth of it.
var Prices = providers.Prices{
	"claude-opus-4":     claudePrice(15, 75),
	"claude-opus-4-1":   claudePrice(15, 75),
	"claude-opus-4-5":   claudePrice(5, 25),
	"claude-opus-4-6":   claudePrice(5, 25),
	"claude-sonnet-4":   claudePrice(3, 15),
	"claude-3-7-sonnet": claudePrice(3, 15),
	"claude-haiku-4-5":  claudePrice(1, 5),
	"claude-3-5-haiku":  claudePrice(0.8, 4),
}

// claudePrice returns the price of a model from its input and output prices.
func claudePrice(input, output float64) providers.Price {
	return providers.Price{Input: input, Output: output, CacheWrite: 1.25 * input, CacheRead: 0.1 * input}
}

// partsOf translates an answer's content blocks: text to text parts (adjacent ones joined),
// tool_use to tool calls, any other block to an opaque part holding its JSON.
func partsOf(blocks []sdk.ContentBlockUnion) []providers.Part {
	var parts []providers.Part
	for _, b := range blocks {
		switch b.Type {
		case "text":
			parts = appendParts(parts, providers.Text(b.Text))
		case "tool_use":
			call := tools.Call{ID: b.ID, Name: b.Name, Args: append(json.RawMessage(nil), b.Input...)}
			parts = append(parts, providers.Part{Type: providers.ToolCallPart, ToolCall: &call})
		default:
			parts = append(parts, providers.Part{
				Type: providers.OpaquePart, Provider: providerName, Raw: json.RawMessage(b.RawJSON()),
			})
		}
	}
	return parts
}

// appendParts appends parts to dst, joining a text part to a text part before it.
func appendParts(dst []providers.Part, parts ...providers.Part) []providers.Part {
	for _, p := range parts {
		if n := len(dst); n > 0 && p.Type == providers.TextPart && dst[n-1].Type == providers.TextPart {
			dst[n-1].Text += p.Text
			continue
		}
		dst = append(dst, p)
	}
	return dst
}

// stopReason translates the API's stop reason; one it does not know is passed on as it is.
func stopReason(r sdk.StopReason) providers.StopReason {
	switch r {
	case sdk.StopReasonEndTurn:
		return providers.StopEnd
	case sdk.StopReasonToolUse:
		return providers.StopToolUse
	case sdk.StopReasonMaxTokens, sdk.StopReasonModelContextWindowExceeded:
		return providers.StopMaxTokens
	case sdk.StopReasonStopSequence:
		return providers.StopSequence
	case sdk.StopReasonPauseTurn:
		return providers.StopPause
	case sdk.StopReasonRefusal:
		return providers.StopRefusal
	}
	return providers.StopReason(r)
}

// usage translates an answer's usage and prices it for the model that answered.
func (m *Model) usage(msg *sdk.Message) providers.Usage {
	u := providers.Usage{
		InputTokens:      int(msg.Usage.InputTokens),
		OutputTokens:     int(msg.Usage.OutputTokens),
		CacheReadTokens:  int(msg.Usage.CacheReadInputTokens),
		CacheWriteTokens: int(msg.Usage.CacheCreationInputTokens),
	}
	model := string(msg.Model)
	if model == "" {
		model = m.model
	}
	return Prices.Priced(model, u)
}
