//go:build !linux

package mcp_test

import "testing"

// noneLeft checks nothing where processes cannot be listed through /proc.
func noneLeft(*testing.T, string) {}
