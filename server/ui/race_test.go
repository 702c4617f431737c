//go:build race

package ui_test

// raceEnabled is set when the tests run with -race.
const raceEnabled = true
