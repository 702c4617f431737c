package models

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"
)

// Default returns the model a program that names none should use, from what its environment
// offers: the first provider whose key getenv finds (ANTHROPIC_API_KEY, OPENAI_API_KEY,
// OPENROUTER_API_KEY, GEMINI_API_KEY or GOOGLE_API_KEY), else the first model of an Ollama that
// answers at OLLAMA_HOST (or its default address) within a moment; "" when there is none.
func Default(getenv func(string) string) string {
	switch {
	case getenv("ANTHROPIC_API_KEY") != "":
		return "anthropic/claude-sonnet-4-5"
	case getenv("OPENAI_API_KEY") != "":
		return "openai/gpt-4o"
	case getenv("OPENROUTER_API_KEY") != "":
		return "openrouter/anthropic/claude-sonnet-4.5"
	case getenv("GEMINI_API_KEY") != "" || getenv("GOOGLE_API_KEY") != "":
		return "gemini/gemini-2.5-flash"
	}
	if m := ollamaModel(getenv("OLLAMA_HOST")); m != "" {
		return "ollama/" + m
	}
	return ""
}

// ollamaModel returns the first model the Ollama at host serves, or "" when none answers.
func ollamaModel(host string) string {
	root := strings.TrimSuffix(OllamaURL(host), "/v1")
	client := &http.Client{Timeout: 300 * time.Millisecond}
	resp, err := client.Get(root + "/api/tags")
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	var tags struct {
		Models []struct {
			Name string `json:"name"`
		} `json:"models"`
	}
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&tags) != nil || len(tags.Models) == 0 {
		return ""
	}
	return tags.Models[0].Name
}

// OllamaURL turns OLLAMA_HOST (host, host:port or a URL, as Ollama reads it) into the base URL
// of its OpenAI-compatible API. Without a scheme it is http and the port defaults to 11434; an
// empty host is Ollama's default address.
func OllamaURL(host string) string {
	if strings.TrimSpace(host) == "" {
		host = "localhost"
	}
	if !strings.Contains(host, "://") {
		h, _, _ := strings.Cut(host, "/")
		if !strings.Contains(h, ":") || strings.HasSuffix(h, "]") {
			host = strings.Replace(host, h, h+":11434", 1)
		}
		host = "http://" + host
	}
	host = strings.TrimRight(host, "/")
	if !strings.HasSuffix(host, "/v1") {
		host += "/v1"
	}
	return host
}
