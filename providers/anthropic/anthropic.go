package anthropic

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"

	sdk "github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"

	"github.com/agiraph/agiraph/models"
	"github.com/agiraph/agiraph/providers"
)

// providerName is the provider part of the models' names and of their errors.
const providerName = "anthropic"

// DefaultMaxTokens bounds an answer when neither the request nor WithMaxTokens says otherwise.
const DefaultMaxTokens = 8192

// maxContinuations is how many times a paused turn (stop reason pause_turn) is continued.
const maxContinuations = 5

// Option configures a Model.
type Option func(*config)

type config struct {
	apiKey     string
	baseURL    string
	httpClient *http.Client
	maxTokens  int
	webSearch  *WebSearch
	noCaching  bool
}

// WithAPIKey sets the API key. By default it is $ANTHROPIC_API_KEY.
func WithAPIKey(key string) Option { return func(c *config) { c.apiKey = key } }

// WithBaseURL sets the API's base URL, the root without /v1. By default it is
// $ANTHROPIC_BASE_URL, or else the SDK's (https://api.anthropic.com/).
func WithBaseURL(baseURL string) Option { return func(c *config) { c.baseURL = baseURL } }

// WithHTTPClient sets the HTTP client requests go through (by default http.DefaultClient).
func WithHTTPClient(hc *http.Client) Option { return func(c *config) { c.httpClient = hc } }

// WithMaxTokens sets the max_tokens of requests whose MaxTokens is 0 (default DefaultMaxTokens).
func WithMaxTokens(n int) Option { return func(c *config) { c.maxTokens = n } }

// WithWebSearch adds Anthropic's server-side web search tool (web_search_20250305) to every
// request. Its uses and results come back as opaque parts.
func WithWebSearch(ws WebSearch) Option {
	return func(c *config) { c.webSearch = &ws }
}

// WebSearch configures the server web search tool.
type WebSearch struct {
	// MaxUses bounds the searches of one request (0: no bound).
	MaxUses int
	// AllowedDomains, when set, are the only domains results may come from; BlockedDomains are
	// domains they may not come from. The API accepts one list or the other, not both.
	AllowedDomains, BlockedDomains []string
}

// WithoutPromptCaching turns off the prompt caching breakpoints Generate sets by default.
func WithoutPromptCaching() Option { return func(c *config) { c.noCaching = true } }

// Model is an Anthropic model. It is safe for concurrent use.
type Model struct {
	model  string
	cfg    config
	client sdk.Client
}

// New returns the Anthropic model with the given id (for example "claude-sonnet-4-5"). It fails
// with a *providers.Error of kind providers.ErrMissingKey (its cause a
// *providers.MissingKeyError) when no API key is given or set in ANTHROPIC_API_KEY.
func New(model string, opts ...Option) (*Model, error) {
	cfg := config{
		apiKey:    os.Getenv("ANTHROPIC_API_KEY"),
		baseURL:   os.Getenv("ANTHROPIC_BASE_URL"),
		maxTokens: DefaultMaxTokens,
	}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.apiKey == "" {
		return nil, &providers.Error{
			Provider: providerName, Model: model, Kind: providers.ErrMissingKey,
			Err: &providers.MissingKeyError{Env: []string{"ANTHROPIC_API_KEY"}, Option: "anthropic.WithAPIKey"},
		}
	}
	if cfg.maxTokens <= 0 {
		cfg.maxTokens = DefaultMaxTokens
	}
	// The SDK would otherwise read its own environment (auth tokens, profiles, federation,
	// custom headers) and retry on its own; retrying is providers.WithRetry's job.
	ropts := []option.RequestOption{
		option.WithoutEnvironmentDefaults(),
		option.WithAPIKey(cfg.apiKey),
		option.WithMaxRetries(0),
	}
	if cfg.baseURL != "" {
		if _, err := url.Parse(cfg.baseURL); err != nil {
			return nil, fmt.Errorf("anthropic: base URL: %w", err)
		}
		ropts = append(ropts, option.WithBaseURL(cfg.baseURL))
	}
	if cfg.httpClient != nil {
		ropts = append(ropts, option.WithHTTPClient(cfg.httpClient))
	}
	return &Model{model: model, cfg: cfg, client: sdk.NewClient(ropts...)}, nil
}

// init serves the names "anthropic/…" through package models.
func init() { models.Register(providerName, Provider()) }

// Provider returns what serves the names "anthropic/…" through package models: New with opts,
// after the key, base URL and HTTP client models.New was given. Give it to models.WithProvider
// to serve them with options of this package, such as WithWebSearch.
func Provider(opts ...Option) models.Provider {
	return func(model string, s models.Settings) (providers.Model, error) {
		all := models.Options(s, WithAPIKey, WithBaseURL, WithHTTPClient)
		m, err := New(model, append(all, opts...)...)
		if err != nil {
			return nil, err // not a nil *Model in an interface
		}
		return m, nil
	}
}

// Name returns "anthropic/" followed by the model id.
func (m *Model) Name() string { return providerName + "/" + m.model }

// Generate sends req to the Messages API and returns the answer; see the package documentation.
func (m *Model) Generate(ctx context.Context, req providers.Request) (providers.Response, error) {
	out := providers.Response{Message: providers.Message{Role: providers.Assistant}}
	turn := req
	for i := 0; ; i++ {
		params, err := m.params(turn)
		if err != nil {
			return providers.Response{}, err
		}
		msg, err := m.send(ctx, params, req.OnText)
		if err != nil {
			return providers.Response{}, m.wrapError(ctx, err)
		}
		out.Message.Parts = appendParts(out.Message.Parts, partsOf(msg.Content)...)
		out.Usage = out.Usage.Add(m.usage(msg))
		out.Model = string(msg.Model)
		out.StopReason = stopReason(msg.StopReason)
		if msg.StopReason != sdk.StopReasonPauseTurn || i == maxContinuations {
			return out, nil
		}
		// Continue the paused turn: the conversation with the assistant's content so far.
		turn.Messages = append(append([]providers.Message(nil), req.Messages...), out.Message)
	}
}

// send makes one call, streaming when the caller watches the text or the SDK requires it.
func (m *Model) send(ctx context.Context, params sdk.MessageNewParams, onText func(string)) (*sdk.Message, error) {
	if onText == nil && !mustStream(params) {
		return m.client.Messages.New(ctx, params)
	}
	return m.stream(ctx, params, onText)
}

// mustStream reports whether the SDK refuses params without streaming (a max_tokens large
// enough that the call may run over ten minutes).
func mustStream(params sdk.MessageNewParams) bool {
	_, err := sdk.CalculateNonStreamingTimeout(int(params.MaxTokens), params.Model, nil)
	return err != nil
}

// stream makes one streaming call, passing text deltas to onText (when set), and returns the
// message the events add up to.
func (m *Model) stream(ctx context.Context, params sdk.MessageNewParams, onText func(string)) (*sdk.Message, error) {
	s := m.client.Messages.NewStreaming(ctx, params)
	defer func() { _ = s.Close() }() // read only
	var msg sdk.Message
	complete := false
	for s.Next() {
		ev := s.Current()
		if err := msg.Accumulate(ev); err != nil {
			return nil, fmt.Errorf("malformed event stream: %w", err)
		}
		switch {
		case ev.Type == "content_block_delta" && ev.Delta.Type == "text_delta" && onText != nil:
			onText(ev.Delta.Text)
		case ev.Type == "message_stop":
			complete = true
		}
	}
	if err := s.Err(); err != nil {
		return nil, err
	}
	if !complete {
		// The stream ended without message_stop: the connection closed early.
		return nil, io.ErrUnexpectedEOF
	}
	return &msg, nil
}
