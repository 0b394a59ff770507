package main

import (
	"os"
	"strings"
	"testing"
)

// TestStatusResultsWithoutData: `msjfarm status` and `msjfarm results` in
// a directory with no results say so and exit 1, and create nothing (they
// used to create an empty ./msjfarm-data and print an empty table with
// exit 0); with an existing but empty store they say there are no
// campaigns, exit 1.
func TestStatusResultsWithoutData(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	t.Setenv("MSJFARM_STORAGE", "")
	t.Setenv("MSJFARM_NATS_URL", "")
	for _, args := range [][]string{{"status"}, {"results"}, {"results", "q-fig3"}, {"report", "q-fig3"}, {"gc"}, {"archive", "export", "q-fig3", "-o", "x.msjar"}} {
		code, out, errOut := captured(t, func() int { return dispatch(args) })
		if code == 0 || !strings.Contains(errOut, "no results at ./msjfarm-data: it does not exist") {
			t.Errorf("%v: exit %d, stderr %q; want non-zero and a message that ./msjfarm-data does not exist", args, code, errOut)
		}
		if strings.TrimSpace(out) != "" {
			t.Errorf("%v: printed %q on stdout", args, out)
		}
		if _, err := os.Stat("msjfarm-data"); err == nil {
			t.Fatalf("%v created ./msjfarm-data", args)
		}
	}
	if err := os.Mkdir("msjfarm-data", 0o755); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"status"}, {"results"}} {
		code, out, errOut := captured(t, func() int { return dispatch(args) })
		if code != 1 || !strings.Contains(errOut, "no campaigns") || strings.TrimSpace(out) != "" {
			t.Errorf("%v in an empty store: exit %d, stdout %q, stderr %q; want 1 and \"no campaigns\"", args, code, out, errOut)
		}
	}
}
