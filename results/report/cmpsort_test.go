package report

import (
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/msjfarm/msjfarm/results/aggregate"
)

// cmpSortCampaign is FCFS (the baseline) and policy "a" at λ = 1 … 7,
// a's mean response time relative to FCFS at each: rels (NaN: the
// comparison undefined, a side unstable), the interval unbounded at
// λ = 2 and a half-line at λ = 3.
var cmpSortRels = []float64{-0.73, math.NaN(), 0.05, -0.05, -0.5, 1.2, -0.055}

func cmpSortCampaign() Campaign {
	var pts []aggregate.Point
	for i, rel := range cmpSortRels {
		lam := float64(i + 1)
		for _, pol := range []string{"fcfs", "a"} {
			p := aggregate.Point{Workload: "one-or-all", Servers: 32, Policy: pol, ArrivalRate: lam,
				Axes: map[string]any{"arrival_rate": lam}, N: 5, Replications: 5, Verdict: "stable",
				Params: map[string]any{}}
			p.Metrics = []aggregate.Metric{aggregate.NewMetric(aggregate.MetricDesc{Name: "mean_response", Base: "mean_response", Class: -1}, 10*(1+rel), 0.1, 5)}
			c := &aggregate.Comparison{Baseline: "fcfs", IsBaseline: pol == "fcfs"}
			switch {
			case pol == "fcfs":
			case math.IsNaN(rel):
				c.Undefined = "a side is unstable"
			default:
				lo, hi := rel-0.02, rel+0.03
				if i == 2 {
					lo, hi = math.Inf(-1), math.Inf(1)
				}
				if i == 3 {
					lo = math.Inf(-1)
				}
				v := aggregate.CmpWorse
				if rel < 0 {
					v = aggregate.CmpBetter
				}
				c.Metrics = []aggregate.Paired{{Name: "mean_response", N: 5, RelDiff: rel, RelDiffLo: lo, RelDiffHi: hi,
					Diff: 10 * rel, DiffHW: 0.1, UnpairedHW: 0.2, P: 0.01, PHolm: 0.01 * float64(i+1), Verdict: v}}
			}
			p.Compare = c
			pts = append(pts, p)
		}
	}
	return Campaign{Points: pts}
}

// cmpTable is the comparison table of an index.html.
func cmpTable(t *testing.T, idx string) string {
	t.Helper()
	i := strings.Index(idx, "Paired comparisons against")
	if i < 0 {
		t.Fatal("index.html has no comparison table")
	}
	idx = idx[i:]
	return idx[:strings.Index(idx, "</table>")]
}

// TestComparisonSortKeys: the comparison table's numeric cells carry the
// number they sort by (data-v): the relative difference in percent for
// "−73.0% [−78.8%, −56.4%]", whatever its interval (unbounded included),
// and an empty key — after every value, in either direction — for an
// undefined comparison's "—". Without data-v the page sorted the column
// as text: "+120.0%" before "-5.0%" before "-50.0%" before "-73.0%".
func TestComparisonSortKeys(t *testing.T) {
	files, err := Render(cmpSortCampaign())
	if err != nil {
		t.Fatal(err)
	}
	tbl := cmpTable(t, string(files["index.html"]))
	rows := regexp.MustCompile(`(?s)<tr class="cmp-[a-z]+">(.*?)</tr>`).FindAllStringSubmatch(tbl, -1)
	if len(rows) != len(cmpSortRels) {
		t.Fatalf("%d comparison rows, want %d", len(rows), len(cmpSortRels))
	}
	cellRE := regexp.MustCompile(`<td(?: class="[^"]*")?(?: data-v="([^"]*)")?>([^<]*)</td>`)
	for i, r := range rows {
		cells := cellRE.FindAllStringSubmatch(r[1], -1)
		// series, λ, E[T] vs fcfs, verdict, p (Holm), pairs, CRN ×, note
		if len(cells) != 8 {
			t.Fatalf("row %d: %d cells, want 8: %s", i, len(cells), r[1])
		}
		rel := cmpSortRels[i]
		if math.IsNaN(rel) {
			if !strings.Contains(cells[2][0], `data-v=""`) || cells[2][2] != "—" {
				t.Errorf("row %d: undefined comparison's cell %s, want data-v=\"\" and —", i, cells[2][0])
			}
			continue
		}
		v, err := strconv.ParseFloat(cells[2][1], 64)
		if err != nil || math.Abs(v-100*rel) > 1e-9 {
			t.Errorf("row %d: %q sorts by %q, want %v", i, cells[2][2], cells[2][1], 100*rel)
		}
		for _, c := range []struct {
			col  int
			want float64
		}{{1, float64(i + 1)}, {4, 0.01 * float64(i+1)}, {5, 5}, {6, 2}} {
			if v, err := strconv.ParseFloat(cells[c.col][1], 64); err != nil || math.Abs(v-c.want) > 1e-12 {
				t.Errorf("row %d, column %d: %q sorts by %q, want %v", i, c.col, cells[c.col][2], cells[c.col][1], c.want)
			}
		}
	}
}

// TestSortKeyInfinities: the infinities are written as JavaScript's
// parseFloat reads them; Go's "-Inf" read as NaN.
func TestSortKeyInfinities(t *testing.T) {
	for v, want := range map[float64]string{math.Inf(1): "Infinity", math.Inf(-1): "-Infinity", -2.5: "-2.5", math.NaN(): ""} {
		if got := sortKey(v); got != want {
			t.Errorf("sortKey(%v) = %q, want %q", v, got, want)
		}
	}
}
