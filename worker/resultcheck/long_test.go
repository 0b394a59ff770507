//go:build long

package resultcheck_test

import "testing"

// TestHonestResultsPassLong: every example sweep's points over ten seeds
// at 10^4 arrivals and two at 10^5 (where a 20% error in mean_in_system
// must be caught in at least 85% of results). About 8 minutes on 2
// loaded cores.
func TestHonestResultsPassLong(t *testing.T) {
	t.Run("1e4x10", func(t *testing.T) { checkHonest(t, honestTasks(t, 1e4, 10)) })
	t.Run("1e5x2", func(t *testing.T) { checkHonest(t, honestTasks(t, 1e5, 2)) })
}
