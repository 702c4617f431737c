// Package langchain bridges langchaingo models (github.com/tmc/langchaingo/llms) to
// providers.Model, and serves the OpenAI-compatible services through langchaingo's OpenAI client.
//
// # The bridge
//
// New wraps any llms.Model. Generate translates the canonical request to langchaingo's
// MessageContent list and call options, and the answer back:
//
//   - the system prompt becomes a system message; user text a human message; an assistant
//     message one AI message holding its text and all its tool calls (so the wire carries one
//     assistant message with several tool_calls); each tool result its own tool message, with
//     "Error: " prefixed to the content of an error result (the OpenAI format has no is_error);
//     opaque parts are dropped, since they belong to other providers;
//   - tools become function tools with the schema as parameters; the tool choice becomes
//     "auto", "required" (ChooseAny), "none" or the function object of a named tool, and is sent
//     only with tools (OpenAI refuses tool_choice without them); MaxTokens, Temperature and Stop
//     become the matching call options; OnText makes the call stream;
//   - the answer's text and tool calls become parts (empty arguments become {}), its finish
//     reason a StopReason, and the token counts of GenerationInfo a Usage, priced from the
//     model's Prices. OpenAI's prompt_tokens include cached tokens: InputTokens excludes them.
//     GenerationInfo in Anthropic's style (InputTokens, CacheReadInputTokens, ...) is read too.
//
// Errors are *providers.Error values. A cancelled or expired context returns the context's
// error itself (langchaingo turns it into an opaque "request cancelled" error, and a stream
// cancelled midway into a truncated success).
//
// # Services
//
// NewService builds a model of one of the OpenAI-compatible services of Services (OpenAI,
// OpenRouter, Ollama's /v1 endpoint and Gemini's OpenAI endpoint) with langchaingo's OpenAI
// client, over an HTTP client whose transport records, for each Generate, the response's status,
// retry-after header and error body (langchaingo keeps only the error's message). So errors of
// services carry their HTTP status, retry-after and a kind refined by the error's code:
// context_length_exceeded is ErrContextWindow, insufficient_quota is ErrAuth (the account has
// no credit: waiting does not help, another key or provider does), and an error sent inside a
// stream, which langchaingo ignores, is found by the transport and returned typed.
//
// For models given to New, which have no such transport, errors are classified from
// langchaingo's standard *llms.Error codes when present, else from the text: an HTTP status in
// it ("status code: 429") by providers.KindOfStatus, words such as "context length" or "rate
// limit"; anything else is ErrServer, so that a passing failure is retried rather than fatal.
//
// # langchaingo v0.1.14 quirks handled here
//
//   - Temperature is always sent, 0 when unset, overriding the service's default (and refused
//     by some reasoning models): the services' transport removes it from requests that set none.
//   - A streaming callback receives each tool-call delta as JSON, as if it were text: the bridge
//     recognises these chunks and does not pass them to OnText; text that shared a chunk with a
//     tool-call delta is sent once the answer is complete.
//   - An error chunk in a stream is skipped and the stream returns an empty success: the
//     services' transport records it and Generate returns it as an error.
//   - Streamed tool calls are assembled by position, not by their index: arguments always go to
//     the last call (interleaved parallel calls get mixed up, and a call whose first delta has
//     arguments but no "type" is merged into the one before or dropped), and the finish reason
//     is that of the last chunk with choices. The services' transport assembles the calls by
//     index (a new id at a used index starting a new call) and keeps the last finish reason
//     given, and the bridge takes those.
//   - The answering model's name is not passed on: the services' transport reads it.
//   - For models matching ^o[13](-mini|-preview)?$ (o1, o3, o3-mini, ...) langchaingo merges the
//     system prompt into the first user message, and drops the temperature of o1-*, o3 and
//     gpt-5*; the bridge leaves this as it is.
//   - Only max_completion_tokens is sent by default; OpenRouter, Ollama and Gemini get the
//     older max_tokens, which they all accept.
package langchain
