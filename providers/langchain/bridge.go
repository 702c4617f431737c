package langchain

import (
	"context"
	"strings"

	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/llms/openai"

	"github.com/agiraph/agiraph/providers"
)

// Model is a langchaingo model seen as a providers.Model. It is safe for concurrent use when the
// model it wraps is.
type Model struct {
	name     string // "provider/model"
	provider string
	model    string
	llm      llms.Model
	prices   providers.Prices
	// recorded is set for services, whose HTTP client records each call (see transport.go).
	recorded bool
	// legacyMaxTokens sends max_tokens instead of max_completion_tokens.
	legacyMaxTokens bool
	// files are the files the model takes (see Service.Files).
	files providers.FileLimits
}

var _ providers.Model = (*Model)(nil)

// Option configures a Model built by New.
type Option func(*config)

type config struct {
	prices providers.Prices
}

// WithPrices sets the prices that fill Usage.CostUSD, looked up by the model part of the name.
func WithPrices(p providers.Prices) Option {
	return func(c *config) { c.prices = p }
}

// New bridges the langchaingo model m. name is our "provider/model" name, which Name returns
// and errors carry; a name without a slash is taken as the model of an unnamed provider.
func New(name string, m llms.Model, opts ...Option) *Model {
	var c config
	for _, o := range opts {
		o(&c)
	}
	provider, model, err := providers.ParseName(name)
	if err != nil {
		model = name
	}
	return &Model{name: name, provider: provider, model: model, llm: m, prices: c.prices, files: anyFiles}
}

// anyFiles are the files a bridged langchaingo model is given, for it to take or refuse: images
// (bytes or URL) and PDFs (bytes).
var anyFiles = providers.FileLimits{Images: true, ImageURLs: true, PDFs: true}

// Name returns the model's "provider/model" name.
func (m *Model) Name() string { return m.name }

// Generate sends req to the model and returns its answer. Errors are *providers.Error values,
// or the context's error when ctx ends.
func (m *Model) Generate(ctx context.Context, req providers.Request) (providers.Response, error) {
	var rec *recorder
	if m.recorded {
		rec = &recorder{dropTemperature: req.Temperature == nil}
		ctx = withRecorder(ctx, rec)
		if o := req.Output; o != nil {
			var err error
			if rec.responseFormat, err = responseFormat(o); err != nil {
				return providers.Response{}, m.fail(providers.ErrBadRequest, err.Error(), nil)
			}
		}
	} else {
		req = providers.PromptOutput(req) // langchaingo has no structured output of its own
	}
	if err := m.files.CheckMessages(m.provider, m.model, req.Messages); err != nil {
		return providers.Response{}, err
	}
	msgs, pdfs := messages(req)
	if rec != nil {
		rec.pdfs = pdfs
	}
	opts, err := m.callOptions(req)
	if err != nil {
		return providers.Response{}, m.fail(providers.ErrBadRequest, err.Error(), nil)
	}
	var text *textStream
	if req.OnText != nil {
		text = &textStream{out: req.OnText}
		opts = append(opts, llms.WithStreamingFunc(text.chunk))
	}
	resp, err := m.llm.GenerateContent(ctx, msgs, opts...)
	if cerr := ctx.Err(); cerr != nil {
		// langchaingo hides cancellation ("request cancelled"), and a stream cut by it
		// returns what it had as a success.
		return providers.Response{}, cerr
	}
	if err == nil {
		err = rec.streamError()
	}
	if err != nil {
		return providers.Response{}, m.classify(err, rec)
	}
	out, err := m.response(resp, rec)
	if err != nil {
		return providers.Response{}, err
	}
	if text != nil {
		text.finish(out.Message.Text())
	}
	return out, nil
}

// callOptions translates the request's tools and options.
func (m *Model) callOptions(req providers.Request) ([]llms.CallOption, error) {
	var opts []llms.CallOption
	if len(req.Tools) > 0 {
		ts, err := functionTools(req.Tools)
		if err != nil {
			return nil, err
		}
		opts = append(opts, llms.WithTools(ts), llms.WithToolChoice(toolChoice(req.Choice)))
	}
	if req.MaxTokens > 0 {
		opts = append(opts, llms.WithMaxTokens(req.MaxTokens))
		if m.legacyMaxTokens {
			opts = append(opts, openai.WithLegacyMaxTokensField())
		}
	}
	if req.Temperature != nil {
		opts = append(opts, llms.WithTemperature(*req.Temperature))
	}
	if len(req.Stop) > 0 {
		opts = append(opts, llms.WithStopWords(req.Stop))
	}
	return opts, nil
}

// response translates langchaingo's answer.
func (m *Model) response(resp *llms.ContentResponse, rec *recorder) (providers.Response, error) {
	if resp == nil || len(resp.Choices) == 0 || resp.Choices[0] == nil {
		return providers.Response{}, m.fail(providers.ErrServer, "the answer has no choices", nil)
	}
	c := resp.Choices[0]
	msg := answer(c)
	reason := c.StopReason
	if calls, finish := rec.streamed(); len(calls) > 0 || finish != "" {
		// langchaingo assembles streamed calls by position, not index, and keeps the finish
		// reason of the last chunk: the transport's reading is right.
		msg, reason = withCalls(msg, calls), finish
	}
	model := rec.answerModel()
	if model == "" {
		model = m.model
	}
	return providers.Response{
		Message:    msg,
		StopReason: stopReason(reason, len(msg.ToolCalls()) > 0),
		Usage:      m.prices.Priced(m.model, usage(c.GenerationInfo)),
		Model:      model,
	}, nil
}

// fail makes an error of the model.
func (m *Model) fail(kind error, msg string, err error) *providers.Error {
	return &providers.Error{Provider: m.provider, Model: m.model, Kind: kind, Message: msg, Err: err}
}

// textStream passes the text of a streamed answer to OnText. langchaingo's OpenAI client also
// hands the streaming callback each tool-call delta, marshalled as JSON; those are held back.
type textStream struct {
	out  func(string)
	sent strings.Builder
}

func (s *textStream) chunk(_ context.Context, b []byte) error {
	if len(b) == 0 || isToolCallChunk(b) {
		return nil
	}
	s.sent.WriteString(string(b))
	s.out(string(b))
	return nil
}

// finish sends the end of text when what was streamed is a prefix of it: text lost because it
// came in the same chunk as a tool-call delta.
func (s *textStream) finish(text string) {
	if rest, ok := strings.CutPrefix(text, s.sent.String()); ok && rest != "" {
		s.sent.WriteString(rest)
		s.out(rest)
	}
}
