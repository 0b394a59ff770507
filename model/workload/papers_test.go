package workload

import (
	"math"
	"strings"
	"testing"
)

// TestHalfinWhittF checks f_k = ⌊(k/32)^{2/3}⌋ at values derived by hand.
func TestHalfinWhittF(t *testing.T) {
	cases := map[int]int{
		31:    0,  // k/32 < 1
		32:    1,  // 1^{2/3} = 1
		64:    1,  // 2^{2/3} ≈ 1.587
		128:   2,  // 4^{2/3} ≈ 2.520
		256:   4,  // 8^{2/3} = 4 exactly (math.Pow gives 3.999…)
		512:   6,  // 16^{2/3} ≈ 6.350
		1024:  10, // 32^{2/3} ≈ 10.079
		2048:  16, // 64^{2/3} = 16 exactly
		4096:  25, // 128^{2/3} ≈ 25.398
		16384: 64, // 512^{2/3} = 64 exactly
	}
	for k, want := range cases {
		if got := HalfinWhittF(k); got != want {
			t.Errorf("f_%d = %d, want %d", k, got, want)
		}
	}
}

// TestPaperLoads checks the load per unit rate of the workloads added from
// B and K against values derived by hand.
func TestPaperLoads(t *testing.T) {
	cases := map[string]float64{
		// halfin-whitt at k = 256, f = 4: small 0.95·4·1 = 3.8; large
		// (0.05/3)·(8·40 + 16·20 + 32·10) = (0.05/3)·960 = 16; total
		// 19.8 = 4.95·f, over k = 256.
		"halfin-whitt": 19.8 / 256,
		// sdsc-sp2 (B Table 2), k = 512; α_i·n_i·E[D_i] per class:
		// 0.2321·1·10519.71 = 2441.6247, 0.1496·2·1436.82 = 429.8965,
		// 0.1624·4·5643.69 = 3666.1410, 0.1652·8·9248.53 = 12222.8572,
		// 0.156·16·10601.46 = 26461.2442, 0.0807·32·12139.59 = 31349.2772,
		// 0.054·64·8302.33 = 28692.8525; sum 105263.893363; the shares
		// sum to 1.0000.
		"sdsc-sp2": 105263.893363 / 512,
		// kit-fh2 (B Table 3), k = 512: 0.7851·1845.19 = 1448.6587,
		// 0.018·2·1470.13 = 52.9247, 0.0406·4·11169.87 = 1813.9869,
		// 0.0137·8·3167.33 = 347.1394, 0.0539·16·5706.45 = 4921.2425,
		// 0.0493·32·60673.08 = 95717.8510, 0.0393·64·61343.42 = 154290.9700;
		// sum 258592.773077; the shares sum to 0.9999 and are normalised.
		"kit-fh2": 258592.773077 / 0.9999 / 512,
		// The bounded-Pareto variants keep every class mean, so their loads
		// are those of the exponential originals:
		// (0.95·1·1.25 + 0.05·2048·10)/2048.
		"killsmart-one-or-all-bpareto": (0.95*1.25 + 0.05*2048*10) / 2048,
	}
	for n, want := range cases {
		s, err := Named(n)
		if err != nil {
			t.Fatal(err)
		}
		w, err := s.Build(1)
		if err != nil {
			t.Fatalf("%s: %v", n, err)
		}
		if got := w.Load(); math.Abs(got-want) > 1e-9*want {
			t.Errorf("%s: load per unit rate %v, want %v", n, got, want)
		}
	}
	for _, n := range []string{"borg-b", "borg-e"} {
		exp, _ := Named(n)
		bp, err := Named(n + "-bpareto")
		if err != nil {
			t.Fatal(err)
		}
		we, _ := exp.Build(1)
		wb, err := bp.Build(1)
		if err != nil {
			t.Fatalf("%s-bpareto: %v", n, err)
		}
		if wb.Servers != we.Servers || math.Abs(wb.Load()-we.Load()) > 1e-9*we.Load() {
			t.Errorf("%s-bpareto: k %d load %v, want k %d load %v", n, wb.Servers, wb.Load(), we.Servers, we.Load())
		}
		for i, c := range wb.Classes {
			if m, want := c.Service.Mean(), we.Classes[i].Service.Mean(); math.Abs(m-want) > 1e-9*want {
				t.Errorf("%s-bpareto class %d: mean %v, want %v", n, i, m, want)
			}
		}
	}
}

// TestHPCModels checks B Tables 2–3 are transcribed with 7 power-of-two
// classes up to 64, and each service distribution has the table's mean and
// standard deviation.
func TestHPCModels(t *testing.T) {
	for n, rows := range map[string][][4]float64{"sdsc-sp2": sdscSP2, "kit-fh2": kitFH2} {
		s, _ := Named(n)
		w, err := s.Build(1)
		if err != nil {
			t.Fatal(err)
		}
		if len(w.Classes) != 7 || w.Servers != 512 {
			t.Fatalf("%s: %d classes, k = %d", n, len(w.Classes), w.Servers)
		}
		for i, c := range w.Classes {
			if c.Need != 1<<i {
				t.Errorf("%s class %d: need %d, want %d", n, i, c.Need, 1<<i)
			}
			if s.Classes[i].Service.Dist != "hyperexp" {
				t.Errorf("%s class %d: %s, want hyperexp (every C² ≥ 1)", n, i, s.Classes[i].Service.Dist)
			}
			mean, std := rows[i][0], rows[i][1]
			if m := c.Service.Mean(); math.Abs(m-mean) > 1e-9*mean {
				t.Errorf("%s class %d: mean %v, want %v", n, i, m, mean)
			}
			if scv := *s.Classes[i].Service.SCV; math.Abs(math.Sqrt(scv)*mean-std) > 1e-9*std {
				t.Errorf("%s class %d: std %v, want %v", n, i, math.Sqrt(scv)*mean, std)
			}
		}
	}
	// Below C² = 1 the fit is lognormal (no table class is, but the rule is
	// documented): std 0.5, mean 1 gives C² = 0.25.
	if d := Matched(1, 0.5); d.Dist != "lognormal" || *d.SCV != 0.25 {
		t.Errorf("Matched(1, 0.5) = %+v", d)
	}
}

// TestNamedFor checks the k hook: a k-dependent family is rebuilt for the
// requested servers; the others only change Servers.
func TestNamedFor(t *testing.T) {
	s, err := NamedFor("halfin-whitt", 2048)
	if err != nil {
		t.Fatal(err)
	}
	// f_2048 = 16: needs 16, 32, 64, 128.
	if s.Servers != 2048 || s.Classes[0].Need != 16 || s.Classes[3].Need != 128 {
		t.Errorf("halfin-whitt at 2048: %+v", s)
	}
	if !Scaled("Halfin-Whitt") || Scaled("one-or-all") {
		t.Error("Scaled: want true for halfin-whitt only")
	}
	if s, _ := NamedFor("halfin-whitt", 0); s.Servers != 256 || s.Classes[0].Need != 4 {
		t.Errorf("halfin-whitt default: %+v", s)
	}
	if _, err := NamedFor("halfin-whitt", 16); err == nil || !strings.Contains(err.Error(), ">= 32") {
		t.Errorf("want a servers error below 32, got %v", err)
	}
	if s, _ := NamedFor("sdsc-sp2", 1024); s.Servers != 1024 || s.Classes[6].Need != 64 {
		t.Errorf("sdsc-sp2 at 1024: %+v", s)
	}
	if _, err := NamedFor("nope", 8); err == nil {
		t.Error("want unknown-workload error")
	}
	// k = 256: f = ⌊8^{2/3}⌋ = 4, ρ = 1 − 0.7·√(4/256) = 1 − 0.7/8 = 0.9125.
	if got := HalfinWhittLoad(256, 0.7); math.Abs(got-0.9125) > 1e-15 {
		t.Errorf("HalfinWhittLoad(256) = %v", got)
	}
}
