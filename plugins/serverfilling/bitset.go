package serverfilling

import "math/bits"

// Bit sets over need buckets (a bit per bucket, 64 to a word): which
// buckets hold jobs, or jobs in M. Decisions step through the set bits so
// that they visit only the occupied buckets (plain.go, static.go,
// srptwide.go).

// lastBefore is the last set bit before b (-1: none).
func lastBefore(set []uint64, b int) int {
	w := b >> 6
	word := set[w] & (1<<(b&63) - 1)
	for {
		if word != 0 {
			return w<<6 | (63 - bits.LeadingZeros64(word))
		}
		if w--; w < 0 {
			return -1
		}
		word = set[w]
	}
}

// firstFrom is the first set bit from b on (-1: none).
func firstFrom(set []uint64, b int) int {
	for wi := b >> 6; wi < len(set); wi++ {
		w := set[wi]
		if wi == b>>6 {
			w &= ^uint64(0) << (b & 63)
		}
		if w != 0 {
			return wi<<6 | bits.TrailingZeros64(w)
		}
	}
	return -1
}
