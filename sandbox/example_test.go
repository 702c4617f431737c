package sandbox_test

import (
	"fmt"

	"github.com/agiraph/agiraph/sandbox"
)

// A policy's Env drops what looks like a secret from a process's environment, unless the
// policy keeps it.
func ExamplePolicy_Env() {
	env := []string{"PATH=/usr/bin", "OPENAI_API_KEY=sk-1", "GITHUB_TOKEN=ghp-2", "LANG=C"}
	p := sandbox.Policy{Writable: []string{"/work/run/scratch"}, NoNetwork: true}
	fmt.Println(p.Env(env))
	fmt.Println(p.Keep([]string{"GITHUB_TOKEN"}).Env(env))
	// Output:
	// [PATH=/usr/bin LANG=C]
	// [PATH=/usr/bin GITHUB_TOKEN=ghp-2 LANG=C]
}

// CLI.Policy adds to an assignment's policy what a known CLI agent needs: its working folder
// and configuration folder writable, the network, its API key.
func ExampleCLI_Policy() {
	cli := sandbox.CLI{
		Program: "claude",
		Dir:     "/work/run/scratch",
		Env:     []string{"HOME=/home/agent", "ANTHROPIC_API_KEY=sk-ant-1", "AWS_SECRET_ACCESS_KEY=x"},
	}
	p, err := cli.Policy(sandbox.Policy{}, nil)
	if err != nil {
		panic(err)
	}
	fmt.Println(p.Writable)
	fmt.Println(p.Env(cli.Env))
	// Output:
	// [/work/run/scratch /home/agent/.claude]
	// [HOME=/home/agent ANTHROPIC_API_KEY=sk-ant-1]
}
