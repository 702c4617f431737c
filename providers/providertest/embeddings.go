package providertest

import (
	"encoding/base64"
	"encoding/binary"
	"errors"
	"hash/fnv"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/agiraph/agiraph/providers"
)

// Dims is the length of the vectors of [Vector].
const Dims = 64

// Vector is the vector the fakes' embeddings endpoints give a text when the reply sets no
// Reply.Vectors: its lower-cased words hashed into [Dims] counts, so that texts sharing words are
// close and the same text always has the same vector.
func Vector(text string) []float32 {
	v := make([]float32, Dims)
	for _, w := range lowerWords(text) {
		h := fnv.New32a()
		_, _ = h.Write([]byte(w)) // a hash does not fail
		v[h.Sum32()%Dims]++
	}
	return v
}

// Concepts returns a vector function, for Reply.Vectors or an embedder of a test, that knows what
// some words mean: each group of words is a dimension, and a text's vector counts the words of
// each group it holds, so that "automobile" is close to "the car's brakes" with groups such as
// {"car", "automobile", "brakes"}. A text with none of the words has a zero vector, close to
// nothing.
func Concepts(groups ...[]string) func(text string) []float32 {
	return func(text string) []float32 {
		v := make([]float32, len(groups))
		for _, w := range lowerWords(text) {
			for g, words := range groups {
				if slices.Contains(words, w) {
					v[g]++
				}
			}
		}
		return v
	}
}

// lowerWords returns the words of text, lower-cased.
func lowerWords(text string) []string {
	return strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
}

// NewOllama starts a fake Ollama: its embeddings API (POST /api/embed) and its OpenAI-compatible
// Chat Completions (POST /v1/chat/completions, as [NewOpenAI]), answering with replies, one per
// request, in order. Give a client URL() as its base URL (it ends in /v1, as Ollama's
// OpenAI-compatible API does); the embeddings API is at the server's root.
func NewOllama(t T, replies ...Reply) *Server {
	t.Helper()
	return newServer(t, "ollama", "/v1", replies, nil, serveOllama)
}

// NewOllamaFunc starts a fake Ollama that answers every request with fn. fn runs on the server's
// goroutines, possibly concurrently.
func NewOllamaFunc(t T, fn func(Request) Reply) *Server {
	t.Helper()
	return newServer(t, "ollama", "/v1", nil, fn, serveOllama)
}

// Inputs returns the texts of an embeddings request: OpenAI's and Ollama's "input" (a string or
// an array), or the text parts of Gemini's batchEmbedContents "requests".
func (r Request) Inputs() []string {
	switch in := r.JSON["input"].(type) {
	case string:
		return []string{in}
	case []any:
		var out []string
		for _, s := range in {
			str, _ := s.(string)
			out = append(out, str)
		}
		return out
	}
	var out []string
	for _, req := range objects(r.JSON["requests"]) {
		content, _ := req["content"].(map[string]any)
		var text strings.Builder
		for _, p := range objects(content["parts"]) {
			s, _ := p["text"].(string)
			text.WriteString(s)
		}
		out = append(out, text.String())
	}
	return out
}

// vectors returns the vectors of a successful embeddings reply and the tokens its inputs count.
func vectors(req Request, r Reply) ([][]float32, int) {
	fn := r.Vectors
	if fn == nil {
		fn = Vector
	}
	var out [][]float32
	tokens := 0
	for _, text := range req.Inputs() {
		out = append(out, fn(text))
		tokens += len(strings.Fields(text))
	}
	return out, tokens
}

// serveOpenAIEmbeddings answers POST /v1/embeddings as OpenAI does, with the vectors as floats,
// or as base64 of little-endian float32s when the request's encoding_format says "base64".
func serveOpenAIEmbeddings(s *Server, w http.ResponseWriter, r *http.Request, req Request) {
	missing := func(req Request) *openAIErrDetail {
		if _, ok := req.JSON["model"]; !ok {
			return &openAIErrDetail{Type: "invalid_request_error", Message: "you must provide a model parameter"}
		}
		if _, ok := req.JSON["input"]; !ok {
			return &openAIErrDetail{Type: "invalid_request_error", Param: strp("input"), Code: strp("missing_required_parameter"),
				Message: "Missing required parameter: 'input'."}
		}
		return nil
	}
	reply, h, ok := openAIAccept(s, w, r, req, "/v1/embeddings", missing, openAIErrorOf)
	if !ok {
		return
	}
	vecs, tokens := vectors(req, reply)
	base64Format := req.JSON["encoding_format"] == "base64"
	data := make([]map[string]any, len(vecs))
	for i, v := range vecs {
		var emb any = v
		if base64Format {
			b := make([]byte, 4*len(v))
			for j, x := range v {
				binary.LittleEndian.PutUint32(b[4*j:], math.Float32bits(x))
			}
			emb = base64.StdEncoding.EncodeToString(b)
		}
		data[i] = map[string]any{"object": "embedding", "index": i, "embedding": emb}
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": data, "model": req.Model,
		"usage": map[string]int{"prompt_tokens": tokens, "total_tokens": tokens}}, h)
}

// serveGeminiEmbeddings answers POST /v1beta/models/{model}:batchEmbedContents as the Gemini API
// does; every request of the batch must name the model of the path ("models/{model}").
func serveGeminiEmbeddings(s *Server, w http.ResponseWriter, req Request) {
	requests := objects(req.JSON["requests"])
	if len(requests) == 0 {
		geminiFail(w, 400, geminiErrDetail{Status: "INVALID_ARGUMENT", Message: "* BatchEmbedContentsRequest.requests: requests is not specified\n"}, nil)
		return
	}
	for i, r := range requests {
		if m, _ := r["model"].(string); m != "models/"+req.Model {
			geminiFail(w, 400, geminiErrDetail{Status: "INVALID_ARGUMENT",
				Message: "Model in request " + strconv.Itoa(i) + " (" + m + ") does not match the model in the path (models/" + req.Model + ")."}, nil)
			return
		}
	}
	reply, ok := s.reply(req)
	if !ok {
		geminiFail(w, 500, geminiErrDetail{Status: "INTERNAL", Message: s.scriptEnded(req)}, nil)
		return
	}
	if reply.isError() {
		if errors.Is(reply.Err, providers.ErrConnection) {
			abort()
		}
		status, d := geminiErrorOf(reply)
		geminiFail(w, status, d, reply.Header)
		return
	}
	vecs, _ := vectors(req, reply)
	embeddings := make([]map[string]any, len(vecs))
	for i, v := range vecs {
		embeddings[i] = map[string]any{"values": v}
	}
	writeJSON(w, http.StatusOK, map[string]any{"embeddings": embeddings}, reply.Header)
}

// serveOllama answers POST /api/embed as Ollama does, and the rest as its OpenAI-compatible API.
func serveOllama(s *Server, w http.ResponseWriter, r *http.Request, req Request) {
	if r.URL.Path != "/api/embed" {
		serveOpenAI(s, w, r, req)
		return
	}
	fail := func(status int, msg string) { writeJSON(w, status, map[string]string{"error": msg}, nil) }
	switch {
	case r.Method != http.MethodPost:
		s.t.Errorf("providertest: ollama server got %s %s; want POST", r.Method, r.URL.Path)
		fail(405, "method not allowed")
		return
	case req.JSON == nil:
		fail(400, "invalid character looking for beginning of value")
		return
	case req.Model == "":
		fail(400, "model is required")
		return
	}
	reply, ok := s.reply(req)
	if !ok {
		fail(500, s.scriptEnded(req))
		return
	}
	if reply.isError() {
		if errors.Is(reply.Err, providers.ErrConnection) {
			abort()
		}
		status, msg := ollamaErrorOf(reply, req.Model)
		writeJSON(w, status, map[string]string{"error": msg}, errorHeaders(reply))
		return
	}
	vecs, tokens := vectors(req, reply)
	writeJSON(w, http.StatusOK, map[string]any{"model": req.Model, "embeddings": vecs,
		"total_duration": 14143917, "load_duration": 1019500, "prompt_eval_count": tokens}, reply.Header)
}

// ollamaErrorOf returns the status and message of an error reply, as Ollama words them.
func ollamaErrorOf(r Reply, model string) (int, string) {
	status, msg := r.Status, "an error occurred"
	switch {
	case errors.Is(r.Err, providers.ErrRateLimit):
		status, msg = 429, "server busy, please try again. maximum pending requests exceeded"
	case errors.Is(r.Err, providers.ErrOverloaded):
		status, msg = 503, "server overloaded, please try again later"
	case errors.Is(r.Err, providers.ErrServer):
		status, msg = 500, "llama runner process has terminated: exit status 2"
	case errors.Is(r.Err, providers.ErrAuth):
		status, msg = 401, "unauthorized"
	case errors.Is(r.Err, providers.ErrContextWindow):
		status, msg = 400, "the input length exceeds the context length"
	case errors.Is(r.Err, providers.ErrBadRequest):
		status, msg = 404, `model "`+model+`" not found, try pulling it first`
	}
	if r.Status != 0 && r.Status != http.StatusOK {
		status = r.Status
	}
	if status == 0 {
		status = 500
	}
	if r.ErrorMessage != "" {
		msg = r.ErrorMessage
	}
	return status, msg
}
