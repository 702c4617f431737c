// Package langchain bridges langchaingo models (github.com/tmc/langchaingo/llms) to
// providers.Model, and serves the OpenAI-compatible services through langchaingo's OpenAI client.
//
// [New] wraps any llms.Model: Generate translates the canonical request to langchaingo's
// messages and call options, and the answer back, with its tool calls, usage and cost.
// [NewService] makes a model of one of the [Services] (OpenAI, OpenRouter, Ollama, Gemini) over a
// transport that keeps what langchaingo drops, so that its errors carry their HTTP status,
// retry-after and kind. Errors are *providers.Error values; a cancelled context returns the
// context's error itself.
//
// The translation, how errors are classified, and the langchaingo quirks handled here are in
// docs/providers.md (langchaingo).
package langchain
