package langchain

import (
	"fmt"
	"maps"
	"net/http"
	"os"
	"slices"
	"strings"

	"github.com/tmc/langchaingo/llms/openai"

	"github.com/agiraph/agiraph/models"
	"github.com/agiraph/agiraph/providers"
)

// Service is an OpenAI-compatible service served through langchaingo's OpenAI client.
type Service struct {
	// Provider is the provider part of model names: "openai", "openrouter", "ollama", "gemini".
	Provider string
	// BaseURL is the default base URL, ending in the API's version (".../v1").
	BaseURL string
	// BaseURLEnv names the environment variable that overrides BaseURL ("" if none). For Ollama
	// it is OLLAMA_HOST, host[:port] or a URL without /v1, which is normalised.
	BaseURLEnv string
	// KeyEnv names the environment variables that may hold the key, the first set winning;
	// empty when the service needs no key.
	KeyEnv []string
	// Prices are the prices of the service's models that are known.
	Prices providers.Prices
	// Files are the images and PDFs the service's models take; a model sent another file fails
	// before any request, with an error naming the model and the file.
	Files providers.FileLimits

	// legacyMaxTokens sends max_tokens rather than max_completion_tokens.
	legacyMaxTokens bool
}

// The known prices, in US dollars per million tokens.
var (
	openAIPrices = providers.Prices{
		"gpt-4o":       {Input: 2.5, Output: 10, CacheRead: 1.25},
		"gpt-4o-mini":  {Input: 0.15, Output: 0.6, CacheRead: 0.075},
		"gpt-4.1":      {Input: 2, Output: 8, CacheRead: 0.5},
		"gpt-4.1-mini": {Input: 0.4, Output: 1.6, CacheRead: 0.1},
		"o3":           {Input: 2, Output: 8},
		"o4-mini":      {Input: 1.1, Output: 4.4},
	}
	geminiPrices = providers.Prices{
		"gemini-2.5-pro":   {Input: 1.25, Output: 10},
		"gemini-2.5-flash": {Input: 0.3, Output: 2.5},
	}
)

// The files the services take. OpenAI's Chat Completions takes images (bytes or URL, up to
// 20 MB) and PDFs (bytes, up to 32 MB), as OpenRouter does; Ollama takes images as bytes; Gemini's
// OpenAI-compatible endpoint takes images as bytes, within its 20 MB request (base64-encoded).
var (
	openAIFiles = providers.FileLimits{Images: true, ImageURLs: true, PDFs: true, MaxImage: 20 << 20, MaxPDF: 32 << 20}
	ollamaFiles = providers.FileLimits{Images: true}
	geminiFiles = providers.FileLimits{Images: true, MaxImage: 20 << 20 / 4 * 3}
)

// Services returns the OpenAI-compatible services: OpenAI, OpenRouter, Ollama and Gemini, in
// that order. Each call returns fresh values, which the caller may change.
func Services() []Service {
	return []Service{
		{Provider: "openai", BaseURL: "https://api.openai.com/v1", BaseURLEnv: "OPENAI_BASE_URL",
			KeyEnv: []string{"OPENAI_API_KEY"}, Prices: maps.Clone(openAIPrices), Files: openAIFiles},
		{Provider: "openrouter", BaseURL: "https://openrouter.ai/api/v1",
			KeyEnv: []string{"OPENROUTER_API_KEY"}, Files: openAIFiles, legacyMaxTokens: true},
		{Provider: "ollama", BaseURL: "http://localhost:11434/v1", BaseURLEnv: "OLLAMA_HOST",
			Files: ollamaFiles, legacyMaxTokens: true},
		{Provider: "gemini", BaseURL: "https://generativelanguage.googleapis.com/v1beta/openai/",
			KeyEnv: []string{"GEMINI_API_KEY", "GOOGLE_API_KEY"}, Prices: maps.Clone(geminiPrices), Files: geminiFiles, legacyMaxTokens: true},
	}
}

// init serves each service's model and embedder names through package models ("openai/gpt-4o",
// "openai/text-embedding-3-small", …).
func init() {
	for _, svc := range Services() {
		models.Register(svc.Provider, Provider(svc.Provider))
		models.RegisterEmbedder(svc.Provider, EmbedderProvider(svc.Provider))
	}
}

// Provider returns what serves the model names of the service named provider through package
// models, with the key, base URL and HTTP client models.New was given.
func Provider(provider string) models.Provider {
	return func(model string, s models.Settings) (providers.Model, error) {
		m, err := NewService(provider, model, models.Options(s, WithAPIKey, WithBaseURL, WithHTTPClient)...)
		if err != nil {
			return nil, err // not a nil *Model in an interface
		}
		return m, nil
	}
}

// ServiceOption configures a model built by NewService.
type ServiceOption func(*serviceConfig)

type serviceConfig struct {
	apiKey     string
	baseURL    string
	httpClient *http.Client
}

// WithAPIKey sets the key, instead of the service's environment variables.
func WithAPIKey(key string) ServiceOption {
	return func(c *serviceConfig) { c.apiKey = key }
}

// WithBaseURL sets the base URL (ending in the API's version, as ".../v1"), instead of the
// environment variable or the default.
func WithBaseURL(url string) ServiceOption {
	return func(c *serviceConfig) { c.baseURL = url }
}

// WithHTTPClient sets the HTTP client whose settings and transport the model uses; the model
// wraps its transport to record each call's status and error.
func WithHTTPClient(c *http.Client) ServiceOption {
	return func(cfg *serviceConfig) { cfg.httpClient = c }
}

// NewService returns the model of the named service (see Services) through langchaingo's OpenAI
// client. Its name is "provider/model". It fails with ErrUnknownModel for an unknown provider or
// an empty model, and with ErrMissingKey when the service needs a key and none is given.
func NewService(provider, model string, opts ...ServiceOption) (*Model, error) {
	svc, cfg, key, err := configure(provider, model, opts)
	if err != nil {
		return nil, err
	}
	lopts := []openai.Option{
		openai.WithToken(key),
		openai.WithModel(model),
		openai.WithBaseURL(svc.baseURL(cfg)),
		openai.WithHTTPClient(recordingClient(cfg.httpClient)),
	}
	if svc.Provider != "openai" {
		// langchaingo reads OPENAI_ORGANIZATION, which is no business of other services.
		lopts = append(lopts, openai.WithOrganization(""))
	}
	llm, err := openai.New(lopts...)
	if err != nil {
		return nil, &providers.Error{Provider: provider, Model: model, Kind: providers.ErrBadRequest, Message: "creating the client", Err: err}
	}
	m := New(provider+"/"+model, llm, WithPrices(svc.Prices))
	m.recorded = true
	m.legacyMaxTokens = svc.legacyMaxTokens
	m.files = svc.Files
	return m, nil
}

// configure returns the service of provider, the options' settings and the key, for a model of
// it: an error of kind ErrUnknownModel for an unknown provider or an empty model, of kind
// ErrMissingKey when the service needs a key and none is given.
func configure(provider, model string, opts []ServiceOption) (Service, serviceConfig, string, error) {
	svc, ok := service(provider)
	if !ok || model == "" {
		return Service{}, serviceConfig{}, "", unknown(provider, model, ok)
	}
	var cfg serviceConfig
	for _, o := range opts {
		o(&cfg)
	}
	key, err := svc.key(cfg, model)
	return svc, cfg, key, err
}

// service returns the service of a provider.
func service(provider string) (Service, bool) {
	for _, s := range Services() {
		if s.Provider == provider {
			return s, true
		}
	}
	return Service{}, false
}

// unknown makes the error of an unknown provider or an empty model.
func unknown(provider, model string, known bool) error {
	msg := "no model given"
	if !known {
		var names []string
		for _, s := range Services() {
			names = append(names, s.Provider)
		}
		msg = fmt.Sprintf("unknown provider %q: langchain serves %s", provider, strings.Join(names, ", "))
	}
	return &providers.Error{Provider: provider, Model: model, Kind: providers.ErrUnknownModel, Message: msg}
}

// key returns the key from the options or the environment. A service that needs none gets a
// placeholder, since langchaingo refuses an empty key.
func (s Service) key(cfg serviceConfig, model string) (string, error) {
	if cfg.apiKey != "" {
		return cfg.apiKey, nil
	}
	for _, env := range s.KeyEnv {
		if v := os.Getenv(env); v != "" {
			return v, nil
		}
	}
	if len(s.KeyEnv) == 0 {
		return s.Provider, nil
	}
	return "", &providers.Error{Provider: s.Provider, Model: model, Kind: providers.ErrMissingKey,
		Err: &providers.MissingKeyError{Env: slices.Clone(s.KeyEnv), Option: "langchain.WithAPIKey"}}
}

// baseURL returns the base URL from the options, the environment or the default.
func (s Service) baseURL(cfg serviceConfig) string {
	if cfg.baseURL != "" {
		return cfg.baseURL
	}
	if s.BaseURLEnv != "" {
		if v := strings.TrimSpace(os.Getenv(s.BaseURLEnv)); v != "" {
			if s.Provider == "ollama" {
				return models.OllamaURL(v)
			}
			return v
		}
	}
	return s.BaseURL
}
