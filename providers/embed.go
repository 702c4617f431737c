package providers

import (
	"context"
	"fmt"
)

// Embedder turns texts into vectors whose cosine similarity says how close their meanings are,
// as the embeddings APIs of OpenAI, Gemini and Ollama do. Implementations are safe for
// concurrent use.
type Embedder interface {
	// Name is the embedder's "provider/model" name, for example "openai/text-embedding-3-small".
	Name() string
	// Embed returns the vectors of texts, one a text and in their order, all of the model's
	// length. Errors a caller may branch on are *Error values, as Model's are.
	Embed(ctx context.Context, texts []string) ([][]float32, error)
}

// EmbedFunc is an Embedder that calls fn: an embedder of one's own, or a test's.
type EmbedFunc struct {
	// Model is the embedder's "provider/model" name.
	Model string
	// Fn returns the vectors of texts, one a text.
	Fn func(ctx context.Context, texts []string) ([][]float32, error)
}

// Name returns f.Model.
func (f EmbedFunc) Name() string { return f.Model }

// Embed calls f.Fn, and checks it returned one vector a text.
func (f EmbedFunc) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	vecs, err := f.Fn(ctx, texts)
	if err != nil {
		return nil, err
	}
	if len(vecs) != len(texts) {
		return nil, fmt.Errorf("%s: %d vectors for %d texts", f.Model, len(vecs), len(texts))
	}
	return vecs, nil
}
