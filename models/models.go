// Package models resolves "provider/model" names to providers.Model values, so a program (or a
// config file, or a flag) can name any model the library serves:
//
//	anthropic/claude-sonnet-4-5   Anthropic Messages API (ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL)
//	openai/gpt-4o                 OpenAI Chat Completions (OPENAI_API_KEY, OPENAI_BASE_URL)
//	openrouter/meta-llama/...     OpenRouter (OPENROUTER_API_KEY)
//	ollama/qwen2.5                a local Ollama through its OpenAI-compatible API (OLLAMA_HOST)
//	gemini/gemini-2.5-flash       Google Gemini through its OpenAI-compatible API (GEMINI_API_KEY)
//	scripted/echo                 an offline model that repeats the last user message
//
// Every model New returns retries failed calls that may succeed later (rate limits, overloads,
// server and connection errors) as providers.WithRetry does, and sends the others (bad request,
// authentication, model not found, context window) once; its error, a *providers.RetryError, says
// how many attempts were made. Models given with WithModels are served under their own names,
// which is how tests and offline demos name scripted models.
package models

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/providers/anthropic"
	"github.com/agiraph/agiraph/providers/langchain"
	"github.com/agiraph/agiraph/providers/scripted"
)

// Option configures New.
type Option func(*config)

type config struct {
	key, baseURL string
	client       *http.Client
	retry        providers.Retry
	noRetry      bool
	textTools    bool
	models       []providers.Model
	anthropic    []anthropic.Option
}

// WithAPIKey sets the API key, in place of the provider's environment variable.
func WithAPIKey(key string) Option { return func(c *config) { c.key = key } }

// WithBaseURL sets the provider's base URL, in place of its environment variable or default.
func WithBaseURL(url string) Option { return func(c *config) { c.baseURL = url } }

// WithHTTPClient sets the HTTP client the provider's API is called with.
func WithHTTPClient(client *http.Client) Option { return func(c *config) { c.client = client } }

// WithRetry sets how failed calls are retried (see providers.Retry for the defaults).
func WithRetry(r providers.Retry) Option { return func(c *config) { c.retry = r } }

// WithoutRetry turns retrying off: the first failure is returned.
func WithoutRetry() Option { return func(c *config) { c.noRetry = true } }

// WithTextTools gives tool calling through the prompt to a model that has none natively (see
// providers.WithTextTools); for example a small local model served by Ollama.
func WithTextTools() Option { return func(c *config) { c.textTools = true } }

// WithModels serves the given models under their own names (Model.Name), ahead of the built-in
// providers: New(m.Name()) returns m (with retrying, unless WithoutRetry).
func WithModels(ms ...providers.Model) Option {
	return func(c *config) { c.models = append(c.models, ms...) }
}

// WithAnthropic passes options to the Anthropic adapter (for example anthropic.WithWebSearch).
func WithAnthropic(opts ...anthropic.Option) Option {
	return func(c *config) { c.anthropic = append(c.anthropic, opts...) }
}

// Providers returns the provider names New serves.
func Providers() []string {
	names := []string{"anthropic", "scripted"}
	for _, s := range langchain.Services() {
		names = append(names, s.Provider)
	}
	slices.Sort(names)
	return names
}

// New returns the model name names. A name no provider serves is an error of kind
// providers.ErrUnknownModel; a provider whose key is missing, one of kind providers.ErrMissingKey
// naming the environment variable to set and WithAPIKey.
func New(name string, opts ...Option) (providers.Model, error) {
	var c config
	for _, o := range opts {
		o(&c)
	}
	m, err := c.resolve(name)
	if err != nil {
		var mk *providers.MissingKeyError
		if errors.As(err, &mk) {
			mk.Option = "models.WithAPIKey" // the option New's caller passes, not the adapter's
		}
		return nil, err
	}
	if c.textTools {
		m = providers.WithTextTools(m)
	}
	if !c.noRetry {
		m = providers.WithRetry(m, c.retry)
	}
	return m, nil
}

func (c *config) resolve(name string) (providers.Model, error) {
	for _, m := range c.models {
		if m.Name() == name {
			return m, nil
		}
	}
	provider, model, err := providers.ParseName(name)
	if err != nil {
		return nil, &providers.Error{Kind: providers.ErrUnknownModel, Message: err.Error()}
	}
	switch provider {
	case "anthropic":
		opts := forward(c, anthropic.WithAPIKey, anthropic.WithBaseURL, anthropic.WithHTTPClient)
		return anthropic.New(model, append(opts, c.anthropic...)...)
	case "scripted":
		if model == "echo" {
			return scripted.NewFunc("echo", echo), nil
		}
		return nil, &providers.Error{Provider: provider, Model: model, Kind: providers.ErrUnknownModel,
			Message: "scripted models other than scripted/echo are given with models.WithModels"}
	}
	for _, s := range langchain.Services() {
		if s.Provider == provider {
			opts := forward(c, langchain.WithAPIKey, langchain.WithBaseURL, langchain.WithHTTPClient)
			return langchain.NewService(provider, model, opts...)
		}
	}
	return nil, &providers.Error{Provider: provider, Model: model, Kind: providers.ErrUnknownModel,
		Message: fmt.Sprintf("no provider %q; known: %s", provider, strings.Join(Providers(), ", "))}
}

// forward turns the key, base URL and HTTP client set on c into an adapter's options.
func forward[O any](c *config, key, url func(string) O, client func(*http.Client) O) []O {
	var opts []O
	if c.key != "" {
		opts = append(opts, key(c.key))
	}
	if c.baseURL != "" {
		opts = append(opts, url(c.baseURL))
	}
	if c.client != nil {
		opts = append(opts, client(c.client))
	}
	return opts
}

// echo answers with the text of the last user message.
func echo(_ context.Context, req providers.Request) (scripted.Turn, error) {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == providers.User {
			return scripted.Turn{Text: req.Messages[i].Text()}, nil
		}
	}
	return scripted.Turn{}, nil
}
