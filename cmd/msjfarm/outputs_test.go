package main

import (
	"bytes"
	"encoding/csv"
	"strconv"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/msjfarm/msjfarm/internal/campaigntest"
	"github.com/msjfarm/msjfarm/monitor"
	"github.com/msjfarm/msjfarm/results/aggregate"
	"github.com/msjfarm/msjfarm/results/report"
)

// TestOneStoryAcrossOutputs runs a real campaign with an unstable baseline
// point (campaigntest.CRN: FCFS at λ = 5) and checks that every output
// tells the same story about it and about the comparisons it spoils:
//
//   - fcfs λ=5 is a lower bound (aggregate.IsBound): summary.csv and its
//     Parquet file say verdict unstable; summary_long flags unstable; the
//     terminal prints "≥ x" with no interval; index.html prints "≥ x"; the
//     live page marks it unstable with no interval;
//   - msfq λ=5 against it is undefined, with the reason, in summary.csv,
//     Parquet, summary_long, the terminal and index.html;
//   - msfq λ=1.5 is an estimate, better than FCFS, with the same relative
//     difference in every output.
//
// Complexity 72: a sequence of flat checks (each an if/t.Fatalf) on one scenario's
// outputs; split into helpers, the sequence a reader follows would scatter.
func TestOneStoryAcrossOutputs(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 90 replications")
	}
	pts := campaigntest.Points(t, campaigntest.CRN)
	find := func(policy string, rate float64) *aggregate.Point {
		for i := range pts {
			if pts[i].Policy == policy && pts[i].ArrivalRate == rate {
				return &pts[i]
			}
		}
		t.Fatalf("no %s λ=%g", policy, rate)
		return nil
	}
	bound, spoiled, good := find("fcfs", 5), find("msfq", 5), find("msfq", 1.5)
	if !bound.Unstable() || good.Unstable() || spoiled.Unstable() {
		t.Fatalf("premise: fcfs λ=5 unstable (%s), msfq stable (%s, %s)", bound.Verdict, spoiled.Verdict, good.Verdict)
	}
	et, _ := bound.Metric("mean_response")
	boundText := "≥ " + strconv.FormatFloat(et.Mean, 'g', 4, 64)
	gm, _ := good.Compare.Paired("mean_response")
	rel := aggregate.FormatRelDiff(gm.RelDiff, gm.RelDiffLo, gm.RelDiffHi)
	if gm.Verdict != aggregate.CmpBetter {
		t.Fatalf("premise: msfq λ=1.5 %s", gm.Verdict)
	}

	// summary.csv and summary.parquet: the same table.
	wide := aggregate.WideTable(pts)
	var wcsv bytes.Buffer
	if err := wide.WriteCSV(&wcsv); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(bytes.NewReader(wcsv.Bytes())).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	var pq bytes.Buffer
	if err := wide.WriteParquet(&pq); err != nil {
		t.Fatal(err)
	}
	prows := readParquet(t, pq.Bytes())
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	for _, src := range []struct {
		name string
		rows [][]string
	}{{"summary.csv", rows[1:]}, {"summary.parquet", prows}} {
		for _, r := range src.rows {
			g := func(c string) string { return r[col[c]] }
			switch g("point") {
			case bound.Point:
				if !aggregate.IsBound(g("verdict"), g("lower_bound") == "true") || g("mean_response_cmp") != aggregate.CmpBaseline {
					t.Errorf("%s fcfs λ=5: verdict %q lower_bound %q cmp %q", src.name, g("verdict"), g("lower_bound"), g("mean_response_cmp"))
				}
			case spoiled.Point:
				if g("mean_response_cmp") != aggregate.CmpUndefined || !strings.Contains(g("compare_note"), "baseline's means are bounds") {
					t.Errorf("%s msfq λ=5: cmp %q note %q", src.name, g("mean_response_cmp"), g("compare_note"))
				}
			case good.Point:
				r, _ := strconv.ParseFloat(g("mean_response_rel_diff"), 64)
				if g("mean_response_cmp") != aggregate.CmpBetter || r != gm.RelDiff {
					t.Errorf("%s msfq λ=1.5: cmp %q rel %q, want better %v", src.name, g("mean_response_cmp"), g("mean_response_rel_diff"), gm.RelDiff)
				}
				lo, _ := strconv.ParseFloat(g("mean_response_rel_diff_lo"), 64)
				hi, _ := strconv.ParseFloat(g("mean_response_rel_diff_hi"), 64)
				if lo != gm.RelDiffLo || hi != gm.RelDiffHi || !(lo < r && r < hi && hi < 0) {
					t.Errorf("%s msfq λ=1.5: interval [%q, %q], want [%v, %v] about %v, below 0", src.name,
						g("mean_response_rel_diff_lo"), g("mean_response_rel_diff_hi"), gm.RelDiffLo, gm.RelDiffHi, r)
				}
			}
		}
	}

	// summary_long: the bound flagged, the comparison undefined with its reason.
	long := aggregate.LongTable(pts)
	lc := map[string]int{}
	for i, c := range long.Columns {
		lc[c.Name] = i
	}
	seen := 0
	for _, r := range long.Rows {
		if r[lc["metric"]] != "mean_response" || r[lc["class_index"]] != int64(-1) {
			continue
		}
		switch r[lc["point"]] {
		case bound.Point:
			seen++
			if r[lc["unstable"]] != true {
				t.Errorf("summary_long fcfs λ=5: unstable %v", r[lc["unstable"]])
			}
		case spoiled.Point:
			seen++
			if r[lc["comparison"]] != aggregate.CmpUndefined || r[lc["comparison_note"]] == "" {
				t.Errorf("summary_long msfq λ=5: %v %v", r[lc["comparison"]], r[lc["comparison_note"]])
			}
		case good.Point:
			seen++
			if r[lc["comparison"]] != aggregate.CmpBetter || r[lc["rel_diff"]] != gm.RelDiff {
				t.Errorf("summary_long msfq λ=1.5: %v %v", r[lc["comparison"]], r[lc["rel_diff"]])
			}
		}
	}
	if seen != 3 {
		t.Errorf("summary_long: %d of the 3 rows found", seen)
	}

	// The terminal table, from summary.csv.
	var term bytes.Buffer
	if err := printSummaryTable(&term, bytes.NewReader(wcsv.Bytes())); err != nil {
		t.Fatal(err)
	}
	hits := 0
	for _, line := range strings.Split(term.String(), "\n") {
		fs := strings.Fields(line)
		if len(fs) < 3 {
			continue
		}
		if (fs[0] == "fcfs" || fs[0] == "msfq") && (fs[2] == "5" || fs[2] == "1.5") {
			hits++
		}
		switch {
		case fs[0] == "fcfs" && fs[2] == "5":
			if !strings.Contains(line, boundText+" ") || !strings.Contains(line, "UNSTABLE") || strings.Contains(line, "±") {
				t.Errorf("terminal fcfs λ=5: %q, want %q without an interval", line, boundText)
			}
		case fs[0] == "msfq" && fs[2] == "5":
			if !strings.Contains(line, "undefined") {
				t.Errorf("terminal msfq λ=5: %q, want the comparison undefined", line)
			}
		case fs[0] == "msfq" && fs[2] == "1.5":
			if !strings.Contains(line, rel+" better") {
				t.Errorf("terminal msfq λ=1.5: %q, want %q", line, rel+" better")
			}
		}
	}

	if hits != 4 {
		t.Errorf("terminal: %d of the 4 rows found in\n%s", hits, term.String())
	}

	// index.html.
	files, err := report.Render(report.Campaign{Points: pts})
	if err != nil {
		t.Fatal(err)
	}
	html := string(files["index.html"])
	for _, want := range []string{boundText, rel, "the baseline&#39;s means are bounds", "compare_mean_response.png"} {
		if !strings.Contains(html, want) {
			t.Errorf("index.html has no %q", want)
		}
	}

	// The live page.
	_, plots := monitor.Plots(pts)
	found := false
	for _, pl := range plots {
		if pl.Metric != "mean_response" {
			continue
		}
		for _, s := range pl.Series {
			for _, p := range s.Points {
				if strings.HasPrefix(s.Name, "fcfs") && p.X == 5 {
					found = true
					if !p.Unstable || p.HW != nil {
						t.Errorf("live page fcfs λ=5: unstable %v hw %v, want a bound without interval", p.Unstable, p.HW)
					}
				}
				if strings.HasPrefix(s.Name, "msfq") && p.X == 1.5 && (p.Unstable || p.HW == nil) {
					t.Errorf("live page msfq λ=1.5: unstable %v hw %v, want an estimate", p.Unstable, p.HW)
				}
			}
		}
	}
	if !found {
		t.Error("live page: no fcfs λ=5 point")
	}
}

// readParquet reads a table's Parquet file back as CSV-formatted cells
// (null → "", booleans true/false), in the table's column order.
func readParquet(t *testing.T, data []byte) [][]string {
	t.Helper()
	f, err := parquet.OpenFile(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	ncol := len(f.Schema().Fields())
	rd := parquet.NewReader(f)
	rows := make([]parquet.Row, f.NumRows())
	if n, err := rd.ReadRows(rows); n != len(rows) {
		t.Fatalf("read %d rows: %v", n, err)
	}
	var out [][]string
	for _, row := range rows {
		cells := make([]string, ncol)
		for _, v := range row {
			switch {
			case v.IsNull():
			case v.Kind() == parquet.ByteArray:
				cells[v.Column()] = string(v.ByteArray())
			case v.Kind() == parquet.Int64:
				cells[v.Column()] = strconv.FormatInt(v.Int64(), 10)
			case v.Kind() == parquet.Double:
				cells[v.Column()] = aggregate.FormatFloat(v.Double())
			case v.Kind() == parquet.Boolean:
				cells[v.Column()] = strconv.FormatBool(v.Boolean())
			}
		}
		out = append(out, cells)
	}
	return out
}
