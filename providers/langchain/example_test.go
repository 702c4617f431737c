package langchain_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

	"github.com/agiraph/agiraph/models"
	"github.com/agiraph/agiraph/providers"
	_ "github.com/agiraph/agiraph/providers/langchain" // serves openai/, openrouter/, ollama/ and gemini/ names
)

// Importing the package makes models.New serve the names of the OpenAI-compatible services:
// "openai/<model>", "openrouter/<vendor>/<model>", "ollama/<model>" and "gemini/<model>". Keys
// and base URLs come from the services' environment variables unless given; here the base URL
// is a stand-in answering one chat completion.
func Example() {
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-4.1-mini",
			"choices":[{"index":0,"message":{"role":"assistant","content":"Tallinn."},"finish_reason":"stop"}],
			"usage":{"prompt_tokens":14,"completion_tokens":4,"total_tokens":18}}`)
	}))
	defer api.Close()

	m, err := models.New("openai/gpt-4.1-mini", models.WithBaseURL(api.URL+"/v1"), models.WithAPIKey("sk-example"))
	if err != nil {
		panic(err)
	}
	resp, err := m.Generate(context.Background(), providers.Request{
		System:   "Answer in one word.",
		Messages: []providers.Message{providers.UserText("What is the capital of Estonia?")},
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(resp.Message.Text(), resp.Usage.InputTokens, resp.Usage.OutputTokens, resp.Usage.CostUSD > 0)
	// Output:
	// Tallinn. 14 4 true
}
