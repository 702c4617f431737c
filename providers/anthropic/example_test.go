package anthropic_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/agiraph/agiraph/models"
	"github.com/agiraph/agiraph/providers"
	_ "github.com/agiraph/agiraph/providers/anthropic" // serves "anthropic/..." model names
	"github.com/agiraph/agiraph/providers/providertest"
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

// Images and PDFs go to the Messages API as image and document blocks, base64-encoded or by URL;
// here a stand-in answers with the blocks it got.
func Example_files() {
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Messages []struct {
				Content []struct {
					Type   string `json:"type"`
					Title  string `json:"title"`
					Source struct {
						Type      string `json:"type"`
						MediaType string `json:"media_type"`
					} `json:"source"`
				} `json:"content"`
			} `json:"messages"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var got []string
		for _, b := range body.Messages[0].Content {
			got = append(got, strings.TrimSpace(fmt.Sprintf("%s %s %s %s", b.Type, b.Source.Type, b.Source.MediaType, b.Title)))
		}
		answer, _ := json.Marshal(strings.Join(got, "; "))
		w.Header().Set("Content-Type", "application/json")
		_, _ = fmt.Fprintf(w, `{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5",
			"content":[{"type":"text","text":%s}],"stop_reason":"end_turn","usage":{"input_tokens":900,"output_tokens":20}}`, answer)
	}))
	defer api.Close()

	m, err := models.New("anthropic/claude-sonnet-4-5", models.WithBaseURL(api.URL), models.WithAPIKey("sk-ant-example"))
	if err != nil {
		panic(err)
	}
	resp, err := m.Generate(context.Background(), providers.Request{Messages: []providers.Message{{
		Role: providers.User,
		Parts: []providers.Part{
			providers.Text("Does the chart match the report?"),
			providers.FileData("image/png", "chart.png", providertest.PNG),
			providers.FileData(providers.PDF, "report.pdf", providertest.PDF),
			providers.FileURL("image/jpeg", "https://example.com/photo.jpg"),
		},
	}}})
	if err != nil {
		panic(err)
	}
	fmt.Println(resp.Message.Text())
	// Output:
	// text; image base64 image/png; document base64 application/pdf report.pdf; image url
}
