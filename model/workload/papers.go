package workload

import (
	"fmt"
	"math"
	"strings"

	"github.com/msjfarm/msjfarm/model/dist"
)

// This file holds the named workloads of the Balanced Splitting paper (B) and
// the bounded-Pareto variants of the Kill-Smart paper (K), and the hook that
// recomputes a k-dependent family for another number of servers.

// HalfinWhittMinServers is the smallest k of the Halfin–Whitt family: below
// 32 servers f_k = ⌊(k/32)^{2/3}⌋ is 0.
const HalfinWhittMinServers = 32

// HalfinWhittF returns f_k = ⌊(k/32)^{2/3}⌋ (B §1.1, Fig. 1 caption),
// computed exactly in integers as the largest f with 32²·f³ ≤ k² (a
// floating-point power gives 3.9999… for k = 256, whose f_k is 4).
func HalfinWhittF(k int) int {
	if k < HalfinWhittMinServers {
		return 0
	}
	k2 := int64(k) * int64(k)
	f := int64(math.Cbrt(float64(k2) / 1024)) // within one of the answer
	for f > 0 && 1024*f*f*f > k2 {
		f--
	}
	for 1024*(f+1)*(f+1)*(f+1) <= k2 {
		f++
	}
	return int(f)
}

// HalfinWhitt is the "several small and few large" family of B Fig. 1–2 at k
// servers (B §1.1 and the Fig. 1 caption): with f = f_k = ⌊(k/32)^{2/3}⌋,
// small jobs (need f, exponential mean 1) arrive with probability 0.95; large
// jobs, probability 0.05 split equally, are (need 2f, mean 40), (4f, 20) or
// (8f, 10). All service times exponential, arrivals Poisson. The large jobs'
// demand is 0.05·(2·40 + 4·20 + 8·10)/3·f = 4f and the small jobs' 0.95f (B
// §1.1: "80 · 0.05 f_k = 4 f_k resp. 0.95 f_k"), so the load per unit arrival
// rate is 4.95·f/k. The papers' k values are not printed; f_k is a power of
// two (B Remark 2) at k = 32, 128, 256, 2048, 16384.
func HalfinWhitt(k int) (Spec, error) {
	f := HalfinWhittF(k)
	if f < 1 {
		return Spec{}, fmt.Errorf("workload halfin-whitt: servers must be >= %d (f_k = ⌊(k/32)^(2/3)⌋ is 0 below), got %d", HalfinWhittMinServers, k)
	}
	large := 0.05 / 3
	return Spec{Name: "halfin-whitt", Source: "Balanced Splitting §1.1, Fig. 1–2", Servers: k, Classes: []ClassSpec{
		{Name: "small", Need: f, Share: 0.95, Service: Exp(1)},
		{Name: "large-2f", Need: 2 * f, Share: large, Service: Exp(40)},
		{Name: "large-4f", Need: 4 * f, Share: large, Service: Exp(20)},
		{Name: "large-8f", Need: 8 * f, Share: large, Service: Exp(10)},
	}}, nil
}

// HalfinWhittLoad is the load of B Fig. 1's critical (Halfin–Whitt) regime at
// k servers, from B eq. (8b): (1 − ρ)·√(k/f_k) → θ, taken with equality, so
// ρ = 1 − θ·√(f_k/k) (B uses θ = 0.7). B §1.1 prints the condition as
// (1 − ρ)√k/f_k → θ instead; that form cannot be meant, since f_k grows as
// k^{2/3}, faster than √k, and it would drive ρ below 0 as k grows; eq. (8b)
// is the one Theorem 2 and its proof use.
func HalfinWhittLoad(k int, theta float64) float64 {
	return 1 - theta*math.Sqrt(float64(HalfinWhittF(k))/float64(k))
}

// scaled lists the named families whose classes depend on k.
var scaled = map[string]func(k int) (Spec, error){
	"halfin-whitt": HalfinWhitt,
}

// Scaled reports whether the named workload's classes depend on the number of
// servers (so a sweep's servers override or axis must rebuild it with
// NamedFor rather than only set Spec.Servers).
func Scaled(name string) bool {
	_, ok := scaled[strings.ToLower(name)]
	return ok
}

// NamedFor returns the named workload for a system of servers servers; 0
// means the workload's own k. For a k-dependent family (Scaled) the classes
// are recomputed from servers; for every other workload only Servers is
// replaced, the classes staying as the source gives them.
func NamedFor(name string, servers int) (Spec, error) {
	if servers < 0 {
		return Spec{}, fmt.Errorf("workload %q: servers must be >= 0, got %d", name, servers)
	}
	if mk, ok := scaled[strings.ToLower(name)]; ok && servers != 0 {
		return mk(servers)
	}
	s, err := Named(name)
	if err != nil {
		return s, err
	}
	if servers != 0 {
		s.Servers = servers
	}
	return s, nil
}

// Matched is a service distribution with the given mean and standard
// deviation: the balanced-means two-phase hyperexponential when
// C² = (std/mean)² ≥ 1, the lognormal otherwise. B §6.2 gives only the mean
// and standard deviation of each class (Tables 2–3), not the distribution;
// these two are the usual two-moment fits, and every class of both tables
// has C² ≥ 1 (between 2.3 and 38), so all are hyperexponential.
func Matched(mean, std float64) dist.Spec {
	scv := (std / mean) * (std / mean)
	if scv >= 1 {
		return dist.Spec{Dist: "hyperexp", Mean: f(mean), SCV: f(scv)}
	}
	return dist.Spec{Dist: "lognormal", Mean: f(mean), SCV: f(scv)}
}

// sdscSP2 and kitFH2 are B Tables 2 and 3: E[D_i] (s), std(D_i) (s), n_i,
// α_i (the class's arrival probability).
var sdscSP2 = [][4]float64{
	{10519.71, 18267.03, 1, 0.2321},
	{1436.82, 6250.19, 2, 0.1496},
	{5643.69, 18123.7, 4, 0.1624},
	{9248.53, 18468.51, 8, 0.1652},
	{10601.46, 17050.63, 16, 0.156},
	{12139.59, 22654.86, 32, 0.0807},
	{8302.33, 19074.81, 64, 0.054},
}

var kitFH2 = [][4]float64{
	{1845.19, 11440.31, 1, 0.7851},
	{1470.13, 5237.83, 2, 0.018},
	{11169.87, 38631.83, 4, 0.0406},
	{3167.33, 19727.29, 8, 0.0137},
	{5706.45, 17212.04, 16, 0.0539},
	{60673.08, 92531.56, 32, 0.0493},
	{61343.42, 106094.97, 64, 0.0393},
}

// hpcModel is a B §6.2 class model: needs that are powers of two up to 64
// (the paper drops the others), Poisson arrivals (the load is set by the
// sweep), service matched to each class's mean and standard deviation. Fig. 3
// runs each at k = 512 and k = 1024; the default is 512 and a sweep's
// servers axis gives the other (the classes do not depend on k).
func hpcModel(name, source string, rows [][4]float64) Spec {
	s := Spec{Name: name, Source: source, Servers: 512}
	for _, r := range rows {
		s.Classes = append(s.Classes, ClassSpec{
			Name: fmt.Sprintf("need-%d", int(r[2])), Need: int(r[2]), Share: r[3], Service: Matched(r[0], r[1]),
		})
	}
	return s
}

// bparetoHigh is the upper bound of the bounded-Pareto variants, as a
// multiple of the class mean: the authors' simulator (mjqm-simulator,
// BoundedPareto::with_mean) uses [12000/23999·m, 12000·m].
const bparetoHigh = 12000

// BoundedPareto is the bounded-Pareto service of K Fig. 4i, 5f and 6f with
// shape alpha and mean m: upper bound 12000·m and the lower bound solved so
// that the mean is exactly m. K does not print the parameters; the authors'
// simulator inputs (UniVe-NeDS-Lab/mjqm-simulator, Inputs/killsmart_ex_pareto
// .toml: α = 2.1; killsmart_borg_B_pareto.toml: α = 2.0) use bounds
// [12000/23999·m, 12000·m], whose mean is exactly m only at α = 2 (≈ 0.955·m
// at α = 2.1). Solving for the lower bound instead keeps every class's mean,
// hence the load, equal to the exponential case, so the exponential and
// Pareto curves share their x axis.
func BoundedPareto(alpha, mean float64) dist.Spec {
	return dist.Spec{Dist: "bpareto", Alpha: f(alpha), Mean: f(mean), High: f(bparetoHigh * mean)}
}

// withBoundedPareto replaces every class's service by a bounded Pareto of the
// same mean.
func withBoundedPareto(s Spec, name string, alpha float64) Spec {
	out := s
	out.Name = name
	out.Source = s.Source + ", bounded Pareto α = " + fmt.Sprint(alpha)
	out.Classes = append([]ClassSpec(nil), s.Classes...)
	for i := range out.Classes {
		out.Classes[i].Service = BoundedPareto(alpha, *s.Classes[i].Service.Mean)
	}
	return out
}

func mustHalfinWhitt(k int) Spec {
	s, err := HalfinWhitt(k)
	if err != nil {
		panic(err)
	}
	return s
}
