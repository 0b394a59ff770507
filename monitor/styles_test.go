package monitor_test

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/msjfarm/msjfarm/worker"
)

// stylesYAML has 33 series: FCFS and MSFQ at each threshold 0…31.
var stylesYAML = `name: monitor-styles
seed: 9
workload: one-or-all
axes:
  arrival_rate: [1, 2]
policies: [fcfs, {name: msfq, threshold: [` + thresholds(32) + `]}]
replications: 1
run: {arrivals: 1e3, warmup: 1e2}
`

func thresholds(n int) string {
	s := make([]string, n)
	for i := range s {
		s[i] = fmt.Sprint(i)
	}
	return strings.Join(s, ", ")
}

var (
	swatchRE = regexp.MustCompile(`<svg[^>]*class="swatch"><line[^>]*stroke="([^"]*)"[^>]*stroke-dasharray="([^"]*)"[^>]*></line><(circle|polygon) ([^>]*)>`)
	fillRE   = regexp.MustCompile(` fill="([^"]*)"`)
	shapeRE  = regexp.MustCompile(` (?:points|r)="([^"]*)"`)
	curveRE  = regexp.MustCompile(`<polyline fill="none" stroke="([^"]*)" stroke-width="[^"]*" stroke-dasharray="([^"]*)"`)
)

// TestLiveSeriesStyles: the live page's legend (and each plot) gives the
// first 32 series a marker and dash pattern no other series has, so that
// they are told apart without colour, as the report's figures do
// (docs/report.md, "Styles"), and no two of 33 series alike in colour,
// marker and dash. Before, series i had marker i mod 8 and dash
// ⌊i/7⌋ mod 4, and the 29th to 31st series had the 5th to 7th's marker
// and dash: told apart only by colour. Read from the page as headless
// Chromium renders it (skipped without Chromium, required in CI).
func TestLiveSeriesStyles(t *testing.T) {
	lr := startLive(t, stylesYAML, worker.InProcess{})
	lr.waitReport(t)
	dom := pageDOM(t, lr.base+"?c="+lr.id)
	lr.cancel()
	if r := <-lr.done; r.err != nil || r.out.Interrupted {
		t.Fatalf("run: %v %+v", r.err, r.out)
	}
	if dom == "" {
		return // no Chromium: pageDOM said so
	}
	type style struct{ color, dash, grey string }
	var legend []style
	for _, m := range swatchRE.FindAllStringSubmatch(dom, -1) {
		fill, shape := fillRE.FindStringSubmatch(m[4]), shapeRE.FindStringSubmatch(m[4])
		if fill == nil || shape == nil {
			t.Fatalf("a legend marker without fill or shape: %s", m[0])
		}
		// What a greyscale print shows: the marker's shape, whether it is
		// filled, and the dash pattern.
		filled := fill[1] != "#fff"
		legend = append(legend, style{m[1], m[2], fmt.Sprintf("%s %s filled=%v dash=%q", m[3], shape[1], filled, m[2])})
	}
	if len(legend) != 33 {
		t.Fatalf("%d legend entries, want 33 series", len(legend))
	}
	grey, whole := map[string]int{}, map[string]int{}
	for i, s := range legend {
		if j, ok := grey[s.grey]; ok && i < 32 {
			t.Errorf("series %d and %d look alike in greyscale: %s", j+1, i+1, s.grey)
		}
		grey[s.grey] = i
		if j, ok := whole[s.color+s.grey]; ok {
			t.Errorf("series %d and %d look alike: %s %s", j+1, i+1, s.color, s.grey)
		}
		whole[s.color+s.grey] = i
	}
	// Each plot draws the series as the legend shows them.
	plot := dom[strings.Index(dom, `<div class="plot">`):]
	plot = plot[:strings.Index(plot, "</svg>")]
	curves := curveRE.FindAllStringSubmatch(plot, -1)
	if len(curves) != len(legend) {
		t.Fatalf("%d curves in the first plot, want %d", len(curves), len(legend))
	}
	for i, c := range curves {
		if c[1] != legend[i].color || c[2] != legend[i].dash {
			t.Errorf("series %d: curve %s %q, legend %s %q", i+1, c[1], c[2], legend[i].color, legend[i].dash)
		}
	}
}
