package stats

import "math"

// Closed forms of classical queues. A multiserver-job system in which every
// job needs one server is an M/M/k (or M/G/k) queue, and one in which every
// job needs all k servers is an M/G/1 queue with the service time of a job,
// so these give exact targets against which the simulator is validated.

// ErlangB returns the Erlang-B blocking probability of an M/M/k/k loss system
// with offered load a = λ/μ (any a >= 0).
//
// It uses the recursion B(0) = 1, B(j) = a·B(j-1) / (j + a·B(j-1)), which
// involves no factorials or powers and so neither overflows nor loses
// precision for large k. k < 0, a < 0 or NaN a give NaN.
func ErlangB(k int, a float64) float64 {
	if k < 0 || !(a >= 0) || math.IsInf(a, 0) {
		return math.NaN()
	}
	b := 1.0
	for j := 1; j <= k; j++ {
		ab := a * b
		b = ab / (float64(j) + ab)
	}
	return b
}

// ErlangC returns the Erlang-C probability that an arrival waits in an M/M/k
// queue with offered load a = λ/μ: C = k·B / (k − a·(1 − B)), B = ErlangB(k, a).
//
// A queue with a >= k is unstable and every arrival eventually waits, so the
// result is 1. k < 1, a < 0 or NaN a give NaN.
func ErlangC(k int, a float64) float64 {
	if k < 1 || !(a >= 0) {
		return math.NaN()
	}
	if a >= float64(k) {
		return 1
	}
	b := ErlangB(k, a)
	fk := float64(k)
	return fk * b / (fk - a*(1-b))
}

// MMkMeanResponse returns the mean response time (waiting + service) of an
// M/M/k FCFS queue with arrival rate lambda and per-server service rate mu:
// E[T] = C(k, λ/μ) / (kμ − λ) + 1/μ. It is +Inf when λ >= kμ (unstable) and
// NaN for k < 1, lambda < 0 or mu <= 0.
func MMkMeanResponse(k int, lambda, mu float64) float64 {
	if k < 1 || !(lambda >= 0) || !(mu > 0) || math.IsInf(lambda, 0) || math.IsInf(mu, 0) {
		return math.NaN()
	}
	if lambda >= float64(k)*mu {
		return math.Inf(1)
	}
	return ErlangC(k, lambda/mu)/(float64(k)*mu-lambda) + 1/mu
}

// MG1MeanResponse returns the mean response time of an M/G/1 FCFS queue
// (Pollaczek–Khinchine) with arrival rate lambda and service times of the
// given mean and squared coefficient of variation scv = Var[S]/E[S]²
// (1 exponential, 0 deterministic):
//
//	E[T] = E[S] + λ·E[S²] / (2(1−ρ)),  E[S²] = (1+scv)·E[S]²,  ρ = λ·E[S].
//
// It is +Inf when ρ >= 1 and NaN for negative or NaN arguments.
func MG1MeanResponse(lambda, mean, scv float64) float64 {
	if !(lambda >= 0) || !(mean >= 0) || !(scv >= 0) ||
		math.IsInf(lambda, 0) || math.IsInf(mean, 0) || math.IsInf(scv, 0) {
		return math.NaN()
	}
	rho := lambda * mean
	if rho >= 1 {
		return math.Inf(1)
	}
	es2 := (1 + scv) * mean * mean
	return mean + lambda*es2/(2*(1-rho))
}
