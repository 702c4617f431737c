package models_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/models"
	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/providers/providertest"
	"github.com/agiraph/agiraph/providers/scripted"
)

var fastRetry = models.WithRetry(providers.Retry{InitialBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond})

func TestAnthropicByNameRetries(t *testing.T) {
	srv := providertest.NewAnthropic(t,
		providertest.Reply{Err: providers.ErrRateLimit},
		providertest.Reply{Text: "hello"},
	)
	m, err := models.New("anthropic/claude-sonnet-4-5", models.WithAPIKey("k"), models.WithBaseURL(srv.URL()), fastRetry)
	if err != nil {
		t.Fatal(err)
	}
	if m.Name() != "anthropic/claude-sonnet-4-5" {
		t.Fatalf("Name() = %q", m.Name())
	}
	resp, err := m.Generate(context.Background(), providers.Request{Messages: []providers.Message{providers.UserText("hi")}})
	if err != nil || resp.Message.Text() != "hello" {
		t.Fatalf("Generate = %+v, %v", resp, err)
	}
	if n := len(srv.Requests()); n != 2 {
		t.Fatalf("%d requests, want 2 (the rate limit retried)", n)
	}
	if got := srv.Requests()[0].Header.Get("x-api-key"); got != "k" {
		t.Fatalf("x-api-key = %q", got)
	}
}

// A model of New makes one layer of retries over HTTP: a lasting server error is sent the
// configured number of times, an error that retrying cannot fix once, and the error says how many
// attempts were made.
func TestRetriesOverHTTP(t *testing.T) {
	const attempts = 3
	policy := models.WithRetry(providers.Retry{MaxAttempts: attempts, InitialBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond})
	servers := []struct {
		provider string
		start    func(providertest.T, ...providertest.Reply) *providertest.Server
	}{{"anthropic", providertest.NewAnthropic}, {"openai", providertest.NewOpenAI}}
	server := providertest.Reply{Err: providers.ErrServer}
	for _, tc := range []struct {
		name    string
		replies []providertest.Reply
		kind    error  // nil: the call succeeds
		says    string // the end of the error
	}{
		{"lasting 500", []providertest.Reply{server, server, server}, providers.ErrServer, "(3 attempts)"},
		{"401", []providertest.Reply{{Err: providers.ErrAuth}}, providers.ErrAuth, "(1 attempt; not retried: authentication failed)"},
		{"403", []providertest.Reply{{Status: 403}}, providers.ErrAuth, "(1 attempt; not retried: authentication failed)"},
		{"400", []providertest.Reply{{Err: providers.ErrBadRequest}}, providers.ErrBadRequest, "(1 attempt; not retried: bad request)"},
		{"404 model not found", []providertest.Reply{{Status: 404}}, providers.ErrBadRequest, "(1 attempt; not retried: bad request)"},
		{"context length", []providertest.Reply{{Err: providers.ErrContextWindow}}, providers.ErrContextWindow, "(1 attempt; not retried: context window exceeded)"},
		{"429 then success", []providertest.Reply{{Err: providers.ErrRateLimit}, {Text: "ok"}}, nil, ""},
	} {
		for _, s := range servers {
			provider := s.provider
			t.Run(provider+"/"+tc.name, func(t *testing.T) {
				srv := s.start(t, tc.replies...) // a request past the script fails the test
				m, err := models.New(provider+"/some-model", models.WithAPIKey("k"), models.WithBaseURL(srv.URL()), policy)
				require.NoError(t, err)
				resp, err := m.Generate(context.Background(), providers.Request{Messages: []providers.Message{providers.UserText("hi")}})
				assert.Equal(t, len(tc.replies), len(srv.Requests()), "requests")
				if tc.kind == nil {
					require.NoError(t, err)
					assert.Equal(t, "ok", resp.Message.Text())
					return
				}
				require.ErrorIs(t, err, tc.kind)
				assert.True(t, strings.HasPrefix(err.Error(), provider+"/some-model: "), "error %q names the model", err)
				assert.True(t, strings.HasSuffix(err.Error(), tc.says), "error %q ends with %q", err, tc.says)
			})
		}
	}
}

func TestOpenAICompatibleByName(t *testing.T) {
	for _, provider := range []string{"openai", "openrouter", "ollama", "gemini"} {
		t.Run(provider, func(t *testing.T) {
			srv := providertest.NewOpenAI(t, providertest.Reply{Text: "hi from " + provider})
			m, err := models.New(provider+"/some-model", models.WithAPIKey("k"), models.WithBaseURL(srv.URL()), models.WithoutRetry())
			if err != nil {
				t.Fatal(err)
			}
			resp, err := m.Generate(context.Background(), providers.Request{Messages: []providers.Message{providers.UserText("hi")}})
			if err != nil || resp.Message.Text() != "hi from "+provider {
				t.Fatalf("Generate = %+v, %v", resp, err)
			}
			if got := srv.Requests()[0].Model; got != "some-model" {
				t.Fatalf("model on the wire %q", got)
			}
		})
	}
}

func TestMissingKeyNamesTheVariable(t *testing.T) {
	for provider, env := range map[string]string{
		"anthropic": "ANTHROPIC_API_KEY", "openai": "OPENAI_API_KEY",
		"openrouter": "OPENROUTER_API_KEY", "gemini": "GEMINI_API_KEY",
	} {
		t.Setenv(env, "")
		if provider == "gemini" {
			t.Setenv("GOOGLE_API_KEY", "")
		}
		_, err := models.New(provider + "/m")
		require.ErrorIs(t, err, providers.ErrMissingKey, provider)
		assert.Contains(t, err.Error(), env)
		assert.Contains(t, err.Error(), "or pass models.WithAPIKey", "the option a caller of models.New passes")
		assert.NotContains(t, err.Error(), provider+".WithAPIKey")
		assert.NotContains(t, err.Error(), "langchain.WithAPIKey")
		var mk *providers.MissingKeyError
		require.ErrorAs(t, err, &mk)
		assert.Contains(t, mk.Env, env)
		assert.Equal(t, "models.WithAPIKey", mk.Option)
	}
}

func TestUnknownNames(t *testing.T) {
	for _, name := range []string{"nope/x", "no-slash", "scripted/unknown"} {
		_, err := models.New(name)
		if !errors.Is(err, providers.ErrUnknownModel) {
			t.Errorf("New(%q) = %v, want ErrUnknownModel", name, err)
		}
	}
	_, err := models.New("nope/x")
	for _, p := range models.Providers() {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("error %q does not list provider %s", err, p)
		}
	}
}

func TestScriptedModels(t *testing.T) {
	echo, err := models.New("scripted/echo")
	if err != nil {
		t.Fatal(err)
	}
	resp, err := echo.Generate(context.Background(), providers.Request{Messages: []providers.Message{providers.UserText("ping")}})
	if err != nil || resp.Message.Text() != "ping" {
		t.Fatalf("echo = %+v, %v", resp, err)
	}

	demo := scripted.New("demo", scripted.Turn{Text: "<tool_call>{\"name\": \"look\", \"arguments\": {}}</tool_call>"})
	m, err := models.New("scripted/demo", models.WithModels(demo), models.WithTextTools())
	if err != nil {
		t.Fatal(err)
	}
	resp, err = m.Generate(context.Background(), providers.Request{
		Messages: []providers.Message{providers.UserText("look around")},
		Tools:    []providers.ToolSpec{{Name: "look", Description: "Look.", Schema: []byte(`{"type":"object"}`)}},
	})
	if err != nil || len(resp.Message.ToolCalls()) != 1 || resp.Message.ToolCalls()[0].Name != "look" {
		t.Fatalf("text tools over a named scripted model: %+v, %v", resp, err)
	}
}

func TestDefault(t *testing.T) {
	env := func(vars map[string]string) func(string) string {
		return func(k string) string { return vars[k] }
	}
	ollama := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/tags" {
			http.NotFound(w, r)
			return
		}
		w.Write([]byte(`{"models":[{"name":"qwen2.5:7b"},{"name":"llama3.1"}]}`))
	}))
	defer ollama.Close()
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close()
	for _, c := range []struct {
		vars map[string]string
		want string
	}{
		{map[string]string{"ANTHROPIC_API_KEY": "k", "OPENAI_API_KEY": "k"}, "anthropic/claude-sonnet-4-5"},
		{map[string]string{"OPENAI_API_KEY": "k"}, "openai/gpt-4o"},
		{map[string]string{"GOOGLE_API_KEY": "k"}, "gemini/gemini-2.5-flash"},
		{map[string]string{"OLLAMA_HOST": ollama.URL}, "ollama/qwen2.5:7b"},
		{map[string]string{"OLLAMA_HOST": down.URL}, ""},
	} {
		if got := models.Default(env(c.vars)); got != c.want {
			t.Errorf("Default(%v) = %q, want %q", c.vars, got, c.want)
		}
	}
}
