// Package anthropic adapts the Anthropic Messages API to providers.Model, through the official Go
// SDK (github.com/anthropics/anthropic-sdk-go).
//
// Generate translates a canonical providers.Request into a Messages API request: the system prompt
// becomes a system text block; text, tool calls and tool results become text, tool_use and
// tool_result blocks (several of each per message, for parallel tool use); opaque parts that came
// from Anthropic (thinking blocks with their signatures, server tool uses and results, ...) are sent
// back byte for byte, and opaque parts of other providers are dropped; consecutive messages of one
// role are merged into one. Tool specs become tool definitions, with Anthropic's server web search
// tool added when the Model was built WithWebSearch. Unless WithoutPromptCaching is given, prompt
// caching breakpoints mark the system prompt, the last tool and the last message.
//
// The answer comes back as one assistant message: text blocks as text parts, tool_use blocks as
// tool calls with their raw input as arguments, and every other block as an opaque part holding
// the block's JSON. A turn the API pauses (stop reason pause_turn, during long server tool use)
// is continued automatically, a few times at most, and returned as one message with the usage
// summed. Usage is priced from Prices.
//
// With Request.OnText set the answer is streamed and OnText sees the text as it arrives; the
// Response is the same as without streaming. A request whose max_tokens is too large for a plain
// call (the SDK refuses those that may run over ten minutes) is streamed as well.
//
// Failures are *providers.Error values whose Kind comes from the HTTP status refined by the API's
// error type (also for errors that arrive inside a stream), with the retry-after delay when the API
// gave one. The SDK's own retries are off: wrap the Model in providers.WithRetry. When the caller's
// context ends, Generate returns an error that matches context.Canceled or
// context.DeadlineExceeded and is not retryable.
//
// Credentials and endpoint come from the options or from ANTHROPIC_API_KEY and ANTHROPIC_BASE_URL;
// the SDK's other environment lookups (auth tokens, profiles, federation, custom headers) are
// turned off.
package anthropic
