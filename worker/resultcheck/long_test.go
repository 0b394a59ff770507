//go:build long

package resultcheck_test

import "testing"

// TestHonestResultsPassLong: every example sweep's points over ten seeds
// at 10^4 arrivals and two at 10^5 (where a 20% error in mean_in_system
// must be caught in at least 85% of results), then the borg-b sweeps
// (the Kill-Smart and Quickswap examples) at their default size, 10^6
// arrivals with their three replications: the runs whose rare stalls
// the burstiness scaling is for. About 8 minutes on 2 loaded cores, plus
// the borg-b part.
func TestHonestResultsPassLong(t *testing.T) {
	t.Run("1e4x10", func(t *testing.T) { checkHonest(t, honestTasks(t, 1e4, 10)) })
	t.Run("1e5x2", func(t *testing.T) { checkHonest(t, honestTasks(t, 1e5, 2)) })
	t.Run("borg-b/1e6x3", func(t *testing.T) { checkHonest(t, honestTasksOn(t, "borg-b", 1e6, 3)) })
}
