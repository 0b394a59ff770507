package main

import (
	"github.com/spf13/pflag"

	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/msjfarm/msjfarm/plugins/quickswap/approx"
	"github.com/msjfarm/msjfarm/sim"
)

// runAnalyze evaluates analytical models; today only "msfq", the mean
// response time approximation of MSFQ on the one-or-all system (Quickswap
// §5, package analysis).

// analyzeMSFQ prints the Quickswap §5 approximation for one rate (--rate)
// or a table over several (--rates). A --rate beyond the stability bound is
// an error; in a --rates table such rows are marked unstable instead, since
// a sweep reaching the bound is legitimate.
func defMSFQ(fs *pflag.FlagSet, out io.Writer) func([]string) int {
	a := &msfqArgs{out: out}
	a.k = fs.IntP("k", "k", 32, "number of servers k (>= 2); heavy jobs need all k")
	a.ell = fs.Int("threshold", -1, "MSFQ threshold ℓ in [0, k−1]; −1 means k−1 (0 is MSF)")
	a.rate = fs.Float64("rate", 0, "total arrival rate λ (exclusive with --rates)")
	a.rates = fs.String("rates", "", "comma-separated arrival rates λ for a table, e.g. 2,4,6,7")
	a.p1 = fs.Float64("p1", 0.9, "fraction of light (1-server) jobs, in (0, 1)")
	a.mu1 = fs.Float64("mu1", 1, "service rate μ1 of light jobs (> 0)")
	a.muk = fs.Float64("muk", 1, "service rate μk of heavy jobs (> 0)")
	a.asJSON = fs.Bool("json", false, "print JSON (one object per rate, one per line)")
	return func(args []string) int {
		if fs.NArg() > 0 {
			return usagef("analyze msfq: unexpected argument %q", fs.Arg(0))
		}
		set := map[string]bool{}
		fs.Visit(func(f *pflag.Flag) { set[f.Name] = true })
		if code := a.check(set); code != 0 {
			return code
		}
		if set["rate"] {
			return a.single()
		}
		return a.table()
	}
}

// msfqArgs are analyze msfq's flags.
type msfqArgs struct {
	out                io.Writer
	k, ell             *int
	rate, p1, mu1, muk *float64
	rates              *string
	asJSON             *bool
}

// check refuses a model the approximation does not describe, naming the
// flag (set: the flags given).
func (a *msfqArgs) check(set map[string]bool) int {
	switch {
	case *a.k < 2:
		return usagef("analyze msfq: -k %d: need k >= 2", *a.k)
	case *a.k > sim.MaxServers:
		// The approximation is O(k) a rate: -k 1e12 ran for hours.
		return usagef("analyze msfq: -k %d: need k <= %d, the most servers msjfarm simulates", *a.k, sim.MaxServers)
	case *a.ell < -1 || *a.ell >= *a.k:
		return usagef("analyze msfq: --threshold %d: need 0 <= ℓ <= k−1 = %d (or −1 for k−1)", *a.ell, *a.k-1)
	case !(*a.p1 > 0 && *a.p1 < 1):
		return usagef("analyze msfq: --p1 %v: need 0 < p1 < 1", *a.p1)
	case !(*a.mu1 > 0) || math.IsInf(*a.mu1, 0):
		return usagef("analyze msfq: --mu1 %v: need a finite μ1 > 0", *a.mu1)
	case !(*a.muk > 0) || math.IsInf(*a.muk, 0):
		return usagef("analyze msfq: --muk %v: need a finite μk > 0", *a.muk)
	case set["rate"] == set["rates"]:
		return usagef("analyze msfq: give exactly one of --rate and --rates")
	}
	return 0
}

// threshold is ℓ, with −1 meaning k−1.
func (a *msfqArgs) threshold() int {
	if *a.ell < 0 {
		return *a.k - 1
	}
	return *a.ell
}

// single prints the approximation at --rate, which must be stable.
func (a *msfqArgs) single() int {
	if !(*a.rate > 0) || math.IsInf(*a.rate, 0) {
		return usagef("analyze msfq: --rate %v: need a finite λ > 0", *a.rate)
	}
	r, err := approx.MSFQ(*a.k, a.threshold(), *a.rate, *a.p1, *a.mu1, *a.muk)
	if err != nil {
		return fail("analyze msfq: --rate %v: %v", *a.rate, err)
	}
	if *a.asJSON {
		return analyzeJSON(a.out, r)
	}
	analyzePrintMSFQ(a.out, r)
	return 0
}

// table prints the approximation at each of --rates, as a table or one
// JSON object per rate; an unstable rate is a row saying so.
func (a *msfqArgs) table() int {
	var lams []float64
	for _, f := range strings.Split(*a.rates, ",") {
		x, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || !(x > 0) || math.IsInf(x, 0) {
			return usagef("analyze msfq: --rates: %q is not a finite rate > 0", strings.TrimSpace(f))
		}
		lams = append(lams, x)
	}
	l, out := a.threshold(), a.out
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	if !*a.asJSON {
		fmt.Fprintf(out, "MSFQ approximation (Quickswap §5): k=%d ℓ=%d p1=%v μ1=%v μk=%v, stable for λ < %.6g\n",
			*a.k, l, *a.p1, *a.mu1, *a.muk, 1/(*a.p1/(float64(*a.k)**a.mu1) + (1-*a.p1) / *a.muk))
		fmt.Fprintln(tw, "λ\tload\tE[T]\tE[T^w]\tE[T light]\tE[T heavy]\tE[H1]\tE[H2]\tE[H3]\tE[H4]\t§5.2\t")
	}
	for _, lam := range lams {
		r, err := approx.MSFQ(*a.k, l, lam, *a.p1, *a.mu1, *a.muk)
		if err != nil && !errors.Is(err, approx.ErrUnstable) {
			return fail("analyze msfq: --rates %v: %v", lam, err)
		}
		if *a.asJSON {
			var v any = r
			if err != nil {
				v = map[string]any{"lambda": lam, "load": r.Load, "error": err.Error()}
			}
			if code := analyzeJSON(out, v); code != 0 {
				return code
			}
			continue
		}
		if err != nil {
			fmt.Fprintf(tw, "%g\t%.4f\tunstable\t\t\t\t\t\t\t\t\t\n", lam, r.Load)
			continue
		}
		fmt.Fprintf(tw, "%g\t%.4f\t%.4f\t%.4f\t%.4f\t%.4f\t%.4f\t%.4f\t%.4f\t%.4f\t%s\t\n", lam, r.Load,
			r.Overall, r.Weighted, r.Light, r.Heavy,
			r.Phases[0].Mean, r.Phases[1].Mean, r.Phases[2].Mean, r.Phases[3].Mean, analyzeConsistency(r))
	}
	if !*a.asJSON {
		tw.Flush()
		fmt.Fprintln(out, "§5.2 \"no\": E[N1H] < 1 or E[N2L] < k, so the approximation's no-skipped-phase assumption fails (light load): values are unreliable.")
	}
	return 0
}

func analyzeConsistency(r approx.Result) string {
	if r.Consistent {
		return "ok"
	}
	return "no"
}

func analyzeJSON(out io.Writer, v any) int {
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false) // keep "λ < 7.8" readable in error strings
	if err := enc.Encode(v); err != nil {
		return fail("analyze msfq: %v", err)
	}
	return 0
}

func analyzePrintMSFQ(out io.Writer, r approx.Result) {
	fmt.Fprintf(out, "MSFQ approximation (Quickswap §5): k=%d ℓ=%d λ=%v p1=%v μ1=%v μk=%v\n", r.K, r.Ell, r.Lambda, r.P1, r.Mu1, r.MuK)
	fmt.Fprintf(out, "load λ1/(kμ1)+λk/μk = %.6g (stable for λ < %.6g, Thm 3–4)\n", r.Load, r.MaxLambda)
	fmt.Fprintf(out, "E[T]        %.6g\n", r.Overall)
	fmt.Fprintf(out, "E[T^w]      %.6g\n", r.Weighted)
	fmt.Fprintf(out, "E[T light]  %.6g\n", r.Light)
	fmt.Fprintf(out, "E[T heavy]  %.6g\n", r.Heavy)
	fmt.Fprintf(out, "by phase of arrival: T1H %.6g  T234H %.6g  T14L %.6g  T2L %.6g  T3L %.6g\n", r.T1H, r.T234H, r.T14L, r.T2L, r.T3L)
	for i, p := range r.Phases {
		fmt.Fprintf(out, "phase %d: E[H] %.6g  E[H^2] %.6g  m %.6g\n", i+1, p.Mean, p.Second, p.Fraction)
	}
	fmt.Fprintf(out, "E[N1H] %.6g  E[N2L] %.6g\n", r.N1H, r.N2L)
	if !r.Consistent {
		fmt.Fprintf(out, "warning: E[N1H] < 1 or E[N2L] < k = %d: the no-skipped-phase assumption of Q §5.2 fails at this load; the values are unreliable\n", r.K)
	}
}
