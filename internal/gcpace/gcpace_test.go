package gcpace

import (
	"os"
	"runtime/debug"
	"testing"
)

func TestApply(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	for _, tc := range []struct {
		name  string
		env   string // "" leaves GOGC unset
		start int    // the target before Apply (as the runtime read $GOGC at start-up)
		want  int
	}{
		{"unset", "", 100, Percent},
		{"set by the user", "150", 150, 150},
		{"off by the user", "off", -1, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.env == "" {
				t.Setenv("GOGC", "") // restores the variable afterwards
				if err := os.Unsetenv("GOGC"); err != nil {
					t.Fatal(err)
				}
			} else {
				t.Setenv("GOGC", tc.env)
			}
			debug.SetGCPercent(tc.start)
			if got := Apply(); got != tc.want {
				t.Errorf("Apply() = %d, want %d", got, tc.want)
			}
			if got := debug.SetGCPercent(tc.start); got != tc.want {
				t.Errorf("target in force after Apply = %d, want %d", got, tc.want)
			}
		})
	}
}
