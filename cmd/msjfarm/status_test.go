package main

import (
	"strings"
	"testing"

	"github.com/msjfarm/msjfarm/internal/protocol"
	"github.com/msjfarm/msjfarm/storage"
)

// TestPointStatus: the status cell of a summary row for each verdict, with
// and without a failed converged verdict (an unstable or undecided point's
// own verdict says more than NOT CONVERGED), and with identical
// replications.
func TestPointStatus(t *testing.T) {
	for _, c := range []struct {
		row  map[string]string
		want string
	}{
		{map[string]string{"verdict": "stable", "n": "10", "n_unstable": "0", "n_truncated": "0", "converged": "true"}, ""},
		{map[string]string{"verdict": "stable", "n": "10", "n_unstable": "1", "n_truncated": "0", "converged": "true"}, "stable (1 of 10 flagged)"},
		{map[string]string{"verdict": "stable", "n": "10", "n_unstable": "0", "n_truncated": "0", "converged": "false", "n_unconverged": "7"}, "NOT CONVERGED (7 of 10)"},
		{map[string]string{"verdict": "unstable", "n": "10", "n_unstable": "6", "converged": "false"}, "UNSTABLE (6 of 10)"},
		{map[string]string{"verdict": "truncated", "n": "10", "n_truncated": "5", "converged": "true"}, "TRUNCATED (5 of 10)"},
		{map[string]string{"verdict": "undecided", "n": "10", "n_unstable": "6", "verdict_test": "episodes:cores-2000", "converged": "false", "n_unconverged": "10"},
			"UNDECIDED (episodes:cores-2000: run longer)"},
		{map[string]string{"n": "10", "n_unstable": "3"}, "UNSTABLE (3 of 10)"}, // a summary from before the verdict column
		// Replications repeating another seed's run, alone, beside a
		// verdict and beside NOT CONVERGED.
		{map[string]string{"verdict": "stable", "n": "3", "n_identical": "2", "converged": "true"}, "IDENTICAL (2 of 3 repeat another seed's run: the policy ignores its seed)"},
		{map[string]string{"verdict": "unstable", "n": "3", "n_unstable": "3", "n_identical": "2"}, "UNSTABLE (3 of 3); IDENTICAL (2 of 3 repeat another seed's run: the policy ignores its seed)"},
		{map[string]string{"verdict": "stable", "n": "3", "n_identical": "1", "converged": "false", "n_unconverged": "3"},
			"IDENTICAL (1 of 3 repeat another seed's run: the policy ignores its seed); NOT CONVERGED (3 of 3)"},
		{map[string]string{"verdict": "stable", "n": "3", "n_identical": "0", "converged": "true"}, ""},
	} {
		if got := pointStatus(func(k string) string { return c.row[k] }); got != c.want {
			t.Errorf("%v: %q, want %q", c.row, got, c.want)
		}
	}
}

// A campaign whose manifest says running and whose `msjfarm run` does not
// answer (killed) reads "interrupted" in `results` as in `status`: the
// list said "running" where status said "interrupted".
func TestInterruptedState(t *testing.T) {
	data := t.TempDir()
	st, err := storage.Open(t.Context(), data)
	if err != nil {
		t.Fatal(err)
	}
	const id = "0123456789abcdef"
	for k, v := range map[string]string{
		storage.CampaignSpecKey(id): "name: killed\n",
		storage.ManifestKey(id):     `{"campaign":"` + id + `","name":"killed","state":"running","tasks":3}`,
		protocol.LiveRunKey(id):     `{"nats_url":"nats://127.0.0.1:1"}`,
	} {
		if err := st.Put(t.Context(), k, []byte(v)); err != nil {
			t.Fatal(err)
		}
	}
	for _, cmd := range []string{"results", "status"} {
		code, out, errOut := captured(t, func() int { return dispatch([]string{cmd, "--storage", data}) })
		if code != 0 || !strings.Contains(out, "interrupted") || strings.Contains(out, "running ") {
			t.Errorf("%s: exit %d, want the campaign interrupted:\n%s%s", cmd, code, out, errOut)
		}
	}
}

// A comparison whose own 95% interval excludes 0 but which Holm's
// correction leaves indistinguishable says so: "+27.2% [+24.6%, +29.9%]
// indistinguishable" read as a contradiction. Fieller's interval excludes
// 0 exactly when the unadjusted test rejects. A summary.csv written with
// the delta method's rel_diff_hw (no _lo, _hi columns: "" here) prints the
// difference alone; an unbounded interval ("inf") says so.
func TestComparisonCellHolm(t *testing.T) {
	for _, c := range []struct{ verdict, rel, lo, hi, want string }{
		{"indistinguishable", "0.272", "0.246", "0.299", "+27.2% [+24.6%, +29.9%] indistinguishable after Holm's correction"},
		{"indistinguishable", "0.01", "-0.016", "0.037", "+1.0% [-1.6%, +3.7%] indistinguishable"},
		{"better", "-0.1", "-0.125", "-0.08", "-10.0% [-12.5%, -8.0%] better"},
		{"indistinguishable", "0.1", "-inf", "inf", "+10.0% (unbounded) indistinguishable"},
		{"better", "-0.1", "", "", "-10.0% better"},
		{"baseline", "", "", "", "baseline"},
	} {
		if got := comparisonCell(c.verdict, c.rel, c.lo, c.hi); got != c.want {
			t.Errorf("comparisonCell(%s, %s, %s, %s) = %q, want %q", c.verdict, c.rel, c.lo, c.hi, got, c.want)
		}
	}
}
