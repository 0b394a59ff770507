package sweep_test

import (
	"strings"
	"testing"

	"github.com/msjfarm/msjfarm/plugins/builtin"
	"github.com/msjfarm/msjfarm/sweep"
)

// TestCompareBaseline: the compare block names a policy of the file (its
// name, or a variant's label starting with it); a typo or an empty baseline
// is an error naming compare.baseline and the policies there are.
func TestCompareBaseline(t *testing.T) {
	base := "name: c\nworkload: one-or-all\naxes: {arrival_rate: [1]}\npolicies: [fcfs, {name: msfq, threshold: [1, 31]}]\nreplications: 2\nrun: {arrivals: 1000}\n"
	for _, tc := range []struct{ compare, wantErr string }{
		{"", ""},
		{"compare: {baseline: fcfs}\n", ""},
		{"compare: {baseline: MSFQ}\n", ""},
		{"compare: {baseline: \"msfq threshold=31\"}\n", ""},
		{"compare: {baseline: fcsf}\n", `compare.baseline: "fcsf" is not a policy of the file (policies: fcfs, msfq)`},
		{"compare: {baseline: \"\"}\n", "compare.baseline: required"},
		{"compare: {basline: fcfs}\n", "basline"},
	} {
		f, err := sweep.Parse([]byte(base+tc.compare), "yaml")
		if err == nil {
			_, err = sweep.Expand(f, builtin.Catalog{})
		}
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("%q: %v", tc.compare, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("%q: error %v, want %q", tc.compare, err, tc.wantErr)
		}
	}
}
