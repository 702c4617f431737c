package models_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

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
		if !errors.Is(err, providers.ErrMissingKey) || !strings.Contains(err.Error(), env) {
			t.Errorf("%s without a key: %v; want ErrMissingKey naming %s", provider, err, env)
		}
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
