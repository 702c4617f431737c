package anthropic_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

	"github.com/agiraph/agiraph/models"
	"github.com/agiraph/agiraph/providers"
	_ "github.com/agiraph/agiraph/providers/anthropic" // serves "anthropic/..." model names
)

// Importing the package makes models.New serve "anthropic/<model>" names. The key comes from
// ANTHROPIC_API_KEY unless given; the base URL may point anywhere that speaks the Messages API,
// here a stand-in answering one message.
func Example() {
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5",
			"content":[{"type":"text","text":"Tallinn."}],"stop_reason":"end_turn",
			"usage":{"input_tokens":14,"output_tokens":4}}`)
	}))
	defer api.Close()

	m, err := models.New("anthropic/claude-sonnet-4-5", models.WithBaseURL(api.URL), models.WithAPIKey("sk-ant-example"))
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
