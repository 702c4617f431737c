// Package clitest finds the third-party programs that tests run for real — the Claude Code,
// Codex and Gemini CLIs, MCP servers from npm — where .ci/run installs them: npm packages
// pinned to a version under <repository>/.cache/<folder>. Under -short the test skips; a
// program that is not there skips the test with the command that installs it; under CI (the CI
// variable set), which installs them all, it fails the test instead (internal/testenv).
package clitest

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/agiraph/agiraph/internal/testenv"
)

// Package is an npm package a test runs, installed by .ci/run with
// npm install --prefix .cache/<Folder> <Name>@<Version>.
type Package struct {
	Folder  string // the folder under .cache
	Name    string // the npm package, e.g. "@anthropic-ai/claude-code"
	Version string // the version the tests pin
}

// The packages the tests run, as .ci/run installs them.
var (
	Claude     = Package{"claude-code", "@anthropic-ai/claude-code", "2.1.330"}
	Claude197  = Package{"claude-code-2.1.197", "@anthropic-ai/claude-code", "2.1.197"}
	Codex      = Package{"codex", "@openai/codex", "0.169.0"}
	Gemini     = Package{"gemini-cli", "@google/gemini-cli", "0.61.0"}
	Everything = Package{"mcp-everything", "@modelcontextprotocol/server-everything", "2026.8.31"}
	// LangGraphSDK is the official LangGraph API client, which server/langgraphapi's tests run.
	LangGraphSDK = Package{"langgraph-sdk", "@langchain/langgraph-sdk", "2.0.0"}
	// A2ASDK is the official JavaScript A2A SDK, whose client server/a2a's tests run.
	A2ASDK = Package{"a2a-sdk", "@a2a-js/sdk", "1.3.0"}
	// LangGraph is LangGraph.js, which graph's differential test runs beside the engine, and
	// LangGraphCore the release of its peer @langchain/core installed with it.
	LangGraph     = Package{"langgraph", "@langchain/langgraph", "1.7.3"}
	LangGraphCore = Package{"langgraph", "@langchain/core", "1.4.0"}
	// LangGraphCLI is LangGraph's CLI, whose langgraphjs dev runs LangGraph's own server
	// (@langchain/langgraph-api, installed with it beside LangGraph.js and its peer) for
	// server/langgraphapi's comparison test.
	LangGraphCLI = Package{"langgraph-api", "@langchain/langgraph-cli", "1.5.1"}
	LangGraphAPI = Package{"langgraph-api", "@langchain/langgraph-api", "1.5.1"}
)

// RepoRoot returns the repository's root directory, where .cache is: the first folder above the
// test's working directory that holds go.work, so that tests of every module of the repository
// find the same one.
func RepoRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("clitest: no go.work above the test's directory")
		}
		dir = parent
	}
}

// Dir returns the folder of the installed package (where its package.json is). A package
// missing, or installed at another version, skips the test — fails it under CI. Under -short it
// skips the test.
func (p Package) Dir(t testing.TB) string {
	t.Helper()
	testenv.Need(t, p.Name+" from npm")
	dir := filepath.Join(RepoRoot(t), ".cache", p.Folder, "node_modules", filepath.FromSlash(p.Name))
	var meta struct{ Version string }
	b, err := os.ReadFile(filepath.Join(dir, "package.json"))
	if err == nil {
		err = json.Unmarshal(b, &meta)
	}
	if err == nil && meta.Version != p.Version {
		err = fmt.Errorf("version %s is installed", meta.Version)
	}
	if err != nil {
		testenv.Missing(t, fmt.Sprintf("%s@%s is not installed (npm install --prefix .cache/%s %s@%s): %v", p.Name, p.Version, p.Folder, p.Name, p.Version, err))
	}
	return dir
}

// Bin returns the path of the package's command bin (node_modules/.bin/<bin>), or the path in
// the environment variable override when that is set (a test run against another copy). A
// missing package skips the test — fails it under CI.
func (p Package) Bin(t testing.TB, bin, override string) string {
	t.Helper()
	if v := os.Getenv(override); override != "" && v != "" {
		return v
	}
	p.Dir(t)
	return filepath.Join(RepoRoot(t), ".cache", p.Folder, "node_modules", ".bin", bin)
}

// ClaudeEnv returns the environment in which the Claude Code CLI talks to the Messages API at
// baseURL (a fake one) with a test key, in a home folder of its own, and reaches nothing else.
func ClaudeEnv(t testing.TB, baseURL string) []string {
	return []string{
		"HOME=" + t.TempDir(),
		"ANTHROPIC_BASE_URL=" + baseURL,
		"ANTHROPIC_API_KEY=test-key",
		"ANTHROPIC_AUTH_TOKEN=",
		"CLAUDE_CODE_USE_BEDROCK=", "CLAUDE_CODE_USE_VERTEX=",
		"DISABLE_TELEMETRY=1",
		"DISABLE_AUTOUPDATER=1",
		"DISABLE_ERROR_REPORTING=1",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
	}
}
