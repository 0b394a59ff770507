package report

import (
	"math"
	"testing"
)

// TestMeanHalfWidthDecimals: a table's "mean ± half-width" prints the mean
// to the decimal place of the half-width's last digit. The mean was
// rounded to 4 significant digits of its own: 10.99962 ± 1.0851 read
// "11 ± 1.085", the mean 3 decimals short of its interval.
func TestMeanHalfWidthDecimals(t *testing.T) {
	for _, c := range []struct {
		mean, hw float64
		want     string
	}{
		{10.99962, 1.0851, "11.000 ± 1.085"},
		{19.097851, 16.0213, "19.10 ± 16.02"},
		{0.01537201, 0.0976, "0.0154 ± 0.0976"},
		{2.213647, 1.741, "2.214 ± 1.741"},
		{3.2e-4, 1.5e-5, "0.000320 ± 1.5e-05"},
		{123456.7, 12345.6, "123460 ± 1.235e+04"},
		// No interval to match: the mean as fmtNum prints it.
		{6.459123, 0, "6.459 ± 0"},
		{6.459123, math.Inf(1), "6.459 ± ∞"},
		{6.459123, math.NaN(), "6.459 ± —"},
	} {
		if got := fmtMeanHW(c.mean, c.hw); got != c.want {
			t.Errorf("fmtMeanHW(%v, %v) = %q, want %q", c.mean, c.hw, got, c.want)
		}
	}
}
