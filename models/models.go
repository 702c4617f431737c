// Package models resolves "provider/model" names to providers.Model values, so a program (or a
// config file, or a flag) can name any model the library serves. A provider serves its names once
// its package is imported, as database/sql drivers do:
//
//	import _ "github.com/agiraph/agiraph/providers/anthropic" // anthropic/claude-sonnet-4-5 …
//	import _ "github.com/agiraph/agiraph/providers/langchain" // openai/, openrouter/, ollama/, gemini/
//
// scripted/echo, an offline model that repeats the last user message, is always served.
//
// A name may be a fallback chain, names joined by commas ("anthropic/claude-sonnet-4-5,
// openai/gpt-4o"), tried in order (see New and providers.Fallback).
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
	"sync"

	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/providers/scripted"
)

// A Provider opens the models of one provider: model is the name's part after "provider/", and
// s what New's caller set. A provider package registers one with Register.
type Provider func(model string, s Settings) (providers.Model, error)

// Settings are what New passes a Provider: each is empty unless its option was given, and the
// provider then reads its own environment variables.
type Settings struct {
	APIKey     string       // WithAPIKey
	BaseURL    string       // WithBaseURL
	HTTPClient *http.Client // WithHTTPClient
}

// Options turns s into a provider package's options: key, url and client make its options of an
// API key, a base URL and an HTTP client; a setting left empty makes none.
func Options[O any](s Settings, key, url func(string) O, client func(*http.Client) O) []O {
	var opts []O
	if s.APIKey != "" {
		opts = append(opts, key(s.APIKey))
	}
	if s.BaseURL != "" {
		opts = append(opts, url(s.BaseURL))
	}
	if s.HTTPClient != nil {
		opts = append(opts, client(s.HTTPClient))
	}
	return opts
}

var (
	regMu    sync.RWMutex
	registry = map[string]Provider{}
)

// packages names the package that serves each provider the library has, for the error of a
// name whose package was not imported.
var packages = map[string]string{
	"anthropic":  "github.com/agiraph/agiraph/providers/anthropic",
	"openai":     "github.com/agiraph/agiraph/providers/langchain",
	"openrouter": "github.com/agiraph/agiraph/providers/langchain",
	"ollama":     "github.com/agiraph/agiraph/providers/langchain",
	"gemini":     "github.com/agiraph/agiraph/providers/langchain",
}

// Register serves the names "name/…" with p, for every caller of New. A provider package calls
// it from its init function. It panics when name is empty, holds a "/", is "scripted", or is
// registered already.
func Register(name string, p Provider) {
	regMu.Lock()
	defer regMu.Unlock()
	if name == "" || strings.Contains(name, "/") || name == "scripted" || p == nil {
		panic(fmt.Sprintf("models: Register(%q): not a provider name, or no provider", name))
	}
	if _, dup := registry[name]; dup {
		panic(fmt.Sprintf("models: Register(%q) called twice", name))
	}
	registry[name] = p
}

// Option configures New.
type Option func(*config)

type config struct {
	settings  Settings // WithAPIKey, WithBaseURL, WithHTTPClient
	retry     providers.Retry
	noRetry   bool
	textTools bool
	fallback  providers.FallbackOn
	models    []providers.Model
	providers map[string]Provider  // WithProvider's
	embedders []providers.Embedder // WithEmbedders
}

// WithAPIKey sets the API key, in place of the provider's environment variable.
func WithAPIKey(key string) Option { return func(c *config) { c.settings.APIKey = key } }

// WithBaseURL sets the provider's base URL, in place of its environment variable or default.
func WithBaseURL(url string) Option { return func(c *config) { c.settings.BaseURL = url } }

// WithHTTPClient sets the HTTP client the provider's API is called with.
func WithHTTPClient(client *http.Client) Option {
	return func(c *config) { c.settings.HTTPClient = client }
}

// WithRetry sets how failed calls are retried (see providers.Retry for the defaults).
func WithRetry(r providers.Retry) Option { return func(c *config) { c.retry = r } }

// WithoutRetry turns retrying off: the first failure is returned.
func WithoutRetry() Option { return func(c *config) { c.noRetry = true } }

// WithTextTools gives tool calling through the prompt to a model that has none natively (see
// providers.WithTextTools); for example a small local model served by Ollama.
func WithTextTools() Option { return func(c *config) { c.textTools = true } }

// WithFallbackOn adds failures that move a fallback chain (see New) on to its next model.
func WithFallbackOn(on providers.FallbackOn) Option { return func(c *config) { c.fallback = on } }

// WithModels serves the given models under their own names (Model.Name), ahead of the registered
// providers: New(m.Name()) returns m (with retrying, unless WithoutRetry).
func WithModels(ms ...providers.Model) Option {
	return func(c *config) { c.models = append(c.models, ms...) }
}

// WithProvider serves the names "name/…" with p, for this call of New, in place of the provider
// registered under name; for example anthropic.Provider(anthropic.WithWebSearch(…)).
func WithProvider(name string, p Provider) Option {
	return func(c *config) {
		if c.providers == nil {
			c.providers = map[string]Provider{}
		}
		c.providers[name] = p
	}
}

// Providers returns the provider names New serves without WithProvider: those registered, and
// scripted.
func Providers() []string {
	regMu.RLock()
	defer regMu.RUnlock()
	names := []string{"scripted"}
	for name := range registry {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// New returns the model name names. A name no provider serves is an error of kind
// providers.ErrUnknownModel; a provider whose key is missing, one of kind providers.ErrMissingKey
// naming the environment variable to set and WithAPIKey.
//
// A name may be a fallback chain, names joined by commas ("anthropic/claude-sonnet-4-5,
// openai/gpt-4o"): the model tries each in order, moving on when one fails for a reason the next
// may not share (see providers.Fallback and WithFallbackOn). Each model of the chain retries on
// its own first, and the options apply to each (a key or base URL given here goes to every
// model of the chain; give per-provider ones with WithProvider or the environment).
func New(name string, opts ...Option) (providers.Model, error) {
	var c config
	for _, o := range opts {
		o(&c)
	}
	if !strings.Contains(name, ",") {
		return c.open(name)
	}
	var chain []providers.Model
	for _, link := range strings.Split(name, ",") {
		link = strings.TrimSpace(link)
		if link == "" {
			return nil, &providers.Error{Kind: providers.ErrUnknownModel, Message: fmt.Sprintf("fallback chain %q has an empty model name", name)}
		}
		m, err := c.open(link)
		if err != nil {
			return nil, fmt.Errorf("models: fallback chain %q: %w", name, err)
		}
		chain = append(chain, m)
	}
	return providers.Fallback(c.fallback, chain...), nil
}

// open returns the one model name names, with the layers c asks for.
func (c *config) open(name string) (providers.Model, error) {
	m, err := c.resolve(name)
	if err != nil {
		return nil, callersKey(err)
	}
	if c.textTools {
		m = providers.WithTextTools(m)
	}
	if !c.noRetry {
		m = providers.WithRetry(m, c.retry)
	}
	return m, nil
}

// callersKey returns err, whose missing key, if that is its cause, names the option New's or
// NewEmbedder's caller passes rather than the adapter's.
func callersKey(err error) error {
	var mk *providers.MissingKeyError
	if errors.As(err, &mk) {
		mk.Option = "models.WithAPIKey"
	}
	return err
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
	if provider == "scripted" {
		if model == "echo" {
			return scripted.NewFunc("echo", echo), nil
		}
		return nil, &providers.Error{Provider: provider, Model: model, Kind: providers.ErrUnknownModel,
			Message: "scripted models other than scripted/echo are given with models.WithModels"}
	}
	p, ok := c.providers[provider]
	if !ok {
		regMu.RLock()
		p, ok = registry[provider]
		regMu.RUnlock()
	}
	if !ok {
		msg := fmt.Sprintf("no provider %q; known: %s", provider, strings.Join(Providers(), ", "))
		if pkg, ours := packages[provider]; ours {
			msg = fmt.Sprintf("provider %q is served once its package is imported: import _ %q", provider, pkg)
		}
		return nil, &providers.Error{Provider: provider, Model: model, Kind: providers.ErrUnknownModel, Message: msg}
	}
	return p(model, c.settings)
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
