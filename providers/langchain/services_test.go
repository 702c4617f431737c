package langchain_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/providers/langchain"
	"github.com/agiraph/agiraph/providers/providertest"
)

func TestServices(t *testing.T) {
	var names []string
	for _, s := range langchain.Services() {
		names = append(names, s.Provider)
	}
	eq(t, "providers", names, []string{"openai", "openrouter", "ollama", "gemini"})
	gemini := langchain.Services()[3]
	eq(t, "gemini url", gemini.BaseURL, "https://generativelanguage.googleapis.com/v1beta/openai/")
	eq(t, "gemini keys", gemini.KeyEnv, []string{"GEMINI_API_KEY", "GOOGLE_API_KEY"})
	eq(t, "ollama keys", len(langchain.Services()[2].KeyEnv), 0)
}

// TestNewService builds each service against the fake server and checks the key it sends.
func TestNewService(t *testing.T) {
	cases := []struct {
		provider, model string
		env             map[string]string
		opts            []langchain.ServiceOption
		wantKey         string
		maxTokensField  string
	}{
		{"openai", "gpt-4o", map[string]string{"OPENAI_API_KEY": "sk-env"}, nil, "sk-env", "max_completion_tokens"},
		{"openai", "gpt-4o", map[string]string{"OPENAI_API_KEY": "sk-env"}, []langchain.ServiceOption{langchain.WithAPIKey("sk-opt")}, "sk-opt", "max_completion_tokens"},
		{"openrouter", "meta-llama/llama-3.1-70b", map[string]string{"OPENROUTER_API_KEY": "sk-or"}, nil, "sk-or", "max_tokens"},
		{"gemini", "gemini-2.5-flash", map[string]string{"GOOGLE_API_KEY": "g-google"}, nil, "g-google", "max_tokens"},
		{"gemini", "gemini-2.5-flash", map[string]string{"GEMINI_API_KEY": "g-gemini", "GOOGLE_API_KEY": "g-google"}, nil, "g-gemini", "max_tokens"},
		{"ollama", "llama3.2", nil, nil, "", "max_tokens"},
	}
	for _, c := range cases {
		t.Run(c.provider, func(t *testing.T) {
			clearKeys(t)
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			s := providertest.NewOpenAI(t, providertest.Reply{Text: "hi", Usage: providers.Usage{InputTokens: 1000, OutputTokens: 100}})
			m, err := langchain.NewService(c.provider, c.model, append(c.opts, langchain.WithBaseURL(s.URL()))...)
			if err != nil {
				t.Fatal(err)
			}
			eq(t, "name", m.Name(), c.provider+"/"+c.model)
			resp, err := m.Generate(context.Background(), providers.Request{Messages: []providers.Message{providers.UserText("hi")}, MaxTokens: 100})
			if err != nil {
				t.Fatal(err)
			}
			eq(t, "text", resp.Message.Text(), "hi")
			r := s.Requests()[0]
			auth := r.Header.Get("Authorization")
			if c.wantKey != "" {
				eq(t, "authorization", auth, "Bearer "+c.wantKey)
			} else if !strings.HasPrefix(auth, "Bearer ") {
				t.Errorf("authorization %q: langchaingo needs some key", auth)
			}
			eq(t, "model", r.Model, c.model)
			eq(t, c.maxTokensField, r.JSON[c.maxTokensField], 100.0)
			if c.provider == "gemini" {
				eq(t, "gemini cost", resp.Usage.CostUSD, (1000*0.3+100*2.5)/1e6)
			} else if c.provider != "openai" {
				eq(t, "unknown price", resp.Usage.CostUSD, 0.0)
			}
		})
	}
}

// clearKeys unsets the key variables for the test.
func clearKeys(t *testing.T) {
	for _, k := range []string{"OPENAI_API_KEY", "OPENROUTER_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY", "OPENAI_BASE_URL", "OLLAMA_HOST", "OPENAI_ORGANIZATION"} {
		t.Setenv(k, "")
	}
}

func TestMissingKey(t *testing.T) {
	clearKeys(t)
	for provider, env := range map[string]string{"openai": "OPENAI_API_KEY", "openrouter": "OPENROUTER_API_KEY", "gemini": "GEMINI_API_KEY or GOOGLE_API_KEY"} {
		_, err := langchain.NewService(provider, "m")
		if !errors.Is(err, providers.ErrMissingKey) {
			t.Fatalf("%s: err = %v, want ErrMissingKey", provider, err)
		}
		pe := providerError(t, err)
		eq(t, "provider", pe.Provider, provider)
		eq(t, "model", pe.Model, "m")
		if !strings.Contains(err.Error(), "set "+env) || !strings.Contains(err.Error(), "langchain.WithAPIKey") {
			t.Errorf("%s: error %q does not name %s", provider, err, env)
		}
	}
}

func TestUnknownProvider(t *testing.T) {
	_, err := langchain.NewService("mistral", "large")
	if !errors.Is(err, providers.ErrUnknownModel) {
		t.Fatalf("err = %v, want ErrUnknownModel", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "openai, openrouter, ollama, gemini") {
		t.Errorf("message %q does not list the known providers", msg)
	}
	_, err = langchain.NewService("openai", "", langchain.WithAPIKey("k"))
	if !errors.Is(err, providers.ErrUnknownModel) {
		t.Errorf("empty model: err = %v, want ErrUnknownModel", err)
	}
}

// TestBaseURLEnv checks OPENAI_BASE_URL and the forms of OLLAMA_HOST against the fake server.
func TestBaseURLEnv(t *testing.T) {
	s := providertest.NewOpenAI(t, providertest.Reply{Text: "1"}, providertest.Reply{Text: "2"}, providertest.Reply{Text: "3"}, providertest.Reply{Text: "4"})
	root := strings.TrimSuffix(s.URL(), "/v1") // http://127.0.0.1:port
	hostPort := strings.TrimPrefix(root, "http://")
	cases := []struct{ provider, env, value string }{
		{"openai", "OPENAI_BASE_URL", s.URL()},
		{"ollama", "OLLAMA_HOST", hostPort},
		{"ollama", "OLLAMA_HOST", root},
		{"ollama", "OLLAMA_HOST", root + "/"},
	}
	for _, c := range cases {
		clearKeys(t)
		t.Setenv(c.env, c.value)
		m, err := langchain.NewService(c.provider, "model", langchain.WithAPIKey("k"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := m.Generate(context.Background(), providers.Request{Messages: []providers.Message{providers.UserText("hi")}}); err != nil {
			t.Errorf("%s=%s: %v", c.env, c.value, err)
		}
	}
	eq(t, "requests", len(s.Requests()), 4)
	for _, r := range s.Requests() {
		eq(t, "path", r.Path, "/v1/chat/completions")
	}
}
