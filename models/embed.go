package models

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/agiraph/agiraph/providers"
)

// An EmbedderProvider opens the embedders of one provider, as a Provider opens its models: model
// is the name's part after "provider/", and s what NewEmbedder's caller set.
type EmbedderProvider func(model string, s Settings) (providers.Embedder, error)

var (
	embMu     sync.RWMutex
	embedders = map[string]EmbedderProvider{}
)

// RegisterEmbedder serves the embedder names "name/…" with p, for every caller of NewEmbedder. A
// provider package calls it from its init function. It panics when name is empty or holds a
// "/", when p is nil, or when name is registered already.
func RegisterEmbedder(name string, p EmbedderProvider) {
	embMu.Lock()
	defer embMu.Unlock()
	if name == "" || strings.Contains(name, "/") || p == nil {
		panic(fmt.Sprintf("models: RegisterEmbedder(%q): not a provider name, or no provider", name))
	}
	if _, dup := embedders[name]; dup {
		panic(fmt.Sprintf("models: RegisterEmbedder(%q) called twice", name))
	}
	embedders[name] = p
}

// WithEmbedders serves the given embedders under their own names (Embedder.Name), ahead of the
// registered providers: NewEmbedder(e.Name()) returns e.
func WithEmbedders(es ...providers.Embedder) Option {
	return func(c *config) { c.embedders = append(c.embedders, es...) }
}

// NewEmbedder returns the embedder named name ("openai/text-embedding-3-small",
// "gemini/text-embedding-004", "ollama/nomic-embed-text"), with the key, base URL and HTTP client
// of WithAPIKey, WithBaseURL and WithHTTPClient. A name no provider serves is an error of kind
// providers.ErrUnknownModel; a provider whose key is missing, one of kind providers.ErrMissingKey
// naming the environment variable to set and WithAPIKey. Embedders are not retried: a caller
// that can do without vectors for a while (as memory search does) is better served at once.
func NewEmbedder(name string, opts ...Option) (providers.Embedder, error) {
	var c config
	for _, o := range opts {
		o(&c)
	}
	for _, e := range c.embedders {
		if e.Name() == name {
			return e, nil
		}
	}
	provider, model, err := providers.ParseName(name)
	if err != nil {
		return nil, &providers.Error{Kind: providers.ErrUnknownModel, Message: err.Error()}
	}
	embMu.RLock()
	p, ok := embedders[provider]
	known := slices.Sorted(maps.Keys(embedders))
	embMu.RUnlock()
	if !ok {
		msg := fmt.Sprintf("no provider %q serves embeddings; known: %s", provider, strings.Join(known, ", "))
		if pkg, ours := packages[provider]; ours {
			msg = fmt.Sprintf("provider %q serves no embeddings, or is served once its package is imported: import _ %q", provider, pkg)
		}
		return nil, &providers.Error{Provider: provider, Model: model, Kind: providers.ErrUnknownModel, Message: msg}
	}
	e, err := p(model, c.settings)
	if err != nil {
		return nil, callersKey(err)
	}
	return e, nil
}
