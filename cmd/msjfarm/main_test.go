package main

import (
	"os"
	"testing"
)

// TestMain lets the test binary stand in for msjfarm when the plugin host
// re-executes it to serve a built-in family (registry.Self is the running
// executable), so that run's default plugin path is tested as shipped.
func TestMain(m *testing.M) {
	if len(os.Args) == 3 && os.Args[1] == "__serve-family" {
		os.Exit(dispatch(os.Args[1:]))
	}
	os.Exit(m.Run())
}
