package langchain_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/providers/langchain"
	"github.com/agiraph/agiraph/providers/providertest"
)

// eq fails the test when got and want differ.
func eq(t *testing.T, what string, got, want any) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s = %#v, want %#v", what, got, want)
	}
}

// decoded returns v as decoded JSON.
func decoded(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// service makes a model of provider against s, with a key.
func service(t *testing.T, s *providertest.Server, provider, model string) *langchain.Model {
	t.Helper()
	m, err := langchain.NewService(provider, model, langchain.WithAPIKey("sk-test"), langchain.WithBaseURL(s.URL()))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// providerError returns err as a *providers.Error, failing the test if it is not one.
func providerError(t *testing.T, err error) *providers.Error {
	t.Helper()
	var pe *providers.Error
	if !asError(err, &pe) {
		t.Fatalf("error %v (%T) is not a *providers.Error", err, err)
	}
	return pe
}
