// Package testenv decides what a test does about a program or service it needs beyond Go and a C
// compiler: PostgreSQL, Chromium, bubblewrap, the npm CLIs. Each helper that finds such a thing
// (internal/pgtest, internal/clitest, the browser and sandbox helpers) asks Need first and Missing
// when the thing is not there:
//
//   - under -short (go test -short ./..., the quick run of a contributor's machine) the test skips,
//     naming what it needs; go test without -short runs it;
//   - where the thing is missing, the test skips, saying how to install it;
//   - under CI (the CI variable set), where .ci/run installs everything, a missing thing fails the
//     test instead. CI never runs with -short.
package testenv

import (
	"os"
	"testing"
)

// Need skips the test under -short: it needs what (for example "PostgreSQL"), which the quick run
// does not use.
func Need(t testing.TB, what string) {
	t.Helper()
	if testing.Short() {
		t.Skipf("needs %s: run go test without -short, with it installed (.ci/run installs it)", what)
	}
}

// Missing skips the test with msg, which says what is missing and how to install it; under CI, which
// installs what the tests need, it fails the test.
func Missing(t testing.TB, msg string) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}
