package report

import (
	"fmt"
	"strings"
	"testing"

	"github.com/msjfarm/msjfarm/results/aggregate"
)

// styleCase is a figure's series: campaigns overlaid (1 for none), each
// with msfq MSFQ series (thresholds 31, 30, …: each has its §5
// approximation curve) and other series of policy fcfs with a parameter p
// = 0, 1, … (a series each), or, with family, Kill-Smart variants K × ν
// (K ∈ {7, 14}, ν = 1 … other/2).
type styleCase struct {
	campaigns, msfq, other int
	family                 bool
}

func (sc styleCase) String() string {
	return fmt.Sprintf("%d campaigns × (%d msfq + %d other, family %v)", sc.campaigns, sc.msfq, sc.other, sc.family)
}

// points are sc's points and, with more than one campaign, their
// campaigns' tags.
func (sc styleCase) points() (pts []aggregate.Point, tags []string) {
	for c := 0; c < sc.campaigns; c++ {
		var own []aggregate.Point
		for j := 0; j < sc.msfq; j++ {
			// Thresholds differ between campaigns too: no approximation
			// curve is shared (msfqOverlay draws a shared one once).
			own = append(own, approxPoints(float64(31-j-c*sc.msfq))...)
		}
		for j := 0; j < sc.other; j++ {
			params := map[string]any{"p": float64(j)}
			pol := "fcfs"
			if sc.family {
				pol, params = "killsmart", map[string]any{"K": float64(7 + 7*(j%2)), "nu": float64(1 + j/2)}
			}
			for _, p := range approxPoints(31.0) {
				p.Policy, p.Params = pol, params
				own = append(own, p)
			}
		}
		pts = append(pts, own...)
		if sc.campaigns > 1 {
			for range own {
				tags = append(tags, fmt.Sprintf("c%d", c))
			}
		}
	}
	return pts, tags
}

// curves are the curves sc's mean response time figure draws: its
// series and their approximation curves.
func (sc styleCase) curves(t *testing.T) ([]curve, *facet) {
	pts, tags := sc.points()
	x, others := xAxis(pts)
	fs := facets(pts, tags, x, others)
	if len(fs) != 1 {
		t.Fatalf("%v: %d facets, want 1", sc, len(fs))
	}
	cs, _ := curvesFor(fs[0], x, "mean_response")
	return append(cs, msfqOverlay(fs[0], "mean_response")...), fs[0]
}

// TestSeriesStylesDistinct: every curve of a figure — the series, and the
// MSFQ series' approximation curves — has a marker and dash pattern no
// other curve has, so that the figure reads in a greyscale print, for
// every number of curves up to maxStyles, overlaid campaigns and
// families included; past it the caption says that they repeat. Before,
// three overlaid campaigns drew the first one's MSFQ approximation exactly
// as (colour, marker and dash) the third one's first series, a campaign's
// 8th series exactly as its 1st, and a 29th series with the 1st's marker
// and dash.
func TestSeriesStylesDistinct(t *testing.T) {
	var cases []styleCase
	for n := 1; n <= distinctFull+2; n++ {
		cases = append(cases, styleCase{campaigns: 1, other: n})
	}
	for c := 1; c <= 6; c++ {
		for m := 0; m <= 3; m++ {
			for o := 0; o <= 9; o += 3 {
				if m+o > 0 {
					cases = append(cases, styleCase{campaigns: c, msfq: m, other: o})
				}
			}
		}
	}
	for o := 2; o <= 16; o += 2 {
		cases = append(cases, styleCase{campaigns: 1, msfq: 1, other: o, family: true})
	}
	checked := 0
	for _, sc := range cases {
		cs, f := sc.curves(t)
		if len(cs) != sc.campaigns*(2*sc.msfq+sc.other) {
			t.Fatalf("%v: %d curves, want %d (a series and an approximation per MSFQ series)", sc, len(cs), sc.campaigns*(2*sc.msfq+sc.other))
		}
		note := crowdedNote(cs)
		if len(cs) > maxStyles {
			if note == "" {
				t.Errorf("%v: %d curves, past %d, and no note that their styles repeat", sc, len(cs), maxStyles)
			}
			// Past maxStyles colour still tells every curve apart up to
			// distinctFull: no two have the same colour, marker and
			// dash, and the caption says that much and no more.
			drawn := map[int]string{}
			for _, c := range cs {
				if o, ok := drawn[c.style%distinctFull]; ok && len(cs) <= distinctFull {
					t.Errorf("%v: %q and %q drawn alike (colour, marker and dash; styles %d)", sc, o, c.label, c.style)
				}
				drawn[c.style%distinctFull] = c.label
			}
			if alike := strings.Contains(note, "drawn alike"); alike != (len(cs) > distinctFull) {
				t.Errorf("%v: %d curves, caption %q", sc, len(cs), note)
			}
			continue
		}
		checked++
		if note != "" {
			t.Errorf("%v: %d curves have distinct styles, but the caption says %q", sc, len(cs), note)
		}
		byKey := map[int]string{}
		for _, c := range cs {
			if o, ok := byKey[greyKey(c.style)]; ok {
				t.Errorf("%v: %q and %q have the same marker and dash (styles %d)", sc, o, c.label, c.style)
			}
			byKey[greyKey(c.style)] = c.label
		}
		// A policy keeps its colour across overlaid campaigns while it
		// has a free marker and dash: colours c and c + 4 share 8 of
		// them (greyKey), enough for up to 4 campaigns of up to 7 series.
		if sc.campaigns > 1 && sc.campaigns <= 4 && sc.msfq == 0 && sc.other <= len(palette) {
			colour := map[string]int{}
			for i, s := range f.series {
				k := strings.TrimPrefix(s.label, s.tag+": ")
				st := s.style(f, i) % len(palette)
				if c, ok := colour[k]; ok && c != st {
					t.Errorf("%v: %s drawn in colour %d and %d", sc, k, c, st)
				}
				colour[k] = st
			}
		}
	}
	if checked < 40 {
		t.Fatalf("only %d cases within %d curves: the test checks too little", checked, maxStyles)
	}
}

// TestCrowdedCaption: a figure of more curves than maxStyles says so in
// its caption, in index.html: 17 MSFQ series (the most a line plot has is
// 24) and their 17 approximation curves.
func TestCrowdedCaption(t *testing.T) {
	pts, _ := styleCase{campaigns: 1, msfq: 17}.points()
	files, err := Render(Campaign{Points: pts})
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("34 curves: past %d, markers and dash patterns repeat", maxStyles); !strings.Contains(string(files["index.html"]), want) {
		t.Errorf("index.html does not say %q", want)
	}
}
