package stats

// BatchMeans returns the means of consecutive batches of b observations of
// xs. An incomplete last batch is dropped, so that every batch mean has the
// same variance. b < 1 gives nil.
func BatchMeans(xs []float64, b int) []float64 {
	if b < 1 {
		return nil
	}
	out := make([]float64, len(xs)/b)
	for i := range out {
		var s float64
		for _, x := range xs[i*b : (i+1)*b] {
			s += x
		}
		out[i] = s / float64(b)
	}
	return out
}

// MSER returns the number d of leading batch means to delete as warm-up, by
// the Marginal Standard Error Rule (White, 1997): d minimises
//
//	MSER(d) = Σ_{i>d} (Y_i − Ȳ_d)² / (n−d)²,   Ȳ_d = mean of Y_{d+1..n},
//
// over 0 <= d <= n/2. MSER(d) is the squared standard error of the truncated
// mean (up to a constant), so the rule trades the bias of keeping the initial
// transient against the variance of discarding data. The search stops at n/2
// as is standard. A result close to n/2 means the run is too short to tell
// (run longer); a transient lasting more than about half the run can even go
// unnoticed (d = 0), so runs must be long compared with the warm-up.
// Ties go to the smaller d.
//
// It runs in O(n): the deviations of every suffix are accumulated from the
// end with Welford's update, which is both linear and free of the
// cancellation of the suffix-sum formula Σy² − (Σy)²/m. NaNs in the input make
// the result meaningless. An empty or single-batch input gives 0.
func MSER(batchMeans []float64) (d int) {
	return MSERUpTo(batchMeans, len(batchMeans)/2)
}

// MSERUpTo is MSER with the search over 0 <= d <= dmax (beyond n/2 at
// most n−2, so that at least two batch means remain). Searching past n/2 is
// how a caller detects a run that is too short: a truncation point beyond
// half the run means the series was still trending over most of it
// (Hoad, Robinson & Davies, "Automated selection of the number of
// replications and the warm-up length", J. Oper. Res. Soc. 61(11), 2010,
// reject such runs as too short).
func MSERUpTo(batchMeans []float64, dmax int) (d int) {
	n := len(batchMeans)
	if n < 2 {
		return 0
	}
	if dmax > n/2 {
		dmax = max(n/2, min(dmax, n-2))
	}
	var (
		mean, m2 float64
		best     = -1.0
	)
	for i := n - 1; i >= 0; i-- {
		// Add Y_i: the accumulator now holds the suffix i..n-1, i.e. d = i.
		m := float64(n - i)
		delta := batchMeans[i] - mean
		mean += delta / m
		m2 += delta * (batchMeans[i] - mean)
		if i > dmax {
			continue
		}
		if stat := m2 / (m * m); best < 0 || stat <= best {
			best, d = stat, i
		}
	}
	return d
}

// MSER5 applies MSER to batch means of 5 consecutive observations (the
// MSER-5 variant, whose batching smooths the series enough for the rule to
// be reliable) and returns the number of leading observations to delete,
// 5 times the number of batches. For long runs, accumulate the batch means
// while simulating and call [MSER] directly instead of storing xs.
func MSER5(xs []float64) int {
	return 5 * MSER(BatchMeans(xs, 5))
}
