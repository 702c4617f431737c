package langchain

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/agiraph/agiraph/models"
	"github.com/agiraph/agiraph/providers"
)

// Embedder is an embedder of one of the [Services], a providers.Embedder, calling the service's
// own embeddings API over HTTP: OpenAI's and OpenRouter's POST {base}/embeddings, Gemini's
// POST /v1beta/models/{model}:batchEmbedContents, and Ollama's POST /api/embed. Its errors are
// *providers.Error values of the kinds the chat models' are, with the HTTP status, the
// provider's message and how long it asked to wait.
type Embedder struct {
	svc    Service
	model  string
	key    string
	base   string
	client *http.Client
}

// EmbedderProvider returns what serves the embedder names of the service named provider through
// package models, with the key, base URL and HTTP client models.NewEmbedder was given.
func EmbedderProvider(provider string) models.EmbedderProvider {
	return func(model string, s models.Settings) (providers.Embedder, error) {
		e, err := NewEmbedder(provider, model, models.Options(s, WithAPIKey, WithBaseURL, WithHTTPClient)...)
		if err != nil {
			return nil, err // not a nil *Embedder in an interface
		}
		return e, nil
	}
}

// NewEmbedder returns the embedder model of the named service (see [Services]): for example
// NewEmbedder("openai", "text-embedding-3-small"), ("gemini", "text-embedding-004") or
// ("ollama", "nomic-embed-text"). The options are the chat models': WithBaseURL takes the same
// base URL as they do (Gemini's OpenAI-compatible one, or its root; Ollama's ".../v1"). It fails
// with ErrUnknownModel for an unknown provider or an empty model, and with ErrMissingKey when the
// service needs a key and none is given.
func NewEmbedder(provider, model string, opts ...ServiceOption) (*Embedder, error) {
	svc, cfg, key, err := configure(provider, model, opts)
	if err != nil {
		return nil, err
	}
	base := strings.TrimRight(svc.baseURL(cfg), "/")
	switch provider {
	case "gemini": // the API's root, without the OpenAI-compatible path the chat models use
		base = strings.TrimSuffix(strings.TrimSuffix(base, "/v1beta/openai"), "/v1beta")
	case "ollama": // the native API is beside the OpenAI-compatible one
		base = strings.TrimSuffix(base, "/v1")
	}
	client := cfg.httpClient
	if client == nil {
		client = http.DefaultClient
	}
	return &Embedder{svc: svc, model: model, key: key, base: base, client: client}, nil
}

// Name returns "provider/model".
func (e *Embedder) Name() string { return e.svc.Provider + "/" + e.model }

// Embed returns the vectors of texts, one a text, in one call of the service's API.
func (e *Embedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if len(texts) == 0 {
		return nil, nil
	}
	url, body, header := e.request(texts)
	data, err := json.Marshal(body)
	if err != nil {
		return nil, e.fail(providers.ErrBadRequest, 0, "", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(data))
	if err != nil {
		return nil, e.fail(providers.ErrBadRequest, 0, "", err)
	}
	req.Header = header
	req.Header.Set("Content-Type", "application/json")
	resp, err := e.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, e.fail(providers.ErrConnection, 0, "", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 256<<20))
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, e.fail(providers.ErrConnection, resp.StatusCode, "", err)
	}
	if resp.StatusCode >= 400 {
		return nil, e.failed(resp, raw)
	}
	vecs, err := e.vectors(raw)
	if err == nil && len(vecs) != len(texts) {
		err = fmt.Errorf("%d vectors for %d texts", len(vecs), len(texts))
	}
	if err != nil {
		return nil, e.fail(providers.ErrServer, resp.StatusCode, "the answer could not be read", err)
	}
	return vecs, nil
}

// request returns the URL, body and headers of a request for texts, in the service's format.
func (e *Embedder) request(texts []string) (string, any, http.Header) {
	h := http.Header{}
	switch e.svc.Provider {
	case "gemini":
		h.Set("X-Goog-Api-Key", e.key)
		name := "models/" + e.model
		reqs := make([]map[string]any, len(texts))
		for i, t := range texts {
			reqs[i] = map[string]any{"model": name, "content": map[string]any{"parts": []any{map[string]string{"text": t}}}}
		}
		return e.base + "/v1beta/" + name + ":batchEmbedContents", map[string]any{"requests": reqs}, h
	case "ollama":
		return e.base + "/api/embed", map[string]any{"model": e.model, "input": texts}, h
	}
	h.Set("Authorization", "Bearer "+e.key)
	return e.base + "/embeddings", map[string]any{"model": e.model, "input": texts, "encoding_format": "float"}, h
}

// vectors reads the vectors of a successful answer.
func (e *Embedder) vectors(raw []byte) ([][]float32, error) {
	switch e.svc.Provider {
	case "gemini":
		var a struct {
			Embeddings []struct {
				Values []float32 `json:"values"`
			} `json:"embeddings"`
		}
		err := json.Unmarshal(raw, &a)
		out := make([][]float32, len(a.Embeddings))
		for i, emb := range a.Embeddings {
			out[i] = emb.Values
		}
		return out, err
	case "ollama":
		var a struct {
			Embeddings [][]float32 `json:"embeddings"`
		}
		err := json.Unmarshal(raw, &a)
		return a.Embeddings, err
	}
	var a struct {
		Data []struct {
			Index     int       `json:"index"`
			Embedding []float32 `json:"embedding"`
		} `json:"data"`
	}
	if err := json.Unmarshal(raw, &a); err != nil {
		return nil, err
	}
	out := make([][]float32, len(a.Data))
	for _, d := range a.Data {
		if d.Index < 0 || d.Index >= len(out) {
			return nil, fmt.Errorf("an embedding of index %d among %d", d.Index, len(out))
		}
		out[d.Index] = d.Embedding
	}
	return out, nil
}

// failed makes the error of an answer with an error status, from its body: OpenAI's and
// Gemini's {"error": {"message", …}}, or Ollama's {"error": "…"}.
func (e *Embedder) failed(resp *http.Response, raw []byte) *providers.Error {
	var body struct {
		Error json.RawMessage `json:"error"`
	}
	var apiErr apiError
	var gemini struct {
		Status  string `json:"status"`
		Details []struct {
			Reason     string `json:"reason"`
			RetryDelay string `json:"retryDelay"`
		} `json:"details"`
	}
	msg := strings.TrimSpace(string(raw))
	if json.Unmarshal(raw, &body) == nil && len(body.Error) > 0 {
		if json.Unmarshal(body.Error, &msg) != nil && json.Unmarshal(body.Error, &apiErr) == nil {
			msg = apiErr.Message
			_ = json.Unmarshal(body.Error, &gemini) // its fields are optional
		}
	}
	kind := refine(providers.KindOfStatus(resp.StatusCode), &apiErr)
	wait := retryAfter(resp.Header)
	for _, d := range gemini.Details {
		if d.Reason == "API_KEY_INVALID" {
			kind = providers.ErrAuth
		}
		if s, err := time.ParseDuration(d.RetryDelay); err == nil && d.RetryDelay != "" {
			wait = s
		}
	}
	err := e.fail(kind, resp.StatusCode, msg, nil)
	err.RetryAfter = wait
	return err
}

func (e *Embedder) fail(kind error, status int, msg string, err error) *providers.Error {
	return &providers.Error{Provider: e.svc.Provider, Model: e.model, Kind: kind, Status: status, Message: msg, Err: err}
}

var _ providers.Embedder = (*Embedder)(nil)
