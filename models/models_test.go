package models_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/models"
	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/providers/scripted"
)

// registrations counts the providers TestRegisteredProviders registered.
var registrations atomic.Int32

// A provider registered by its package serves its names, with the settings New was given; a
// call's WithProvider serves them in its place; a provider of the library's whose package was
// not imported is an error naming the package to import.
func TestRegisteredProviders(t *testing.T) {
	// Registering changes what every test sees: this test runs alone, under a name of its own
	// each time (-count).
	fake := fmt.Sprintf("fake%d", registrations.Add(1))
	var got []models.Settings
	models.Register(fake, func(model string, s models.Settings) (providers.Model, error) {
		got = append(got, s)
		return scripted.New(fake+"/"+model, scripted.Turn{Text: "registered"}), nil
	})
	assert.Contains(t, models.Providers(), fake)
	assert.Panics(t, func() { models.Register(fake, nil) }, "registered twice")
	assert.Panics(t, func() {
		models.Register("a/b", func(string, models.Settings) (providers.Model, error) { return nil, nil })
	})

	client := &http.Client{}
	m, err := models.New(fake+"/one", models.WithAPIKey("k"), models.WithBaseURL("http://h"), models.WithHTTPClient(client), models.WithoutRetry())
	require.NoError(t, err)
	resp, err := m.Generate(context.Background(), providers.Request{Messages: []providers.Message{providers.UserText("hi")}})
	require.NoError(t, err)
	assert.Equal(t, "registered", resp.Message.Text())
	assert.Equal(t, []models.Settings{{APIKey: "k", BaseURL: "http://h", HTTPClient: client}}, got)

	mine := models.WithProvider(fake, func(model string, _ models.Settings) (providers.Model, error) {
		return scripted.New(fake+"/"+model, scripted.Turn{Text: "mine"}), nil
	})
	m, err = models.New(fake+"/two", mine)
	require.NoError(t, err)
	resp, err = m.Generate(context.Background(), providers.Request{Messages: []providers.Message{providers.UserText("hi")}})
	require.NoError(t, err)
	assert.Equal(t, "mine", resp.Message.Text())
	assert.Len(t, got, 1, "the registered provider was not asked")

	_, err = models.New("anthropic/claude-sonnet-4-5")
	require.ErrorIs(t, err, providers.ErrUnknownModel)
	assert.Contains(t, err.Error(), `import _ "github.com/agiraph/agiraph/providers/anthropic"`)
}

func TestUnknownNames(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
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
	t.Parallel()
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

func TestOllamaURL(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"localhost":                   "http://localhost:11434/v1",
		"0.0.0.0:8080":                "http://0.0.0.0:8080/v1",
		"http://gpu.lan:11434":        "http://gpu.lan:11434/v1",
		"https://ollama.example.com/": "https://ollama.example.com/v1",
		"http://h:1/v1":               "http://h:1/v1",
		"[::1]":                       "http://[::1]:11434/v1",
	} {
		if got := models.OllamaURL(in); got != want {
			t.Errorf("OllamaURL(%q) = %q, want %q", in, got, want)
		}
	}
}

// Options makes a provider's options of the settings given, and none of those left empty.
func TestOptions(t *testing.T) {
	t.Parallel()
	key := func(v string) string { return "key=" + v }
	url := func(v string) string { return "url=" + v }
	client := func(*http.Client) string { return "client" }
	assert.Empty(t, models.Options(models.Settings{}, key, url, client))
	assert.Equal(t, []string{"key=k", "url=http://h", "client"},
		models.Options(models.Settings{APIKey: "k", BaseURL: "http://h", HTTPClient: &http.Client{}}, key, url, client))
	assert.Equal(t, []string{"url=http://h"}, models.Options(models.Settings{BaseURL: "http://h"}, key, url, client))
}

// A name with commas is a fallback chain of the models it names; a link that is empty or that
// no provider serves is an error naming the chain.
func TestFallbackChainByName(t *testing.T) {
	down := scripted.New("down", scripted.Turn{Err: &providers.Error{Provider: "scripted", Model: "down", Kind: providers.ErrOverloaded}})
	up := scripted.New("up", scripted.Turn{Text: "up answers"})
	m, err := models.New("scripted/down, scripted/up", models.WithModels(down, up), models.WithoutRetry())
	require.NoError(t, err)
	assert.Equal(t, "scripted/down,scripted/up", m.Name())
	resp, err := m.Generate(context.Background(), providers.Request{})
	require.NoError(t, err)
	assert.Equal(t, "up answers", resp.Message.Text())
	assert.Equal(t, "scripted/up", resp.Model)

	_, err = models.New("scripted/up,,scripted/echo", models.WithModels(up))
	require.ErrorIs(t, err, providers.ErrUnknownModel)
	assert.Contains(t, err.Error(), `fallback chain "scripted/up,,scripted/echo" has an empty model name`)
	_, err = models.New("scripted/up,nowhere/x", models.WithModels(up))
	require.ErrorIs(t, err, providers.ErrUnknownModel)
	assert.Contains(t, err.Error(), `fallback chain "scripted/up,nowhere/x"`)
	assert.Contains(t, err.Error(), `no provider "nowhere"`)
}
