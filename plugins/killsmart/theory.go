package killsmart

import "math"

// Saturation holds K's analytical model of §4.3–4.4: one-or-all with
// infinitely many servers (N → ∞), small jobs (one server, exponential with
// rate MuS) with probability Ps, big jobs (all servers, any distribution with
// mean 1/MuB) with probability 1 − Ps, under Kill-Smart with parameters K
// and Nu, in saturation (an infinitely long waiting line). Its methods are
// the closed forms of Lemma 4.2 to Lemma 4.7 and Theorem 4.4.
//
// In saturation every sequence of small jobs between two big jobs is a batch
// that starts at once; with a finite N the formulas hold as long as batches
// (geometric, mean Ps/(1−Ps)) and the restart phase (box plus last batch)
// almost never exceed N.
type Saturation struct {
	Ps, MuS, MuB float64
	K, Nu        int
}

func (m Saturation) pb() float64 { return 1 - m.Ps }

// ETs is Lemma 4.2, Eq. (4): the mean duration of a preemptable batch of
// small jobs, until at most ν remain (0 if the batch has at most ν jobs).
func (m Saturation) ETs() float64 {
	var s float64
	pw := 1.0
	for j := 1; j <= m.Nu; j++ {
		pw *= m.Ps
		s += pw / float64(j)
	}
	return -(s + math.Log(m.pb())) / m.MuS
}

// ETJ is Lemma 4.3: the mean duration of the restart phase (the longest of
// the K−1 boxed batches and of the K-th batch).
func (m Saturation) ETJ() float64 {
	var s float64
	pw := 1.0
	for j := 1; j <= m.K-1; j++ {
		pw *= m.pb()
		s += (1 - pw) / float64(j)
	}
	return (s - math.Log(m.pb())) / m.MuS
}

// ETC is the mean cycle length of Theorem 4.4: (K−1)E[T_s] + K/μ_b + E[T_J].
func (m Saturation) ETC() float64 {
	return float64(m.K-1)*m.ETs() + float64(m.K)/m.MuB + m.ETJ()
}

// LambdaMax is Theorem 4.4: the saturation throughput K/(p_b E[T_C]), the
// largest arrival rate Kill-Smart can sustain.
func (m Saturation) LambdaMax() float64 { return float64(m.K) / (m.pb() * m.ETC()) }

// WastedPower is Lemma 4.5, Eq. (6): (K−1) ν E[T_s] / E[T_C], server-time
// discarded by kills per unit time.
func (m Saturation) WastedPower() float64 {
	return float64(m.K-1) * float64(m.Nu) * m.ETs() / m.ETC()
}

// ExtraDelaySmall is Lemma 4.6, Eq. (7): the extra delay of preempted jobs
// per small job served.
func (m Saturation) ExtraDelaySmall() float64 {
	K, nu := float64(m.K), float64(m.Nu)
	ets, b := m.ETs(), 1/m.MuB
	q := 1 - math.Pow(m.Ps, nu)
	return (K-1)/K*q*((K-2)/2*(ets+b)+b) + (K-1)/K*m.pb()/m.Ps*nu*ets
}

// ExtraDelayPreempted is Lemma 4.7, Eq. (8): the mean extra delay of a
// preempted job.
func (m Saturation) ExtraDelayPreempted() float64 {
	K, nu := float64(m.K), float64(m.Nu)
	ets, b := m.ETs(), 1/m.MuB
	return (K-2)/2*(ets+b) + b + m.pb()/(m.Ps*(1-math.Pow(m.Ps, nu)))*nu*ets
}

// FCFSLambdaMax is the saturation throughput of FCFS on the same model
// (K §4.4, from its reference [26]): (1/p_b) (1/μ_b − log(p_b)/μ_s)^{-1}. A
// cycle is one big job and the batch of small jobs after it, whose duration
// is the longest of a geometric number of exponentials, of mean
// −log(p_b)/μ_s.
func FCFSLambdaMax(ps, muS, muB float64) float64 {
	pb := 1 - ps
	return 1 / pb / (1/muB - math.Log(pb)/muS)
}
